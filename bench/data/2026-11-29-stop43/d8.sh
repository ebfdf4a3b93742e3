#!/bin/bash
# stop 43 call 8 (nvidia-h200-x2): issue 29's campaign on the final main: 64 neo-Hookean cases, 1 GPU vs --jobs 2 on 2 GPUs
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
mkdir -p $OUT; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
timeout 400 ./.device/bin/hexfem bench campaign --device cuda --cases 64 --cells 96,24,24 --jobs 2 --rounds 2 > $OUT/campaign.txt 2>&1; echo "rc $? at ${SECONDS}s"
tail -25 $OUT/campaign.txt | cut -c1-220
