#!/usr/bin/env bash
# Runs the benchmarks of docs/benchmarks.md in one go and prints one JSON object per line, the
# peer (PyAMG smoothed aggregation + CG on the same elasticity problem) side by side when it is
# installed (`pip install pyamg scipy`) and the peer script is given (it is not part of this
# repository: PEER=/path/to/elasticity_peer.py). Usage: [PEER=...] scripts/run_benchmarks.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
./hexfem.sh --version >/dev/null   # builds the release binary (and installs what is missing)
bin=target/release/hexfem
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${1:-}" = "--quick" ]; then
    sizes=(33); cells=(32)
else
    sizes=(33 66); cells=(32 64)
fi
for n in "${cells[@]}"; do "$bin" bench assembly --order 1 --cells "$n" --json; done
"$bin" bench assembly --order 2 --cells 16 --json
for m in "${sizes[@]}"; do
    "$bin" bench gamg --problem ex56 --m "$m" --json
    "$bin" bench gamg --problem ex56 --m "$m" --scalar --json
done
"$bin" bench gamg --problem ex56 --m 33 --order 2 --json
peer=${PEER:-}
if [ -n "$peer" ] && [ -f "$peer" ] && python3 -c 'import pyamg, scipy' 2>/dev/null; then
    for m in "${sizes[@]}"; do echo "# peer: $(python3 "$peer" pyamg "$m" | head -1)"; done
else
    echo "# peer skipped: PEER (the peer script) not given or PyAMG not installed"
fi
