#!/bin/bash
# stop 52 call 5 (nvidia-h200-x2): rank 0's writer creates the results file from the mesh's pieces in the background
# (StepOutput::create_in_pieces) against db7c247 (.devq/dbg/hexfem.gz: db7c247 with timing prints of the output's
# events): the MPI GPU tests; the 104^3 run on 2 GPUs and on one, alternated after warm-ups.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 250 env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
gunzip -c .devq/dbg/hexfem.gz > /tmp/hexfem_before; chmod +x /tmp/hexfem_before
NEW=$PWD/.device/bin/hexfem; OLD=/tmp/hexfem_before
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
two() { H=$1; tag=$2; RAYON_NUM_THREADS=16 timeout 60 $MPI $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -vE "1,1" /tmp/r/$tag.txt | grep -E "wall|  output  |writer" | sed 's/^.*std...>://' | cut -c1-110; }
one() { H=$1; tag=$2; timeout 60 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|  output  |writer" /tmp/r/$tag.txt | cut -c1-110; }
two $NEW warm > /dev/null; two $OLD warm_old > /dev/null; one $NEW warm1 > /dev/null
for i in 1 2 3; do two $NEW two_new$i; two $OLD two_before$i; done
for i in 1 2; do one $NEW one_new$i; one $OLD one_before$i; done
cmp /tmp/o/two_new1/neo_hookean_block.h5 /tmp/o/one_new1/neo_hookean_block.h5 && echo "one and two GPUs: results files equal"
cmp /tmp/o/two_new1/neo_hookean_block.h5 /tmp/o/two_before1/neo_hookean_block.h5 && echo "two GPUs before and after: results files equal"
cd /tmp/r && tar czf $OUT/call5.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
