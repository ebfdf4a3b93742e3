#!/usr/bin/env bash
# Compares the speed of the git revision REV (default main) with the working tree: builds both
# (as docs/check_identical_results.sh does, sharing its target directories), then runs
#   hexfem bench assembly --cells 64 --json
#   hexfem bench gamg --problem ex56 --m 66 --json
# ROUNDS times (default 5) with the two binaries interleaved (A B A B ...), so that a change in
# the machine's load hits both alike, and prints per timing the median of each binary and their
# ratio (tree / base). The non-timing numbers of the AMG benchmark (iterations, levels,
# eigenvalue estimates) must agree between the two: a mismatch is reported.
#
# Usage: docs/compare_bench.sh [REV] [ROUNDS]
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
: >"$raw"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds, base = $rev ($hash), tree = working tree"
for round in $(seq 1 "$rounds"); do
    for which in base tree; do
        line=$("${bin[$which]}" bench assembly --cells 64 --json)
        echo "{\"which\":\"$which\",\"bench\":\"assembly\",\"round\":$round,\"result\":$line}" >>"$raw"
        line=$("${bin[$which]}" bench gamg --problem ex56 --m 66 --json)
        echo "{\"which\":\"$which\",\"bench\":\"gamg\",\"round\":$round,\"result\":$line}" >>"$raw"
    done
    echo "# round $round done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$raw" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
fields = {
    "assembly": ["seconds", "elements_s", "sums_s", "residual_seconds", "setup_s", "peak_rss_mb"],
    "gamg": ["assembly_s", "setup_cold_s", "setup_hot_s", "solve_s", "solve_hot_s", "spmv_s",
             "galerkin_numeric_s", "peak_rss_mb"],
}
print(f"{'bench':9} {'field':20} {'base':>10} {'tree':>10} {'tree/base':>9}")
for bench, keys in fields.items():
    for key in keys:
        med = {}
        for which in ("base", "tree"):
            vals = [r["result"][key] for r in runs if r["bench"] == bench and r["which"] == which]
            med[which] = statistics.median(vals)
        ratio = med["tree"] / med["base"] if med["base"] else float("nan")
        print(f"{bench:9} {key:20} {med['base']:10.4f} {med['tree']:10.4f} {ratio:9.3f}")
# Numbers that must not change: everything but timings and memory.
def numbers(v, path=""):
    if isinstance(v, dict):
        for k in sorted(v):
            if not (k.endswith(("_s", "seconds", "_per_s")) or k == "peak_rss_mb"):
                yield from numbers(v[k], f"{path}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from numbers(x, f"{path}[{i}]")
    else:
        yield (path, v)
for bench in fields:
    sets = {w: {tuple(numbers(r["result"])) for r in runs if r["bench"] == bench and r["which"] == w}
            for w in ("base", "tree")}
    same = sets["base"] == sets["tree"] and len(sets["base"]) == 1
    print(f"# {bench}: non-timing numbers {'identical' if same else 'DIFFER'} between base and tree")
EOF
