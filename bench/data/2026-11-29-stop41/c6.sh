#!/bin/bash
# stop 41 call 6 (nvidia-h200-x2): issue 29's goal, 64 neo-Hookean cases (96x24x24 cells, 181,875 unknowns) on 2 GPUs vs 1 GPU, one round
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
mkdir -p $OUT; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
NEW=$PWD/.device/bin/hexfem; chmod +x $NEW
timeout 60 $NEW bench campaign --device cuda --cases 4 --cells 96,24,24 --jobs 2 --rounds 1 > /dev/null 2>&1; echo "warm at ${SECONDS}s"
timeout 400 $NEW bench campaign --device cuda --cases 64 --cells 96,24,24 --jobs 2 --rounds 1 > $OUT/campaign64.txt 2>&1; echo "campaign rc $? at ${SECONDS}s"
cat $OUT/campaign64.txt | tail -20
