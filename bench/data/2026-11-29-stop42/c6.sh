#!/bin/bash
# stop 42 call 6: every GPU test and the MPI GPU tests after the restriction's transposed parts moved to the device (linalg::transpose_numeric of device matrices)
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT; SECONDS=0
timeout 570 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log /tmp/device-out/tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -hE "body passed: a_device|copy_to_host|vector_kernels" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log | head -8
tail -5 $OUT/run.log
echo "end at ${SECONDS}s"
