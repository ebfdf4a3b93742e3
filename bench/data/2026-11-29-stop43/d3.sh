#!/bin/bash
# stop 43 call 3: the windowed output on ranks (parallel packing, merged runs, next window in flight) vs 70d7981 on nvidia-h200-x2, 104^3 2 GPUs; trace timers of the new binary
mkdir -p $OUT /tmp/o; SECONDS=0
gunzip -c .devq/hexfem_t3.gz > /tmp/hexfem_new; chmod +x /tmp/hexfem_new
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
OLD=$PWD/.device/bin/hexfem; NEW=/tmp/hexfem_new; chmod +x $OLD
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x HEXFEM_TRACE -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104]"
D="--set output.fields=[displacement]"
run() { H=$1; tag=$2; shift 2
  RAYON_NUM_THREADS=16 timeout 120 $MPI $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"
  grep "1,0" $OUT/$tag.txt | grep -E "wall|output  |AMG set-up cold|device and linear" | cut -c1-200; }
RAYON_NUM_THREADS=16 timeout 120 $MPI $NEW run $NB $C $X $D -o /tmp/o/w --overwrite > /dev/null 2>&1
run $OLD old_d $D
export HEXFEM_TRACE=1
run $NEW new_d $D
grep "1,0" $OUT/new_d.txt | grep -E "TRACE (select|from_fields|files|first|step|Rank|rank_d|layout)" | head -30
unset HEXFEM_TRACE
run $OLD old_all
run $NEW new_all
for t in d all; do for f in /tmp/o/old_$t/*.h5; do cmp $f /tmp/o/new_$t/$(basename $f) && echo "same bytes: $t $(basename $f) $(stat -c %s $f)"; done; done
echo "end at ${SECONDS}s"
