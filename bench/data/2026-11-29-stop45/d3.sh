#!/bin/bash
# stop 45 call 3 (nvidia-h200-x2): temporary output marks (HEXFEM_TRACE=1, never committed), the write_state gathers and puts split; the shared-memory transport default (fbe9839)
mkdir -p $OUT /tmp/o; SECONDS=0
gunzip -c .devq/hexfem_tr.gz > /tmp/hexfem_tr; chmod +x /tmp/hexfem_tr
H=/tmp/hexfem_tr
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HEXFEM_TRACE=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_TRACE -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X -o /tmp/o/w --overwrite > /dev/null 2>&1
for i in 1 2; do RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X -o /tmp/o/t$i --overwrite -v > $OUT/tr$i.txt 2>&1; echo "== tr$i rc $? at ${SECONDS}s"; grep -E "TRACE|  output |wall" $OUT/tr$i.txt | sed 's/^.*std...>://' | cut -c1-200; done
RAYON_NUM_THREADS=16 timeout 100 $H run $NB $C $X -o /tmp/o/one --overwrite -v > $OUT/one.txt 2>&1; echo "== one rc $? at ${SECONDS}s"; grep -E "TRACE|  output |wall" $OUT/one.txt | cut -c1-200
echo "end at ${SECONDS}s"
