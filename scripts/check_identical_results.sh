#!/usr/bin/env bash
# Checks that a change leaves every result bit-identical: builds the git revision REV (default
# main) and the working tree into separate target directories, runs every input of inputs/ with
# both binaries and compares the HDF5 files exactly (h5diff without a tolerance compares every
# dataset and attribute value bit for bit; file bytes are not compared, since HDF5 files may
# differ in metadata such as timestamps). The summaries' iteration counts, residual norms and
# strain energies are compared too (times are left out).
#
# Usage: scripts/check_identical_results.sh [REV]
# Prints one line per input and exits non-zero if any result differs. Objects or summary keys
# that only the working tree writes (a new field, say) are listed but are not a difference.
# Work files go to targets/ (git-ignored): targets/identical/src-<rev> (the exported revision), targets/identical/build-*
# (cargo target directories, kept so that reruns are incremental) and targets/identical/out-*.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
rev=${1:-main}
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
base_bin=$work/build-$hash/release/hexfem
tree_bin=$work/build-tree/release/hexfem

# The summary without wall-clock times: every numeric field whose key does not end in _s.
summary_numbers() {
    python3 - "$1" <<'EOF'
import json, sys
def walk(v, path):
    if isinstance(v, dict):
        for k in sorted(v):
            if not (k.endswith("_s") or k in ("seconds", "time", "times")):
                yield from walk(v[k], f"{path}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from walk(x, f"{path}[{i}]")
    else:
        yield f"{path} = {v!r}"
for line in walk(json.load(open(sys.argv[1])), ""):
    print(line)
EOF
}

status=0
for input in inputs/*.yaml; do
    name=$(basename "$input" .yaml)
    out_base=$work/out-base/$name
    out_tree=$work/out-tree/$name
    rm -rf "$out_base" "$out_tree"
    "$base_bin" run "$input" -o "$out_base" -q >/dev/null
    "$tree_bin" run "$input" -o "$out_tree" -q >/dev/null
    verdict="identical"
    added=""
    for h5 in "$out_base"/*.h5; do
        other=$out_tree/$(basename "$h5")
        if [ ! -f "$other" ]; then
            verdict="MISSING $(basename "$h5")"
        elif ! h5diff -r "$h5" "$other" >"$work/h5diff-$name.txt" 2>&1; then
            if grep -q "^[1-9][0-9]* differences\? found" "$work/h5diff-$name.txt" \
                || grep -qi "not comparable" "$work/h5diff-$name.txt"; then
                verdict="DIFFERENT (h5diff: $work/h5diff-$name.txt)"
            else
                # every object both files hold is equal; one file holds objects the other lacks
                added="values identical, objects only in one file (h5diff: $work/h5diff-$name.txt)"
            fi
        fi
    done
    for summary in "$out_base"/*.summary.json; do
        other=$out_tree/$(basename "$summary")
        if ! diff <(summary_numbers "$summary") <(summary_numbers "$other") \
            >"$work/summary-$name.txt"; then
            if grep -q "^<" "$work/summary-$name.txt"; then
                verdict="$verdict; summary numbers differ ($work/summary-$name.txt)"
            else
                added="${added:+$added; }summary adds keys ($work/summary-$name.txt)"
            fi
        fi
    done
    steps=$(h5ls "$out_tree/$name.h5/steps" 2>/dev/null | wc -l)
    printf '%-24s %2d steps  %s%s\n' "$name" "$steps" "$verdict" "${added:+ ($added)}"
    [ "$verdict" = "identical" ] || status=1
done
exit $status
