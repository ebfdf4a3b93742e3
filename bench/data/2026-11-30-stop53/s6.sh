#!/bin/bash
# stop 53 call 7 (nvidia-h200-x2) on 1d7f76b (the review: DistTentative's coarse rows a Vector, the modes' local sums agreed
# on before their reduction): the GPU tests and the MPI GPU tests; then, if time is left, inputs/neo_hookean_block.yaml on
# 3 GPU ranks against 3 CPU ranks (as call 6).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 380 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "^gpu_runs: [a-z_]*: [0-9]+ steps" /tmp/device-out/tests.log | sed 's/, output bytes.*//' | cut -c1-150 | head -16
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
if [ $SECONDS -lt 345 ]; then
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 3"
for d in cuda cpu; do
  RAYON_NUM_THREADS=8 timeout 30 $MPI .device/bin/hexfem run inputs/neo_hookean_block.yaml --set device=$d --set linear_solver.method=cg_amg -o /tmp/o/nb_$d --overwrite > /tmp/r/nb_$d.txt 2>&1; echo "run $d rc $? at ${SECONDS}s"
  python3 -c "
import json,glob
s=json.load(open(glob.glob('/tmp/o/nb_$d/*.summary.json')[0]))
print('$d', [(st['newton_iterations'], st['linear_iterations'], '%.15e' % st['max_displacement']) for st in s['steps']])"
done
fi
cd /tmp/r && tar czf $OUT/call7.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
