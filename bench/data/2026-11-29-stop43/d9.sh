#!/bin/bash
# stop 43 call 9 (nvidia-h200-x2): issue 29's campaign, branch camp43 (workers start with a copy of the validated problem, every worker's GPU warmed up) against bc61b05, one round each, alternated
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
gunzip -c .devq/hexfem_camp.gz > /tmp/hexfem_camp; chmod +x /tmp/hexfem_camp
mkdir -p $OUT; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
for b in new old; do H=/tmp/hexfem_camp; [ $b = old ] && H=./.device/bin/hexfem
  timeout 120 $H bench campaign --device cuda --cases 64 --cells 96,24,24 --jobs 2 --rounds 1 > $OUT/campaign_$b.txt 2>&1; echo "== $b rc $? at ${SECONDS}s"
  tail -5 $OUT/campaign_$b.txt | cut -c1-160
done
