#!/bin/bash
# stop 43 call 1: main 70d7981's binary on nvidia-h200-x2: the 104^3 run on 2 GPUs vs 1 GPU; ex56 66^3 cold set-up on 2 GPUs
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
mkdir -p $OUT; SECONDS=0
nvidia-smi -L; nproc
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NEW=$PWD/.device/bin/hexfem; chmod +x $NEW
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
mkdir -p /tmp/o
run() { np=$1; tag=$2; shift 2; H=$NEW
  if [ $np = 1 ]; then RAYON_NUM_THREADS=16 timeout 120 $H run $NB $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/$tag.txt 2>&1; rc=$?
  else RAYON_NUM_THREADS=16 timeout 120 $MPI $H run $NB $C "$@" -o /tmp/o/$tag --overwrite -v > /tmp/$tag.txt 2>&1; rc=$?; fi
  echo "== $tag np $np rc $rc at ${SECONDS}s"; grep -E "^step" /tmp/$tag.txt | cut -c1-150; sed -n '/where the time went/,$p' /tmp/$tag.txt
  cp /tmp/$tag.txt $OUT/$tag.np$np.txt; rm -rf /tmp/o/$tag; }
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run 2 warm $X > /dev/null
run 2 n104x2 $X
run 1 n104x1 $X
run 2 n104x2b $X
for i in 1 2; do
  RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW bench gamg --problem ex56 --m 66 --device cuda --exchange auto > $OUT/mpigamg66.$i.txt 2>&1
  echo "== mpigamg rc $? at ${SECONDS}s"; grep -E "slowest|cold set-up [0-9]|renewal for|stages" $OUT/mpigamg66.$i.txt | cut -c1-400
done
RAYON_NUM_THREADS=16 timeout 100 $NEW bench gamg --problem ex56 --m 66 --device cuda > $OUT/gamg66x1.txt 2>&1; echo "== gamg 1 gpu rc $?"; grep -E "cold set-up|renewal" $OUT/gamg66x1.txt | cut -c1-300
echo "end at ${SECONDS}s"
