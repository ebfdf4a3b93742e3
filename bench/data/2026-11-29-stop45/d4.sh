#!/bin/bash
# stop 45 call 4 (nvidia-h200-x2): main e4 (narrow rank output records, shared-memory MPI transport by default, device aggregation on ranks) vs f5ba595 (66a06ab's binary), the 104^3 run on 2 GPUs alternated, and HEXFEM_MPI_TRANSPORT=library; 1 GPU
mkdir -p $OUT /tmp/o; SECONDS=0
gunzip -c .devq/hexfem_new.gz > /tmp/hexfem_new; gunzip -c .devq/hexfem_prev.gz > /tmp/hexfem_old; chmod +x /tmp/hexfem_new /tmp/hexfem_old
NEW=/tmp/hexfem_new; OLD=/tmp/hexfem_old
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -x HEXFEM_MPI_TRANSPORT -np 2"
C="--set device=cuda --set linear_solver.method=cg_amg"
NB=inputs/neo_hookean_block.yaml
X="--set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
run() { np=$1; H=$2; tag=$3; shift 3
  if [ $np = 1 ]; then RAYON_NUM_THREADS=16 timeout 100 $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1
  else RAYON_NUM_THREADS=16 timeout 100 $MPI $H run $NB $C $X "$@" -o /tmp/o/$tag --overwrite -v > $OUT/$tag.txt 2>&1; fi
  echo "== $tag rc $? at ${SECONDS}s"
  grep -vE "1,1" $OUT/$tag.txt | grep -E "wall|start-up|  mesh |problem and|output  |AMG set-up cold|AMG hot|solve   " | sed 's/^.*std...>://' | cut -c1-200; }
RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW run $NB $C $X -o /tmp/o/w --overwrite > /dev/null 2>&1
export HEXFEM_MPI_TRANSPORT=auto
run 2 $NEW new1; run 2 $OLD old1; run 2 $NEW new2; run 2 $OLD old2
export HEXFEM_MPI_TRANSPORT=library
run 2 $NEW lib1
export HEXFEM_MPI_TRANSPORT=auto
run 1 $NEW one1
cmp /tmp/o/new1/neo_hookean_block.h5 /tmp/o/old1/neo_hookean_block.h5 && echo "new and old HDF5 files identical"
python3 - <<'PY'
import json
a=json.load(open('/tmp/o/new1/neo_hookean_block.summary.json')); b=json.load(open('/tmp/o/old1/neo_hookean_block.summary.json'))
for k in ['strain_energy','max_displacement','reactions']:
    print(k, [s[k] for s in a['steps']] == [s[k] for s in b['steps']])
PY
echo "end at ${SECONDS}s"
