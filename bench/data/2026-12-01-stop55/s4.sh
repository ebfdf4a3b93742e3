#!/bin/bash
# stop 55 call 4 (nvidia-h200, 2 ranks share the GPU; 5c84c8a): what a renewal on ranks moves between host and GPU, stage
# by stage (bench gamg's JSON and the run's summary), against one process.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
H=.device/bin/hexfem
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
for i in 1 2; do RAYON_NUM_THREADS=8 timeout 120 $MPI $H bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/g104_$i.json 2>/tmp/r/g104_$i.err; echo "g104 $i rc $? at ${SECONDS}s"; done
timeout 120 $H bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/g104_one.json 2>/dev/null; echo "one rc $? at ${SECONDS}s"
RAYON_NUM_THREADS=8 timeout 90 $MPI $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/two --overwrite -v > /tmp/r/two.txt 2>&1; echo "two rc $? at ${SECONDS}s"
timeout 90 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/one --overwrite -v > /tmp/r/one.txt 2>&1; echo "one rc $? at ${SECONDS}s"
cp /tmp/o/two/*.summary.json /tmp/r/two.summary.json; cp /tmp/o/one/*.summary.json /tmp/r/one.summary.json
cd /tmp/r && tar czf $OUT/t4.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
