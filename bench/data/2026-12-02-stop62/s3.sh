#!/bin/bash
# stop 62 call 3 (nvidia-h200): the final code (e7f2c13: 5d7c0f6's parallel loops, the group offsets and device
# tentative lists in parallel, no copy of P's slot map) staged. The GPU tests (TESTS=1); `bench gamg --m 104 --device
# cuda --distributed --solves 2` on one rank (16 threads) against 904a2b5 (old), alternated after warm-ups; `mpirun -np
# 2` (2 ranks sharing the GPU, 8 threads each) old and new, twice; the one-process `bench gamg --m 104` of the new
# binary (its path is not changed: a check); then the MPI GPU tests with the time left.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 280 env TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/tests.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null) skipped: $(grep -ch SKIP /tmp/device-out/tests.log)"
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --distributed --solves 2 > /dev/null 2>&1; done
for i in 1 2 3; do for v in old new; do
  RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_$v bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/d104_$v$i.txt 2>&1
  echo "== one rank $v$i: $(grep -E 'host cold set-up' /tmp/r/d104_$v$i.txt | head -1 | tr -s ' ') | $(grep -o 'cold set-up [0-9.]* s' /tmp/r/d104_$v$i.txt | head -1) | $(grep -o 'CG iterations \[[0-9, ]*\]' /tmp/r/d104_$v$i.txt | head -1)"
done; done
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=8 timeout 150 mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2 /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 > /tmp/r/two_$v$i.txt 2>&1
  echo "== 2 ranks $v$i rc $?: $(grep -E 'slowest rank' /tmp/r/two_$v$i.txt | tr -s ' ' | cut -c1-150)"; grep -E "host cold set-up" /tmp/r/two_$v$i.txt | tr -s ' '
done; done
timeout 60 /tmp/hx_new bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/g104_new.json 2>/dev/null
python3 -c "import json; d=json.load(open('/tmp/r/g104_new.json')); print('one process 104^3 new: cold %.1f ms, its %s' % (1e3*d['renewal']['cold_s'], d['iterations']))"
cd /tmp/r && tar czf $OUT/c3.tgz . && cd - > /dev/null
left=$((540 - SECONDS)); echo "MPI tests with ${left}s"
[ $left -gt 60 ] && timeout $left env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run_mpi.log 2>&1; echo "mpi run.sh rc $? at ${SECONDS}s"
echo "mpi bodies passed: $(grep -c 'body passed' /tmp/device-out/mpi_tests.log 2>/dev/null) failed: $(grep -cE 'FAILED|panicked' /tmp/device-out/mpi_tests.log 2>/dev/null)"
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null; cd /tmp/r && tar czf $OUT/c3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
