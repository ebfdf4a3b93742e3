#!/bin/bash
# stop 52 call 6 (nvidia-h200): final product code 8e354ec (the device elimination's fraction as a kernel argument):
# the GPU tests and the MPI GPU tests.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 420 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/*.log /tmp/r/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:|GPU tests" /tmp/device-out/*.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
grep -hE "GPU runs differ|device_constraints_are_bit_identical|gpu_runs_equal_cpu_runs_for_every" /tmp/device-out/tests.log | head -5
grep -hE "^gpu_runs: [a-z_]*: [0-9]+ steps" /tmp/device-out/tests.log | sed 's/, output bytes.*//' | head -16
echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null)"
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cd /tmp/r && tar czf $OUT/call6.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
