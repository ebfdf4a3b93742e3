#!/bin/bash
# stop 50 call 2 (nvidia-h200-x2): the aggregates joined by edge counts (the next load step keeps every plan)
# once) against c45059b (stop 49's main, .devq/hexfem_prev.gz): the MPI GPU tests; the 104^3 run on 2 GPUs alternated, 3 each
# after a warm-up; one run each on one GPU.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
(nproc; lscpu | grep -E "Model name|Socket|Thread|Core") > /tmp/r/host.txt 2>&1
timeout 420 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
OUTD=$OUT; cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:|GPU tests" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
gunzip -c .devq/hexfem_prev.gz > /tmp/hexfem_prev; chmod +x /tmp/hexfem_prev
NEW=$PWD/.device/bin/hexfem; OLD=/tmp/hexfem_prev
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
show() { grep -vE "1,1" /tmp/r/$1.txt | grep -E "wall|AMG set-up cold|  output  |  mesh  |  problem" | sed 's/^.*std...>://' | cut -c1-200; }
two() { H=$1; tag=$2; shift 2; RAYON_NUM_THREADS=16 timeout 60 $MPI $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; show $tag; }
one() { H=$1; tag=$2; shift 2; timeout 60 $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|AMG set-up cold|  output  |  mesh  |  problem" /tmp/r/$tag.txt | cut -c1-200; }
two $NEW warm > /dev/null
for i in 1 2; do two $NEW two_new$i; two $OLD two_prev$i; done
cmp /tmp/o/two_new1/neo_hookean_block.h5 /tmp/o/two_prev1/neo_hookean_block.h5 && echo "two GPUs: results files equal"
one $NEW one_warm > /dev/null
for i in 1 2; do one $NEW one_new$i; one $OLD one_prev$i; done
grep -h "^step" /tmp/r/one_new1.txt /tmp/r/one_prev1.txt | cut -c1-200
grep -h "^\[1,0\].*step   " /tmp/r/two_new1.txt | cut -c1-220
cd /tmp/r && tar czf $OUTD/call2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
