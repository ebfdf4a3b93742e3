#!/usr/bin/env bash
# Runs the staged GPU tests and benchmarks on the device machine (staged by scripts/device.sh;
# run from the checkout root as `bash .device/run.sh`). Logs and JSON go to /tmp/device-out,
# packed into $OUT/device-out.tgz when $OUT is set; the last lines summarise. What runs is chosen by variables:
#   TESTS=1            the GPU tests (linalg kernels, linalg device types, amg device hierarchy)
#   GAMG="33 66 99"    hexfem bench gamg --device cuda --json for each m
#   CPU="66"           the same benchmark on the CPU with 2 threads (cores 0-1), for the ratio
#   PEER=1             the peer script (cuSPARSE CSR/BSR SpMV, cuSPARSE SpGEMM Galerkin) on the
#                      GAMG sizes, when it was staged
#   KERNELS=0          cuda_bench (single kernels; arguments of run.sh go to it)
set -uo pipefail
out=/tmp/device-out
rm -rf "$out"
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
head -n 12 "$out/env.txt"

status=0
TESTS=${TESTS:-1}
GAMG=${GAMG-33 66 99}
CPU=${CPU-66}
PEER=${PEER:-1}
KERNELS=${KERNELS:-0}
"$here/bin/hexfem" --help > "$out/hexfem_help.txt" 2>&1 || { echo "hexfem --help failed"; status=1; }
if [ "$TESTS" = 1 ]; then
    "$here/bin/test_linalg" --test-threads=4 backend::cuda --nocapture > "$out/tests.log" 2>&1 \
        || status=1
    for t in test_linalg_device test_amg_device; do
        "$here/bin/$t" --test-threads=1 --nocapture >> "$out/tests.log" 2>&1 || status=1
    done
    grep -E "^test .*(FAILED|panicked)|SKIP|test result|panicked|^m = |hot update:" "$out/tests.log" | tail -n 30
    echo "tests: $(grep -c '^test .* ok$' "$out/tests.log") GPU tests ok, $(grep -c SKIP "$out/tests.log") skipped, $(grep -c '^test .* FAILED$' "$out/tests.log") failed"
fi
for m in $GAMG; do
    "$here/bin/hexfem" bench gamg --problem ex56 --m "$m" --device cuda --json \
        > "$out/gamg_cuda_$m.json" 2> "$out/gamg_cuda_$m.err" || { status=1; tail -n 3 "$out/gamg_cuda_$m.err"; }
    "$here/bin/hexfem" bench gamg --problem ex56 --m "$m" --device cuda > "$out/gamg_cuda_$m.txt" 2>&1 \
        || status=1
    grep -E "CG iter|GPU|cold|hot set|solve after" "$out/gamg_cuda_$m.txt" | sed "s/^/[cuda $m] /"
done
for m in $CPU; do
    RAYON_NUM_THREADS=2 taskset -c 0,1 "$here/bin/hexfem" bench gamg --problem ex56 --m "$m" --json \
        > "$out/gamg_cpu2_$m.json" 2> "$out/gamg_cpu2_$m.err" || status=1
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('[cpu2 $m] iterations', r['iterations'], 'cold', round(r['setup_cold_s'],3), 'hot', round(r['setup_hot_s'],3), 'solve_hot', round(r['solve_hot_s'],3))" "$out/gamg_cpu2_$m.json" || true
done
if [ "$PEER" = 1 ] && [ -f "$here/elasticity_peer.py" ] && [ -n "$GAMG" ]; then
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout 300 python3 "$here/elasticity_peer.py" gpu $GAMG > "$out/peer_gpu.txt" 2>&1 || status=1
    tail -n 25 "$out/peer_gpu.txt"
fi
if [ "$KERNELS" = 1 ]; then
    "$here/bin/cuda_bench" --json "$out/bench.json" "$@" > "$out/bench.log" 2>&1 || status=1
    tail -n 30 "$out/bench.log"
fi
# everything in one file (the device tool brings back at most 8)
if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/device-out.tgz" -C "$out" . 2>/dev/null || true
fi
echo "device run status $status"
exit $status
