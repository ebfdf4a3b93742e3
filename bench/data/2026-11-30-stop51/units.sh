#!/bin/bash
# usage: units.sh BIN -> per input and unit system: Newton and CG iterations (cg_amg)
BIN=${1:-/work/main/target/release/hexfem}
cd /work/main
l() { python3 -c "import sys; f=float(sys.argv[1]); print('['+','.join('%e'%(float(x)*f) for x in sys.argv[2:])+']')" "$@"; }
for sys in "scaled 1 1" "mPa 0.01 2.1e7" "mmMPa 10 21"; do
  set -- $sys; name=$1; L=$2; S=$3
  for input in cantilever_q1 neo_hookean_block twisting_column cook_membrane; do
    case $input in
      cantilever_q1) o=(--set "mesh.box.lower=$(l $L 0 0 0)" --set "mesh.box.upper=$(l $L 10 1 1)" --set "materials.0.young_modulus=$(python3 -c "print(1e4*$S)")" --set "boundary.traction.0.value=$(l $S 0 0 -1)");;
      neo_hookean_block) o=(--set "mesh.box.lower=$(l $L 0 0 0)" --set "mesh.box.upper=$(l $L 1 1 1)" --set "materials.0.young_modulus=$(python3 -c "print(10*$S)")" --set "boundary.traction.0.value=$(l $S 0 0 3)");;
      twisting_column) o=(--set "mesh.box.lower=$(l $L -0.5 -0.5 0)" --set "mesh.box.upper=$(l $L 0.5 0.5 4)" --set "materials.0.kappa=$(python3 -c "print(50*$S)")" --set "materials.0.mu=$(python3 -c "print(10*$S)")" --set "boundary.twist.0.center=$(l $L 0 0 4)");;
      cook_membrane) o=(--set "mesh.gmsh.scale=$L" --set "materials.0.lambda=$(python3 -c "print(400*$S)")" --set "materials.0.mu1=$(python3 -c "print(60*$S)")" --set "materials.0.mu2=$(python3 -c "print(20*$S)")" --set "boundary.traction.0.value=$(l $S 0 0.5 0)");;
    esac
    out=/tmp/u/out_${name}_$input; rm -rf $out
    $BIN run inputs/$input.yaml "${o[@]}" --set linear_solver.method=cg_amg --set output.fields=[displacement] --output $out > /dev/null 2>&1 || echo "$input $name FAILED"
    python3 - $out $input $name <<'PY'
import json,glob,sys
s=json.load(open(glob.glob(sys.argv[1]+'/*.summary.json')[0]))
its=[st["linear_iterations"] for st in s["steps"]]; em=[l["linear"]["hierarchy"]["levels"][0]["emax"] for l in s["steps"][0]["linear_solver"][:1]]
print(sys.argv[2], sys.argv[3], sum(len(x) for x in its), sum(sum(x) for x in its), its[:2], em)
PY
  done
done
