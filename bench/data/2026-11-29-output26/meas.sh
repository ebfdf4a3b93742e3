#!/bin/bash
W=/work/wt/output26
N=${N:-60}
for b in before after; do
  /usr/bin/time -f "%e s wall %M KB" /tmp/o26/hexfem.$b run $W/inputs/neo_hookean_block.yaml --set linear_solver.method=cg_amg --set "mesh.box.cells=[$N,$N,$N]" "$@" -o /tmp/o26/meas-$b --overwrite -v > /tmp/o26/meas-$b.log 2>&1
  echo "== $b"; sed -n '/where the time went/,$p' /tmp/o26/meas-$b.log
done
