#!/bin/bash
# stop 46 call 5 (nvidia-h200-x2): main f75fef3 (+ transposes' plans and the local A made on the ranks' GPUs): every GPU test and the MPI GPU tests
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT /tmp/o; SECONDS=0
timeout 540 env TESTS=1 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log /tmp/device-out/tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -hE "joined_patterns|a_transpose_plan_made" /tmp/device-out/tests.log | head -4
echo "end at ${SECONDS}s"
