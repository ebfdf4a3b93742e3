#!/bin/bash
# stop 51 call 1 (nvidia-h200-x2): e2b4c26 (eliminated rows keep 1e-3 of the diagonal, zero right-hand side there; rank 0's
# writer writes each step's pieces in the background) against c45059b (.devq/hexfem_prev.gz): the GPU and MPI GPU tests;
# cg_amg on the GPU in three unit systems; the 104^3 run on 2 GPUs and on one, alternated after warm-ups.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
(nproc; lscpu | grep -E "Model name|Socket|Thread|Core"; nvidia-smi --query-gpu=name --format=csv,noheader) > /tmp/r/host.txt 2>&1
timeout 400 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
OUTD=$OUT; cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:|GPU tests" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
gunzip -c .devq/hexfem_prev.gz > /tmp/hexfem_prev; chmod +x /tmp/hexfem_prev
NEW=$PWD/.device/bin/hexfem; OLD=/tmp/hexfem_prev
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C="--set device=cuda --set linear_solver.method=cg_amg"
# units: the neo-Hookean block 24^3 and the twisting column in scaled, m-Pa and mm-MPa units on one GPU
u() { H=$1; tag=$2; input=$3; shift 3; timeout 60 $H run inputs/$input.yaml $C "$@" --set output.fields=[displacement] -o /tmp/o/u_$tag --overwrite > /dev/null 2>&1; echo "$tag rc $? $(python3 -c "
import json,glob
s=json.load(open(glob.glob('/tmp/o/u_$tag/*.summary.json')[0]))
its=[st['linear_iterations'] for st in s['steps']]
print('newton', sum(len(x) for x in its), 'cg', sum(sum(x) for x in its), 'max_u', s['steps'][-1]['max_displacement'])")"; }
for H in NEW OLD; do B=${!H}
 u $B ${H}_nb_scaled neo_hookean_block --set 'mesh.box.cells=[24,24,24]'
 u $B ${H}_nb_mPa neo_hookean_block --set 'mesh.box.cells=[24,24,24]' --set 'mesh.box.upper=[0.01,0.01,0.01]' --set materials.0.young_modulus=2.1e8 --set 'boundary.traction.0.value=[0,0,6.3e7]'
 u $B ${H}_nb_mmMPa neo_hookean_block --set 'mesh.box.cells=[24,24,24]' --set 'mesh.box.upper=[10,10,10]' --set materials.0.young_modulus=210 --set 'boundary.traction.0.value=[0,0,63]'
 u $B ${H}_tc_scaled twisting_column
 u $B ${H}_tc_mPa twisting_column --set 'mesh.box.lower=[-0.005,-0.005,0]' --set 'mesh.box.upper=[0.005,0.005,0.04]' --set materials.0.kappa=1.05e9 --set materials.0.mu=2.1e8 --set 'boundary.twist.0.center=[0,0,0.04]'
done
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
show() { grep -vE "1,1" /tmp/r/$1.txt | grep -E "wall|AMG set-up cold|AMG renewal|  output  |writer|  problem|near-null" | sed 's/^.*std...>://' | cut -c1-200; }
two() { H=$1; tag=$2; shift 2; RAYON_NUM_THREADS=16 timeout 60 $MPI $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; show $tag; }
one() { H=$1; tag=$2; shift 2; timeout 60 $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"; grep -E "wall|AMG set-up cold|AMG renewal|  output  |writer|  problem" /tmp/r/$tag.txt | cut -c1-200; }
two $NEW warm > /dev/null; two $OLD warm_old > /dev/null
for i in 1 2; do two $NEW two_new$i; two $OLD two_prev$i; done
one $NEW one_warm > /dev/null
for i in 1 2; do one $NEW one_new$i; one $OLD one_prev$i; done
cmp /tmp/o/two_new1/neo_hookean_block.h5 /tmp/o/one_new1/neo_hookean_block.h5 && echo "one and two GPUs: results files equal"
grep -h "^step" /tmp/r/one_new1.txt /tmp/r/one_prev1.txt | cut -c1-150
cd /tmp/r && tar czf $OUTD/call1.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
