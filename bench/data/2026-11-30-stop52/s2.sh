#!/bin/bash
# stop 52 call 2 (nvidia-h200): the portable ln and exp (fem/src/material/elementary.rs and their device twins in
# fem/cuda/element.cu): the GPU and MPI GPU tests (gpu_runs == cpu runs for every input, the new large-volume-change
# element test), and the slender beam's CPU/GPU residual histories with cg_amg, reuse full and cg_jacobi.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 380 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
OUTD=$OUT; cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:|GPU tests" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "gpu_runs: (slender_beam|neo_hookean_block):.*steps|GPU runs differ" -A2 /tmp/device-out/tests.log | head -8
grep -hE "stretch" /tmp/device-out/tests.log | head -4
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
NEW=$PWD/.device/bin/hexfem
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
par() { tag=$1; shift; for d in cpu cuda; do timeout 60 $NEW run inputs/slender_beam.yaml --set device=$d "$@" -o /tmp/o/par_${tag}_$d --overwrite > /dev/null 2>&1; done
 python3 -c "
import json
a,b=[json.load(open('/tmp/o/par_${tag}_%s/slender_beam.summary.json'%d)) for d in ('cpu','cuda')]
ra=[x for s in a['steps'] for x in s['residual_norms']]; rb=[x for s in b['steps'] for x in s['residual_norms']]
d=max((abs(x-y)/max(abs(x),1e-300) for x,y in zip(ra,rb)), default=-1)
print('parity $tag', len(ra), len(rb), 'largest relative residual difference', d, 'bitwise', ra==rb)"; }
par cg_amg --set linear_solver.method=cg_amg
par reuse_full --set linear_solver.method=cg_amg --set linear_solver.amg.reuse=full
par cg_jacobi --set linear_solver.method=cg_jacobi
cd /tmp/r && tar czf $OUTD/call2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
