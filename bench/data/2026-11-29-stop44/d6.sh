#!/bin/bash
# stop 44 call 6 (nvidia-h200-x2): where a GPU rank's cold set-up goes with huge pages (main d31fd6e-era code (4d7bdda + docs) + trace44.py marks, never committed):
# bench gamg 104 (second process: kernels cached) and the 104^3 run on 2 GPUs, traced on rank 0
mkdir -p $OUT /tmp/o; SECONDS=0
gunzip -c .devq/hexfem_trace.gz > /tmp/hx; chmod +x /tmp/hx; H=/tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
MPIT="${MPI/-np 2/-x HEXFEM_TRACE -np 2}"
summ() { grep "^TRACE" $1 | awk '{s[$2]+=$3; c[$2]++} END{for(k in s) printf "%-34s %3d %8.4f\n", k, c[k], s[k]}' | sort -k3 -nr | head -$2; }
RAYON_NUM_THREADS=16 timeout 100 $MPI $H bench gamg --problem ex56 --m 104 --device cuda > $OUT/g104_w.txt 2>&1; echo "== warm-up rc $?"
C="--set device=cuda --set linear_solver.method=cg_amg"
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
RAYON_NUM_THREADS=16 timeout 100 $MPI $H run inputs/neo_hookean_block.yaml $C $X -o /tmp/o/w --overwrite > /dev/null 2>&1; echo "== run warm-up rc $?"
RAYON_NUM_THREADS=16 HEXFEM_TRACE=1 timeout 100 $MPIT $H bench gamg --problem ex56 --m 104 --device cuda > $OUT/g104.txt 2>$OUT/g104_trace.txt; echo "== gamg 104 traced rc $?"
grep -E "host cold set-up|renewal for" $OUT/g104.txt | head -2 | cut -c1-330
echo "-- first cold set-up, fine level (in order):"; awk '/^TRACE/{print $2, $3}' $OUT/g104_trace.txt | head -56 | paste -sd' ' | fold -w 240
echo "-- all set-ups of the bench, by name:"; summ $OUT/g104_trace.txt 30
RAYON_NUM_THREADS=16 HEXFEM_TRACE=1 timeout 100 $MPIT $H run inputs/neo_hookean_block.yaml $C $X -o /tmp/o/t --overwrite -v > $OUT/run.txt 2>$OUT/run_trace.txt; echo "== run traced rc $?"
grep -E "wall|AMG set-up cold" $OUT/run.txt | head -3
echo "-- the run's 4 cold set-ups, by name:"; summ $OUT/run_trace.txt 40
echo "end at ${SECONDS}s"
