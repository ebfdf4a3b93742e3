#!/bin/bash
# stop 51 call 4: which phase of the slender beam's first hot update leaves the CPU's bits on the GPU (e2b4c26):
# the first step's residual norms, CPU against GPU, under AMG variants
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
H=$PWD/.device/bin/hexfem
for x in "" "--set linear_solver.amg.recompute_eigs=false" "--set linear_solver.amg.reuse=none" "--set linear_solver.amg.reuse=full" "--set linear_solver.amg.smoother=jacobi" "--set linear_solver.amg.recompute_eigs=false --set linear_solver.amg.smoother=jacobi" "--set linear_solver.method=cg_jacobi"; do
for d in cpu cuda; do rm -rf /tmp/o/$d; timeout 60 $H run inputs/slender_beam.yaml --set device=$d --set linear_solver.method=cg_amg --set loading.steps=9 $x -o /tmp/o/$d --overwrite > /tmp/o/$d.log 2>&1 || { echo "$d rc $?"; tail -3 /tmp/o/$d.log; }; done
python3 - "$x" <<'PY'
import json,sys
a=json.load(open('/tmp/o/cpu/slender_beam.summary.json')); b=json.load(open('/tmp/o/cuda/slender_beam.summary.json'))
sa,sb=a['steps'][0],b['steps'][0]
ra,rb=sa['residual_norms'],sb['residual_norms']
d=[i for i,(x,y) in enumerate(zip(ra,rb)) if x!=y]
print(repr(sys.argv[1]), 'newton', len(ra)-1, len(rb)-1, 'first differing norm', d[:1], [(ra[i],rb[i]) for i in d[:1]])
PY
done
