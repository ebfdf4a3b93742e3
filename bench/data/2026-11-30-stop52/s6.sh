#!/bin/bash
# stop 52 call 8 (nvidia-h200): 8243bd6 (one Galerkin product in fine-row order, batches of 4096 rows; no fused
# strategy): the GPU tests (device products against the host's, gpu_runs) and the host's hot Galerkin product on 16 cores.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 300 env TESTS=1 MPI_TESTS=0 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:|GPU tests" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "^gpu_runs: [a-z_]*: [0-9]+ steps" /tmp/device-out/tests.log | sed 's/, output bytes.*//' | grep -v "within 0.0e0, energy within 0.0e0, cell fields within 0.0e0" | head
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
for i in 1 2; do RAYON_NUM_THREADS=16 timeout 60 .device/bin/hexfem bench gamg --m 66 --solves 3 --json > /tmp/r/cpu66_$i.json 2>/dev/null
 python3 -c "
import json; d=json.load(open('/tmp/r/cpu66_$i.json'))
print('cpu66', 'cold', round(d['setup_cold_s'],4), 'hot', [round(x,4) for x in d['setup_hot_all_s']], 'galerkin numeric', round(d['galerkin_numeric_s'],4), 'its', d['iterations'], 'rss MB', d.get('peak_rss_mb'))"; done
cd /tmp/r && tar czf $OUT/call8.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
