#!/bin/bash
# stop 53 call 5 (nvidia-h200-x2) on the final GPU code (this stop's main; .device): the GPU tests and the MPI GPU tests;
# then the 104^3 run on 2 GPUs, this stop's binary (.device/bin/hexfem) first and 96333c8 (.devq/old) second in each pair
# (the reverse of call 4's order: does the `output` stage follow the order?).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 400 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "^gpu_runs: [a-z_]*: [0-9]+ steps" /tmp/device-out/tests.log | sed 's/, output bytes.*//' | cut -c1-150 | head -16
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; chmod +x /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
two() { v=$1; tag=$2; RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep '1,0' /tmp/r/$tag.txt | grep -E 'wall|  output  ' | sed 's/^.*std...>://' | tr -s ' ' | tr '\n' ' ' | cut -c1-160)"; }
if [ $SECONDS -lt 460 ]; then
two new warm_new > /dev/null; two old warm_old > /dev/null
for i in 1 2 3; do two new two_new$i; two old two_old$i; done
fi
cd /tmp/r && tar czf $OUT/call5.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
