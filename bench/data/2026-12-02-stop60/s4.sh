#!/bin/bash
# stop 60 call 4 (nvidia-h200): the MPI GPU tests that call 3's run.sh did not reach in its time (its limit cut it
# after 13 bodies), on the same build (3a683dc): each rank's Newton iteration, run and cell fields (the reactions'
# path) at 1 and 2 ranks sharing the GPU.
cd .device/bin && gunzip -f test_mpi_e2e.gz 2>/dev/null; chmod +x test_mpi_e2e; cd ../..
mkdir -p $OUT; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for t in device_rank_assembly_equals_the_host_rank_assembly device_rank_run_equals_the_host_rank_run \
    device_rank_run_computes_its_cell_fields_on_the_gpus; do
  for np in 1 2; do
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" .device/bin/test_mpi_e2e --exact "$t" \
      --nocapture --test-threads=1 >> $OUT/mpi4.log 2>&1
    echo "$t np $np rc $? at ${SECONDS}s"
  done
done
echo "bodies passed: $(grep -c 'body passed' $OUT/mpi4.log); failed lines: $(grep -cE 'FAILED|panicked' $OUT/mpi4.log)"
