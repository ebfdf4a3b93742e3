#!/bin/bash
# stop 56 call 3 (nvidia-h200): the coarsest inverse in shared memory, the strength passes and the aggregate choices one
# warp a row the MIS rounds queued four a look, the ranks' strength passes
# and closed minima one warp a row , the MIS closed minima one thread a vertex again (85ebfd8, new) against 9f25544 (old), three alternations: bench gamg at 66^3 and 104^3 alternated after a warm-up; 2 ranks sharing the GPU (bench gamg --m 104, old and
# new: the ranks' graph and aggregation stages); then the GPU tests and the MPI GPU tests.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_old /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 3 --json > /dev/null 2>&1; done
for i in 1 2 3; do for v in old new; do for m in 66 104; do timeout 60 /tmp/hx_$v bench gamg --m $m --device cuda --solves 3 --json > /tmp/r/g${m}_$v$i.json 2>/dev/null; done; done; done
python3 - <<'PY'
import json
for m in (66, 104):
    for v in ('old','new'):
        rows=[]
        for i in (1,2,3):
            d=json.load(open('/tmp/r/g%d_%s%d.json'%(m,v,i)))
            rw=d['renewal']; t=rw['renewal']['timings']; c=rw['cold_timings']
            rows.append('cold %.1f | recompute %.1f (graph %.2f agg %.2f tent %.2f smooth %.2f gal %.2f smoother %.2f coarse %.2f) | keep %.1f | its %s' % (
              1e3*rw['cold_s'], 1e3*rw['renewal_s'], 1e3*t['graph_s'], 1e3*t['aggregation_s'], 1e3*t['tentative_s'], 1e3*t['smoothing_s'],
              1e3*t['galerkin_numeric_s'], 1e3*t['smoother_setup_s'], 1e3*t['coarse_factor_s'], 1e3*rw['other_mode_s'], d['iterations']))
        print(m, v); [print('   ', r) for r in rows]
PY
echo "bench at ${SECONDS}s"
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for v in old new; do RAYON_NUM_THREADS=8 timeout 120 $MPI /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/mpi_$v.json 2>/dev/null; echo "mpi $v rc $? at ${SECONDS}s"
python3 - $v <<'PY'
import json,sys
for line in open('/tmp/r/mpi_%s.json' % sys.argv[1]):
    line = line.strip()
    if not line.startswith('{'): continue
    d = json.loads(line)
    for r in d['per_rank']:
        c = r['setup_cold_stages']; w = r['renewal_recompute_stages']
        print('  rank %d cold %.1f (graph %.1f agg %.1f) recompute %.1f (graph %.1f agg %.1f) keep %.1f' % (r['rank'], 1e3*r['setup_cold_s'], 1e3*c['graph_s'], 1e3*c['aggregation_s'],
              1e3*r['renewal_recompute_s'], 1e3*w['graph_s'], 1e3*w['aggregation_s'], 1e3*r['renewal_keep_s']))
PY
done
timeout 420 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "the_device_plan|coarse_inverse|aggregat|strength" /tmp/device-out/tests.log | grep -E " ok$|FAILED" | head -20
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cd /tmp/r && tar czf $OUT/t3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
