#!/usr/bin/env bash
# Measures where the direct solver beats CG + AMG inside Newton, to place `method: auto`'s
# threshold: each problem below runs with `linear_solver.method` direct and cg_amg (same input
# otherwise) and prints one JSON line per run (unknowns, the direct factor estimate `check`
# prints, Newton and linear iterations, seconds in linear set-ups and solves, wall).
# Usage: scripts/solver_choice_runs.sh HEXFEM [OUT.jsonl]   (pin it: taskset -c 0,1 scripts/...)
set -euo pipefail
hexfem=${1:?usage: scripts/solver_choice_runs.sh HEXFEM [OUT.jsonl]}
out=${2:-/dev/stdout}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# name | input | overrides (space-separated --set values)
cases=(
  "box_10|inputs/neo_hookean_block.yaml|mesh.box.cells=[10,10,10]"
  "box_16|inputs/neo_hookean_block.yaml|mesh.box.cells=[16,16,16]"
  "box_24|inputs/neo_hookean_block.yaml|mesh.box.cells=[24,24,24]"
  "cantilever_32x8x8_nh|inputs/cantilever_q1.yaml|mesh.box.cells=[32,8,8] materials.0.model=neo_hookean materials.0.young_modulus=100 boundary.traction.0.value=[0,0,-0.02] loading.steps=1 mesh.box.upper=[4,1,1]"
  "cantilever_q2_default|inputs/cantilever_q2.yaml|"
  "twisting_column|inputs/twisting_column.yaml|"
  "slender_beam_q2_20x5x5|inputs/slender_beam.yaml|mesh.box.cells=[20,5,5] mesh.box.order=2 loading.steps=9"
)
for case in "${cases[@]}"; do
  IFS='|' read -r name input sets <<< "$case"
  args=()
  for s in $sets; do args+=(--set "$s"); done
  estimate=$("$hexfem" check "$root/$input" "${args[@]}" -o "$work/check" --set linear_solver.method=auto 2>&1 | grep -o 'direct factor estimate [^:;)]*' | head -1 || true)
  for method in direct cg_amg; do
    dir="$work/$name-$method"
    if "$hexfem" run "$root/$input" "${args[@]}" --set "linear_solver.method=$method" -o "$dir" -q > "$work/log" 2>&1; then status=completed; else status=failed; fi
    python3 - "$dir" "$name" "$method" "$status" "$estimate" >> "$out" <<'PY'
import glob, json, sys
d, name, method, status, estimate = sys.argv[1:6]
row = {"problem": name, "method": method, "status": status, "auto_estimate": estimate}
try:
    s = json.load(open(glob.glob(d + "/*.summary.json")[0]))
    steps = [json.loads(l) for l in open(glob.glob(d + "/*.steps.jsonl")[0])]
    lin = [it["linear"] for st in steps for it in st.get("linear_solver", [])]
    row.update(dofs=s["mesh"].get("dofs"), steps=len(steps), wall_s=s["wall_s"],
               newton=sum(st["newton_iterations"] for st in steps),
               linear=sum(l["iterations"] for l in lin),
               setup_s=sum(l["setup_s"] for l in lin), solve_s=sum(l["solve_s"] for l in lin))
except Exception as e:  # a failed run has no summary steps
    row["error"] = str(e)
print(json.dumps(row))
PY
  done
done
