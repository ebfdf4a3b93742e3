#!/bin/bash
# stop 55 call 2 (nvidia-h200): where a second process's kernel compilation goes (temporary KTRACE marks): per module
# the cache read and cuModuleLoadData; NVRTC's dlopen alone (python ctypes).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
echo "nvrtc: $nvrtc"
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kc_fresh
H=.device/bin/hexfem
for i in 1 2; do python3 -c "
import time,ctypes
t=time.perf_counter(); ctypes.CDLL('$nvrtc'); a=time.perf_counter()-t
t=time.perf_counter(); ctypes.CDLL('libcuda.so.1'); b=time.perf_counter()-t
print('dlopen nvrtc %.2f ms, libcuda %.2f ms' % (a*1e3, b*1e3))"; done
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104] --set output.fields=[displacement]"
for i in 1 2 3; do HEXFEM_TRACE=1 timeout 90 $H run inputs/neo_hookean_block.yaml $C -o /tmp/o/one$i --overwrite -v > /tmp/r/one$i.txt 2>&1; echo "one $i rc $? at ${SECONDS}s $(grep -E '  kernel compilation|device and' /tmp/r/one$i.txt | tr -s ' ' | tr '\n' ';')"; done
ls /tmp/kc_fresh | wc -l; du -sh /tmp/kc_fresh
for i in 2 3; do python3 - $i <<'PY'
import re,sys
i=sys.argv[1]
mods=[];comp=[]
for l in open('/tmp/r/one%s.txt'%i):
    m=re.match(r'KTRACE module (\S+) ([0-9.]+) ms \((\d+) bytes\)',l)
    if m: mods.append((float(m.group(2)),int(m.group(3)),m.group(1)))
    m=re.match(r'KTRACE compile (\S+) present ([0-9.]+) key ([0-9.]+) load ([0-9.]+) ms',l)
    if m: comp.append((float(m.group(2)),float(m.group(3)),float(m.group(4)),m.group(1)))
print('run',i,'modules',len(mods),'sum %.2f ms'%sum(x[0] for x in mods),'bytes',sum(x[1] for x in mods))
print(' compile parts: present sum %.2f, key sum %.2f, load sum %.2f'%(sum(c[0] for c in comp),sum(c[1]-c[0] for c in comp),sum(c[2]-c[1] for c in comp)))
print(' first compile', comp[0] if comp else None)
for m in sorted(mods,reverse=True)[:12]: print('  %.2f ms %d B %s'%m)
PY
done
cd /tmp/r && tar czf $OUT/t2.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
