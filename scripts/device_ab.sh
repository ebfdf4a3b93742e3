# Sourced by a stop's device script (bench/data/*/s*.sh) from the checkout root on the device
# machine: the preamble every A/B call repeated. Unpacks the staged binaries (scripts/device.sh),
# puts the staged `hexfem` at /tmp/hx_new and, where a reference was carried at
# .devq/old/hexfem.gz, that one at /tmp/hx_old; finds NVRTC; sets the kernel cache and mpirun's
# root permissions; makes $OUT and /tmp/r (the call's raw output) and starts $SECONDS at 0.
# Defines `gpu_tests SECONDS` (run.sh's GPU tests, a summary line) and `mpi_gpu_tests SECONDS`
# (the multi-rank GPU tests, bodies passed and failed), their logs copied to /tmp/r, and
# `pack NAME` (/tmp/r into $OUT/NAME.tgz).
#
# Usage (first lines of a device script): `source scripts/device_ab.sh`
(cd .device/bin && gunzip -f ./*.gz 2>/dev/null; chmod +x ./*)
mkdir -p "$OUT" /tmp/r
SECONDS=0
cp .device/bin/hexfem /tmp/hx_new
[ -f .devq/old/hexfem.gz ] && gunzip -c .devq/old/hexfem.gz > /tmp/hx_old
chmod +x /tmp/hx_*
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

gpu_tests() {
    timeout "$1" env TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run.log 2>&1
    echo "run.sh rc $? at ${SECONDS}s"
    cp /tmp/device-out/tests.log /tmp/r/ 2>/dev/null
    rm -f "$OUT/device-out.tgz"
    grep -hE "^test .*FAILED|panicked|failures:" /tmp/device-out/*.log 2>/dev/null | sort | uniq -c | head -30
    echo "gpu tests ok: $(grep -chE '^test .* ok$' /tmp/device-out/tests.log 2>/dev/null) skipped: $(grep -ch SKIP /tmp/device-out/tests.log 2>/dev/null)"
}

mpi_gpu_tests() {
    timeout "$1" env TESTS=0 MPI_TESTS=1 PEER=0 GAMG="" CPU="" bash .device/run.sh > /tmp/r/run_mpi.log 2>&1
    echo "mpi run.sh rc $? at ${SECONDS}s"
    cp /tmp/device-out/mpi_tests.log /tmp/r/ 2>/dev/null
    rm -f "$OUT/device-out.tgz"
    echo "mpi bodies passed: $(grep -c 'body passed' /tmp/device-out/mpi_tests.log 2>/dev/null) failed: $(grep -cE 'FAILED|panicked' /tmp/device-out/mpi_tests.log 2>/dev/null)"
}

pack() {
    (cd /tmp/r && tar czf "$OUT/$1.tgz" .)
}
