#!/bin/bash
# stop 52 call 7 (nvidia-h200, its 16 cores): the host's hot Galerkin product, fused (default) against the streamed
# product with batches of 256 (its default), 1024, 4096 and 16384 fine rows (a scratch build of 1b42ac1 with the
# environment variable HEXFEM_TMP_BATCH choosing the streamed batch; not committed). ex56 66^3, 3 solves.
mkdir -p /tmp/r $OUT; SECONDS=0
gunzip -c .devq/dbg/hexfem.gz > /tmp/hx; chmod +x /tmp/hx
for i in 1 2; do for b in fused 256 1024 4096 16384; do
 if [ $b = fused ]; then unset HEXFEM_TMP_BATCH; else export HEXFEM_TMP_BATCH=$b; fi
 RAYON_NUM_THREADS=16 timeout 60 /tmp/hx bench gamg --m 66 --solves 3 --json > /tmp/r/cpu_${b}_$i.json 2>/dev/null
 python3 -c "
import json; d=json.load(open('/tmp/r/cpu_${b}_$i.json'))
print('$b', 'cold', round(d['setup_cold_s'],4), 'hot', [round(x,4) for x in d['setup_hot_all_s']], 'galerkin numeric', round(d['galerkin_numeric_s'],4), 'its', d['iterations'])"
done; done
cd /tmp/r && tar czf $OUT/call7.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
