#!/bin/bash
# stop 61 call 1 (nvidia-h200): 29f42f6 (new: device product patterns by a hash table per row in shared memory, a warp
# a row, and the bitmap a block a row in shared memory) against 3a683dc (old: stop 60's code). The GPU tests first, then
# bench gamg at 66^3 and 104^3 (one process, the cold set-up and its Galerkin symbolic stage) alternated after a
# warm-up, the ranks' path on one rank (--distributed) and 2 ranks sharing the GPU, then the MPI GPU tests.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 300 env TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/tests.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "symbolic|ptap|galerkin" /tmp/device-out/tests.log | grep -E " ok$|FAILED" | head -12
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null) skipped: $(grep -ch SKIP /tmp/device-out/tests.log)"
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1; done
for i in 1 2; do for v in old new; do for m in 66 104; do
  timeout 60 /tmp/hx_$v bench gamg --m $m --device cuda --solves 2 --json > /tmp/r/g${m}_$v$i.json 2>/dev/null
done; done; done
python3 - <<'PY'
import json
for m in (66, 104):
    for v in ('old','new'):
        for i in (1,2):
            try: d=json.load(open('/tmp/r/g%d_%s%d.json'%(m,v,i)))
            except Exception as e: print(m, v, i, 'missing', e); continue
            t=d['renewal']['cold_timings']
            print('%d^3 %s: cold %.1f ms (Galerkin symbolic %.1f, smoothing %.1f, tentative %.1f) recompute %.1f keep %.1f its %s' % (m, v,
              1e3*d['renewal']['cold_s'], 1e3*t['galerkin_symbolic_s'], 1e3*t['smoothing_s'], 1e3*t['tentative_s'],
              1e3*d['renewal']['renewal_s'], 1e3*d['renewal']['other_mode_s'], d['iterations']))
PY
echo "bench at ${SECONDS}s"
for v in old new; do
  RAYON_NUM_THREADS=16 timeout 60 /tmp/hx_$v bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/dist1_$v.txt 2>&1
  echo "== one rank $v at ${SECONDS}s: $(grep -E 'slowest rank|host cold set-up' /tmp/r/dist1_$v.txt | head -2 | tr -s ' ')"
done
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for v in old new; do
  RAYON_NUM_THREADS=8 timeout 90 $MPI /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 > /tmp/r/dist2_$v.txt 2>&1
  echo "== 2 ranks sharing $v at ${SECONDS}s: $(grep -E 'slowest rank|host cold set-up' /tmp/r/dist2_$v.txt | head -3 | tr -s ' ')"
done
left=$((570 - SECONDS)); echo "MPI tests with ${left}s"
timeout $left env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run_mpi.log 2>&1; echo "run.sh (MPI) rc $? at ${SECONDS}s"
cp /tmp/device-out/mpi_tests.log /tmp/r/ 2>/dev/null
grep -hE "FAILED|panicked" /tmp/device-out/mpi_tests.log | head
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
rm -f $OUT/device-out.tgz; cd /tmp/r && tar czf $OUT/t1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
