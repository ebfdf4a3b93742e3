#!/bin/bash
# stop 54 call 3 (nvidia-h200-x2): 8f66800 (stop 53's main, .devq/old) against 78c24fe (the ranks' output on their threads,
# the first state's cells computed there; .device/bin/hexfem), alternated after warm-ups: 104^3 on 2 GPUs, displacement only
# (3 each) and every output field (2 each); one GPU (2 each); a second process's kernel compilation (fresh cache); then
# the GPU tests and the MPI GPU tests; then 3 ranks on the 2 GPUs against 3 CPU ranks.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_old /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104]"
D="--set output.fields=[displacement]"
st() { grep -E "  (output|output writer \(background\)|AMG set-up cold|problem and plans|kernel compilation) " /tmp/r/$1.txt | sed 's/^\[1,0\]<stdout>://' | tr -s ' ' | tr '\n' ';'; }
two() { v=$1; tag=$2; shift 2; RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | grep '1,0' | sed 's/^.*wall \([0-9.]*\) s max.*/wall \1/') $(st $tag)"; }
one() { v=$1; tag=$2; shift 2; timeout 90 /tmp/hx_$v run inputs/neo_hookean_block.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | sed 's/^.*wall \([0-9.]*\) s.*/wall \1/') $(st $tag)"; }
two old warm_old $D > /dev/null; two new warm_new $D > /dev/null
for i in 1 2 3; do two old two_old$i $D; two new two_new$i $D; done
for i in 1 2; do two old all_old$i; two new all_new$i; done
one old warm1_old $D > /dev/null; one new warm1_new $D > /dev/null
for i in 1 2; do one old one_old$i $D; one new one_new$i $D; done
cmp /tmp/o/two_old1/neo_hookean_block.h5 /tmp/o/two_new1/neo_hookean_block.h5 && echo "2 GPUs: results files of old and new equal"
cmp /tmp/o/all_old1/neo_hookean_block.h5 /tmp/o/all_new1/neo_hookean_block.h5 && echo "2 GPUs, every field: results files of old and new equal"
cmp /tmp/o/one_old1/neo_hookean_block.h5 /tmp/o/one_new1/neo_hookean_block.h5 && echo "1 GPU: results files of old and new equal"
export HEXFEM_KERNEL_CACHE=/tmp/kcache2
for i in first second third; do one new kc_$i $D; done
export HEXFEM_KERNEL_CACHE=/tmp/kcache
timeout 420 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
if [ $SECONDS -lt 540 ]; then
MPI3="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 3"
for d in cuda cpu; do
  RAYON_NUM_THREADS=8 timeout 30 $MPI3 /tmp/hx_new run inputs/neo_hookean_block.yaml --set device=$d --set linear_solver.method=cg_amg -o /tmp/o/nb_$d --overwrite > /tmp/r/nb_$d.txt 2>&1; echo "run $d rc $? at ${SECONDS}s"
  python3 -c "
import json,glob
s=json.load(open(glob.glob('/tmp/o/nb_$d/*.summary.json')[0]))
print('$d', [(st['newton_iterations'], st['linear_iterations'], '%.15e' % st['max_displacement'], '%.15e' % st['strain_energy']) for st in s['steps']])"
done
fi
cd /tmp/r && tar czf $OUT/call3.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
