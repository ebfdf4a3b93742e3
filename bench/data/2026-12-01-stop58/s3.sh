#!/bin/bash
# stop 58 call 3 (nvidia-h200): a trace build of 5875d3b (temporary timing prints "TR", never committed):
# where a run's problem stage, uploads and output go, on one GPU (16 threads) and on 2 ranks sharing it.
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/trace/hexfem.gz > /tmp/hx; chmod +x /tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for i in 1 2; do
  RAYON_NUM_THREADS=16 timeout 60 /tmp/hx run inputs/neo_hookean_block.yaml $C -o /tmp/o/one --overwrite -v > /tmp/r/one_$i.txt 2>&1
  echo "one $i rc $? at ${SECONDS}s"
done
grep -E "^TR|problem and|uploads|output  |converged|wall" /tmp/r/one_2.txt
for i in 1 2; do
  RAYON_NUM_THREADS=8 timeout 90 $MPI /tmp/hx run inputs/neo_hookean_block.yaml $C -o /tmp/o/two --overwrite -v > /tmp/r/two_$i.txt 2>&1
  echo "two $i rc $? at ${SECONDS}s"
done
grep -E "TR|problem and|uploads|output  |converged|wall" /tmp/r/two_2.txt | grep "1,0\]"
cd /tmp/r && tar czf $OUT/t3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
