#!/bin/bash
# stop 41 call 1: the MPI GPU tests of 984a230 (device cold set-up on ranks: numeric phases on the GPU, symbolic products there,
# no operator download; recompute renewal keeping unchanged levels), then mpirun -np 2 bench gamg 66 (2 ranks sharing one H200) twice
cd .device/bin && gunzip -f *.gz 2>/dev/null; cd ../..
mkdir -p $OUT; SECONDS=0
timeout 330 env MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > $OUT/run.log 2>&1; echo "run.sh rc $? at ${SECONDS}s"
cd /tmp && tar xzf $OUT/device-out.tgz 2>/dev/null; cd - >/dev/null
rm -f $OUT/device-out.tgz
cp /tmp/device-out/mpi_tests.log $OUT/ 2>/dev/null
grep -hE "^test .*FAILED|panicked|device run status|failures:" /tmp/device-out/mpi_tests.log $OUT/run.log 2>/dev/null | sort | uniq -c | head -30
echo "passed bodies: $(grep -ch 'body passed' /tmp/device-out/mpi_tests.log) ok: $(grep -chE ' ok$' /tmp/device-out/mpi_tests.log)"
grep -hE "a_device_cold|a_device_recompute|SKIP" /tmp/device-out/mpi_tests.log | head -8
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
NEW=$PWD/.device/bin/hexfem
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -x HEXFEM_KERNEL_CACHE -x LD_LIBRARY_PATH -np 2"
for i in 1 2; do
  RAYON_NUM_THREADS=8 timeout 120 $MPI $NEW bench gamg --problem ex56 --m 66 --device cuda --exchange auto > $OUT/mpigamg66_new$i.txt 2>&1; echo "mpigamg rc $? at ${SECONDS}s"
done
grep -E "slowest|cold set-up|renewal" $OUT/mpigamg66_new2.txt | cut -c1-400
echo "end at ${SECONDS}s"
