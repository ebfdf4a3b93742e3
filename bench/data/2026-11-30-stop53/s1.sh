#!/bin/bash
# stop 53 call 1 (nvidia-h200-x2) on ffb8c59 (the ranks' renewal makes P0 on the GPUs from modes computed there):
# the GPU tests and the MPI GPU tests; then the 104^3 run on 2 GPUs (twice) and on one GPU (once), -v stage tables.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 400 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "^gpu_runs: [a-z_]*: [0-9]+ steps" /tmp/device-out/tests.log | sed 's/, output bytes.*//' | head -16
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -hE "a_device_kept_renewal_on_ranks|device_rank_assembly_equals|device_rank_run_with_kept" /tmp/device-out/mpi_tests.log | head -8
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
H=$PWD/.device/bin/hexfem
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
two() { tag=$1; RAYON_NUM_THREADS=16 timeout 90 $MPI $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -vE "1,1" /tmp/r/$tag.txt | grep -E "wall|  output  |near-null|AMG |solve  |assembly  |problem and|uploads" | sed 's/^.*std...>://' | cut -c1-100; grep -E "AMG set-up: " /tmp/r/$tag.txt | sed 's/^.*(\(.*\)AMG set-up: \([^,]*\),.*/\2/' | head -4; }
one() { tag=$1; timeout 90 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|  output  |near-null|AMG |solve  |assembly  " /tmp/r/$tag.txt | cut -c1-100; }
if [ $SECONDS -lt 470 ]; then
two warm > /dev/null; two two1; two two2; one one1
cmp /tmp/o/two1/neo_hookean_block.h5 /tmp/o/one1/neo_hookean_block.h5 && echo "one and two GPUs: results files equal"
fi
cd /tmp/r && tar czf $OUT/call1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
