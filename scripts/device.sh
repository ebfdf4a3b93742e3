#!/usr/bin/env bash
# Stages the GPU tests and benchmarks for the device machine (which has the CUDA driver and
# NVRTC but no Rust): builds the release `hexfem` binary, the GPU test binaries (hexfem-linalg's
# library tests and `device` and `cg_coefficients` tests, hexfem-amg's `device` test,
# hexfem-assembly's library tests (its `device::` tests); all skip without a GPU) and the
# `cuda_bench` example (linalg's `kernel-bench` feature), the multi-rank test binaries (linalg's `dist`, hexfem-end-to-end's
# `mpi`), strips them into
# CHECKOUT/.device/ (keep that folder git-ignored there) with scripts/device_run.sh as run.sh,
# and prints the command to run on the device machine from CHECKOUT's root.
#
# Usage: scripts/device.sh CHECKOUT [STAGE]    (the checkout the device tool sends; STAGE is the
# staging folder's name under it, default .device: carry it, and keep it git-ignored there, so that
# several engineers sharing one checkout can stage side by side)
set -euo pipefail
dest=${1:?usage: scripts/device.sh CHECKOUT [STAGE] (the checkout the device tool sends)}
stage_name=${2:-.device}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

nice cargo build --release -p hexfem --bin hexfem
nice cargo build --release -p hexfem-linalg --features kernel-bench --example cuda_bench
# The executable of one test target: test_exe PACKAGE CARGO-TARGET-ARGS...
test_exe() {
    local pkg=$1
    shift
    nice cargo test --release -p "$pkg" "$@" --no-run --message-format=json \
        | grep -o '"executable":"[^"]*"' | sed 's/"executable":"\(.*\)"/\1/' | tail -n 1
}
lib_test=$(test_exe hexfem-linalg --lib)
linalg_device=$(test_exe hexfem-linalg --test device)
linalg_cg=$(test_exe hexfem-linalg --test cg_coefficients)
amg_device=$(test_exe hexfem-amg --test device)
amg_lib=$(test_exe hexfem-amg --lib)
assembly_device=$(test_exe hexfem-assembly --lib)
sim_lib=$(test_exe hexfem-sim --lib)
bench_lib=$(test_exe hexfem-bench --lib)
# multi-rank tests (they start mpirun on themselves; the GPU ones skip without a GPU)
linalg_dist=$(test_exe hexfem-linalg --test dist)
mpi_e2e=$(test_exe hexfem-end-to-end --test mpi)

stage="$dest/$stage_name"
rm -rf "$stage"
mkdir -p "$stage/bin"
cp target/release/hexfem "$stage/bin/hexfem"
cp target/release/examples/cuda_bench "$stage/bin/cuda_bench"
cp "$lib_test" "$stage/bin/test_linalg"
cp "$linalg_device" "$stage/bin/test_linalg_device"
cp "$linalg_cg" "$stage/bin/test_linalg_cg"
cp "$amg_device" "$stage/bin/test_amg_device"
cp "$amg_lib" "$stage/bin/test_amg_lib"
cp "$assembly_device" "$stage/bin/test_assembly_device"
cp "$sim_lib" "$stage/bin/test_sim"
cp "$bench_lib" "$stage/bin/test_bench"
cp "$linalg_dist" "$stage/bin/test_linalg_dist"
cp "$mpi_e2e" "$stage/bin/test_mpi_e2e"
# The peer benchmark (cuSPARSE, CuPy) the run script runs beside ours, when the caller has it:
# PEER=path/to/elasticity_peer.py scripts/device.sh CHECKOUT
if [ -n "${PEER:-}" ]; then
    cp "$PEER" "$stage/elasticity_peer.py"
fi
strip "$stage"/bin/*
cp scripts/device_run.sh "$stage/run.sh"
chmod +x "$stage/run.sh"
git rev-parse HEAD > "$stage/commit"
du -sh "$stage"
size=$(du -sm "$stage" | cut -f1)
if [ "$size" -gt 60 ]; then
    echo "staged files take ${size} MiB: over the device tool's 64 MiB" >&2
    exit 1
fi
echo "run on the device machine (carry $stage_name):"
echo "  bash $stage_name/run.sh"
