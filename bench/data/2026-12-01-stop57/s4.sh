#!/bin/bash
# stop 57 call 4 (nvidia-h200): 4a0a99d (new: the ranks' smoothing through a kept SmoothingMap, each level's graph ids
# and start vector kept on the GPU) against 4a49935 (old: bench gamg --distributed, none of those): the distributed
# hierarchy on one process at 104^3 (no exchanges) and the one-process hierarchy, alternated; 2 ranks sharing the GPU
# (bench gamg --m 104: the renewals' stages and bytes; the 104^3 run: bytes a renewal); then the GPU and MPI GPU tests.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1; done
for i in 1 2; do for v in old new; do
  timeout 90 /tmp/hx_$v bench gamg --m 104 --device cuda --solves 3 --distributed --json > /tmp/r/dist_${v}_$i.json 2>/tmp/r/dist_${v}_$i.err
  timeout 60 /tmp/hx_$v bench gamg --m 104 --device cuda --solves 3 --json > /tmp/r/serial_${v}_$i.json 2>/dev/null
done; done
echo "benches at ${SECONDS}s"
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for v in old new; do RAYON_NUM_THREADS=8 timeout 100 $MPI /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/mpi_$v.json 2>/dev/null; echo "mpi $v rc $? at ${SECONDS}s"; done
python3 - <<'PY'
import json
def st(t): return ' '.join('%s=%.1f'%(k[:-2][:10],1e3*x) for k,x in t.items() if k.endswith('_s') and x>0)
def by(t): return ' '.join('%s=%d/%d'%(k[:5],b['host_to_device_bytes']//1000,b['device_to_host_bytes']//1000) for k,b in t['transfers'].items() if b['host_to_device_bytes']+b['device_to_host_bytes']>0)
for i in (1,2):
  for v in ('old','new'):
    try:
        s=json.load(open('/tmp/r/serial_%s_%d.json'%(v,i))); rw=s['renewal']
        print('%s %d serial: cold %.1f recompute %.1f keep %.1f its %s' % (v,i,1e3*rw['cold_s'], 1e3*rw['renewal_s'], 1e3*rw['other_mode_s'], s['iterations']))
        d=json.load(open('/tmp/r/dist_%s_%d.json'%(v,i)))
    except Exception as e: print(v,i,'no json',e); continue
    r=d['per_rank'][0]
    print('%s %d distributed: cold %.1f | %s' % (v,i,1e3*r['setup_cold_s'], st(r['setup_cold_stages'])))
    print('   recompute %.1f | %s | kB %s' % (1e3*r['renewal_recompute_s'], st(r['renewal_recompute_stages']), by(r['renewal_recompute_stages'])))
    print('   keep %.1f | %s | its %s hot set-up %.1f hot solve %.1f' % (1e3*r['renewal_keep_s'], st(r['renewal_keep_stages']), d['iterations'], 1e3*d['setup_hot_s'], 1e3*d['solve_hot_s']))
for v in ('old','new'):
    try: d=json.load(open('/tmp/r/mpi_%s.json'%v))
    except Exception as e: print(v,'mpi no json',e); continue
    for r in d['per_rank']:
        print('2 ranks %s rank %d: cold %.1f recompute %.1f (%s | kB %s) keep %.1f its %s' % (v, r['rank'], 1e3*r['setup_cold_s'], 1e3*r['renewal_recompute_s'], st(r['renewal_recompute_stages']), by(r['renewal_recompute_stages']), 1e3*r['renewal_keep_s'], d['iterations']))
PY
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
for v in old new; do RAYON_NUM_THREADS=8 timeout 100 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/run_$v --overwrite -v > /tmp/r/run_$v.txt 2>&1; echo "run $v rc $? at ${SECONDS}s"
  grep -E "bytes between host and GPU" /tmp/r/run_$v.txt | grep "1,0" | sed 's/^\[1,0\]<stderr>://' | sed -n '5p;9p;13p' | tr '\n' ' '; echo
  grep -E "AMG renewal|AMG set-up cold|wall" /tmp/r/run_$v.txt | head -3; done
cmp /tmp/o/run_old/neo_hookean_block.h5 /tmp/o/run_new/neo_hookean_block.h5 && echo "old and new results files equal"
timeout 330 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "one_rank|strength_graph_and_aggregates|amg_kernels_match" /tmp/device-out/*.log | grep -E " ok$|FAILED|passed" | head -10
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cd /tmp/r && tar czf $OUT/t4.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
