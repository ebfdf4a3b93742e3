#!/bin/bash
# stop 40 call B: runs and benchmarks, the merged main against stop 39's binary (be34e32) in the same call
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
gunzip -f .device-early/bin/*.gz 2>/dev/null
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
nccl=$(ls /usr/lib/x86_64-linux-gnu/libnccl.so.2* /usr/local/cuda*/lib64/libnccl.so.2* 2>/dev/null | head -n 1)
[ -z "$nccl" ] && nccl=$(find /usr /opt -name 'libnccl.so.2*' 2>/dev/null | head -n 1)
[ -n "$nccl" ] && { mkdir -p /tmp/hexfem-nccl; ln -sf "$nccl" /tmp/hexfem-nccl/libnccl.so; export LD_LIBRARY_PATH="/tmp/hexfem-nccl:$LD_LIBRARY_PATH"; }
NEW=$PWD/.device/bin/hexfem; OLD=$PWD/.device-early/bin/hexfem_old; chmod +x $OLD
mkdir -p $OUT /tmp/o /tmp/sums; SECONDS=0
C="--set device=cuda --set linear_solver.method=cg_amg"
ALL="output.fields=[displacement,reaction,cauchy_stress,von_mises,jacobian,energy_density,nodal_cauchy_stress,nodal_von_mises,strain,green_lagrange_strain,logarithmic_strain,principal_stress,nodal_principal_stress]"
NB=inputs/neo_hookean_block.yaml
run() { b=$1; tag=$2; inp=$3; shift 3; H=$NEW; [ $b = old ] && H=$OLD
  timeout 100 $H run $inp $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/$tag.$b.txt 2>&1; rc=$?
  sz=$(du -sb /tmp/o/$tag/*.h5 2>/dev/null | cut -f1)
  echo "== $tag $b rc $rc h5 $sz B at ${SECONDS}s"; sed -n '/where the time went/,$p' /tmp/$tag.$b.txt | grep -E "wall|problem|uploads|output|converged|AMG set-up cold|AMG renewal|solve  |background"
  cp /tmp/o/$tag/*.summary.json /tmp/sums/$tag.$b.summary.json 2>/dev/null; rm -rf /tmp/o/$tag; }
# warm the kernel cache for both binaries
run new warm $NB --set 'mesh.box.cells=[20,20,20]' > /dev/null; run old warm $NB --set 'mesh.box.cells=[20,20,20]' > /dev/null
run new warm $NB --set 'mesh.box.cells=[20,20,20]' --set linear_solver.amg.renewal=keep_aggregates > /dev/null
for b in new old; do
  run $b n104_disp $NB --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]'
  run $b n104_default $NB --set 'mesh.box.cells=[104,104,104]'
  run $b n104_all $NB --set 'mesh.box.cells=[104,104,104]' --set "$ALL"
done
run new n104_disp2 $NB --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]'
run new n104_default2 $NB --set 'mesh.box.cells=[104,104,104]'
for b in new old; do
  run $b n65_keep $NB --set 'mesh.box.cells=[65,65,65]' --set linear_solver.amg.renewal=keep_aggregates
  run $b n65_rec $NB --set 'mesh.box.cells=[65,65,65]'
  run $b beam_q2 inputs/slender_beam.yaml --set 'mesh.box.cells=[160,8,8]'
done
cat /tmp/*.new.txt > $OUT/runs_new.txt; cat /tmp/*.old.txt > $OUT/runs_old.txt
(cd /tmp/sums && tar czf $OUT/summaries.tgz *.json)
# the old binary's benchmarks (the new ones ran in call A)
timeout 60 $OLD bench gamg --problem ex56 --m 66 --device cuda --precision double --json > $OUT/old_gamg66.json 2>/dev/null; echo "old gamg rc $? at ${SECONDS}s"
timeout 60 $OLD bench newton --m 33 --device cuda --json > $OUT/old_newton33.json 2>/dev/null; echo "old newton rc $? at ${SECONDS}s"
timeout 60 $OLD bench assembly --order 1 --cells 64 --repeats 1 --device cuda --json > $OUT/old_assembly.json 2>/dev/null; echo "old assembly rc $? at ${SECONDS}s"
timeout 120 env RAYON_NUM_THREADS=8 mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -np 2 $OLD bench gamg --problem ex56 --m 66 --device cuda --exchange auto --json > $OUT/old_mpigamg.json 2>/dev/null; echo "old mpi gamg rc $? at ${SECONDS}s"
timeout 120 env RAYON_NUM_THREADS=2 taskset -c 0,1 $OLD bench gamg --problem ex56 --m 66 --json > $OUT/old_cpu66.json 2>/dev/null; echo "old cpu gamg rc $? at ${SECONDS}s"
echo "end at ${SECONDS}s"
# the merged writer under the GPU runs: every input on cuda == on cpu (hexfem-sim's gpu_runs tests)
gunzip -f .device/bin/test_sim.gz 2>/dev/null
timeout 150 .device/bin/test_sim --test-threads=1 --nocapture gpu_runs > $OUT/gpu_runs.log 2>&1; echo "gpu_runs rc $? at ${SECONDS}s"
grep -E "^test result|FAILED|panicked" $OUT/gpu_runs.log | head -5
echo "end2 at ${SECONDS}s"
