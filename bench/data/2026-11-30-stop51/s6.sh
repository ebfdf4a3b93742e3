#!/bin/bash
# stop 51 call 6 (debug build, not committed): the slender beam's eigenvalue estimates and operator probes, GPU
mkdir -p /tmp/o; cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
H=$PWD/.device/bin/hexfem
for d in cpu cuda; do HEXFEM_DEBUG_EMAX=1 timeout 60 $H run inputs/slender_beam.yaml --set device=$d --set linear_solver.method=cg_amg --set loading.steps=9 -o /tmp/o/dbg_$d --overwrite 2>&1 | grep DEBUG | head -12 > $OUT/dbg_$d.txt; done
diff $OUT/dbg_cpu.txt $OUT/dbg_cuda.txt && echo "same probes"
