#!/bin/bash
# stop 42 call 1 (ed1aa10 + temporary trace wrappers, not committed) and call 2 (db40fa8..dd4a53e + trace): where a GPU rank's cold set-up spends its time (HEXFEM_TRACE lines per phase)
cd .devq && gunzip -f hexfem_trace.gz; chmod +x hexfem_trace; cd ..
mkdir -p $OUT; SECONDS=0
nvidia-smi -L
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
nccl=$(ls /usr/lib/x86_64-linux-gnu/libnccl.so.2* /usr/local/cuda*/lib64/libnccl.so.2* 2>/dev/null | head -n 1)
[ -z "$nccl" ] && nccl=$(find /usr /opt -name 'libnccl.so.2*' 2>/dev/null | head -n 1)
[ -n "$nccl" ] && { mkdir -p /tmp/hexfem-nccl; ln -sf "$nccl" /tmp/hexfem-nccl/libnccl.so; export LD_LIBRARY_PATH="/tmp/hexfem-nccl:$LD_LIBRARY_PATH"; }
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
H=$PWD/.devq/hexfem_trace
which perf gprof valgrind 2>&1 | head
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x HEXFEM_TRACE -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
export HEXFEM_TRACE=1
RAYON_NUM_THREADS=8 timeout 100 $MPI $H bench gamg --problem ex56 --m 66 --device cuda > $OUT/g66a.txt 2>&1; echo "g66a rc $? ${SECONDS}s"
RAYON_NUM_THREADS=8 timeout 100 $MPI $H bench gamg --problem ex56 --m 66 --device cuda > $OUT/g66b.txt 2>&1; echo "g66b rc $? ${SECONDS}s"
RAYON_NUM_THREADS=8 timeout 200 $MPI $H run inputs/neo_hookean_block.yaml --set device=cuda --set linear_solver.method=cg_amg --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]' -o /tmp/o104 --overwrite -v > $OUT/r104.txt 2>&1; echo "r104 rc $? ${SECONDS}s"
grep -E "slowest|cold set-up [0-9]" $OUT/g66b.txt | cut -c1-300
sed -n '/where the time went/,$p' $OUT/r104.txt
