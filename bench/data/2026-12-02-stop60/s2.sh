#!/bin/bash
# stop 60 call 2 (nvidia-h200): a trace build of 457bdce (temporary marks, never committed: call2_trace_marks.patch)
# of the ranks' cold set-up: `bench gamg --m 104 --device cuda --distributed --solves 2` on one rank (16 threads),
# twice, then 2 ranks sharing the GPU (8 threads each), each rank's marks in a file of its own.
mkdir -p $OUT /tmp/r; SECONDS=0
gunzip -c .devq/new/hexfem.gz > /tmp/hx_new; chmod +x /tmp/hx_new
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 60 /tmp/hx_new bench gamg --m 66 --device cuda --distributed --solves 2 > /dev/null 2>&1
for i in 1 2; do
  HEXFEM_TR=1 RAYON_NUM_THREADS=16 timeout 120 /tmp/hx_new bench gamg --m 104 --device cuda --distributed --solves 2 > /tmp/r/one_$i.txt 2>&1
  echo "== one rank ($i) rc $? at ${SECONDS}s: $(grep 'cold set-up' /tmp/r/one_$i.txt | head -2 | tr -s ' ')"
done
HEXFEM_TR=1 RAYON_NUM_THREADS=8 timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -x HEXFEM_TR -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH --output-filename /tmp/r/two -np 2 /tmp/hx_new bench gamg --m 104 --device cuda --solves 2 > /tmp/r/two.txt 2>&1
echo "== 2 ranks rc $? at ${SECONDS}s"
cd /tmp/r && tar czf $OUT/t2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
