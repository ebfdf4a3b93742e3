#!/bin/bash
# stop 54 call 4 (nvidia-h200-x2) on 852dd9e (the final code: a state's fields go to the output threads whatever became of
# rank 0's figures; HEXFEM_MPI_THREADS): the GPU tests and the MPI GPU tests; 104^3 on 2 GPUs (displacement, 3 runs; every
# field, 2 runs; with HEXFEM_MPI_THREADS=serialized, 2 runs: the gathers on the run threads) and on one GPU (2 runs).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 400 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cp .device/bin/hexfem /tmp/hx_new; chmod +x /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_MPI_THREADS -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104]"
D="--set output.fields=[displacement]"
st() { grep -E "  (output|output writer \(background\)|AMG set-up cold|problem and plans) " /tmp/r/$1.txt | sed 's/^\[1,0\]<stdout>://' | tr -s ' ' | tr '\n' ';'; }
two() { tag=$1; shift 1; RAYON_NUM_THREADS=16 timeout 90 $MPI /tmp/hx_new run inputs/neo_hookean_block.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | grep '1,0' | sed 's/^.*wall \([0-9.]*\) s max.*/wall \1/') $(st $tag)"; }
one() { tag=$1; shift 1; timeout 90 /tmp/hx_new run inputs/neo_hookean_block.yaml $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s $(grep -E 'wall' /tmp/r/$tag.txt | sed 's/^.*wall \([0-9.]*\) s.*/wall \1/') $(st $tag)"; }
export HEXFEM_MPI_THREADS=multiple
two warm $D > /dev/null
for i in 1 2 3; do two two$i $D; done
for i in 1 2; do two all$i; done
export HEXFEM_MPI_THREADS=serialized
for i in 1 2; do two ser$i $D; done
cmp /tmp/o/two1/neo_hookean_block.h5 /tmp/o/ser1/neo_hookean_block.h5 && echo "2 GPUs: serialized and multiple give the same results file"
one warm1 $D > /dev/null
for i in 1 2; do one one$i $D; done
cd /tmp/r && tar czf $OUT/call4.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
