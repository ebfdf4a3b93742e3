#!/bin/bash
# stop 51 call 5: the slender beam's hierarchy reports (every level's emax) on the CPU and the GPU, first step (e2b4c26)
mkdir -p /tmp/o; cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
H=$PWD/.device/bin/hexfem
for x in "--set linear_solver.amg.reuse=none" "--set linear_solver.amg.chebyshev_degree=1" "--set linear_solver.amg.reuse=none --set linear_solver.amg.eig_steps=3"; do
for d in cpu cuda; do rm -rf /tmp/o/$d; timeout 60 $H run inputs/slender_beam.yaml --set device=$d --set linear_solver.method=cg_amg --set loading.steps=9 --set loading.max_cutbacks=0 $x -o /tmp/o/$d --overwrite > /tmp/o/$d.log 2>&1; done
python3 - "$x" <<'PY'
import json,sys
def rep(p):
    s=json.load(open(p))
    out=[]
    for st in s.get('steps',[]):
        for it in st['linear_solver']:
            h=it['linear'].get('hierarchy')
            out.append((it['linear'].get('setup'), it['linear'].get('iterations'), [lv.get('emax') for lv in h['levels']] if h else None))
    return out, s.get('preconditioner'), [st['residual_norms'] for st in s.get('steps',[])], s['status']
a=rep('/tmp/o/cpu/slender_beam.summary.json'); b=rep('/tmp/o/cuda/slender_beam.summary.json')
print(repr(sys.argv[1])); print(' cpu', a[0][:3], a[2][0][:4]); print(' gpu', b[0][:3], b[2][0][:4])

PY
done
