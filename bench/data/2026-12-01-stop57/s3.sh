#!/bin/bash
# stop 57 call 3 (nvidia-h200): HEAD (new: the ranks' smoothing through a kept SmoothingMap) against 0444da2 (old):
# the distributed hierarchy on one process (bench gamg --distributed, no exchanges) at 104^3, alternated, and the
# one-process hierarchy; a trace build of HEAD (temporary marks, never committed: HEXFEM_TRACE) on the same bench:
# where the distributed path's cold set-up and renewals go; then the GPU tests and the MPI GPU tests.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; gunzip -c .devq/trace/hexfem.gz > /tmp/hx_tr; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 60 /tmp/hx_new bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1
for i in 1 2; do for v in old new; do
  timeout 90 /tmp/hx_$v bench gamg --m 104 --device cuda --solves 3 --distributed --json > /tmp/r/dist_${v}_$i.json 2>/tmp/r/dist_${v}_$i.err
done; done
timeout 60 /tmp/hx_new bench gamg --m 104 --device cuda --solves 3 --json > /tmp/r/serial_new.json 2>/dev/null
echo "benches at ${SECONDS}s"
python3 - <<'PY'
import json
def st(t): return ' '.join('%s=%.1f'%(k[:-2][:10],1e3*x) for k,x in t.items() if k.endswith('_s') and x>0)
def by(t): return ' '.join('%s=%d/%d'%(k[:5],b['host_to_device_bytes']//1000,b['device_to_host_bytes']//1000) for k,b in t['transfers'].items() if b['host_to_device_bytes']+b['device_to_host_bytes']>0)
s=json.load(open('/tmp/r/serial_new.json')); rw=s['renewal']
print('serial new: cold %.1f recompute %.1f (%s) keep %.1f its %s' % (1e3*rw['cold_s'], 1e3*rw['renewal_s'], st(rw['renewal']['timings']), 1e3*rw['other_mode_s'], s['iterations']))
for i in (1,2):
  for v in ('old','new'):
    try: d=json.load(open('/tmp/r/dist_%s_%d.json'%(v,i)))
    except Exception as e: print(v,i,'no json',e); continue
    r=d['per_rank'][0]
    print('%s %d distributed: cold %.1f | %s' % (v,i,1e3*r['setup_cold_s'], st(r['setup_cold_stages'])))
    print('   recompute %.1f | %s | kB %s' % (1e3*r['renewal_recompute_s'], st(r['renewal_recompute_stages']), by(r['renewal_recompute_stages'])))
    print('   keep %.1f | %s | its %s hot set-up %.1f hot solve %.1f' % (1e3*r['renewal_keep_s'], st(r['renewal_keep_stages']), d['iterations'], 1e3*d['setup_hot_s'], 1e3*d['solve_hot_s']))
PY
HEXFEM_TRACE=1 timeout 90 /tmp/hx_tr bench gamg --m 104 --device cuda --solves 2 --distributed --json > /tmp/r/trace.json 2>/tmp/r/trace.err; echo "trace rc $? at ${SECONDS}s"
python3 - <<'PY'
import re
marks=[]
for line in open('/tmp/r/trace.err'):
    m=re.match(r'TRACE (\S+) ([0-9.]+) ms',line)
    if m: marks.append((m.group(1),float(m.group(2))))
print(len(marks),'marks')
print(' '.join('%s=%.1f'%(k,v) for k,v in marks))
PY
timeout 330 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "one_rank|kept_renewal|amg_kernels_match" /tmp/device-out/*.log | grep -E " ok$|FAILED|passed" | head -10
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cd /tmp/r && tar czf $OUT/t3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
