#!/bin/bash
# stop 53 call 6 (nvidia-h200-x2) on the final code (4eb0cd6's binary, .devq/new): 3 ranks sharing the 2 GPUs (rank 2 on
# GPU 0), where the device tentative prolongator's messages come from two other ranks: `hexfem bench gamg` on the GPUs
# against the CPUs (iterations of the cold set-up's solves and of both renewals), and `hexfem run` of
# inputs/neo_hookean_block.yaml on GPU ranks against CPU ranks (Newton and CG iterations per step, max |u|).
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/new/hexfem.gz > /tmp/hx; chmod +x /tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 3"
for d in cuda cpu; do
  RAYON_NUM_THREADS=8 timeout 120 $MPI /tmp/hx bench gamg --m 40 --device $d --solves 2 --json > /tmp/r/g40_$d.txt 2>&1; echo "gamg 40 $d rc $? at ${SECONDS}s"
  python3 - $d <<'PY'
import json,sys
t=open(f'/tmp/r/g40_{sys.argv[1]}.txt').read().replace('[1,0]<stdout>:','').replace('\n','')
i=t.find('{"problem"')
try:
    d=json.loads(t[i:t.rfind('}')+1])
except Exception as e:
    print('parse', e); sys.exit()
r=d.get('renewal') or {}
print(sys.argv[1], 'levels', d.get('rows_per_level'), 'its', d['iterations'], {k:v for k,v in d.items() if 'iteration' in k and k!='iterations' and not isinstance(v,dict)}, {k: d['per_rank'][0][k] for k in d['per_rank'][0] if 'iteration' in k})
PY
done
for d in cuda cpu; do
  RAYON_NUM_THREADS=8 timeout 120 $MPI /tmp/hx run inputs/neo_hookean_block.yaml --set device=$d --set linear_solver.method=cg_amg -o /tmp/o/nb_$d --overwrite > /tmp/r/nb_$d.txt 2>&1; echo "run $d rc $? at ${SECONDS}s"
  python3 -c "
import json,glob
s=json.load(open(glob.glob('/tmp/o/nb_$d/*.summary.json')[0]))
print('$d', [(st['newton_iterations'], st['linear_iterations'], '%.15e' % st['max_displacement']) for st in s['steps']])"
done
cd /tmp/r && tar czf $OUT/call6.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
