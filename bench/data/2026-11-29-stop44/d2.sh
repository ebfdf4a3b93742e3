#!/bin/bash
# stop 44 call 2 (nvidia-h200-x2): where a GPU rank's cold set-up goes at 104^3 (temporary trace marks, binary of 96db7e1 + /work/notes/trace44.py, never committed); the gamg 66 Galerkin numeric of call 1 again; the 1-GPU run's stage table
mkdir -p $OUT /tmp/o; SECONDS=0
gunzip -c .devq/hexfem_trace.gz > /tmp/hx; chmod +x /tmp/hx; H=/tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
MPIT="${MPI/-np 2/-x HEXFEM_TRACE -np 2}"
summ() { grep "^TRACE" $1 | awk '{s[$2]+=$3; c[$2]++} END{for(k in s) printf "%-34s %3d %8.4f\n", k, c[k], s[k]}' | sort -k3 -nr | head -60; }
for i in 1 2; do RAYON_NUM_THREADS=16 timeout 100 $MPI $H bench gamg --problem ex56 --m 66 --device cuda > $OUT/g66_$i.txt 2>&1; echo "== gamg 66 #$i rc $?"; grep -E "host cold set-up" $OUT/g66_$i.txt | head -1 | cut -c1-250; done
RAYON_NUM_THREADS=16 HEXFEM_TRACE=1 timeout 100 $MPIT $H bench gamg --problem ex56 --m 104 --device cuda --solves 2 > $OUT/g104.txt 2>$OUT/g104_trace.txt; echo "== gamg 104 traced rc $?"
grep -E "host cold set-up|renewal for" $OUT/g104.txt | head -2 | cut -c1-330
summ $OUT/g104_trace.txt
C="--set device=cuda --set linear_solver.method=cg_amg"
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
RAYON_NUM_THREADS=16 timeout 100 $H run inputs/neo_hookean_block.yaml $C $X -o /tmp/o/one --overwrite -v > $OUT/one.txt 2>&1; echo "== one GPU rc $?"
grep -A24 "where the time went" $OUT/one.txt | cut -c1-120
echo "end at ${SECONDS}s"
