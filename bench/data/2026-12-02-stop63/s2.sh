#!/bin/bash
# stop 63 call 2 (nvidia-h200): 5b3f006 (new: the exact sums' last block and bin window, one device local A a
# level) against 0dd3977 (old: the code of b0f4ff2), alternated after warm-ups: bench gamg at 66^3 and 104^3 (one
# process), the ranks' path on one rank at 104^3, a neo_hookean_block run at 104^3; ncu's exact_bins times; then
# the MPI GPU tests and the GPU tests with the time left.
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
            r = d['renewal']; t = r['renewal']['timings']
            print('%d^3 %s%d: cold %.1f recompute %.1f (smoother %.2f) keep %.1f | hot set-up %.1f solve %.1f hot solve %.1f ms | its %s' % (
              m, v, i, 1e3*r['cold_s'], 1e3*r['renewal_s'], 1e3*t['smoother_setup_s'], 1e3*r['other_mode_s'],
              1e3*d['setup_hot_s'], 1e3*d['solve_s'], 1e3*d['solve_hot_s'], d['iterations']))
PY
echo "one process at ${SECONDS}s"
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_$v bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/d104_$v$i.txt 2>&1
  echo "== one rank $v$i: $(grep -o 'cold set-up [0-9.]* s, hot update [0-9.]* s, hot solve [0-9.]* s' /tmp/r/d104_$v$i.txt | head -1) | $(grep -o 'keep_aggregates [0-9.]* s' /tmp/r/d104_$v$i.txt | head -1) | $(grep -o 'CG iterations \[[0-9, ]*\]' /tmp/r/d104_$v$i.txt | head -1)"
done; done
mkdir -p /tmp/o
for i in 1 2; do for v in old new; do
  timeout 60 /tmp/hx_$v run inputs/neo_hookean_block.yaml --set device=cuda --set linear_solver.method=cg_amg \
    --set mesh.box.cells=[104,104,104] --set output.fields=[displacement] -o /tmp/o/$v --overwrite -v > /tmp/r/run104_$v$i.txt 2>&1
  echo "== run 104 $v$i rc $?: $(grep -E '^  (solve|AMG hot update|AMG renewal|AMG set-up cold) ' /tmp/r/run104_$v$i.txt | tr -s ' ' | tr '\n' ';') $(grep -o 'wall [0-9.]* s' /tmp/r/run104_$v$i.txt | head -1)"
done; done
cmp /tmp/o/old/neo_hookean_block.h5 /tmp/o/new/neo_hookean_block.h5 && echo "results files equal"
NCU=/usr/local/cuda/bin/ncu
for v in old new; do
  timeout 120 $NCU --clock-control none -k regex:exact_bins --metrics gpu__time_duration.sum --csv --page raw \
    /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 > /tmp/r/ncu_exact_$v.csv 2>/dev/null
  python3 - "$v" <<'PY'
import csv, sys
lines = open('/tmp/r/ncu_exact_%s.csv' % sys.argv[1]).read().splitlines()
s = [i for i, l in enumerate(lines) if l.startswith('"ID","Process ID"')][0]
rows = list(csv.reader(lines[s:])); h = rows[0]; ti = h.index('gpu__time_duration.sum'); gi = h.index('Grid Size')
t = [(float(r[ti].replace(',', '')) / 1e3, r[gi]) for r in rows[2:] if len(r) > ti]
by = {}
for x, g in t: by.setdefault(g, []).append(x)
print(sys.argv[1], 'exact_bins launches', len(t), 'total %.2f ms' % (sum(x for x, _ in t) / 1e3),
      ' '.join('%s: %d x mean %.1f us' % (g, len(v), sum(v) / len(v)) for g, v in sorted(by.items(), key=lambda kv: -len(kv[1]))[:5]))
PY
done
pack c2
echo "benches end at ${SECONDS}s"
mpi_gpu_tests 150; pack c2
left=$((540 - SECONDS)); echo "GPU tests with ${left}s"
[ $left -gt 60 ] && gpu_tests $left
pack c2
echo "end at ${SECONDS}s"
