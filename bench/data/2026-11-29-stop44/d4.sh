#!/bin/bash
# stop 44 call 4 (nvidia-h200: x2 no longer lent; 2 ranks share the GPU, 8 threads each): page faults in a rank's host stages? the 104^3 2-GPU run of main 2fd8be5 with glibc's
# default malloc, with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (THP for malloc's mmaps), with jemalloc and mimalloc preloaded
mkdir -p $OUT /tmp/o; SECONDS=0
cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; ldd --version | head -1
gunzip -c .devq/hexfem_new.gz > /tmp/hx; chmod +x /tmp/hx; H=/tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { tag=$1; shift
  RAYON_NUM_THREADS=8 timeout 100 mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH "$@" -np 2 $H run $NB $C $X -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|problem and|output  |AMG set-up cold|AMG hot|assembly  " | sed 's/^.*std...>://' | cut -c1-120; }
run w
for i in 1 2; do
  run base$i
  run huge$i -x GLIBC_TUNABLES=glibc.malloc.hugetlb=1
  run jem$i -x LD_PRELOAD=$PWD/.devq/libjemalloc.so.2
  run mim$i -x LD_PRELOAD=$PWD/.devq/libmimalloc.so.2
done
one() { tag=$1; shift
  env "$@" RAYON_NUM_THREADS=16 timeout 100 $H run $NB $C $X -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|problem and|output  |AMG set-up cold|assembly  " $OUT/$tag.txt | cut -c1-120; }
for i in 1 2; do one one_base$i X=1; one one_huge$i GLIBC_TUNABLES=glibc.malloc.hugetlb=1; one one_jem$i LD_PRELOAD=$PWD/.devq/libjemalloc.so.2; done
echo "end at ${SECONDS}s"
