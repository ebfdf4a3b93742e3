#!/bin/bash
# stop 55 call 8 (nvidia-h200): Nsight Compute's kernel times over one bench gamg --m 66 (2f14ac4): which kernels the
# set-ups and renewals spend their GPU time in.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/r; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
NCU=/usr/local/cuda-13.0/bin/ncu
timeout 60 .device/bin/hexfem bench gamg --m 66 --device cuda --solves 2 --json > /tmp/r/warm.json 2>/dev/null; echo "warm rc $? at ${SECONDS}s"
timeout 400 $NCU --metrics gpu__time_duration.sum --print-summary per-kernel --csv .device/bin/hexfem bench gamg --m 66 --device cuda --solves 2 --json > /tmp/r/ncu.csv 2>/tmp/r/ncu.err; echo "ncu rc $? at ${SECONDS}s"
tail -5 /tmp/r/ncu.err
python3 - <<'PY'
import csv,io
txt=open('/tmp/r/ncu.csv').read()
i=txt.find('"ID"'); 
if i<0: i=txt.find('ID,')
rows=list(csv.reader(io.StringIO(txt[i:])))
hdr=rows[0]; print(hdr[:14])
PY
head -c 3000 /tmp/r/ncu.csv | tail -c 1500
cd /tmp/r && tar czf $OUT/t8.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
