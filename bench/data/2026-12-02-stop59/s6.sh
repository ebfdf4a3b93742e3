#!/bin/bash
# stop 59 call 6 (nvidia-h200): 6e62855 (new: call 4's build with the hold check over the nodes in parallel; the
# release binary alone, no test binaries) against f38a030 (old). The 104^3 run on one GPU (16 threads) alternated,
# 3 each; 2 ranks sharing the GPU (8 threads each) alternated, 2 each; results files compared.
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
gunzip -c .devq/old/hexfem.gz > /tmp/hx_old; gunzip -c .devq/new/hexfem.gz > /tmp/hx_new; chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in old new; do timeout 60 /tmp/hx_$v bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1; done
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
S="problem and|uploads|wall"
for i in 1 2 3; do for v in old new; do
  RAYON_NUM_THREADS=16 timeout 60 /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/one_$v --overwrite -v > /tmp/r/one_${v}_$i.txt 2>&1
  echo "== one GPU $v ($i) rc $?: $(grep -E "$S" /tmp/r/one_${v}_$i.txt | grep -v newton | awk '{printf "%s ", $0}' | tr -s ' ' | sed 's/.*where the time went/where the time went/')"
done; done
cmp /tmp/o/one_old/neo_hookean_block.h5 /tmp/o/one_new/neo_hookean_block.h5 && echo "one GPU: old and new results files equal"
for i in 1 2; do for v in old new; do
  RAYON_NUM_THREADS=8 timeout 90 $MPI /tmp/hx_$v run inputs/neo_hookean_block.yaml $C -o /tmp/o/two_$v --overwrite -v > /tmp/r/two_${v}_$i.txt 2>&1
  echo "== 2 ranks $v ($i) rc $?: $(grep -E "$S" /tmp/r/two_${v}_$i.txt | grep -v newton | awk '{printf "%s ", $0}' | tr -s ' ' | sed 's/.*where the time went/where the time went/')"
done; done
cmp /tmp/o/two_old/neo_hookean_block.h5 /tmp/o/two_new/neo_hookean_block.h5 && echo "2 ranks: old and new results files equal"
cd /tmp/r && tar czf $OUT/t6.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
