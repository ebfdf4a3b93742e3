#!/bin/bash
# usage: cmp.sh  -> compares before/after on every input, default fields and every field
W=/work/wt/output26
ALL='output.fields=[displacement,reaction,cauchy_stress,von_mises,jacobian,energy_density,nodal_cauchy_stress,nodal_von_mises,strain,green_lagrange_strain,logarithmic_strain,principal_stress,nodal_principal_stress,sets]'
for f in $W/inputs/*.yaml; do
  n=$(basename $f .yaml)
  for mode in default all; do
    for b in before after; do
      d=/tmp/o26/cmp/$b/$mode
      if [ $mode = all ]; then set_args=(--set "$ALL"); else set_args=(); fi
      (cd $W && timeout 300 /tmp/o26/hexfem.$b run $f "${set_args[@]}" -o $d --overwrite > $d.$n.log 2>&1; echo "rc $?" >> $d.$n.log) 
    done
    a=/tmp/o26/cmp/before/$mode/$n.h5; b=/tmp/o26/cmp/after/$mode/$n.h5
    if cmp -s $a $b; then r=bytes-identical; else h5diff $a $b >/dev/null 2>&1 && r="h5diff-equal(bytes differ)" || r=DIFFERENT; fi
    echo "$n $mode: $r $(tail -1 /tmp/o26/cmp/before/$mode.$n.log) / $(tail -1 /tmp/o26/cmp/after/$mode.$n.log)"
  done
done
