#!/bin/bash
# stop 63 call 6 (nvidia-h200): 6f3d05f (a rank's aggregate sizes counted in an array, .devq/agg) against the staged
# 502fdc8 (before), one rank at 104^3 (`--distributed`), alternated after warm-ups: the aggregation stage of the cold
# set-up and of the renewal.
source scripts/device_ab.sh
gunzip -c .devq/agg/hexfem.gz > /tmp/hx_agg && chmod +x /tmp/hx_agg
for v in new agg; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --distributed --solves 2 > /dev/null 2>&1; done
for i in 1 2; do for v in new agg; do
  RAYON_NUM_THREADS=16 timeout 60 /tmp/hx_$v bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/d104_$v$i.txt 2>&1
  echo "== $v$i: $(grep -o 'host cold set-up [0-9.]* s: graph [0-9.]*, aggregation [0-9.]*' /tmp/r/d104_$v$i.txt | head -1) | $(grep -o 'recompute [0-9.]* s ([^)]*)' /tmp/r/d104_$v$i.txt | grep -o 'recompute [0-9.]* s\|aggregation [0-9.]*' | tr '\n' ' ') | $(grep -o 'CG iterations \[[0-9, ]*\]' /tmp/r/d104_$v$i.txt | head -1)"
done; done
pack c6
echo "end at ${SECONDS}s"
