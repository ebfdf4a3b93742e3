#!/usr/bin/env bash
# hexfem's two entry points, with the set-up a fresh Debian/Ubuntu machine needs:
#   ./hexfem.sh run [INPUT.yaml] [hexfem run options]   build and run a simulation (default: the twisting column)
#   ./hexfem.sh test                                     build and run the whole test suite
#   ./hexfem.sh deps                                     only install what is missing
#   ./hexfem.sh <any other hexfem subcommand> ...        build, then pass the arguments to the hexfem binary
# What is missing (HDF5 library and tools, pkg-config, Open MPI and libclang for the MPI bindings)
# is installed with apt-get when run as root;
# otherwise the script stops and prints the exact command to run.
set -euo pipefail
cd "$(dirname "$0")"

need_packages() {
    local missing=()
    pkg-config --exists hdf5 2>/dev/null || missing+=(libhdf5-dev)
    command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
    command -v h5dump >/dev/null 2>&1 || missing+=(hdf5-tools)
    command -v cc >/dev/null 2>&1 || missing+=(gcc)
    # MPI (rsmpi): the Open MPI headers and compiler wrapper, mpirun, and libclang for bindgen.
    command -v mpicc >/dev/null 2>&1 || missing+=(libopenmpi-dev)
    command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
    compgen -G "/usr/lib/llvm-*/lib/libclang.so" >/dev/null || compgen -G "/usr/lib/*/libclang.so" >/dev/null \
        || missing+=(libclang-dev)
    if [ ${#missing[@]} -eq 0 ]; then return 0; fi
    local cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "hexfem: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "hexfem: missing system packages: ${missing[*]}" >&2
        echo "hexfem: install them with:  sudo sh -c '$cmd'" >&2
        exit 1
    fi
}

if ! command -v cargo >/dev/null 2>&1; then
    echo "hexfem: no Rust toolchain found; install one with rustup (https://rustup.rs) and re-run" >&2
    exit 1
fi
need_packages

# The viewer test reads results with meshio (and h5py); install them for the user's python3 if
# missing. Without python3 or pip the test says so and is skipped.
need_meshio() {
    command -v python3 >/dev/null 2>&1 || return 0
    python3 -c 'import meshio, h5py' >/dev/null 2>&1 && return 0
    echo "hexfem: installing meshio and h5py for the viewer test (pip)" >&2
    python3 -m pip install --quiet --disable-pip-version-check meshio h5py >/dev/null 2>&1 \
        || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages meshio h5py >/dev/null 2>&1 \
        || echo "hexfem: could not install meshio; the viewer test will be skipped" >&2
}

case "${1:-run}" in
    deps)
        # only the set-up above (CI runs clippy after it)
        exit 0
        ;;
    test)
        shift
        need_meshio
        exec cargo test --release --workspace "$@"
        ;;
    run)
        shift || true
        cargo build --release --quiet --bin hexfem
        if [ $# -eq 0 ] || [[ "$1" == -* ]]; then
            set -- inputs/twisting_column.yaml "$@"
        fi
        exec target/release/hexfem run "$@"
        ;;
    *)
        cargo build --release --quiet --bin hexfem
        exec target/release/hexfem "$@"
        ;;
esac
