#!/usr/bin/env bash
# Runs the staged GPU tests and benchmarks on the device machine (staged by scripts/device.sh;
# run from the checkout root as `bash .device/run.sh [bench args]`). Logs go to $OUT (or
# /tmp/device-out); the last lines summarise.
set -uo pipefail
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* \
    2>/dev/null | head -n 1)
if [ -z "$nvrtc" ]; then
    nvrtc=$(find /usr /opt -name 'libnvrtc.so*' 2>/dev/null | head -n 1)
fi
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
{
    echo "commit $(cat "$here/commit")"
    nvidia-smi
    echo "nvrtc: ${nvrtc:-not found}"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} > "$out/env.txt" 2>&1
head -n 20 "$out/env.txt"

status=0
"$here/bin/hexfem" --help > "$out/hexfem_help.txt" 2>&1 || { echo "hexfem --help failed"; status=1; }
"$here/bin/test_linalg" --test-threads=4 backend::cuda --nocapture > "$out/tests.log" 2>&1 \
    || status=1
for t in test_linalg_device test_amg_device; do
    "$here/bin/$t" --test-threads=1 --nocapture >> "$out/tests.log" 2>&1 || status=1
done
grep -E "^test |SKIP|test result|panicked" "$out/tests.log" | tail -n 30
"$here/bin/cuda_bench" --json "$out/bench.json" "$@" > "$out/bench.log" 2>&1 || status=1
cat "$out/bench.log"
echo "device run: $(grep -c '^test .* ok$' "$out/tests.log") GPU tests ok, $(grep -c SKIP "$out/tests.log") skipped, status $status"
exit $status
