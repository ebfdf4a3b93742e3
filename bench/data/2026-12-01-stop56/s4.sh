#!/bin/bash
# stop 56 call 4 (nvidia-h200): bsr_spmv_seq with eight chunks of units in flight on long rows (8dfc3fa, new) against
# 9f25544 (old): bench gamg at 66^3 and 104^3, three alternations after a warm-up (V-cycle, hot solve, fine SpMV,
# renewals); then the GPU tests and the MPI GPU tests.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_old /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 3 --json > /dev/null 2>&1; done
for i in 1 2 3; do for v in old new; do for m in 66 104; do timeout 60 /tmp/hx_$v bench gamg --m $m --device cuda --solves 3 --json > /tmp/r/g${m}_$v$i.json 2>/dev/null; done; done; done
python3 - <<'PY'
import json
for m in (66, 104):
    for v in ('old','new'):
        print(m, v)
        for i in (1,2,3):
            d=json.load(open('/tmp/r/g%d_%s%d.json'%(m,v,i)))
            rw=d['renewal']; g=d['gpu']
            print('    vcycle %.3f ms | hot solve %.1f ms | spmv %.1f GB/s (%.3f of copy) | hot update %.1f | cold %.1f | recompute %.1f | keep %.1f | its %s' % (
              g['vcycle_ms'], 1e3*d['solve_hot_s'], g['spmv_gbs'], g['spmv_of_copy'], 1e3*d['setup_hot_s'], 1e3*rw['cold_s'], 1e3*rw['renewal_s'], 1e3*rw['other_mode_s'], d['iterations']))
PY
echo "bench at ${SECONDS}s"
timeout 420 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "long_rows|spmv|restriction|gpu_runs" /tmp/device-out/*.log | grep -E " ok$|FAILED" | head -20
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cd /tmp/r && tar czf $OUT/t4.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
