#!/bin/bash
# stop 62 call 1 (nvidia-h200): 904a2b5's linalg library test binary (the device pattern test's new case: a row of 40
# columns through the 32-slot tables' merge fallback, never run on a GPU), one test thread; then a trace build of 904a2b5
# (stop 60's temporary marks, call2_trace_marks.patch of stop 60, never committed) of the ranks' cold set-up at 104^3:
# one rank (16 threads), and 2 ranks sharing the GPU (8 threads each).
mkdir -p $OUT /tmp/r; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gunzip -c .devq/t/test_linalg.gz > /tmp/test_linalg; gunzip -c .devq/trace/hexfem_old.gz > /tmp/hx_tr; chmod +x /tmp/test_linalg /tmp/hx_tr
timeout 240 /tmp/test_linalg --test-threads=1 backend::cuda > /tmp/r/test_linalg_cuda.log 2>&1
echo "== linalg lib backend::cuda rc $? at ${SECONDS}s: $(grep '^test result' /tmp/r/test_linalg_cuda.log)"
grep -E "device_symbolic_patterns_equal_the_hosts|FAILED|panicked" /tmp/r/test_linalg_cuda.log | head
timeout 60 /tmp/hx_tr bench gamg --m 66 --device cuda --distributed --solves 2 > /dev/null 2>&1
HEXFEM_TR=1 RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_tr bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/one.txt 2>&1
echo "== one rank rc $? at ${SECONDS}s: $(grep 'cold set-up' /tmp/r/one.txt | head -3 | tr -s ' ')"
HEXFEM_TR=1 RAYON_NUM_THREADS=8 timeout 150 mpirun --allow-run-as-root --oversubscribe --bind-to none -x HEXFEM_TR -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH --output-filename /tmp/r/two -np 2 /tmp/hx_tr bench gamg --m 104 --device cuda --solves 2 > /tmp/r/two.txt 2>&1
echo "== 2 ranks rc $? at ${SECONDS}s: $(grep 'cold set-up' /tmp/r/two.txt | head -4 | tr -s ' ')"
cd /tmp/r && tar czf $OUT/c1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
