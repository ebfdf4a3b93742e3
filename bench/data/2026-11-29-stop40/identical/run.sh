#!/usr/bin/env bash
# every input: stop 39's binary (base) against 306b40b (tree), on NP ranks (1 = serial): h5diff without tolerance + summary numbers
cd /work/main
W=/work/ident; NP=${NP:-1}
for input in inputs/*.yaml; do
  name=$(basename "$input" .yaml)
  for b in base tree; do
    rm -rf $W/out-$b-$NP/$name
    if [ "$NP" = 1 ]; then RAYON_NUM_THREADS=1 $W/hexfem-$b run "$input" -o $W/out-$b-$NP/$name -q >/dev/null 2>$W/err-$b-$NP-$name.txt || echo "$b failed $name"
    else mpirun --allow-run-as-root --oversubscribe -np $NP -x RAYON_NUM_THREADS=1 $W/hexfem-$b run "$input" -o $W/out-$b-$NP/$name -q >/dev/null 2>$W/err-$b-$NP-$name.txt || echo "$b failed $name"; fi
  done
  verdict=identical
  for h5 in $W/out-base-$NP/$name/*.h5; do
    h5diff -r "$h5" "$W/out-tree-$NP/$name/$(basename $h5)" > $W/h5diff-$NP-$name.txt 2>&1 || verdict="DIFFERENT"
  done
  for sj in $W/out-base-$NP/$name/*.summary.json; do
    python3 - "$sj" "$W/out-tree-$NP/$name/$(basename $sj)" <<'PY' || verdict="$verdict; summary differs"
import json,sys
def walk(v,p):
    if isinstance(v,dict):
        for k in sorted(v):
            if not (k.endswith("_s") or k in ("seconds","time","times")): yield from walk(v[k],p+"."+k)
    elif isinstance(v,list):
        for i,x in enumerate(v): yield from walk(x,f"{p}[{i}]")
    else: yield f"{p}={v!r}"
a=list(walk(json.load(open(sys.argv[1])),"")); b=list(walk(json.load(open(sys.argv[2])),""))
sys.exit(0 if a==b else 1)
PY
  done
  echo "np $NP $name $verdict"
done
