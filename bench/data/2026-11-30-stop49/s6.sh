#!/bin/bash
# stop 49 call 6 (nvidia-h200-x2): the staged build of 1708705 (= the final code 4e73712 but a doc comment): every single-GPU test.
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/r; SECONDS=0
timeout 420 env TESTS=1 MPI_TESTS=0 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
OUTD=$OUT; cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
grep -E "^test .* ok$|test result" /tmp/device-out/tests.log > /tmp/r/tests_summary.txt
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log)"
cd /tmp/r && tar czf $OUTD/call6.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
