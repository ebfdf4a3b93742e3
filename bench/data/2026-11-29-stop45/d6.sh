#!/bin/bash
# stop 45 call 6 (nvidia-h200-x2): main a4efb96 (per-stage bytes of a GPU rank's cold coarsening): the MPI GPU tests; mpirun -np 2 bench gamg 104 --device cuda (where the cold set-up's host<->GPU bytes go)
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT /tmp/o; SECONDS=0
timeout 300 env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
grep -h "device distributed aggregation" /tmp/device-out/mpi_tests.log | head -2
NEW=$PWD/.device/bin/hexfem
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW bench gamg --problem ex56 --m 104 --device cuda > /dev/null 2>&1
RAYON_NUM_THREADS=16 timeout 100 $MPI $NEW bench gamg --problem ex56 --m 104 --device cuda > $OUT/gamg104.txt 2>&1; echo "== gamg 104 rc $?"
grep -vE "1,1" $OUT/gamg104.txt | grep -E "slowest|host cold set-up|bytes up/down" | sed 's/^.*std...>://' | cut -c1-400
echo "end at ${SECONDS}s"
