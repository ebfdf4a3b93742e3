#!/bin/bash
# stop 46 call 3 (nvidia-h200-x2): a6da3b2's hexfem vs ec24e77's: mpirun -np 2 bench gamg ex56 104 --device cuda (hot update by phase), alternated, 2 each
mkdir -p $OUT /tmp/o; SECONDS=0
for b in new prev; do gunzip -c .devq/hexfem_$b.gz > /tmp/hexfem_$b; chmod +x /tmp/hexfem_$b; done
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
gamg() { H=$1; tag=$2
  RAYON_NUM_THREADS=16 timeout 120 $MPI $H bench gamg --problem ex56 --m 104 --device cuda > $OUT/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"
  grep -E "slowest|host cold set-up|hot update|renewal" $OUT/$tag.txt | grep -v "^\[1,1\]" | sed 's/^.*std...>://' | cut -c1-330; }
gamg /tmp/hexfem_new gamg_new1; gamg /tmp/hexfem_prev gamg_prev1; gamg /tmp/hexfem_new gamg_new2; gamg /tmp/hexfem_prev gamg_prev2
echo "end at ${SECONDS}s"
