#!/bin/bash
# stop 51 call 2: where the slender beam's GPU run leaves the CPU run's bits (e2b4c26)
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
H=$PWD/.device/bin/hexfem
for d in cpu cuda; do timeout 60 $H run inputs/slender_beam.yaml --set device=$d -o /tmp/o/sb_$d --overwrite -v > $OUT/sb_$d.txt 2>&1; echo "$d rc $?"; done
for m in cg_amg direct; do for d in cpu cuda; do timeout 60 $H run inputs/slender_beam.yaml --set device=$d --set linear_solver.method=$m -o /tmp/o/sb_${m}_$d --overwrite -v > $OUT/sb_${m}_$d.txt 2>&1; echo "$m $d rc $?"; done; done
cp /tmp/o/sb_cpu/*.summary.json $OUT/cpu.summary.json; cp /tmp/o/sb_cuda/*.summary.json $OUT/cuda.summary.json
