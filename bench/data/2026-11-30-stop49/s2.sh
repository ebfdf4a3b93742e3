#!/bin/bash
# stop 49 call 2 (nvidia-h200-x2): trace builds (never committed): hexfem_trace = 0a54de6 + .devq/trace_out.patch (call 1's),
# hexfem_trace2 = 3318ca0 (the COO row sort's offsets by blocks of rows) + .devq/trace_out2.patch (also the ranks' output pieces).
# The 104^3 run on one GPU (32 threads) alternated old/new, then on 2 GPUs with trace2.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
for b in trace trace2; do gunzip -c .devq/hexfem_$b.gz > /tmp/hexfem_$b; chmod +x /tmp/hexfem_$b; done
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
show() { grep -vE "1,1" /tmp/r/$1.txt | grep -E "wall|AMG set-up cold|problem and plans|  output  |TRACE (unloaded|  vector|  matrix|RankOutput|first|header|step output|end|output create)" | sed 's/^.*std...>://' | cut -c1-200; }
two() { b=$1; tag=$2; shift 2; RAYON_NUM_THREADS=16 timeout 60 $MPI /tmp/hexfem_$b run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; show $tag; }
one() { b=$1; tag=$2; shift 2; timeout 60 /tmp/hexfem_$b run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; show $tag; }
one trace2 warm1 > /dev/null; two trace2 warm2 > /dev/null
one trace old1; one trace2 new1; one trace old2; one trace2 new2
two trace2 two1; two trace2 two2
cd /tmp/r && tar czf $OUTD/call2.tgz . 2>/dev/null; cd /tmp/r && tar czf $OUT/call2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
