#!/bin/bash
# stop 52 call 4 (nvidia-h200-x2): main db7c247 with timing prints of the output's events (not committed): the 104^3
# run on 2 GPUs and on one (where the ranks' output stage goes), and ex56 128^3 on 2 GPUs (cold set-up).
mkdir -p /tmp/o /tmp/r $OUT; SECONDS=0
gunzip -c .devq/dbg/hexfem.gz > /tmp/hx; chmod +x /tmp/hx; H=/tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
RAYON_NUM_THREADS=16 timeout 60 $MPI $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/w --overwrite > /dev/null 2>&1
for i in 1 2; do
RAYON_NUM_THREADS=16 timeout 60 $MPI $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/two$i --overwrite -v > /tmp/r/two$i.txt 2>&1; echo "== two$i rc $? at ${SECONDS}s"
grep -E "DBG" /tmp/r/two$i.txt | grep "1,0" | tr '\n' ' ' | sed 's/\[1,0\]<stderr>://g'; echo
grep -vE "1,1" /tmp/r/two$i.txt | grep -E "wall|  output  |converged|AMG set-up cold|AMG renewal|hot update|  solve  |  problem|uploads|assembly" | sed 's/^.*std...>://' | cut -c1-110
timeout 60 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/one$i --overwrite -v > /tmp/r/one$i.txt 2>&1; echo "== one$i rc $? at ${SECONDS}s"
grep -E "DBG" /tmp/r/one$i.txt | tr '\n' ' '; echo
grep -E "wall|  output  |converged" /tmp/r/one$i.txt | cut -c1-110
done
RAYON_NUM_THREADS=16 timeout 150 $MPI $H bench gamg --m 128 --device cuda --solves 2 --json > /tmp/r/mpi128.txt 2>&1; echo "mpi gamg 128 rc $? at ${SECONDS}s"
grep -oE '"setup_cold_s":[^,]*|"setup_hot_s":[^,]*|"solve_[a-z]*_s":[^,]*|"iterations":[^]]*' /tmp/r/mpi128.txt | head -12
cd /tmp/r && tar czf $OUT/call4.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
