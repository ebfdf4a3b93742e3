#!/bin/bash
# stop 53 call 3 (nvidia-h200-x2) on 9faee51 (P0 made on the ranks' GPUs in cold set-ups and renewals, the modes computed
# there): the GPU tests and the MPI GPU tests; the 104^3 run on 2 GPUs (twice) and one GPU (once) after warm-ups;
# mpirun -np 2 hexfem bench gamg --m 128 --device cuda (issue 26's 128^3 cold set-up row).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 400 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "^gpu_runs: [a-z_]*: [0-9]+ steps" /tmp/device-out/tests.log | sed 's/, output bytes.*//' | cut -c1-150 | head -16
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
H=$PWD/.device/bin/hexfem
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
two() { tag=$1; RAYON_NUM_THREADS=16 timeout 90 $MPI $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -vE "1,1" /tmp/r/$tag.txt | grep -E "wall|  output  |near-null|AMG |solve  |problem and" | sed 's/^.*std...>://' | cut -c1-100; grep -E "AMG set-up: " /tmp/r/$tag.txt | grep "1,0" | sed 's/^.*(\(.*\)AMG set-up: \([^,]*\),.*/\2/' | tr '\n' ';'; echo; }
one() { tag=$1; timeout 90 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|  output  |near-null|AMG |solve  " /tmp/r/$tag.txt | cut -c1-100; }
if [ $SECONDS -lt 430 ]; then
two warm > /dev/null; two two1; two two2; one warm1 > /dev/null; one one1
RAYON_NUM_THREADS=16 timeout 120 $MPI $H bench gamg --m 128 --device cuda --solves 2 --json > /tmp/r/mpi128.txt 2>&1; echo "mpi gamg 128 rc $? at ${SECONDS}s"
python3 - <<'PY'
import json,re
t=open('/tmp/r/mpi128.txt').read()
joined=''.join(l.split(':',1)[1] for l in t.splitlines() if l.startswith('[1,0]<stdout>:'))
i=joined.find('{')
while i>=0:
    try: d,end=json.JSONDecoder().raw_decode(joined[i:])
    except Exception as e: print('parse', e); break
    i=joined.find('{', i+end)
    print('setup_cold_s', round(d['setup_cold_s'],4), 'hot', round(d['setup_hot_s'],4), 'solve_hot', round(d['solve_hot_s'],4), 'its', d['iterations'])
    for r in d['per_rank']:
        st=r['setup_cold_stages']; print('rank', r['rank'], 'cold', round(r['setup_cold_s'],4), {k:round(v,4) for k,v in st.items() if isinstance(v,float) and v>0})
        print('  transfers', {k:(v['host_to_device_bytes'],v['device_to_host_bytes']) for k,v in st['transfers'].items()})
        print('  renewal recompute', round(r['renewal_recompute_s'],4), 'keep', round(r['renewal_keep_s'],4), {k:round(v,4) for k,v in r['renewal_keep_stages'].items() if isinstance(v,float) and v>0})
PY
fi
cd /tmp/r && tar czf $OUT/call3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
