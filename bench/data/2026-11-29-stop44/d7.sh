#!/bin/bash
# stop 44 call 7 (nvidia-h200-x2): Open MPI's start-up on ranks (the runs' "start-up" stage 0.28 s): the 104^3 run of main 2a6a5bf's
# hexfem (= 4d7bdda's binary) with Open MPI's defaults against --mca pml ob1 --mca btl self,vader (shared memory only), alternated
mkdir -p $OUT /tmp/o; SECONDS=0
mpirun --version | head -1; ompi_info 2>/dev/null | grep -E "MCA (pml|btl)" | awk '{print $3}' | paste -sd' '
gunzip -c .devq/hexfem_hp.gz > /tmp/hx; chmod +x /tmp/hx; H=/tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { tag=$1; shift
  t0=$(date +%s.%N); RAYON_NUM_THREADS=16 timeout 100 mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH "$@" -np 2 $H run $NB $C $X -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  rc=$?; t1=$(date +%s.%N); echo "== $tag rc $rc at ${SECONDS}s, mpirun wall $(python3 -c "print(round($t1 - $t0, 3))") s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|start-up|output  |AMG set-up cold|AMG hot|solve  " | sed 's/^.*std...>://' | cut -c1-120; }
run w > /dev/null
for i in 1 2; do run default$i; run sm$i --mca pml ob1 --mca btl self,vader; done
echo "end at ${SECONDS}s"
