#!/bin/bash
# stop 50 call 3 (nvidia-h200, one H200): issue 26's one-GPU run goals with 08887cd (the joins by edge count; the staged
# build) against c45059b (.devq/hexfem_prev.gz), alternated after a warm-up of each: neo_hookean_block 65^3 (goal 1.2 s)
# and slender_beam [160,8,8] Q2 (goal 3 s), `device=cuda`, `cg_amg`, default output fields.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
(nproc; lscpu | grep -E "Model name|Socket|Thread|Core"; nvidia-smi --query-gpu=name --format=csv,noheader) > /tmp/r/host.txt 2>&1
gunzip -c .devq/hexfem_prev.gz > /tmp/hexfem_prev; chmod +x /tmp/hexfem_prev
NEW=$PWD/.device/bin/hexfem; OLD=/tmp/hexfem_prev
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
C="--set device=cuda --set linear_solver.method=cg_amg"
one() { H=$1; tag=$2; input=$3; shift 3; timeout 90 $H run inputs/$input.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|AMG set-up cold|AMG renewal|  output  " /tmp/r/$tag.txt | cut -c1-200; grep "^step" /tmp/r/$tag.txt | awk '{n+=$6; c+=$8} END{print "  newton", n, "cg", c}'; }
NB65="--set mesh.box.cells=[65,65,65]"; SB="--set mesh.box.cells=[160,8,8]"
one $NEW warm_new neo_hookean_block $NB65 > /dev/null; one $OLD warm_old neo_hookean_block $NB65 > /dev/null
one $NEW warm_new_sb slender_beam $SB > /dev/null; one $OLD warm_old_sb slender_beam $SB > /dev/null
for i in 1 2; do one $NEW nb65_new$i neo_hookean_block $NB65; one $OLD nb65_prev$i neo_hookean_block $NB65; done
for i in 1 2; do one $NEW sb_new$i slender_beam $SB; one $OLD sb_prev$i slender_beam $SB; done
cd /tmp/r && tar czf $OUT/call3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
