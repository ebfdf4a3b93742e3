#!/bin/bash
# stop 43 call 6 (nvidia-h200-x2): the MPI GPU tests (one GPU a rank) with peer writes made without NCCL; the 104^3 run on 2 GPUs (ipc alone) vs 70d7981, and with --exchange nccl forced through bench
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT /tmp/o; SECONDS=0
timeout 300 env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -hE "ipc exchanges|nccl exchanges|SKIP|cell datasets|IPC|NCCL" /tmp/device-out/mpi_tests.log | head -12
gunzip -c .devq/hexfem_old.gz > /tmp/hexfem_old; chmod +x /tmp/hexfem_old
OLD=/tmp/hexfem_old; NEW=$PWD/.device/bin/hexfem
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { H=$1; tag=$2; shift 2
  RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "halo exchanges|wall|  mesh |problem and|output  |AMG set-up cold|device and linear" | sed 's/^.*std...>://' | cut -c1-220; }
RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW run $NB $C $X -o /tmp/o/w --overwrite > /dev/null 2>&1
run $NEW new1
run $OLD old1
run $NEW new2
for ex in ipc nccl; do RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW bench gamg --problem ex56 --m 66 --device cuda --exchange $ex > $OUT/gamg_$ex.txt 2>&1; echo "== gamg $ex rc $?"; grep -vE "1,1" $OUT/gamg_$ex.txt | grep -E "slowest|exchange|CG iterations" | sed 's/^.*std...>://' | cut -c1-200 | head -4; done
echo "end at ${SECONDS}s"
