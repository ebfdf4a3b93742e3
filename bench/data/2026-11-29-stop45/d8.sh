#!/bin/bash
# stop 45 call 8 (nvidia-h200-x2): HEAD's hexfem vs f5ba595's (66a06ab's binary), the 104^3 run on 2 GPUs alternated, 3 each (call 7's single run was slower in every host stage)
mkdir -p $OUT /tmp/o; SECONDS=0
gunzip -c .devq/hexfem_new.gz > /tmp/hexfem_new; gunzip -c .devq/hexfem_prev.gz > /tmp/hexfem_old; chmod +x /tmp/hexfem_new /tmp/hexfem_old
NEW=/tmp/hexfem_new; OLD=/tmp/hexfem_old
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { H=$1; tag=$2
  RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|start-up|  mesh |problem and|output  |AMG set-up cold" | sed 's/^.*std...>://' | cut -c1-200; }
RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW run $NB $C $X -o /tmp/o/w --overwrite > /dev/null 2>&1
RAYON_NUM_THREADS=16 timeout 100 $MPI $OLD run $NB $C $X -o /tmp/o/w2 --overwrite > /dev/null 2>&1
run $NEW new1; run $OLD old1; run $NEW new2; run $OLD old2; run $NEW new3; run $OLD old3
echo "end at ${SECONDS}s"
