#!/bin/bash
# stop 52 call 1 (nvidia-h200: the x2 kind was not lent; the 2-rank runs share the one GPU): 9dc54b2 (one order of sums for the Galerkin product on host and device: the
# host's fused, colour-ordered strategy removed) against c45059b (.devq/hexfem_prev.gz): the GPU and MPI GPU
# tests (gpu_runs == cpu runs for every input); the host's hot Galerkin product on 16 cores (fused in the old
# binary, streamed now); issue 26's goal table on one GPU; 104^3 on 2 GPUs and one; ex56 128^3 on 2 GPUs.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
(nproc; lscpu | grep -E "Model name|Socket|Thread|Core"; nvidia-smi --query-gpu=name --format=csv,noheader) > /tmp/r/host.txt 2>&1
timeout 380 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
OUTD=$OUT; cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:|GPU tests" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "gpu_runs" /tmp/device-out/*.log | head -8
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
gunzip -c .devq/hexfem_prev.gz > /tmp/hexfem_prev; chmod +x /tmp/hexfem_prev
NEW=$PWD/.device/bin/hexfem; OLD=/tmp/hexfem_prev
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# the host's hot Galerkin product on 16 threads: old (fused where P colours) and new (one order)
for i in 1 2; do for H in NEW OLD; do RAYON_NUM_THREADS=16 timeout 60 ${!H} bench gamg --m 66 --solves 3 --json > /tmp/r/cpu_${H}$i.json 2>/dev/null
 python3 -c "
import json; d=json.load(open('/tmp/r/cpu_${H}$i.json'))
print('cpu66 $H', 'cold', round(d.get('setup_cold_s',0),4), 'hot', [round(x,4) for x in d['setup_hot_all_s']], 'galerkin numeric', round(d['galerkin_numeric_s'],4), 'its', d.get('iterations'))"; done; done
# goal table, one GPU
timeout 60 $NEW bench gamg --m 66 --device cuda --solves 3 --json > /tmp/r/gpu66.json 2>/dev/null
python3 -c "
import json; d=json.load(open('/tmp/r/gpu66.json'))
print('gpu66', {k:v for k,v in d.items() if k.startswith('setup') or k.startswith('solve') or k=='iterations'})
r=d['renewal']; print('gpu66 renewal', {k:v for k,v in r.items() if not isinstance(v,dict)})"
C="--set device=cuda --set linear_solver.method=cg_amg"
one() { tag=$1; input=$2; shift 2; timeout 90 $NEW run inputs/$input.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|AMG set-up cold|AMG renewal|  output  |writer|  problem|kernel comp|  mesh  " /tmp/r/$tag.txt | cut -c1-160; }
one warm neo_hookean_block --set 'mesh.box.cells=[65,65,65]' > /dev/null
one nb65 neo_hookean_block --set 'mesh.box.cells=[65,65,65]'
one beam160 slender_beam --set 'mesh.box.cells=[160,8,8]'
one nb104 neo_hookean_block --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]'
one nb104all neo_hookean_block --set 'mesh.box.cells=[104,104,104]'
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
two() { tag=$1; shift; RAYON_NUM_THREADS=8 timeout 60 $MPI $NEW run inputs/neo_hookean_block.yaml $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -vE "1,1" /tmp/r/$tag.txt | grep -E "wall|AMG set-up cold|AMG renewal|  output  |writer|  problem|near-null" | sed 's/^.*std...>://' | cut -c1-200; }
two warm2 > /dev/null
two two1
# the output stage's split: one load step (two states) against four (five states)
two two_steps1 --set loading.steps=1
# the other parity notes of stop 51: reuse full and cg_jacobi, CPU against GPU (residual norms)
par() { tag=$1; shift; for d in cpu cuda; do timeout 60 $NEW run inputs/slender_beam.yaml --set device=$d "$@" -o /tmp/o/par_${tag}_$d --overwrite > /dev/null 2>&1; done
 python3 -c "
import json
a,b=[json.load(open('/tmp/o/par_${tag}_%s/slender_beam.summary.json'%d)) for d in ('cpu','cuda')]
ra=[x for s in a['steps'] for x in s['residual_norms']]; rb=[x for s in b['steps'] for x in s['residual_norms']]
d=max((abs(x-y)/max(abs(x),1e-300) for x,y in zip(ra,rb)), default=-1)
print('parity $tag', len(ra), len(rb), 'largest relative residual difference', d, 'bitwise', ra==rb)"; }
par reuse_full --set linear_solver.method=cg_amg --set linear_solver.amg.reuse=full
par cg_amg --set linear_solver.method=cg_amg
par cg_jacobi --set linear_solver.method=cg_jacobi
cd /tmp/r && tar czf $OUTD/call1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
