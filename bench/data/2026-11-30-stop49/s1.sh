#!/bin/bash
# stop 49 call 1 (nvidia-h200-x2): main 0a54de6 (stop 48's final main): every GPU test and the MPI GPU tests; then a trace build
# (timers on the one-process problem's plans and on the ranks' output, never committed: .devq/trace_out.patch) on the 104^3 run,
# one GPU (32 and 16 threads) and 2 GPUs (16 threads a rank), to see where "problem and plans" (1 GPU) and "output" (ranks) go.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
(nproc; uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled; lscpu | grep -E "Model name|Socket|NUMA node") > /tmp/r/host.txt 2>&1
timeout 400 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
OUTD=$OUT; cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/mpi_tests.log /tmp/r/; grep -E "^test .* ok$|test result" /tmp/device-out/tests.log > /tmp/r/tests_summary.txt
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
gunzip -c .devq/hexfem_trace.gz > /tmp/hexfem_trace; chmod +x /tmp/hexfem_trace; T=/tmp/hexfem_trace
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
show() { grep -vE "1,1" /tmp/r/$1.txt | grep -E "wall|AMG set-up cold|problem and plans|  output  |TRACE (unloaded|  matrix|    groups|    concat|output create)" | sed 's/^.*std...>://' | cut -c1-200; }
two() { tag=$1; shift; RAYON_NUM_THREADS=16 timeout 60 $MPI $T run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; show $tag; }
one() { tag=$1; th=$2; shift 2; RAYON_NUM_THREADS=$th timeout 60 $T run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; show $tag; }
one warm1 32 > /dev/null; two warm2 > /dev/null
one one32a 32; one one16a 16; two two_a; one one32b 32; one one16b 16; two two_b
cd /tmp/r && tar czf $OUTD/call1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
