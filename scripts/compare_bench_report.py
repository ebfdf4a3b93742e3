#!/usr/bin/env python3
"""Medians and ratios of a compare_bench raw file (one JSON line per run, written by
scripts/compare_bench_run.sh); checks that the non-timing numbers agree. Usage: RAW.jsonl"""
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
