#!/bin/bash
# stop 51 call 3: the slender beam's cg_amg residual norms on the CPU and the GPU in full precision (e2b4c26)
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
H=$PWD/.device/bin/hexfem
for x in "" "--set linear_solver.amg.renewal=recompute" "--set loading.steps=1 --set newton.max_iterations=3"; do
for d in cpu cuda; do rm -rf /tmp/o/$d; timeout 60 $H run inputs/slender_beam.yaml --set device=$d --set linear_solver.method=cg_amg $x -o /tmp/o/$d --overwrite > /dev/null 2>&1; echo "$d rc $?"; done
python3 - <<'PY'
import json
a=json.load(open('/tmp/o/cpu/slender_beam.summary.json')); b=json.load(open('/tmp/o/cuda/slender_beam.summary.json'))
for sa,sb in zip(a['steps'],b['steps']):
    ra,rb=sa['residual_norms'],sb['residual_norms']
    d=[i for i,(x,y) in enumerate(zip(ra,rb)) if x!=y]
    la=[l['linear'].get('iterations') for l in sa['linear_solver']]; lb=[l['linear'].get('iterations') for l in sb['linear_solver']]
    em=[(l['linear'].get('hierarchy') or {}).get('levels',[{}])[0].get('emax') for l in sa['linear_solver'][:1]]
    emb=[(l['linear'].get('hierarchy') or {}).get('levels',[{}])[0].get('emax') for l in sb['linear_solver'][:1]]
    print('step',sa['step'],'first differing norm',d[:1], 'lin same', la==lb, 'emax', em, emb, [ (ra[i],rb[i]) for i in d[:1]])
PY
done
