#!/bin/bash
# stop 42 call 8: as call 7 with the final main (a rank's part checks its geometry without the assembler's plans): 2 ranks sharing one H200, new vs ed1aa10; 1 GPU 104^3
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
gunzip -f .device-old/*.gz 2>/dev/null
mkdir -p $OUT; SECONDS=0
nvidia-smi -L
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NEW=$PWD/.device/bin/hexfem; OLD=$PWD/.device-old/hexfem_old; chmod +x $OLD $NEW
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for b in old new old new; do H=$NEW; [ $b = old ] && H=$OLD
  RAYON_NUM_THREADS=8 timeout 100 $MPI $H bench gamg --problem ex56 --m 66 --device cuda --exchange auto > $OUT/mpigamg66_$b.$SECONDS.txt 2>&1
  echo "== $b mpigamg rc $? at ${SECONDS}s"; grep -E "slowest|cold set-up [0-9]|renewal for" $(ls -t $OUT/mpigamg66_$b.*.txt | head -1) | cut -c1-330
done
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
mkdir -p /tmp/o
run() { b=$1; np=$2; tag=$3; shift 3; H=$NEW; [ $b = old ] && H=$OLD
  if [ $np = 1 ]; then RAYON_NUM_THREADS=16 timeout 120 $H run $NB $C "$@" -o /tmp/o/$tag.$b --overwrite -v > /tmp/$tag.$b.txt 2>&1; rc=$?
  else RAYON_NUM_THREADS=8 timeout 120 $MPI $H run $NB $C "$@" -o /tmp/o/$tag.$b --overwrite -v > /tmp/$tag.$b.txt 2>&1; rc=$?; fi
  echo "== $tag $b np $np rc $rc at ${SECONDS}s"; grep -E "^step" /tmp/$tag.$b.txt | cut -c1-150; sed -n '/where the time went/,$p' /tmp/$tag.$b.txt | grep -E "wall|mesh|problem|near-null|AMG set-up cold|AMG hot|solve  |output  "
  cp /tmp/$tag.$b.txt $OUT/$tag.$b.np$np.txt; rm -rf /tmp/o/$tag.$b; }
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run new 2 warm --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]' > /dev/null
run old 2 n104 --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]'
run new 2 n104 --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]'
run new 1 n104 --set 'mesh.box.cells=[104,104,104]' --set 'output.fields=[displacement]'
echo "end at ${SECONDS}s"
