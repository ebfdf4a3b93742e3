#!/bin/bash
# stop 55 call 1 (nvidia-h200: 2 ranks share the GPU): temporary trace marks (HEXFEM_TRACE) in the ranks' device cold set-up;
# where a rank's cold set-up goes at 104^3 (bench gamg and the run); one GPU's bench gamg stages beside.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_TRACE -np 2"
H=.device/bin/hexfem
which perf nsys 2>&1 | head -3
RAYON_NUM_THREADS=8 timeout 120 $MPI $H bench gamg --m 66 --device cuda --solves 2 --json > /tmp/r/warm.txt 2>&1; echo "warm rc $? at ${SECONDS}s"
for i in 1 2; do HEXFEM_TRACE=1 RAYON_NUM_THREADS=8 timeout 120 $MPI $H bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/g104_$i.txt 2>&1; echo "g104 $i rc $? at ${SECONDS}s"; done
timeout 120 $H bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/g104_one.txt 2>&1; echo "g104 one rc $? at ${SECONDS}s"
timeout 120 $H bench gamg --m 66 --device cuda --solves 3 --json > /tmp/r/g66_one.json 2>/dev/null; echo "g66 one rc $? at ${SECONDS}s"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
for i in 1 2; do HEXFEM_TRACE=1 RAYON_NUM_THREADS=8 timeout 90 $MPI $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/two$i --overwrite -v > /tmp/r/two$i.txt 2>&1; echo "two $i rc $? at ${SECONDS}s"; done
timeout 90 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/one --overwrite -v > /tmp/r/one.txt 2>&1; echo "one rc $? at ${SECONDS}s"
python3 - <<'PY'
import re,collections
for f in ['g104_1','g104_2','two1','two2']:
    for rank in ['0','1']:
        acc=collections.OrderedDict(); cnt=collections.Counter()
        for line in open('/tmp/r/%s.txt'%f):
            m=re.match(r'\[1,(\d)\]<stderr>:TRACE (\S+) ([0-9.]+) ms',line)
            if m and m.group(1)==rank:
                acc[m.group(2)]=acc.get(m.group(2),0)+float(m.group(3)); cnt[m.group(2)]+=1
        print(f, 'rank', rank, ' '.join('%s=%.1f(%d)'%(k,v,cnt[k]) for k,v in acc.items()))
PY
grep -h '1,0.*TRACE' /tmp/r/g104_1.txt | head -70 | sed 's/.*TRACE //' | tr '\n' ';'; echo
grep -h '1,0.*TRACE' /tmp/r/two1.txt | head -70 | sed 's/.*TRACE //' | tr '\n' ';'; echo
cd /tmp/r && tar czf $OUT/t1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
