#!/bin/bash
# stop 63 call 4 (nvidia-h200): the final code (call 3's ab0c0f3 with one helper for a device level's CUDA context,
# edafa08's refactor) staged: the MPI GPU tests and the GPU tests, then one bench gamg at 66^3 as a check.
source scripts/device_ab.sh
mpi_gpu_tests 150; pack c4
left=$((500 - SECONDS)); echo "GPU tests with ${left}s"
[ $left -gt 60 ] && gpu_tests $left
pack c4
timeout 60 /tmp/hx_new bench gamg --m 66 --device cuda --solves 2 > /dev/null 2>&1
timeout 60 /tmp/hx_new bench gamg --m 66 --device cuda --solves 2 --json > /tmp/r/g66.json 2>/dev/null
python3 -c "
import json; d=json.load(open('/tmp/r/g66.json')); r=d['renewal']
print('66^3: cold %.1f recompute %.1f keep %.1f hot %.1f ms its %s' % (1e3*r['cold_s'], 1e3*r['renewal_s'], 1e3*r['other_mode_s'], 1e3*d['setup_hot_s'], d['iterations']))"
pack c4
echo "end at ${SECONDS}s"
