#!/bin/bash
# stop 57 call 5 (nvidia-h200): HEAD (new: also P's slot map kept on the GPU by the ranks' smoothing plan) against
# 4a49935 (old): the distributed hierarchy on one process at 104^3, alternated; the 104^3 run on 2 ranks sharing the GPU
# (old and new: the same file); then the MPI GPU tests of the renewals, the cold set-up and the graph on ranks.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1; done
for i in 1 2; do for v in old new; do
  timeout 90 /tmp/hx_$v bench gamg --m 104 --device cuda --solves 3 --distributed --json > /tmp/r/dist_${v}_$i.json 2>/tmp/r/dist_${v}_$i.err
done; done
echo "benches at ${SECONDS}s"
python3 - <<'PY'
import json
def st(t): return ' '.join('%s=%.1f'%(k[:-2][:10],1e3*x) for k,x in t.items() if k.endswith('_s') and x>0)
def by(t): return ' '.join('%s=%d/%d'%(k[:5],b['host_to_device_bytes']//1000,b['device_to_host_bytes']//1000) for k,b in t['transfers'].items() if b['host_to_device_bytes']+b['device_to_host_bytes']>0)
for i in (1,2):
  for v in ('old','new'):
    try: d=json.load(open('/tmp/r/dist_%s_%d.json'%(v,i)))
    except Exception as e: print(v,i,'no json',e); continue
    r=d['per_rank'][0]
    print('%s %d distributed: cold %.1f | recompute %.1f | %s | kB %s' % (v,i,1e3*r['setup_cold_s'], 1e3*r['renewal_recompute_s'], st(r['renewal_recompute_stages']), by(r['renewal_recompute_stages'])))
    print('   keep %.1f | %s | its %s' % (1e3*r['renewal_keep_s'], st(r['renewal_keep_stages']), d['iterations']))
PY
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
for v in old new; do RAYON_NUM_THREADS=8 timeout 100 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/run_$v --overwrite -v > /tmp/r/run_$v.txt 2>&1; echo "run $v rc $? at ${SECONDS}s"; grep -E "^step" /tmp/r/run_$v.txt | cut -c100-175; grep -E "AMG renewal" /tmp/r/run_$v.txt; done
cmp /tmp/o/run_old/neo_hookean_block.h5 /tmp/o/run_new/neo_hookean_block.h5 && echo "old and new results files equal"
T=.device/bin/test_mpi_e2e
{ mpirun --allow-run-as-root --oversubscribe -np 1 $T --exact a_device_kept_renewal_on_one_rank_uploads_no_vector --nocapture --test-threads=1
  for t in a_device_recompute_renewal_on_ranks_keeps_unchanged_levels_and_equals_a_cold_setup a_device_kept_renewal_on_ranks_equals_the_host_kept_renewal \
      device_rank_run_with_kept_renewals_equals_the_host_rank_run a_device_cold_setup_on_ranks_equals_the_host_cold_setup \
      a_device_strength_graph_and_aggregates_on_ranks_equal_the_host_ones device_levels_take_a_kept_renewal_in_place; do
    mpirun --allow-run-as-root --oversubscribe -np 2 $T --exact $t --nocapture --test-threads=1; done; } > /tmp/r/mpi_tests.log 2>&1; echo "mpi tests rc $? at ${SECONDS}s"
grep -E "panicked|FAILED" /tmp/r/mpi_tests.log | head -5
echo "passed bodies: $(grep -c 'body passed' /tmp/r/mpi_tests.log) (expected 13)"; grep 'body passed' /tmp/r/mpi_tests.log | sort | uniq -c
cd /tmp/r && tar czf $OUT/t5.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
