#!/bin/bash
# stop 46 call 4 (nvidia-h200-x2): a6da3b2's hexfem with glibc's malloc, jemalloc and mimalloc (LD_PRELOAD, Debian 12's libraries carried): the 104^3 run on 2 GPUs and on 1, bench gamg ex56 104 on 2 GPUs
mkdir -p $OUT /tmp/o; SECONDS=0
gunzip -c .devq/hexfem_new.gz > /tmp/hexfem_new; chmod +x /tmp/hexfem_new; H=/tmp/hexfem_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
JE=$PWD/.devq/libjemalloc.so.2; MI=$PWD/.devq/libmimalloc.so.2
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { np=$1; pre=$2; tag=$3
  RAYON_NUM_THREADS=16 timeout 100 mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x LD_PRELOAD=$pre -np $np $H run $NB $C $X -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|AMG set-up cold|AMG hot|output  |assembly  |problem and|  mesh  " | sed 's/^.*std...>://' | cut -c1-200; }
RAYON_NUM_THREADS=16 timeout 100 mpirun --allow-run-as-root -x LD_LIBRARY_PATH -x HEXFEM_KERNEL_CACHE -np 1 $H run $NB $C $X -o /tmp/o/w1 --overwrite > /dev/null 2>&1
for i in 1 2; do run 2 "" plain2_$i; run 2 $JE jemalloc2_$i; run 2 $MI mimalloc2_$i; done
run 1 "" plain1; run 1 $JE jemalloc1
gamg() { pre=$1; tag=$2
  RAYON_NUM_THREADS=16 timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x LD_PRELOAD=$pre -np 2 $H bench gamg --problem ex56 --m 104 --device cuda > $OUT/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"
  grep -E "slowest|host cold set-up" $OUT/$tag.txt | grep -v "^\[1,1\]" | sed 's/^.*std...>://' | cut -c1-250; }
gamg "" gamg_plain; gamg $JE gamg_jemalloc
echo "end at ${SECONDS}s"
