#!/bin/bash
# stop 61 call 2 (nvidia-h200): 8163e22 (new: GroupedQrPlan::from_assignment in parallel; the device pair lists a warp
# per output row) against 29f42f6 (old: call 1's new). The GPU tests first, then bench gamg at 66^3 and 104^3 (one
# process: the cold set-up's stages) alternated after a warm-up, the ranks' path on one rank (--distributed) and 2
# ranks sharing the GPU, the 104^3 run on one GPU (displacement only), then the MPI GPU tests.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 300 env TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp /tmp/device-out/tests.log /tmp/r/ 2>/dev/null; rm -f $OUT/device-out.tgz
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "symbolic|ptap|galerkin" /tmp/device-out/tests.log | grep -E " ok$|FAILED" | head -12
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null) skipped: $(grep -ch SKIP /tmp/device-out/tests.log)"
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1; done
for i in 1 2; do for v in old new; do for m in 66 104; do
  timeout 60 /tmp/hx_$v bench gamg --m $m --device cuda --solves 2 --json > /tmp/r/g${m}_$v$i.json 2>/dev/null
done; done; done
python3 - <<'PY'
import json
for m in (66, 104):
    for v in ('old','new'):
        for i in (1,2):
            try: d=json.load(open('/tmp/r/g%d_%s%d.json'%(m,v,i)))
            except Exception as e: print(m, v, i, 'missing', e); continue
            t=d['renewal']['cold_timings']
            st=' '.join('%s %.1f' % (k[:-2], 1e3*x) for k, x in t.items() if k.endswith('_s') and x > 0 and k != 'total_s')
            print('%d^3 %s: cold %.1f ms (%s) recompute %.1f keep %.1f its %s' % (m, v,
              1e3*d['renewal']['cold_s'], st, 1e3*d['renewal']['renewal_s'], 1e3*d['renewal']['other_mode_s'], d['iterations']))
PY
echo "bench at ${SECONDS}s"
for v in old new; do
  RAYON_NUM_THREADS=16 timeout 60 /tmp/hx_$v bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/dist1_$v.txt 2>&1
  echo "== one rank $v at ${SECONDS}s: $(grep -E 'slowest rank|host cold set-up' /tmp/r/dist1_$v.txt | head -2 | tr -s ' ')"
done
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for v in old new; do
  RAYON_NUM_THREADS=8 timeout 90 $MPI /tmp/hx_$v bench gamg --m 104 --device cuda --solves 2 > /tmp/r/dist2_$v.txt 2>&1
  echo "== 2 ranks sharing $v at ${SECONDS}s: $(grep -E 'slowest rank|host cold set-up' /tmp/r/dist2_$v.txt | head -3 | tr -s ' ')"
done
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
S="problem and|AMG set-up cold|AMG set-up|wall"
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=16 timeout 60 /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/one_$v --overwrite -v > /tmp/r/one_${v}_$i.txt 2>&1
  echo "== 104^3 run one GPU $v ($i) rc $? at ${SECONDS}s: $(grep -E "$S" /tmp/r/one_${v}_$i.txt | grep -v newton | awk '{printf "%s ", $0}' | tr -s ' ' | sed 's/.*where the time went/where the time went/')"
done; done
cmp /tmp/o/one_old/neo_hookean_block.h5 /tmp/o/one_new/neo_hookean_block.h5 && echo "one GPU: old and new results files equal"
left=$((570 - SECONDS)); echo "MPI tests with ${left}s"
timeout $left env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run_mpi.log 2>&1; echo "run.sh (MPI) rc $? at ${SECONDS}s"
cp /tmp/device-out/mpi_tests.log /tmp/r/ 2>/dev/null
grep -hE "FAILED|panicked" /tmp/device-out/mpi_tests.log | head
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
rm -f $OUT/device-out.tgz; cd /tmp/r && tar czf $OUT/t2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
