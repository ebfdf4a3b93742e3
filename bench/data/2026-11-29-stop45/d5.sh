#!/bin/bash
# stop 45 call 5 (nvidia-h200-x2): where the hot update goes on 1 GPU and on 2 GPUs (ex56 104^3, bench gamg --json, main 8a22dc6's hexfem)
mkdir -p $OUT; SECONDS=0
gunzip -c .devq/hexfem_new.gz > /tmp/hexfem_new; chmod +x /tmp/hexfem_new; H=/tmp/hexfem_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
RAYON_NUM_THREADS=16 timeout 100 $H bench gamg --problem ex56 --m 104 --device cuda --solves 4 > $OUT/one_w.txt 2>&1; echo "== 1 GPU warm-up rc $? at ${SECONDS}s"
RAYON_NUM_THREADS=16 timeout 100 $H bench gamg --problem ex56 --m 104 --device cuda --solves 4 > $OUT/one.txt 2>&1; echo "== 1 GPU rc $? at ${SECONDS}s"
grep -iE "hot update|hot|galerkin" $OUT/one.txt | head -12 | cut -c1-300
RAYON_NUM_THREADS=16 timeout 120 $MPI $H bench gamg --problem ex56 --m 104 --device cuda --solves 4 > $OUT/two_w.txt 2>&1; echo "== 2 GPU warm-up rc $? at ${SECONDS}s"
RAYON_NUM_THREADS=16 timeout 120 $MPI $H bench gamg --problem ex56 --m 104 --device cuda --solves 4 --json > $OUT/two.json 2>$OUT/two_err.txt; echo "== 2 GPU rc $? at ${SECONDS}s"
python3 - <<'PY'
import json,os
t=open(os.environ['OUT']+'/two.json').read()
for line in t.splitlines():
    line=line.strip()
    if not line.startswith('{'): continue
    d=json.loads(line)
    def walk(x,p=''):
        if isinstance(x,dict):
            for k,v in x.items(): walk(v,p+'.'+k)
        elif isinstance(x,list):
            for i,v in enumerate(x): walk(v,p+'[%d]'%i)
        else:
            if any(s in p for s in ['hot_update_','hot_s','update_s','setup_hot','vcycle_s','solve_s']): print(p, x)
    walk(d)
PY
echo "end at ${SECONDS}s"
