#!/bin/bash
# stop 59 call 2 (nvidia-h200): a trace build of 5dd6a87 (temporary marks "TR", the time since the previous mark,
# never committed): where the ranks' cold set-up goes, ex56 104^3: `bench gamg --distributed` on one process (the
# ranks' path on one rank) and `mpirun -np 2 bench gamg` with the ranks sharing the GPU.
# The marks: call2_trace_marks.patch (on 5dd6a87).
mkdir -p $OUT /tmp/r; SECONDS=0
gunzip -c .devq/trace/hexfem.gz > /tmp/hx; chmod +x /tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 100 /tmp/hx bench gamg --m 66 --device cuda --solves 2 > /dev/null 2>&1
for i in 1 2; do
  HEXFEM_TR=1 RAYON_NUM_THREADS=16 timeout 100 /tmp/hx bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/dist_$i.txt 2>&1
  echo "dist $i rc $? at ${SECONDS}s"
done
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x HEXFEM_TR -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
HEXFEM_TR=1 RAYON_NUM_THREADS=8 timeout 150 $MPI /tmp/hx bench gamg --m 104 --device cuda --solves 2 > /tmp/r/two.txt 2>&1
echo "two rc $? at ${SECONDS}s"
grep -v "^TR" /tmp/r/dist_2.txt | tail -8
grep -E "^TR" /tmp/r/dist_2.txt | head -75
grep -E "1,0\]" /tmp/r/two.txt | grep -v TR | tail -6
grep -E "1,0\].*TR" /tmp/r/two.txt | head -75
cd /tmp/r && tar czf $OUT/t2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
