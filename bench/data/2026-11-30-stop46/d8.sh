#!/bin/bash
# stop 46 call 8 (nvidia-h200-x2): a TEMPORARY trace build of f6c6f90 (marks inside a rank's cold coarsening and around PeerChannel::open, HEXFEM_TRACE=1): mpirun -np 2 bench gamg ex56 104 --device cuda, twice
mkdir -p $OUT; SECONDS=0
gunzip -c .devq/hexfem_trace.gz > /tmp/hexfem_trace; chmod +x /tmp/hexfem_trace
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HEXFEM_TRACE=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_TRACE -np 2"
for i in 1 2; do RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hexfem_trace bench gamg --problem ex56 --m 104 --device cuda > $OUT/trace$i.txt 2>&1; echo "== trace$i rc $? at ${SECONDS}s"; done
grep "^\[1,0\]" $OUT/trace2.txt | grep -c "PeerChannel::open"
echo "end at ${SECONDS}s"
