#!/bin/bash
# stop 63 call 1 (nvidia-h200): main 0dd3977 (the code of b0f4ff2) staged. Where the one-process renewal
# (`recompute`, issue 26's 66^3 goal <= 20 ms) spends its time: three timed runs, then ncu's per-launch GPU times of
# one `bench gamg --m 66 --device cuda --solves 2` (kernel order kept, to cut out the renewal's launches).
source scripts/device_ab.sh
timeout 60 /tmp/hx_new bench gamg --m 66 --device cuda --solves 2 > /dev/null 2>&1
for i in 1 2 3; do
  timeout 60 /tmp/hx_new bench gamg --m 66 --device cuda --solves 2 --json > /tmp/r/g66_$i.json 2>/dev/null
done
python3 - <<'PY'
import json
for i in (1,2,3):
    d=json.load(open('/tmp/r/g66_%d.json'%i)); r=d['renewal']; t=r['renewal']['timings']
    print('66^3 run %d: cold %.1f ms recompute %.1f keep %.1f its %s | %s' % (i, 1e3*r['cold_s'], 1e3*r['renewal_s'],
      1e3*r['other_mode_s'], d['iterations'], ' '.join('%s %.2f'%(k[:-2],1e3*v) for k,v in t.items() if k.endswith('_s'))))
PY
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
echo "ncu: $NCU at ${SECONDS}s"
HEXFEM_TR=0 timeout 300 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
  /tmp/hx_new bench gamg --m 66 --device cuda --solves 2 --json > /tmp/r/ncu66.csv 2> /tmp/r/ncu66.err
echo "ncu rc $? at ${SECONDS}s, $(wc -l < /tmp/r/ncu66.csv) lines"
gzip -9 /tmp/r/ncu66.csv
pack c1
echo "end at ${SECONDS}s"
