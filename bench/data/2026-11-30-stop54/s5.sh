#!/bin/bash
# stop 54 call 5 (nvidia-h200-x2): 852dd9e (.devq/old) against ef5d3cd (the output writer's threads at nice 10 with a rayon
# pool of their own; .device/bin/hexfem), alternated after warm-ups: 104^3 on 2 GPUs (displacement 3 each, every field 2
# each), on one GPU (displacement 2 each, every field 1 each), and on 2 CPU ranks of 16 threads at 64^3 (1 each).
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_old /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104]"
D="--set output.fields=[displacement]"
st() { grep -E "  (output|output writer \(background\)|AMG set-up cold) " /tmp/r/$1.txt | sed 's/^\[1,0\]<stdout>://' | tr -s ' ' | tr '\n' ';'; }
two() { v=$1; tag=$2; shift 2; RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | grep '1,0' | sed 's/^.*wall \([0-9.]*\) s max.*/wall \1/') $(st $tag)"; }
one() { v=$1; tag=$2; shift 2; timeout 90 /tmp/hx_$v run inputs/neo_hookean_block.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | sed 's/^.*wall \([0-9.]*\) s.*/wall \1/') $(st $tag)"; }
two old warm_old $D > /dev/null; two new warm_new $D > /dev/null
for i in 1 2 3; do two old two_old$i $D; two new two_new$i $D; done
for i in 1 2; do two old all_old$i; two new all_new$i; done
one old warm1_old $D > /dev/null; one new warm1_new $D > /dev/null
for i in 1 2; do one old one_old$i $D; one new one_new$i $D; done
one old oneall_old1; one new oneall_new1
cmp /tmp/o/two_old1/neo_hookean_block.h5 /tmp/o/two_new1/neo_hookean_block.h5 && echo "2 GPUs: results files equal"
cmp /tmp/o/all_old1/neo_hookean_block.h5 /tmp/o/all_new1/neo_hookean_block.h5 && echo "2 GPUs, every field: results files equal"
cmp /tmp/o/oneall_old1/neo_hookean_block.h5 /tmp/o/oneall_new1/neo_hookean_block.h5 && echo "1 GPU, every field: results files equal"
CC="--set linear_solver.method=cg_amg --set mesh.box.cells=[64,64,64]"
for v in old new; do RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $CC -o /tmp/o/cpu_$v --overwrite -v > /tmp/r/cpu_$v.txt 2>&1; echo "== cpu_$v rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/cpu_$v.txt | grep '1,0' | sed 's/^.*wall \([0-9.]*\) s max.*/wall \1/') $(st cpu_$v)"; done
cmp /tmp/o/cpu_old/neo_hookean_block.h5 /tmp/o/cpu_new/neo_hookean_block.h5 && echo "2 CPU ranks: results files equal"
cd /tmp/r && tar czf $OUT/call5.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
