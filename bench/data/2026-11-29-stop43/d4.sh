#!/bin/bash
# stop 43 call 4 (nvidia-h200-x2): every GPU test and the MPI GPU tests (one GPU a rank) at e959df2+; then the 104^3 run on 2 GPUs, new vs 70d7981, displacement only and every field; 1 GPU
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT /tmp/o; SECONDS=0
timeout 420 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log /tmp/device-out/tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -hE "cell datasets|SKIP" /tmp/device-out/mpi_tests.log | head -8
gunzip -c .devq/hexfem_old.gz > /tmp/hexfem_old; chmod +x /tmp/hexfem_old
OLD=/tmp/hexfem_old; NEW=$PWD/.device/bin/hexfem
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104]"
D="--set output.fields=[displacement]"
run() { np=$1; H=$2; tag=$3; shift 3
  if [ $np = 1 ]; then RAYON_NUM_THREADS=16 timeout 100 $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  else RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1; fi
  echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|output  |AMG set-up cold|device and linear|for the output" | sed 's/^.*stdout>://' | cut -c1-200 | tail -n 5; }
RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW run $NB $C $X $D -o /tmp/o/w --overwrite > /dev/null 2>&1
run 2 $OLD old_d $D
run 2 $NEW new_d $D
run 2 $OLD old_all
run 2 $NEW new_all
run 1 $NEW one_d $D
run 1 $NEW one_all
for t in d all; do for f in /tmp/o/old_$t/*.h5; do cmp $f /tmp/o/new_$t/$(basename $f) && echo "same bytes: $t"; done; done
python3 - <<'PY'
import h5py, numpy as np
a=h5py.File('/tmp/o/new_all/neo_hookean_block.h5','r'); b=h5py.File('/tmp/o/one_all/neo_hookean_block.h5','r'); c=h5py.File('/tmp/o/old_all/neo_hookean_block.h5','r')
for k in ['steps/000004/cauchy_stress','steps/000004/von_mises','steps/000004/displacement','steps/000004/nodal_cauchy_stress']:
    if k in a:
        x,y,z=a[k][...],b[k][...],c[k][...]
        print(k, '2 GPUs vs 1 GPU identical', np.array_equal(x,y), 'max rel', float(np.abs(x-y).max()/max(np.abs(y).max(),1e-300)), '| old 2 GPUs vs 1 GPU identical', np.array_equal(z,y))
PY
echo "end at ${SECONDS}s"
