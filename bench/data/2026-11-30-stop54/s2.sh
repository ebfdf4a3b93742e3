#!/bin/bash
# stop 54 call 2 (nvidia-h200-x2): where the 2-GPU run's remaining `output` goes (a scratch build of c897894 with timing
# prints: TMP new/create/undeformed/first/figures/snapshot/submitted/job/cells/check+inverted/settled/written/end; not
# committed), 104^3, displacement only and every field.
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/dbg/hexfem.gz > /tmp/hx; chmod +x /tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104]"
for i in warm 1 2; do RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx run inputs/neo_hookean_block.yaml $C --set output.fields=[displacement] -o /tmp/o/two$i --overwrite -v > /tmp/r/two$i.txt 2>&1; echo "== two$i rc $? at ${SECONDS}s"; done
grep -E "TMP|  output  |wall" /tmp/r/two2.txt | sed 's/^\[1,\([01]\)\]<std...>:/\1 /' | cut -c1-120
RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx run inputs/neo_hookean_block.yaml $C -o /tmp/o/all --overwrite -v > /tmp/r/all.txt 2>&1; echo "== all rc $? at ${SECONDS}s"
grep -E "TMP|  output  |wall" /tmp/r/all.txt | sed 's/^\[1,\([01]\)\]<std...>:/\1 /' | grep "^0 " | cut -c1-120
cd /tmp/r && tar czf $OUT/dbg.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
