#!/bin/bash
# stop 59 call 5 (nvidia-h200): issue 26's one-GPU set-up goals on 0d7afdd (the AMG code is stop 57's): ex56 66^3
# cold set-up (the process's second), the renewals (recompute, keep_aggregates), three runs; 104^3 once.
mkdir -p $OUT /tmp/r; SECONDS=0
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; chmod +x hexfem; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
timeout 60 .device/bin/hexfem bench gamg --m 66 --device cuda --solves 2 --json > /dev/null 2>&1
for i in 1 2 3; do
  RAYON_NUM_THREADS=16 timeout 60 .device/bin/hexfem bench gamg --m 66 --device cuda --solves 3 --json > /tmp/r/g66_$i.json 2> /tmp/r/g66_$i.err
  echo "g66 $i rc $? at ${SECONDS}s"
done
RAYON_NUM_THREADS=16 timeout 90 .device/bin/hexfem bench gamg --m 104 --device cuda --solves 3 --json > /tmp/r/g104.json 2> /tmp/r/g104.err
echo "g104 rc $? at ${SECONDS}s"
for f in /tmp/r/g66_*.json /tmp/r/g104.json; do python3 - $f <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); r=d.get("renewal",{})
print(sys.argv[1].split('/')[-1], "cold %.1f ms" % (1e3*d["setup_cold_s"]), "hot", ["%.1f" % (1e3*x) for x in d["setup_hot_all_s"]],
      "renewal %s %.1f ms, %s %.1f ms" % ("recompute", 1e3*r.get("renewal_s",0), r.get("other_mode"), 1e3*r.get("other_mode_s",0)), "its", d["iterations"])
PY
done
cd /tmp/r && tar czf $OUT/t5.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
