#!/bin/bash
# stop 57 call 1 (nvidia-h200): a6d043b+ (new: the ranks' GPU renewal keeps each level's eigenvalue start vector on
# the device; the device kept renewal's bytes by stage; dense_invert_pivot through column_pivot) against 0444da2 (old).
# First the GPU tests and the MPI GPU tests; then 2 ranks sharing the GPU: bench gamg --m 104 (the renewals' stages and
# bytes) and the 104^3 run (bytes a renewal), alternated; one-GPU bench gamg --m 66 (no change expected).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_old /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 330 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "coarse_inverse|one_rank|kept_renewal|dense" /tmp/device-out/*.log | grep -E " ok$|FAILED|passed" | head -20
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 3 --json > /tmp/r/g66_$v.json 2>/dev/null; done
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=8 timeout 100 $MPI /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 --json > /tmp/r/mpi_$v$i.json 2>/dev/null; echo "mpi $v$i rc $? at ${SECONDS}s"
done; done
python3 - <<'PY'
import json
for v in ('old','new'):
    d=json.load(open('/tmp/r/g66_%s.json'%v)); rw=d['renewal']
    print('66^3 one GPU %s: cold %.1f recompute %.1f keep %.1f ms, its %s' % (v, 1e3*rw['cold_s'], 1e3*rw['renewal_s'], 1e3*rw['other_mode_s'], d['iterations']))
for i in (1,2):
  for v in ('old','new'):
    try:
        d=json.load(open('/tmp/r/mpi_%s%d.json'%(v,i)))
    except Exception as e:
        print(v,i,'no json',e); continue
    for r,g in zip(d['per_rank'], d['gpu']):
        for key in ('renewal_recompute_stages','renewal_keep_stages'):
            t=r[key]
            st=' '.join('%s=%.1f'%(k[:-2][:9],1e3*x) for k,x in t.items() if k.endswith('_s') and x>0)
            by=' '.join('%s=%d/%d'%(k[:5],b['host_to_device_bytes']//1000,b['device_to_host_bytes']//1000) for k,b in t['transfers'].items())
            print('%s%d rank %d %s: %s | kB up/down %s' % (v,i,r['rank'],key[8:12],st,by))
        print('%s%d rank %d keep total up/down %d / %d B; cold %.1f ms its %s' % (v,i,r['rank'],g['renewal_keep_host_to_device_bytes'],g['renewal_keep_device_to_host_bytes'],1e3*r['setup_cold_s'], d['iterations']))
PY
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
for v in old new; do RAYON_NUM_THREADS=8 timeout 100 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/run_$v --overwrite -v > /tmp/r/run_$v.txt 2>&1; echo "run $v rc $? at ${SECONDS}s"
  grep -E "bytes between host and GPU|AMG set-up" /tmp/r/run_$v.txt | grep "1,0" | sed 's/^\[1,0\]<stderr>://' | head -12
  grep -E "AMG renewal|AMG set-up cold" /tmp/r/run_$v.txt | head -2; done
cmp /tmp/o/run_old/neo_hookean_block.h5 /tmp/o/run_new/neo_hookean_block.h5 && echo "old and new results files equal"
ls /usr/local/cuda*/bin/ 2>/dev/null | tr "\n" " " | head -c 1500; echo
cd /tmp/r && tar czf $OUT/t1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
