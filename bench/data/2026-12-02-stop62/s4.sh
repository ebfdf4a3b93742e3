#!/bin/bash
# stop 62 call 4 (nvidia-h200): the final code (b0f4ff2: call 3's e7f2c13, the one-pass DistPattern check f880526, the
# aggregate labels through a bitmap b0f4ff2) staged; the first script on scripts/device_ab.sh. The MPI GPU tests first
# (the rank paths the changes run through), then `bench gamg --m 104 --device cuda --distributed --solves 2` on one
# rank against 904a2b5 (old), alternated after warm-ups, a trace build of b0f4ff2 (trace_marks_b0f4ff2.patch, never
# committed as code) on one rank, then the GPU tests with the time left.
source scripts/device_ab.sh
mpi_gpu_tests 150; pack c4
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --distributed --solves 2 > /dev/null 2>&1; done
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_$v bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/d104_$v$i.txt 2>&1
  echo "== one rank $v$i: $(grep -E 'host cold set-up' /tmp/r/d104_$v$i.txt | head -1 | tr -s ' ') | $(grep -o 'cold set-up [0-9.]* s' /tmp/r/d104_$v$i.txt | head -1) | $(grep -o 'CG iterations \[[0-9, ]*\]' /tmp/r/d104_$v$i.txt | head -1)"
done; done
gunzip -c .devq/trace/hexfem.gz > /tmp/hx_tr && chmod +x /tmp/hx_tr
HEXFEM_TR=1 RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_tr bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/trace_one.txt 2>&1
echo "== trace one rank rc $? at ${SECONDS}s: $(grep -o 'cold set-up [0-9.]* s' /tmp/r/trace_one.txt | head -1)"
pack c4
left=$((420 - SECONDS)); echo "GPU tests with ${left}s"
[ $left -gt 60 ] && gpu_tests $left
pack c4
echo "end at ${SECONDS}s"
