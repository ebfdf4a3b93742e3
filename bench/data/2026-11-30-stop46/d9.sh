#!/bin/bash
# stop 46 call 9: a TEMPORARY trace build of 5afbf42 (marks: each level's smoothers and Galerkin phases of a hot update, each
# eigenvalue estimate's start, estimate and host dot time; HEXFEM_TRACE=1): mpirun -np 2 bench gamg ex56 104 --device cuda
mkdir -p $OUT; SECONDS=0
gunzip -c .devq/hexfem_hot.gz > /tmp/hexfem_hot; chmod +x /tmp/hexfem_hot
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HEXFEM_TRACE=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_TRACE"
RAYON_NUM_THREADS=16 timeout 120 $MPI -np 2 /tmp/hexfem_hot bench gamg --problem ex56 --m 66 --device cuda > /dev/null 2>&1
RAYON_NUM_THREADS=16 timeout 120 $MPI -np 2 /tmp/hexfem_hot bench gamg --problem ex56 --m 104 --device cuda > $OUT/hot2.txt 2>&1; echo "== 2 ranks rc $? at ${SECONDS}s"
RAYON_NUM_THREADS=16 timeout 120 $MPI -np 1 /tmp/hexfem_hot bench gamg --problem ex56 --m 104 --device cuda > $OUT/hot1.txt 2>&1; echo "== 1 rank rc $? at ${SECONDS}s"
grep "^\[1,0\]" $OUT/hot2.txt | grep "TRACE hot" | tail -4 | sed 's/^.*TRACE //'
grep "^\[1,0\]" $OUT/hot2.txt | grep "TRACE emax" | tail -4 | sed 's/^.*TRACE //'
grep "TRACE hot" $OUT/hot1.txt | tail -4 | sed 's/^.*TRACE //'
echo "end at ${SECONDS}s"
