#!/bin/bash
# stop 45 call 1 (nvidia-h200-x2): the strength graph and aggregation on the ranks' GPUs: every GPU test and the MPI GPU tests; the 104^3 run on 2 GPUs new vs f5ba595 (66a06ab's binary, alternated), on 1 GPU; bench gamg 104 on 2 GPUs (stages)
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT /tmp/o; SECONDS=0
timeout 420 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log /tmp/device-out/tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -h "device distributed aggregation\|SKIP a_device_strength" /tmp/device-out/mpi_tests.log | head -3
gunzip -c .devq/hexfem_prev.gz > /tmp/hexfem_old; chmod +x /tmp/hexfem_old
OLD=/tmp/hexfem_old; NEW=$PWD/.device/bin/hexfem
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { np=$1; H=$2; tag=$3; shift 3
  if [ $np = 1 ]; then RAYON_NUM_THREADS=16 timeout 100 $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  else RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1; fi
  echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|  mesh |problem and|output  |AMG set-up cold|device and linear" | sed 's/^.*std...>://' | cut -c1-200; }
RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW run $NB $C $X -o /tmp/o/w --overwrite > /dev/null 2>&1
run 2 $NEW new1; run 2 $OLD old1; run 2 $NEW new2; run 2 $OLD old2
run 1 $NEW one1
for m in 104; do for H in NEW OLD; do B=${!H}; RAYON_NUM_THREADS=16 timeout 100 $MPI $B bench gamg --problem ex56 --m $m --device cuda > $OUT/gamg${m}_$H.txt 2>&1; echo "== gamg $m $H rc $?"; grep -vE "1,1" $OUT/gamg${m}_$H.txt | grep -E "slowest|host cold set-up|renewal for" | sed 's/^.*std...>://' | cut -c1-330 | head -4; done; done
echo "end at ${SECONDS}s"
