#!/bin/bash
# stop 62 call 2 (nvidia-h200): 5d7c0f6 (the ranks' set-up loops in parallel: linalg scan) staged. The GPU tests
# (TESTS=1), then `bench gamg --m 104 --device cuda --distributed --solves 2` on one rank (16 threads), new against
# 904a2b5 (old), alternated after warm-ups, and `mpirun -np 2` (2 ranks sharing the GPU, 8 threads each) old and new;
# the trace build of 5d7c0f6 (stop 60's marks) on one rank; then the MPI GPU tests with the time left.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; gunzip -c .devq/trace/hexfem_new.gz > /tmp/hx_tr; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 300 env TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/tests.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null) skipped: $(grep -ch SKIP /tmp/device-out/tests.log)"
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --distributed --solves 2 > /dev/null 2>&1; done
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_$v bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/d104_$v$i.txt 2>&1
  echo "== one rank $v$i: $(grep -E 'host cold set-up' /tmp/r/d104_$v$i.txt | head -1 | tr -s ' ') | $(grep -o 'cold set-up [0-9.]* s' /tmp/r/d104_$v$i.txt | head -1)"
done; done
for v in old new; do
  RAYON_NUM_THREADS=8 timeout 150 mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2 /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 > /tmp/r/two_$v.txt 2>&1
  echo "== 2 ranks $v rc $?: $(grep -E 'slowest rank' /tmp/r/two_$v.txt | tr -s ' ' | cut -c1-120)"; grep -E "host cold set-up" /tmp/r/two_$v.txt | tr -s ' '
done
HEXFEM_TR=1 RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_tr bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/trace_one.txt 2>&1
echo "== trace one rank rc $? at ${SECONDS}s"
cd /tmp/r && tar czf $OUT/c2.tgz . && cd - > /dev/null
left=$((560 - SECONDS)); echo "MPI tests with ${left}s"
[ $left -gt 60 ] && timeout $left env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run_mpi.log 2>&1; echo "mpi run.sh rc $? at ${SECONDS}s"
grep -hE "^test result|FAILED|panicked" /tmp/device-out/*.log 2>/dev/null | sort | uniq -c | head
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null; cd /tmp/r && tar czf $OUT/c2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
