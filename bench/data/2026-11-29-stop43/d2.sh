#!/bin/bash
# stop 43 call 2: timers (trace binary of 70d7981 + temporary timers) on nvidia-h200-x2: where the 2-GPU 104^3 run's output, device set-up and AMG cold set-up go
mkdir -p $OUT; SECONDS=0
gunzip -c .devq/hexfem_trace.gz > /tmp/hexfem_trace; chmod +x /tmp/hexfem_trace
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HEXFEM_TRACE=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x HEXFEM_TRACE -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hexfem_trace run $NB $C $X -o /tmp/o/w --overwrite -v > /dev/null 2>&1
RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hexfem_trace run $NB $C $X -o /tmp/o/t --overwrite -v > $OUT/trace104.txt 2>&1; echo "rc $? at ${SECONDS}s"
grep -E "TRACE|wall|output  |AMG set-up cold" $OUT/trace104.txt | grep -v "TRACE dev\.\|TRACE tent\|TRACE agg" | head -80
echo "--- amg traces summed (rank 0)"
grep "^\[1,0\]<stderr>:TRACE" $OUT/trace104.txt | awk '{n=$2; v=$NF; if (v ~ /^[0-9.]+$/) {s[n]+=v}} END {for (k in s) printf "%-40s %.3f\n", k, s[k]}' | sort -k2 -nr | head -40
RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hexfem_trace run $NB $C --set 'mesh.box.cells=[104,104,104]' -o /tmp/o/all --overwrite -v > $OUT/trace104_all.txt 2>&1; echo "all fields rc $? at ${SECONDS}s"
grep -E "TRACE (files|first|step|Rank|rank_d|layout|gather)|wall|output  " $OUT/trace104_all.txt | grep "1,0" | head -50
echo "end at ${SECONDS}s"
