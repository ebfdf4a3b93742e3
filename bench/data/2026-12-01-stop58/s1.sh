#!/bin/bash
# stop 58 call 1 (nvidia-h200, main 05032e5): where a rank's host stages go. The 104^3 run on one GPU
# (16 threads; 8 threads) and 2 ranks sharing it (8 threads each), with huge-page advice on and off
# (HEXFEM_HUGE_PAGES); the distributed hierarchy on one process (bench gamg --distributed), on and off.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
H=.device/bin/hexfem
echo "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag) khugepaged defrag $(cat /sys/kernel/mm/transparent_hugepage/khugepaged/defrag)"
echo "nproc $(nproc); $(lscpu | grep -E 'Model name|Socket|NUMA node\(s\)' | tr -s ' ' | tr '\n' ';')"; free -g | head -2; which perf || echo "no perf"
timeout 60 $H bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_HUGE_PAGES -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
S="start-up|mesh  |problem and|device and|kernel comp|uploads|output  |assembly|AMG set-up cold|AMG renewal|AMG hot|solve  |converged|wall"
for i in 1 2; do for hp in on off; do
  RAYON_NUM_THREADS=16 HEXFEM_HUGE_PAGES=$hp timeout 60 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/one --overwrite -v > /tmp/r/one16_${hp}_$i.txt 2>&1
  echo "== one GPU, 16 threads, huge $hp ($i) at ${SECONDS}s"; grep -E "$S" /tmp/r/one16_${hp}_$i.txt | grep -v "^ *newton"
  RAYON_NUM_THREADS=8 HEXFEM_HUGE_PAGES=$hp timeout 90 $MPI $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/two --overwrite -v > /tmp/r/two8_${hp}_$i.txt 2>&1
  echo "== 2 ranks sharing the GPU, 8 threads each, huge $hp ($i) at ${SECONDS}s"; grep -E "$S" /tmp/r/two8_${hp}_$i.txt | grep -v "newton" | grep "1,0"
done; done
RAYON_NUM_THREADS=8 timeout 60 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/one --overwrite -v > /tmp/r/one8_on.txt 2>&1
echo "== one GPU, 8 threads, huge on at ${SECONDS}s"; grep -E "$S" /tmp/r/one8_on.txt | grep -v "^ *newton"
for hp in on off; do
  HEXFEM_HUGE_PAGES=$hp timeout 90 $H bench gamg --m 104 --device cuda --solves 3 --distributed --json > /tmp/r/dist_$hp.json 2>/tmp/r/dist_$hp.err
done
python3 - <<'PY'
import json
def st(t): return ' '.join('%s=%.1f'%(k[:-2][:10],1e3*x) for k,x in t.items() if k.endswith('_s') and x>0)
for hp in ('on','off'):
    try: d=json.load(open('/tmp/r/dist_%s.json'%hp))
    except Exception as e: print(hp,'no json',e); continue
    r=d['per_rank'][0]
    print('huge %s distributed: cold %.1f | %s' % (hp,1e3*r['setup_cold_s'], st(r['setup_cold_stages'])))
    print('   recompute %.1f | %s' % (1e3*r['renewal_recompute_s'], st(r['renewal_recompute_stages'])))
    print('   keep %.1f | %s | its %s' % (1e3*r['renewal_keep_s'], st(r['renewal_keep_stages']), d['iterations']))
PY
cd /tmp/r && tar czf $OUT/t1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
