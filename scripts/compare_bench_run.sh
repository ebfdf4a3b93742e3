#!/usr/bin/env bash
# The measuring half of scripts/compare_bench.sh, runnable on any machine that has the two binaries
# (the device machine, for a quiet one: `taskset -c 0,1` pins it to two cores like ours):
#   scripts/compare_bench_run.sh BASE_BIN TREE_BIN ROUNDS RAW.jsonl
# runs `bench assembly --cells 64` and `bench gamg --problem ex56 --m 66` ROUNDS times, the two
# binaries interleaved, appending one JSON line per run to RAW.jsonl; then
# `python3 scripts/compare_bench_report.py RAW.jsonl` prints medians and ratios.
set -euo pipefail
declare -A bin=([base]=${1:?BASE_BIN} [tree]=${2:?TREE_BIN})
rounds=${3:?ROUNDS}
raw=${4:?RAW.jsonl}
: >"$raw"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds"
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
