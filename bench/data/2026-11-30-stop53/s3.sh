#!/bin/bash
# stop 53 call 4 (nvidia-h200-x2): 96333c8 (stop 52's main, .devq/old) against 63ee087 (this stop: the tentative prolongator
# made on the ranks' GPUs from modes computed there, .devq/new), alternated after warm-ups: the 104^3 run on 2 GPUs (3 each)
# and on one GPU (2 each); mpirun -np 2 hexfem bench gamg --m 128 --device cuda (2 each); a second process's kernel
# compilation with the cache warm (one GPU, 104^3, a fresh cache directory).
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
for v in old new; do gunzip -c .devq/$v/hexfem.gz > /tmp/hx_$v; chmod +x /tmp/hx_$v; done
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
two() { v=$1; tag=$2; RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | grep '1,0' | sed 's/^.*wall \([0-9.]*\) s max.*/wall \1/')"; }
one() { v=$1; tag=$2; timeout 90 /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | sed 's/^.*wall \([0-9.]*\) s.*/wall \1/') $(grep -E '  kernel compilation ' /tmp/r/$tag.txt | tr -s ' ')"; }
two old warm_old > /dev/null; two new warm_new > /dev/null
for i in 1 2 3; do two old two_old$i; two new two_new$i; done
one old warm1_old > /dev/null; one new warm1_new > /dev/null
for i in 1 2; do one old one_old$i; one new one_new$i; done
cmp /tmp/o/two_old1/neo_hookean_block.h5 /tmp/o/two_new1/neo_hookean_block.h5 && echo "2 GPUs: results files of old and new equal"
cmp /tmp/o/one_old1/neo_hookean_block.h5 /tmp/o/one_new1/neo_hookean_block.h5 && echo "1 GPU: results files of old and new equal"
for i in 1 2; do for v in old new; do RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hx_$v bench gamg --m 128 --device cuda --solves 2 --json > /tmp/r/mpi128_${v}$i.txt 2>&1; echo "mpi gamg 128 $v$i rc $? at ${SECONDS}s"; done; done
python3 - <<'PY'
import json
for i in (1,2):
  for v in ('old','new'):
    t=open(f'/tmp/r/mpi128_{v}{i}.txt').read().replace('[1,0]<stdout>:','').replace('\n','')
    try: d=json.loads(t[t.find('{"problem"'):])
    except Exception as e: print(v,i,'parse',e); continue
    r=d['per_rank'][0]; st=r['setup_cold_stages']
    print(v, i, 'cold', round(d['setup_cold_s'],3), 'its', d['iterations'], 'tentative', round(st['tentative_s'],3), 'smoothing', round(st['smoothing_s'],3), 'renewal recompute', round(r['renewal_recompute_s'],3), 'keep', round(r['renewal_keep_s'],3), 'keep tentative', round(r['renewal_keep_stages']['tentative_s'],3))
PY
# a second process's kernel compilation, the cache warm (a fresh cache directory)
export HEXFEM_KERNEL_CACHE=/tmp/kcache2
for i in first second third; do one new kc_$i; done
cd /tmp/r && tar czf $OUT/call4.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
