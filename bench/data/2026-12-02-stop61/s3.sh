#!/bin/bash
# stop 61 call 3 (nvidia-h200): the final code (22b4855: call 1's product-pattern kernels, the tentative plan's host
# arrays in parallel, the pair lists a thread per slot again). The GPU tests; bench gamg at 104^3 twice (one process)
# against 8163e22 (old: call 2's new, the pair lists a warp a row); ex56 128^3 on one process and on 2 ranks sharing
# the GPU (the ranks' cold set-up at 128^3, the size of the 2-GPU goal); then the MPI GPU tests.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 300 env TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/tests.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null) skipped: $(grep -ch SKIP /tmp/device-out/tests.log)"
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1; done
for i in 1 2; do for v in old new; do
  timeout 60 /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/g104_$v$i.json 2>/dev/null
done; done
timeout 120 /tmp/hx_new bench gamg --m 128 --device cuda --solves 2 --json > /tmp/r/g128_new.json 2>/dev/null
python3 - <<'PY'
import json
for name in ['g104_old1','g104_new1','g104_old2','g104_new2','g128_new']:
    try: d=json.load(open('/tmp/r/%s.json' % name))
    except Exception as e: print(name, 'missing', e); continue
    t=d['renewal']['cold_timings']
    st=' '.join('%s %.1f' % (k[:-2], 1e3*x) for k, x in t.items() if k.endswith('_s') and x > 0 and k != 'total_s')
    print('%s: cold %.1f ms (%s) recompute %.1f keep %.1f its %s' % (name,
      1e3*d['renewal']['cold_s'], st, 1e3*d['renewal']['renewal_s'], 1e3*d['renewal']['other_mode_s'], d['iterations']))
PY
echo "bench at ${SECONDS}s"
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
RAYON_NUM_THREADS=8 timeout 150 $MPI /tmp/hx_new bench gamg --m 128 --device cuda --solves 2 > /tmp/r/dist2_128.txt 2>&1
echo "== 128^3, 2 ranks sharing at ${SECONDS}s: $(grep -E 'levels|slowest rank|host cold set-up' /tmp/r/dist2_128.txt | head -4 | tr -s ' ')"
left=$((570 - SECONDS)); echo "MPI tests with ${left}s"
timeout $left env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run_mpi.log 2>&1; echo "run.sh (MPI) rc $? at ${SECONDS}s"
cp /tmp/device-out/mpi_tests.log /tmp/r/ 2>/dev/null
grep -hE "FAILED|panicked" /tmp/device-out/mpi_tests.log | head
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
rm -f $OUT/device-out.tgz; cd /tmp/r && tar czf $OUT/t3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
