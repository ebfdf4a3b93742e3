#!/usr/bin/env bash
# `hexfem run` of one input on a CELLS^3 box with CG + AMG on the GPU(s), on 1 and on more
# ranks (one GPU each), for each AMG renewal mode: process wall, wall in the steps, set-up time
# by kind (cold / renewed / hot) and solves, Newton and CG iterations. Run on the device machine
# from the checkout root after scripts/device.sh staged .device (bash scripts/device_scaling.sh).
#   SCALE_INPUT=neo_hookean_block  SCALE_CELLS=104  SCALE_NP="1 4"
#   SCALE_RENEWAL="recompute keep_aggregates"   OUT=directory for the summaries (default /tmp)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/.device/bin/hexfem"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
input=${SCALE_INPUT:-neo_hookean_block}
cells=${SCALE_CELLS:-104}
out=${OUT:-/tmp}
for r in ${SCALE_RENEWAL:-recompute keep_aggregates}; do
    for np in ${SCALE_NP:-1 4}; do
        dir=/tmp/scale_${np}_$r
        rm -rf "$dir"
        start=$(date +%s.%N)
        RAYON_NUM_THREADS=$(( $(nproc) / np > 0 ? $(nproc) / np : 1 )) \
        mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x LD_LIBRARY_PATH -np "$np" \
            "$bin" run "inputs/$input.yaml" --set device=cuda --set linear_solver.method=cg_amg \
            --set "mesh.box.cells=[$cells,$cells,$cells]" --set "linear_solver.amg.renewal=$r" \
            -o "$dir" > "$out/scale_${input}_${cells}_${np}_$r.log" 2>&1 || tail -n 5 "$out/scale_${input}_${cells}_${np}_$r.log"
        end=$(date +%s.%N)
        cp "$dir"/*.summary.json "$out/scale_${input}_${cells}_${np}_$r.summary.json" 2>/dev/null
        python3 - "$out/scale_${input}_${cells}_${np}_$r.summary.json" "$np" "$r" "$start" "$end" <<'PY' || true
import json, sys
path, np_, r, start, end = sys.argv[1:]
s = json.load(open(path))
steps = s["steps"]
its = [it for st in steps for it in st["linear_solver"]]
lin_its = [it.get("linear", it) for it in its]
kinds = {}
for it in lin_its:
    k = str(it.get("setup"))
    n, t = kinds.get(k, (0, 0.0))
    kinds[k] = (n + 1, t + it.get("setup_s", 0.0))
print(f"[{np_} GPU(s), renewal {r}] {len(steps)} steps, {sum(st['newton_iterations'] for st in steps)} Newton, "
      f"{sum(sum(st['linear_iterations']) for st in steps)} CG; process {float(end) - float(start):.2f} s, "
      f"steps {sum(st['wall_s'] for st in steps):.2f} s; set-ups "
      + ", ".join(f"{k} {n} x = {t:.2f} s" for k, (n, t) in kinds.items())
      + f"; solves {sum(it.get('solve_s', 0.0) for it in lin_its):.2f} s; energy {steps[-1]['strain_energy']:.12e}")
PY
    done
done
