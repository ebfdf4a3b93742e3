#!/bin/bash
# stop 51 call 12 (debug build, not committed): the slender beam's hot coarse operators, CPU and GPU, bit hashes and inverses
mkdir -p /tmp/o; cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
H=$PWD/.device/bin/hexfem
rm -f /tmp/coarse_*.bin
for d in cpu cuda; do HEXFEM_DEBUG_VC=1 timeout 60 $H run inputs/slender_beam.yaml --set device=$d --set linear_solver.method=cg_amg --set loading.steps=9 -o /tmp/o/dbg_$d --overwrite > /tmp/o/all_$d.txt 2>&1; echo "== $d"; grep "DEBUG_VC coarse\|DEBUG_VC wrote" /tmp/o/all_$d.txt | head -4; done
ls /tmp/coarse_*.bin 2>/dev/null | head -2 | xargs -r -I{} cp {} $OUT/
