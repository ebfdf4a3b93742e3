#!/bin/bash
# (not run: the session's device time was spent before it could start; kept as the next stop's first call)
# stop 46 call 10 (nvidia-h200-x2): main a3138d6 (a rank's estimate lists its start vector's rows only where it writes it): the MPI GPU tests;
# then a3138d6's hexfem vs ec24e77's (stop 45's main) alternated: mpirun -np 2 bench gamg ex56 104 --device cuda, 2 each
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT /tmp/r; SECONDS=0
timeout 300 env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cp $OUT/device-out.tgz /tmp/dev.tgz 2>/dev/null; rm -f $OUT/device-out.tgz
cd /tmp && tar xzf /tmp/dev.tgz 2>/dev/null; cd - >/dev/null
cp /tmp/device-out/mpi_tests.log /tmp/r/
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/mpi_tests.log /tmp/r/run.log 2>/dev/null | sort | uniq -c | head -30
echo "mpi ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log) passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log)"
gunzip -c .devq/hexfem_prev.gz > /tmp/hexfem_prev; chmod +x /tmp/hexfem_prev
NEW=$PWD/.device/bin/hexfem; PREV=/tmp/hexfem_prev
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
gamg() { H=$1; tag=$2
  RAYON_NUM_THREADS=16 timeout 60 $MPI $H bench gamg --problem ex56 --m 104 --device cuda > /tmp/r/$tag.txt 2>&1; echo "== $tag rc $? at ${SECONDS}s"
  grep -E "slowest|host cold set-up|hot update moved" /tmp/r/$tag.txt | grep -v "^\[1,1\]" | sed 's/^.*std...>://' | cut -c1-330; }
RAYON_NUM_THREADS=16 timeout 60 $MPI $NEW bench gamg --problem ex56 --m 104 --device cuda > /dev/null 2>&1; echo "warm-up at ${SECONDS}s"
gamg $NEW gamg_new1; gamg $PREV gamg_prev1; gamg $NEW gamg_new2; gamg $PREV gamg_prev2
cd /tmp/r && tar czf $OUT/call10.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
