#!/bin/bash
# stop 41 call 4: the final main's GPU and MPI GPU tests, then one-GPU 104^3 runs new vs old (1de1214) alternated (stage "problem and plans")
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
gunzip -f .device-old/*.gz 2>/dev/null
mkdir -p $OUT; SECONDS=0
timeout 450 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log /tmp/device-out/tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
NEW=$PWD/.device/bin/hexfem; OLD=$PWD/.device-old/hexfem_old; chmod +x $OLD $NEW
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
mkdir -p /tmp/o
run() { b=$1; tag=$2; shift 2; H=$NEW; [ $b = old ] && H=$OLD
  timeout 100 $H run $NB $C "$@" -o /tmp/o/$tag.$b --overwrite -v > /tmp/$tag.$b.txt 2>&1; rc=$?
  echo "== $tag $b rc $rc at ${SECONDS}s"; grep -E "^step" /tmp/$tag.$b.txt | cut -c1-120 | tail -1; sed -n '/where the time went/,$p' /tmp/$tag.$b.txt | grep -E "wall|mesh  |problem|uploads|kernel|AMG set-up cold|output  "
  cp /tmp/$tag.$b.txt $OUT/$tag.$b.$SECONDS.txt; rm -rf /tmp/o/$tag.$b; }
run new warm --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]' > /dev/null; run old warm --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]' > /dev/null
for b in old new old new; do run $b n104 --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]'; done
echo "end at ${SECONDS}s"
