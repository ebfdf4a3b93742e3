#!/bin/bash
# stop 44 call 9 (nvidia-h200-x2): main 66a06ab (RowGatherPlan agrees misplaced rows; the reduction plan bucketed): the MPI GPU tests; one 104^3 run on 2 GPUs
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT /tmp/o; SECONDS=0
timeout 250 env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RAYON_NUM_THREADS=16 timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2 .device/bin/hexfem run inputs/neo_hookean_block.yaml --set device=cuda --set linear_solver.method=cg_amg --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]' -o /tmp/o/r --overwrite -v > $OUT/r.txt 2>&1; echo "== run rc $? at ${SECONDS}s"
grep -vE "1,1" $OUT/r.txt | grep -E "wall|AMG set-up cold|^.*step " | sed 's/^.*std...>://' | cut -c1-150 | head -12
echo "end at ${SECONDS}s"
