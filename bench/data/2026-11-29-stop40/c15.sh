#!/bin/bash
# stop 40 call D: mpirun -np 2 bench gamg 66 on the GPU, new and stop 39 alternated three times
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
gunzip -f .device-early/bin/*.gz 2>/dev/null
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
nccl=$(ls /usr/lib/x86_64-linux-gnu/libnccl.so.2* /usr/local/cuda*/lib64/libnccl.so.2* 2>/dev/null | head -n 1)
[ -n "$nccl" ] && { mkdir -p /tmp/hexfem-nccl; ln -sf "$nccl" /tmp/hexfem-nccl/libnccl.so; export LD_LIBRARY_PATH="/tmp/hexfem-nccl:$LD_LIBRARY_PATH"; }
NEW=$PWD/.device/bin/hexfem; OLD=$PWD/.device-early/bin/hexfem_old; chmod +x $OLD
mkdir -p $OUT; SECONDS=0
for b in old new old new old new; do H=$NEW; [ $b = old ] && H=$OLD
  RAYON_NUM_THREADS=8 timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -np 2 $H bench gamg --problem ex56 --m 66 --device cuda --exchange auto --json > /tmp/m.json 2>/dev/null
  python3 -c "
import json;d=json.load(open('/tmp/m.json'));g=d.get('gpu') or [{}]
print('$b mpi2 cold %.3f hot %.4f solve %.4f it %s' % (d['setup_cold_s'],d['setup_hot_s'],d['solve_hot_s'],d['iterations']), ' | '.join('smoothers %.4f galerkin %.4f upload %.3f' % (x.get('hot_update_smoothers_s',0),x.get('hot_update_galerkin_s',0),x.get('setup_upload_s',0)) for x in g))"
done
echo "end at ${SECONDS}s"
