#!/bin/bash
# stop 43 call 5 (nvidia-h200-x2): main 2a0... (output, GPU cell fields, GPU warm-up on ranks, tentative) + temporary timers of the device connection: 104^3 on 2 GPUs new x2 vs 70d7981
mkdir -p $OUT /tmp/o; SECONDS=0
gunzip -c .devq/hexfem_t5.gz > /tmp/hexfem_new; gunzip -c .devq/hexfem_old.gz > /tmp/hexfem_old; chmod +x /tmp/hexfem_new /tmp/hexfem_old
OLD=/tmp/hexfem_old; NEW=/tmp/hexfem_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x HEXFEM_TRACE -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { H=$1; tag=$2; shift 2
  RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "TRACE (select|connect|ipc|rank_dev)|wall|  mesh |problem and|output  |AMG set-up cold|device and linear" | sed 's/^.*std...>://' | cut -c1-200; }
RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW run $NB $C $X -o /tmp/o/w --overwrite > /dev/null 2>&1
export HEXFEM_TRACE=1
run $NEW new1
run $OLD old1
run $NEW new2
run $OLD old2
echo "end at ${SECONDS}s"
