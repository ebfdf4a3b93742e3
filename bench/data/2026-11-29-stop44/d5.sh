#!/bin/bash
# stop 44 call 5 (nvidia-h200-x2): main 4d7bdda's hexfem (HugePageAlloc) with huge pages (default) against HEXFEM_HUGE_PAGES=off, alternated:
# the 104^3 run on 2 GPUs and on 1 GPU; and the glibc tunable on 3806bf1's binary for reference
mkdir -p $OUT /tmp/o; SECONDS=0
cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag
gunzip -c .devq/hexfem_hp.gz > /tmp/hx; chmod +x /tmp/hx; H=/tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { tag=$1; hp=$2
  HEXFEM_HUGE_PAGES=$hp RAYON_NUM_THREADS=16 timeout 100 mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_HUGE_PAGES -np 2 $H run $NB $C $X -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|problem and|output  |AMG set-up cold|AMG hot|solve  " | sed 's/^.*std...>://' | cut -c1-120; }
one() { tag=$1; hp=$2
  HEXFEM_HUGE_PAGES=$hp RAYON_NUM_THREADS=16 timeout 100 $H run $NB $C $X -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|problem and|output  |AMG set-up cold|AMG hot" $OUT/$tag.txt | cut -c1-120; }
run w on > /dev/null
for i in 1 2; do run hp_on$i on; run hp_off$i off; done
for i in 1 2; do one one_on$i on; one one_off$i off; done
echo "end at ${SECONDS}s"
