#!/bin/bash
# stop 57 call 2 (nvidia-h200): 4a49935. The one-rank upload test (MPI, -np 1) and the other MPI GPU tests; then on the
# one GPU, without exchanges: the ranks' distributed hierarchy on one process (bench gamg --distributed) against the
# one-process hierarchy at 66^3 and 104^3, stage by stage (cold set-up, renewals), alternated, two runs each.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
H=.device/bin/hexfem
timeout 60 $H bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1
for i in 1 2; do for m in 66 104; do
  timeout 60 $H bench gamg --m $m --device cuda --solves 3 --json > /tmp/r/serial_${m}_$i.json 2>/tmp/r/serial_${m}_$i.err
  timeout 90 $H bench gamg --m $m --device cuda --solves 3 --distributed --json > /tmp/r/dist_${m}_$i.json 2>/tmp/r/dist_${m}_$i.err
  echo "m $m run $i at ${SECONDS}s"
done; done
python3 - <<'PY'
import json
def st(t): return ' '.join('%s=%.1f'%(k[:-2][:10],1e3*x) for k,x in t.items() if k.endswith('_s') and x>0)
def by(t): return ' '.join('%s=%d/%d'%(k[:5],b['host_to_device_bytes']//1000,b['device_to_host_bytes']//1000) for k,b in t['transfers'].items() if b['host_to_device_bytes']+b['device_to_host_bytes']>0)
for m in (66,104):
  for i in (1,2):
    try:
        s=json.load(open('/tmp/r/serial_%d_%d.json'%(m,i))); d=json.load(open('/tmp/r/dist_%d_%d.json'%(m,i)))
    except Exception as e:
        print(m,i,'no json',e); continue
    rw=s['renewal']
    print('%d^3 run %d serial: cold %.1f | %s' % (m,i,1e3*rw['cold_s'], st(rw['cold_timings'])))
    print('   recompute %.1f | %s | kB %s' % (1e3*rw['renewal_s'], st(rw['renewal']['timings']), by(rw['renewal']['timings'])))
    print('   keep %.1f | its %s %s, hot set-up %.1f solve %.1f' % (1e3*rw['other_mode_s'], s['iterations'], rw['iterations'], 1e3*s['setup_hot_s'], 1e3*s['solve_hot_s']))
    r=d['per_rank'][0]; g=d['gpu'][0]
    print('%d^3 run %d distributed: cold %.1f | %s | kB %s' % (m,i,1e3*r['setup_cold_s'], st(r['setup_cold_stages']), by(r['setup_cold_stages'])))
    print('   recompute %.1f | %s | kB %s' % (1e3*r['renewal_recompute_s'], st(r['renewal_recompute_stages']), by(r['renewal_recompute_stages'])))
    print('   keep %.1f | %s | kB %s' % (1e3*r['renewal_keep_s'], st(r['renewal_keep_stages']), by(r['renewal_keep_stages'])))
    print('   its %s, hot set-up %.1f (smoothers %.1f galerkin %.1f coarse %.1f) hot solve %.1f vcycle %.2f' % (d['iterations'], 1e3*d['setup_hot_s'], 1e3*g['hot_update_smoothers_s'], 1e3*g['hot_update_galerkin_s'], 1e3*g['hot_update_coarse_s'], 1e3*d['solve_hot_s'], 1e3*g['vcycle_s']))
PY
head -c 400 /tmp/r/dist_66_1.err
mpirun --allow-run-as-root --oversubscribe -np 1 .device/bin/test_mpi_e2e --exact a_device_kept_renewal_on_one_rank_uploads_no_vector --nocapture --test-threads=1 > /tmp/r/one_rank_test.log 2>&1; echo "one-rank test rc $? at ${SECONDS}s"; grep -E "passed|panicked" -A3 /tmp/r/one_rank_test.log | head -8
timeout 200 env MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cd /tmp/r && tar czf $OUT/t2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
