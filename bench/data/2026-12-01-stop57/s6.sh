#!/bin/bash
# stop 57 call 6 (nvidia-h200): the final review's build (graph_halo shared by DeviceSerialIds::new and
# DeviceDistGraph::strength, the start vector's upload written once): the MPI GPU tests of the ranks' graph, renewals
# and cold set-up, the one-rank upload test, and linalg's device tests (the mapped smoothing among them).
cd .device/bin && gunzip -f *.gz 2>/dev/null; chmod +x *; cd ../..
mkdir -p $OUT /tmp/r; SECONDS=0
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=.device/bin/test_mpi_e2e
{ mpirun --allow-run-as-root --oversubscribe -np 1 $T --exact a_device_kept_renewal_on_one_rank_uploads_no_vector --nocapture --test-threads=1
  for t in a_device_recompute_renewal_on_ranks_keeps_unchanged_levels_and_equals_a_cold_setup a_device_kept_renewal_on_ranks_equals_the_host_kept_renewal \
      device_rank_run_with_kept_renewals_equals_the_host_rank_run a_device_cold_setup_on_ranks_equals_the_host_cold_setup \
      a_device_strength_graph_and_aggregates_on_ranks_equal_the_host_ones device_levels_take_a_kept_renewal_in_place; do
    mpirun --allow-run-as-root --oversubscribe -np 2 $T --exact $t --nocapture --test-threads=1; done; } > /tmp/r/mpi_tests.log 2>&1; echo "mpi tests rc $? at ${SECONDS}s"
grep -E "panicked|FAILED" /tmp/r/mpi_tests.log | head -5
echo "passed bodies: $(grep -c 'body passed' /tmp/r/mpi_tests.log) (expected 13)"
timeout 200 .device/bin/test_linalg_device --test-threads=1 > /tmp/r/linalg_device.log 2>&1; echo "linalg device tests rc $? at ${SECONDS}s"
grep -E "test result|FAILED|SKIP" /tmp/r/linalg_device.log | head -5
cd /tmp/r && tar czf $OUT/t6.tgz . && cd - > /dev/null
echo "end at ${SECONDS}s"
