#!/bin/bash
# stop 55 call 7 (nvidia-h200-x2): 104^3 on 2 GPUs against one GPU with main 2f14ac4 (alternated after warm-ups); then a
# build of 2f14ac4 with temporary trace marks (HEXFEM_TRACE, never committed) on 2 GPUs: where each rank's cold set-up
# goes, phase by phase and level by level (the run and bench gamg --m 104).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/trace/hexfem.gz > /tmp/hx_tr; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_tr /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_TRACE -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
st() { grep -E "  (output|AMG set-up cold|AMG renewal|problem and plans|kernel compilation|solve|AMG hot update|assembly) " /tmp/r/$1.txt | sed 's/^\[1,0\]<stdout>://' | tr -s ' ' | tr '\n' ';'; }
two() { v=$1; tag=$2; shift 2; RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | grep '1,0' | sed 's/^.*wall \([0-9.]*\) s max.*/wall \1/') $(st $tag)"; }
one() { v=$1; tag=$2; shift 2; timeout 90 /tmp/hx_$v run inputs/neo_hookean_block.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | sed 's/^.*wall \([0-9.]*\) s.*/wall \1/') $(st $tag)"; }
two new warm2 > /dev/null; one new warm1 > /dev/null
for i in 1 2 3; do two new two$i; one new one$i; done
cmp /tmp/o/two1/neo_hookean_block.h5 /tmp/o/one1/neo_hookean_block.h5 && echo "2 GPUs and 1 GPU: results files equal"
export HEXFEM_TRACE=1
two tr trace_two
RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hx_tr bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/trace_g104.txt 2>&1; echo "trace g104 rc $? at ${SECONDS}s"
python3 - <<'PY'
import re,collections
for f in ['trace_two','trace_g104']:
    for rank in ['0','1']:
        seq=[]
        for line in open('/tmp/r/%s.txt'%f):
            m=re.match(r'\[1,(\d)\]<stderr>:TRACE (\S+) ([0-9.]+) ms',line)
            if m and m.group(1)==rank: seq.append((m.group(2),float(m.group(3))))
        print(f,'rank',rank,'first 90 marks:',' '.join('%s=%.1f'%(k,v) for k,v in seq[:90]))
PY
cd /tmp/r && tar czf $OUT/t7.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
