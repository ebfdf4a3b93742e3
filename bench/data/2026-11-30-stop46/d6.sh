#!/bin/bash
# stop 46 call 6 (nvidia-h200-x2): f75fef3's hexfem vs ec24e77's (stop 45's main), alternated: mpirun -np 2 bench gamg ex56 104 --device cuda, 2 each;
# the 104^3 run on 2 GPUs, 3 each; a TEMPORARY trace build of f75fef3 (marks inside a rank's cold coarsening, HEXFEM_TRACE=1) once
mkdir -p $OUT /tmp/o; SECONDS=0
for b in new prev trace; do gunzip -c .devq/hexfem_$b.gz > /tmp/hexfem_$b; chmod +x /tmp/hexfem_$b; done
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HEXFEM_TRACE=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_TRACE -np 2"
gamg() { H=$1; tag=$2
  RAYON_NUM_THREADS=16 timeout 120 $MPI $H bench gamg --problem ex56 --m 104 --device cuda > $OUT/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"
  grep -E "slowest|host cold set-up|bytes up/down|hot update moved" $OUT/$tag.txt | grep -v "^\[1,1\]" | sed 's/^.*std...>://' | cut -c1-300; }
RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hexfem_new bench gamg --problem ex56 --m 66 --device cuda > /dev/null 2>&1
RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hexfem_prev bench gamg --problem ex56 --m 66 --device cuda > /dev/null 2>&1
gamg /tmp/hexfem_new gamg_new1; gamg /tmp/hexfem_prev gamg_prev1; gamg /tmp/hexfem_new gamg_new2; gamg /tmp/hexfem_prev gamg_prev2
RAYON_NUM_THREADS=16 timeout 120 $MPI /tmp/hexfem_trace bench gamg --problem ex56 --m 104 --device cuda > $OUT/trace.txt 2>&1; echo "== trace rc $? at ${SECONDS}s"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { H=$1; tag=$2
  RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|AMG set-up cold|AMG hot|solve  " | sed 's/^.*std...>://' | cut -c1-200; }
run /tmp/hexfem_new new1; run /tmp/hexfem_prev prev1; run /tmp/hexfem_new new2; run /tmp/hexfem_prev prev2; run /tmp/hexfem_new new3; run /tmp/hexfem_prev prev3
RAYON_NUM_THREADS=16 timeout 100 mpirun --allow-run-as-root -x LD_LIBRARY_PATH -x HEXFEM_KERNEL_CACHE -x RAYON_NUM_THREADS -np 1 /tmp/hexfem_new run $NB $C $X -o /tmp/o/one --overwrite -v > $OUT/one_gpu.txt 2>&1; echo "== one GPU rc $? at ${SECONDS}s"
grep -E "wall|AMG set-up cold" $OUT/one_gpu.txt | cut -c1-200
echo "end at ${SECONDS}s"
