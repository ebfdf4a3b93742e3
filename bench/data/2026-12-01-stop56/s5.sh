#!/bin/bash
# stop 56 call 5 (nvidia-h200): linalg's SpMV tests on the reverted kernel (a6c57fd + the long-rows test), the
# test binary alone.
SECONDS=0
gunzip -c .devq/test_linalg.gz > /tmp/test_linalg; chmod +x /tmp/test_linalg
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
timeout 200 /tmp/test_linalg --test-threads=1 backend::cuda::tests::spmv backend::cuda::tests::transpose backend::cuda::tests::every_kernel 2>&1 | grep -E "^test |test result|SKIP"
echo "end at ${SECONDS}s"
