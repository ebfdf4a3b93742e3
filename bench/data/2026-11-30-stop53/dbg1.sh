#!/bin/bash
# stop 53 call 2 (nvidia-h200-x2): where rank 0's `output` stage goes on 2 GPUs, 104^3 (a scratch build of ffb8c59
# with timing prints: TMPGATHER per window gather, TMPOUT per step, TMPCREATE the mesh's creation and the undeformed cells,
# TMPNEW RankOutput::new; not committed), and the same on one GPU.
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/dbg/hexfem.gz > /tmp/hx; chmod +x /tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
for i in warm 1 2; do RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx run inputs/neo_hookean_block.yaml $C -o /tmp/o/two$i --overwrite -v > /tmp/r/two$i.txt 2>&1; echo "== two$i rc $? at ${SECONDS}s"; done
grep -E "TMP|  output  |wall" /tmp/r/two2.txt | sed 's/^\[1,\([01]\)\]<std...>:/\1 /' | cut -c1-120
for i in warm 1; do timeout 90 /tmp/hx run inputs/neo_hookean_block.yaml $C -o /tmp/o/one$i --overwrite -v > /tmp/r/one$i.txt 2>&1; echo "== one$i rc $? at ${SECONDS}s"; done
grep -E "TMP|  output  |wall|converged state" /tmp/r/one1.txt | cut -c1-120
cd /tmp/r && tar czf $OUT/dbg1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
