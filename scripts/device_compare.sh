#!/usr/bin/env bash
# Runs the same benchmarks with two staged hexfem binaries in one call on the device machine
# (before/after a change), alternating them: bench gamg ex56 (GPU and CPU), bench newton,
# bench gamg under mpirun -np 2 on the GPUs, bench assembly on the GPU. One JSON object per line
# into DIR/NAME.jsonl, each preceded by {"bench": ...}.
# Usage: bash scripts/device_compare.sh DIR M BIN_A BIN_B
set -u
dir=${1:?DIR}; m=${2:-66}; shift 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
one() { # one NAME BENCH CMD...
    local name=$1 bench=$2; shift 2
    echo "{\"bench\": \"$bench\"}" >> "$dir/$name.jsonl"
    timeout 120 "$@" >> "$dir/$name.jsonl" 2>> "$dir/$name.err" || echo "{\"failed\": \"$bench\"}" >> "$dir/$name.jsonl"
}
for round in 1 2; do
    for bin in "$@"; do
        name=$(basename "$bin")
        one "$name" gamg_cuda "$bin" bench gamg --problem ex56 --m "$m" --solves 4 --device cuda --json
        one "$name" newton_cuda "$bin" bench newton --m "$m" --device cuda --json
        if [ "$round" = 1 ]; then
            one "$name" gamg_cpu "$bin" bench gamg --problem ex56 --m "$m" --solves 3 --device cpu --json
            one "$name" gamg_mpi2_cuda mpirun --allow-run-as-root -np 2 "$bin" bench gamg --problem ex56 --m "$m" --solves 3 --device cuda --json
            one "$name" assembly_cuda "$bin" bench assembly --order 1 --cells 64 --device cuda --json
        fi
    done
done
