#!/bin/bash
# stop 54 call 6 (nvidia-h200-x2) on a62f020 (a rank's part of a state prepared and agreed on before the state's
# collectives): the MPI GPU tests; then 104^3 on 2 GPUs, displacement (2 runs).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 300 env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for i in warm 1 2; do RAYON_NUM_THREADS=16 timeout 90 $MPI .device/bin/hexfem run inputs/neo_hookean_block.yaml --set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement] -o /tmp/o/two$i --overwrite -v > /tmp/r/two$i.txt 2>&1; echo "== two$i rc $? at ${SECONDS}s $(grep -E 'wall|  output ' /tmp/r/two$i.txt | grep '1,0' | sed 's/^\[1,0\]<stdout>://' | tr -s ' ' | tr '\n' ';')"; done
cd /tmp/r && tar czf $OUT/call6.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
