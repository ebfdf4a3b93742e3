#!/bin/bash
# stop 51 call 7 (debug build, not committed): the slender beam's V-cycle vectors (squared norms' bits), CPU and GPU
mkdir -p /tmp/o; cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
H=$PWD/.device/bin/hexfem
for d in cpu cuda; do HEXFEM_DEBUG_VC=1 timeout 60 $H run inputs/slender_beam.yaml --set device=$d --set linear_solver.method=cg_amg --set loading.steps=9 -o /tmp/o/dbg_$d --overwrite > /tmp/o/all_$d.txt 2>&1; grep DEBUG_VC /tmp/o/all_$d.txt | head -400 > $OUT/vc_$d.txt; done
diff $OUT/vc_cpu.txt .devq/vc_cpu_local.txt > /dev/null && echo "device cpu == local cpu"
diff <(grep coarse $OUT/vc_cpu.txt) <(grep coarse $OUT/vc_cuda.txt) | head; diff $OUT/vc_cpu.txt $OUT/vc_cuda.txt | head -6
grep -n "" $OUT/vc_cpu.txt | grep -n coarse
