#!/usr/bin/env bash
# Compares the speed of the git revision REV (default main) with the working tree: builds both
# (as scripts/check_identical_results.sh does, sharing its target directories), then runs
#   hexfem bench assembly --cells 64 --json
#   hexfem bench gamg --problem ex56 --m 66 --json
# ROUNDS times (default 5) with the two binaries interleaved (A B A B ...), so that a change in
# the machine's load hits both alike, and prints per timing the median of each binary and their
# ratio (tree / base). The non-timing numbers of the AMG benchmark (iterations, levels,
# eigenvalue estimates) must agree between the two: a mismatch is reported.
#
# Usage: scripts/compare_bench.sh [REV] [ROUNDS]   (the measuring half is scripts/compare_bench_run.sh,
# which runs on any machine with the two binaries; scripts/compare_bench_report.py reads its output)
# Raw JSON lines go to targets/identical/bench-<rev>.jsonl. Run it on a quiet machine: the load
# average is printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
rev=${1:-main}
rounds=${2:-5}
hash=$(git rev-parse --short=12 "$rev^{commit}")
work=$root/targets/identical
src=$work/src-$hash
mkdir -p "$work"
if [ ! -f "$src/Cargo.toml" ]; then
    rm -rf "$src" && mkdir -p "$src"
    git archive "$hash" | tar -x -C "$src"
fi
echo "# building $rev ($hash) and the working tree" >&2
nice cargo build --release --quiet --bin hexfem --manifest-path "$src/Cargo.toml" \
    --target-dir "$work/build-$hash"
nice cargo build --release --quiet --bin hexfem --target-dir "$work/build-tree"
declare -A bin=([base]=$work/build-$hash/release/hexfem [tree]=$work/build-tree/release/hexfem)

raw=$work/bench-$hash.jsonl
echo "# base = $rev ($hash), tree = working tree"
scripts/compare_bench_run.sh "${bin[base]}" "${bin[tree]}" "$rounds" "$raw"
python3 scripts/compare_bench_report.py "$raw"
