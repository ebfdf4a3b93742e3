#!/bin/bash
# stop 63 call 5 (nvidia-h200): a trace build of af74bc8 (trace_marks_af74bc8.patch: stop 62's marks rebased, with
# marks in the ranks' strength graph and aggregation; never committed as code) on one rank at 104^3, twice, after a
# warm-up: where a rank's graph and aggregation stages go (17 and 19 ms against 2.7 and 12 ms in one process).
source scripts/device_ab.sh
gunzip -c .devq/trace/hexfem.gz > /tmp/hx_tr && chmod +x /tmp/hx_tr
timeout 60 /tmp/hx_tr bench gamg --m 66 --device cuda --distributed --solves 2 > /dev/null 2>&1
for i in 1 2; do
  HEXFEM_TR=1 RAYON_NUM_THREADS=16 timeout 90 /tmp/hx_tr bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/trace_$i.txt 2>&1
  echo "trace $i rc $?: $(grep -o 'host cold set-up [0-9.]* s: graph [0-9.]*, aggregation [0-9.]*' /tmp/r/trace_$i.txt | head -1)"
done
grep -E "^TR (g |a |rg )" /tmp/r/trace_2.txt | head -40
pack c5
echo "end at ${SECONDS}s"
