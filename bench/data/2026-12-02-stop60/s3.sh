#!/bin/bash
# stop 60 call 3 (nvidia-h200): 3a683dc (new: a state's reactions bring down only the constrained entries) against
# b743a13 (old: call 1's build, the checks' cell fields). The 104^3 run on one GPU (16 threads, displacement only)
# alternated, 3 each; 2 ranks sharing the GPU (8 threads each) alternated, 2 each; the 65^3 run (new, 2; every default
# field); results files compared; then the GPU and MPI GPU tests on this build.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1; done
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
S="mesh  |problem and|device and|kernel comp|uploads|output  |assembly|AMG set-up cold|converged|wall"
for i in 1 2 3; do for v in old new; do
  RAYON_NUM_THREADS=16 timeout 60 /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/one_$v --overwrite -v > /tmp/r/one_${v}_$i.txt 2>&1
  echo "== one GPU $v ($i) rc $? at ${SECONDS}s: $(grep -oE '[0-9]+ B for the output' /tmp/r/one_${v}_$i.txt | head -1); $(grep -E "$S" /tmp/r/one_${v}_$i.txt | grep -v newton | awk '{printf "%s ", $0}' | tr -s ' ' | sed 's/.*where the time went/where the time went/')"
done; done
cmp /tmp/o/one_old/neo_hookean_block.h5 /tmp/o/one_new/neo_hookean_block.h5 && echo "one GPU: old and new results files equal"
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=8 timeout 90 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/two_$v --overwrite -v > /tmp/r/two_${v}_$i.txt 2>&1
  echo "== 2 ranks sharing the GPU $v ($i) rc $? at ${SECONDS}s: $(grep -oE '[0-9]+ B for the output' /tmp/r/two_${v}_$i.txt | head -1); $(grep -E "$S" /tmp/r/two_${v}_$i.txt | grep -v newton | awk '{printf "%s ", $0}' | tr -s ' ' | sed 's/.*where the time went/where the time went/')"
done; done
cmp /tmp/o/two_old/neo_hookean_block.h5 /tmp/o/two_new/neo_hookean_block.h5 && echo "2 ranks: old and new results files equal"
C65="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[65,65,65]"
for i in 1 2; do
  RAYON_NUM_THREADS=16 timeout 60 /tmp/hx_new run inputs/neo_hookean_block.yaml $C65 -o /tmp/o/b65 --overwrite -v > /tmp/r/b65_$i.txt 2>&1
  echo "== 65^3 new ($i) rc $? at ${SECONDS}s: $(grep -E "wall" /tmp/r/b65_$i.txt)"
done
timeout 360 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "gpu_run|slender|state_cell_fields|cell_fields|constraints" /tmp/device-out/*.log | grep -E " ok$|FAILED|passed" | head -12
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null) skipped: $(grep -ch SKIP /tmp/device-out/tests.log)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cd /tmp/r && tar czf $OUT/t3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
