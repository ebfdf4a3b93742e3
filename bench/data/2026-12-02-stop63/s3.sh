#!/bin/bash
# stop 63 call 3 (nvidia-h200): the final code ab0c0f3 (call 2's 5b3f006 with the exact sums' spill mended, the MIS
# neighbourhood minimum a warp a vertex on long rows, the kept device renewal's fallback for an unshared local A)
# against 0dd3977 (old, the code of b0f4ff2), alternated after warm-ups: bench gamg 66^3 and 104^3 (one process),
# one rank at 104^3; ncu's closed_min times (new); then the MPI GPU tests and the GPU tests.
source scripts/device_ab.sh
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 > /dev/null 2>&1; done
for i in 1 2 3; do for v in old new; do
  timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 --json > /tmp/r/g66_$v$i.json 2>/dev/null
done; done
for i in 1 2; do for v in old new; do
  timeout 60 /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/g104_$v$i.json 2>/dev/null
done; done
python3 - <<'PY'
import json
for m, runs in ((66, 3), (104, 2)):
    for v in ('old', 'new'):
        for i in range(1, runs + 1):
            try: d = json.load(open('/tmp/r/g%d_%s%d.json' % (m, v, i)))
            except Exception as e: print(m, v, i, 'missing', e); continue
            r = d['renewal']; t = r['renewal']['timings']; c = r['cold_timings']
            print('%d^3 %s%d: cold %.1f (aggregation %.2f) recompute %.1f (aggregation %.2f, smoother %.2f) keep %.1f | hot set-up %.1f solve %.1f ms | its %s' % (
              m, v, i, 1e3*r['cold_s'], 1e3*c['aggregation_s'], 1e3*r['renewal_s'], 1e3*t['aggregation_s'], 1e3*t['smoother_setup_s'],
              1e3*r['other_mode_s'], 1e3*d['setup_hot_s'], 1e3*d['solve_s'], d['iterations']))
PY
echo "one process at ${SECONDS}s"
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_$v bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/d104_$v$i.txt 2>&1
  echo "== one rank $v$i: $(grep -o 'cold set-up [0-9.]* s, hot update [0-9.]* s, hot solve [0-9.]* s' /tmp/r/d104_$v$i.txt | head -1) | $(grep -o 'recompute [0-9.]* s' /tmp/r/d104_$v$i.txt | head -1) | $(grep -o 'keep_aggregates [0-9.]* s' /tmp/r/d104_$v$i.txt | head -1) | $(grep -o 'CG iterations \[[0-9, ]*\]' /tmp/r/d104_$v$i.txt | head -1)"
done; done
timeout 90 /usr/local/cuda/bin/ncu --clock-control none -k regex:closed_min --metrics gpu__time_duration.sum --csv --page raw \
  /tmp/hx_new bench gamg --m 66 --device cuda --solves 2 > /tmp/r/ncu_min_new.csv 2>/dev/null
python3 - <<'PY'
import csv
lines = open('/tmp/r/ncu_min_new.csv').read().splitlines()
s = [i for i, l in enumerate(lines) if l.startswith('"ID","Process ID"')][0]
rows = list(csv.reader(lines[s:])); h = rows[0]; ti = h.index('gpu__time_duration.sum'); gi = h.index('Grid Size'); ki = h.index('Kernel Name')
by = {}
for r in rows[2:]:
    if len(r) > ti: by.setdefault((r[ki].split('(')[0], r[gi]), []).append(float(r[ti].replace(',', '')) / 1e3)
for k, v in sorted(by.items(), key=lambda kv: -len(kv[1])): print('new', k, '%d x mean %.1f us' % (len(v), sum(v) / len(v)))
PY
pack c3
echo "benches end at ${SECONDS}s"
mpi_gpu_tests 150; pack c3
left=$((560 - SECONDS)); echo "GPU tests with ${left}s"
[ $left -gt 60 ] && gpu_tests $left
grep -E "every_kernel_compiles_without_spills|exact_device_sums" /tmp/device-out/tests.log | head -3
pack c3
echo "end at ${SECONDS}s"
