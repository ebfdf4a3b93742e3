#!/bin/bash
# stop 40 call A: the merged main: every GPU test, the MPI GPU tests, bench newton 33, assembly 1:64, gamg 66 GPU + CPU, mpirun -np 2 bench gamg 66 on the GPU
cd .devA/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT; SECONDS=0
timeout 570 env TESTS=1 MPI_TESTS=1 GAMG="66" CPU="66" PEER=0 NEWTON=33 ASSEMBLY="1:64" MPI_GAMG="2:66" bash .devA/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
(cd /tmp/device-out && tar czf $OUT/out.tgz --exclude='*.err' . 2>/dev/null)
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "ok lines: $(grep -chE ' ok$' /tmp/device-out/tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -hE "gpu_runs: neo_hookean_block|device distributed CG" /tmp/device-out/tests.log /tmp/device-out/mpi_tests.log | head -4
tail -25 $OUT/run.log
echo "end at ${SECONDS}s"
