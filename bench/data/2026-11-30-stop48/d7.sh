#!/bin/bash
# stop 48 call 7 (nvidia-h200-x2): main 597a081 (the review's shared pinned_at_first_use): the MPI GPU tests
# (DeviceHalo and the device Galerkin reduction are ranks-only code; the budget left does not cover the single-GPU suite).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/o /tmp/r; SECONDS=0
timeout 420 env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
OUTD=$OUT; cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/mpi_tests.log /tmp/r/; grep -E "^test .* ok$|test result" /tmp/device-out/tests.log > /tmp/r/tests_summary.txt
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
cd /tmp/r && tar czf $OUTD/call7.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
