#!/bin/bash
# stop 46 call 1 (nvidia-h200-x2): main a6da3b2 (the eigenvalue estimates' CG scalars on the GPUs on ranks): every GPU test and the MPI GPU tests
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT /tmp/o; SECONDS=0
timeout 540 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log /tmp/device-out/tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -hE "SKIP" /tmp/device-out/mpi_tests.log | sort | uniq -c | head
echo "end at ${SECONDS}s"
