#!/usr/bin/env bash
# Runs the staged GPU tests and benchmarks on the device machine (staged by scripts/device.sh;
# run from the checkout root as `bash .device/run.sh`). Logs and JSON go to /tmp/device-out,
# packed into $OUT/device-out.tgz when $OUT is set; the last lines summarise. What runs is chosen by variables:
#   TESTS=1            the GPU tests (linalg kernels, linalg device types, amg device hierarchy,
#                      assembly's device element loop, hexfem bench::newton tests)
#   ASM_TESTS=0        only assembly's device tests (element kernels, device assembly)
#   ASSEMBLY=""        hexfem bench assembly --device cuda --json for each ORDER:CELLS (1:64 2:32)
#   GAMG="33 66 99"    hexfem bench gamg --device cuda --json for each m
#   GAMG_ARGS=""       extra arguments of those runs (e.g. "--solves 3")
#   PRECISION="double" the --precision of those runs, each in turn (e.g. "double mixed"; files of
#                      mixed runs end in _mixed)
#   CPU="66"           the same benchmark on the CPU with 2 threads (cores 0-1), for the ratio
#   PEER=1             the peer script (cuSPARSE CSR/BSR SpMV, cuSPARSE SpGEMM Galerkin) on the
#                      GAMG sizes, when it was staged
#   PEER_ARGS="bsr"    extra arguments of the peer script ("bsr": cuSPARSE BSR 3x3 SpMV too)
#   SPMV=""            hexfem bench spmv --m 66 --device cuda --json for these block shapes
#   CAPACITY=""        bench gamg --device cuda for these m, with the process's peak memory
#   RUNS=""            inputs/NAME.yaml run with device cpu and cuda, compared
#   MPI_RUNS=""        the same under mpirun -np MPI_RUNS_NP (default 2; rank r takes GPU r mod the
#                      node's GPUs, so 8 ranks share 2 GPUs four each)
#   NEWTON=""          hexfem bench newton --device cuda --json for each m (and --device cpu for
#                      each m of NEWTON_CPU)
#   KERNELS=0          cuda_bench (single kernels; arguments of run.sh go to it)
#   TIMED_RUNS=""      NAME:CELLS: `hexfem run inputs/NAME.yaml` on a CELLS^3 box with CG + AMG,
#                      timed with device cuda and cpu (all cores), iterations and wall times
#   TIMED_CPU2=""      1: TIMED_RUNS also on the CPU pinned to two cores
#   TIMED_DEVICES="cuda cpu"  the devices of TIMED_RUNS
#   TIMED_SET=""       extra `--set KEY=VALUE` options of TIMED_RUNS (space-separated KEY=VALUE),
#                      TIMED_TAG="" a suffix of their file names
#   MPI_TESTS=0        the multi-rank GPU tests under mpirun with 2 ranks sharing the node's GPUs
#                      (device DistBsr SpMV == host bits, device CG+AMG == host, the device hot
#                      update == the host's per level and uploads no operator, the device
#                      kept renewal == the host's per level (no operator download; on one rank
#                      no vector up), the device
#                      strength graph and aggregation on ranks == the host's, the device
#                      cold set-up == the host's, the device recompute renewal == a cold set-up, rank device
#                      selection, DistBsr::set_from_local gathering on the GPU == the host's
#                      bits, a rank's part assembled on its GPU == the host rank assembly
#                      bit for bit and a device rank run == the host rank run, at 1 and 2
#                      ranks), each test binary starting `mpirun -np 2` on itself
#   MPI_GAMG=""        mpirun -np NP hexfem bench gamg --device cuda --json for each NP:M[:GRID] (or M:
#                      2 ranks); rank r takes GPU r mod the node's GPUs (the same on the CPUs
#                      with MPI_GAMG_CPU=1); MPI_GAMG_ARGS: extra arguments (e.g. "--solves 3");
#                      MPI_EXCHANGE="auto": the --exchange values to run each with (staged nccl)
#                      MPI_LIMITS="default": the --process-eq-limit values to run each with
#                      (default: the GPU ranks' default; results named ..._L<limit>.json)
#   TESTS also runs hexfem's gpu_runs tests (every supported input on cuda == on cpu; scalars only
#   per Newton iteration).
set -uo pipefail
out=/tmp/device-out
rm -rf "$out"
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* \
    2>/dev/null | head -n 1)
if [ -z "$nvrtc" ]; then
    nvrtc=$(find /usr /opt -name 'libnvrtc.so*' 2>/dev/null | head -n 1)
fi
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
# NCCL (halo exchanges between the ranks' GPUs): NCCL installs libnccl.so.2, cudarc opens
# libnccl.so: a link to the first one found (system, CUDA or the Python wheels)
nccl=$(ls /usr/lib/x86_64-linux-gnu/libnccl.so.2* /usr/local/cuda*/lib64/libnccl.so.2* 2>/dev/null | head -n 1)
if [ -z "$nccl" ]; then
    nccl=$(find /usr /opt -name 'libnccl.so.2*' 2>/dev/null | head -n 1)
fi
if [ -n "$nccl" ]; then
    mkdir -p /tmp/hexfem-nccl
    ln -sf "$nccl" /tmp/hexfem-nccl/libnccl.so
    export LD_LIBRARY_PATH="/tmp/hexfem-nccl:$LD_LIBRARY_PATH"
fi
{
    echo "commit $(cat "$here/commit")"
    nvidia-smi
    echo "nvrtc: ${nvrtc:-not found}"
    echo "nccl: ${nccl:-not found}"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} > "$out/env.txt" 2>&1
head -n 12 "$out/env.txt"

status=0
TESTS=${TESTS:-1}
GAMG=${GAMG-33 66 99}
CPU=${CPU-66}
PRECISION=${PRECISION:-double}
GAMG_ARGS=${GAMG_ARGS:-}
PEER=${PEER:-1}
PEER_ARGS=${PEER_ARGS-bsr}
KERNELS=${KERNELS:-0}
CAPACITY=${CAPACITY:-}
SPMV=${SPMV:-}
RUNS=${RUNS:-}
ASM_TESTS=${ASM_TESTS:-0}
ASSEMBLY=${ASSEMBLY:-}
NEWTON=${NEWTON:-}
NEWTON_CPU=${NEWTON_CPU:-}
MPI_TESTS=${MPI_TESTS:-0}
MPI_GAMG=${MPI_GAMG:-}
MPI_GAMG_CPU=${MPI_GAMG_CPU:-0}
MPI_GAMG_ARGS=${MPI_GAMG_ARGS:-}
MPI_EXCHANGE=${MPI_EXCHANGE:-auto}
MPI_LIMITS=${MPI_LIMITS:-default}
"$here/bin/hexfem" --help > "$out/hexfem_help.txt" 2>&1 || { echo "hexfem --help failed"; status=1; }
if [ "$TESTS" = 1 ]; then
    # one test at a time: the tests share one context, whose transfer counters some of them
    # check (bytes moved by a plan), and a concurrent test's copies would land in them
    "$here/bin/test_linalg" --test-threads=1 backend::cuda --nocapture > "$out/tests.log" 2>&1 \
        || status=1
    # linalg's other library tests that take a GPU (the grouped QR's plan built on the device)
    "$here/bin/test_linalg" --test-threads=1 grouped_qr::tests::the_device_plan --nocapture \
        >> "$out/tests.log" 2>&1 || status=1
    for t in test_linalg_device test_linalg_cg test_amg_device; do
        "$here/bin/$t" --test-threads=1 --nocapture >> "$out/tests.log" 2>&1 || status=1
    done
    # assembly's device element loop: the crate's library tests under `device::`
    "$here/bin/test_assembly_device" --test-threads=1 --nocapture device:: >> "$out/tests.log" 2>&1 \
        || status=1
    # amg's library tests that take a GPU (the tentative stage on the device)
    "$here/bin/test_amg_lib" --test-threads=1 --nocapture device_ >> "$out/tests.log" 2>&1 \
        || status=1
    "$here/bin/test_bench" --test-threads=1 --nocapture newton >> "$out/tests.log" 2>&1 || status=1
    "$here/bin/test_sim" --test-threads=1 --nocapture gpu_runs >> "$out/tests.log" 2>&1 || status=1
    grep -E "^test .*(FAILED|panicked)|SKIP|test result|panicked|^m = |hot update:|^gpu_runs:" "$out/tests.log" | tail -n 40
    echo "tests: $(grep -c '^test .* ok$' "$out/tests.log") GPU tests ok, $(grep -c SKIP "$out/tests.log") skipped, $(grep -c '^test .* FAILED$' "$out/tests.log") failed"
fi
if [ "$MPI_TESTS" = 1 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    {
        "$here/bin/test_linalg_dist" --test-threads=1 --nocapture device_ a_rank_without_a_gpu nccl_ ipc_
        # inside mpirun the test body runs directly, so its lines show
        mpirun --allow-run-as-root --oversubscribe -np 2 "$here/bin/test_mpi_e2e" --exact \
            device_cg_with_the_distributed_amg_equals_the_host_cg --nocapture --test-threads=1
        mpirun --allow-run-as-root --oversubscribe -np 2 "$here/bin/test_mpi_e2e" --exact \
            device_hot_update_of_the_distributed_hierarchy_equals_the_host_hot_update \
            --nocapture --test-threads=1
        mpirun --allow-run-as-root --oversubscribe -np 2 "$here/bin/test_mpi_e2e" --exact \
            device_levels_take_a_kept_renewal_in_place --nocapture --test-threads=1
        mpirun --allow-run-as-root --oversubscribe -np 2 "$here/bin/test_mpi_e2e" --exact \
            a_device_kept_renewal_on_ranks_equals_the_host_kept_renewal --nocapture \
            --test-threads=1
        mpirun --allow-run-as-root --oversubscribe -np 2 "$here/bin/test_mpi_e2e" --exact \
            device_rank_run_with_kept_renewals_equals_the_host_rank_run --nocapture \
            --test-threads=1
        # one GPU rank (no halo): a kept renewal on the device uploads no vector (the
        # eigenvalue start vectors kept there; the stages' bytes)
        mpirun --allow-run-as-root --oversubscribe -np 1 "$here/bin/test_mpi_e2e" --exact \
            a_device_kept_renewal_on_one_rank_uploads_no_vector --nocapture --test-threads=1
        # the strength graph and aggregation on the GPUs, the cold set-up on the GPUs and the
        # recompute renewal
        for t in a_device_strength_graph_and_aggregates_on_ranks_equal_the_host_ones \
            a_device_cold_setup_on_ranks_equals_the_host_cold_setup \
            a_device_recompute_renewal_on_ranks_keeps_unchanged_levels_and_equals_a_cold_setup; do
            mpirun --allow-run-as-root --oversubscribe -np 2 "$here/bin/test_mpi_e2e" --exact \
                "$t" --nocapture --test-threads=1
        done
        # each rank's Newton iteration and cell fields on its GPU (1 and 2 ranks: the lines of 2
        # ranks show)
        for t in device_rank_assembly_equals_the_host_rank_assembly \
            device_rank_run_equals_the_host_rank_run \
            device_rank_run_computes_its_cell_fields_on_the_gpus; do
            for np in 1 2; do
                mpirun --allow-run-as-root --oversubscribe -np "$np" "$here/bin/test_mpi_e2e" \
                    --exact "$t" --nocapture --test-threads=1
            done
        done
    } > "$out/mpi_tests.log" 2>&1 || status=1
    grep -E "^test |SKIP|test result|panicked|device distributed|device rank|cell datasets|nccl exchanges|kept renewal|ipc exchanges|failed" "$out/mpi_tests.log" | tail -n 40
fi
mpi_devices=cuda
[ "$MPI_GAMG_CPU" = 1 ] && mpi_devices="cuda cpu"
for nm in $MPI_GAMG; do
    # NP:M (NP ranks, one GPU each while the node has NP GPUs), NP:M:GRID (--rank-grid GRID,
    # e.g. 4:105:1x1x4 for slabs) or M (2 ranks)
    np=2
    m=$nm
    grid=""
    if [ "${nm#*:}" != "$nm" ]; then
        np=${nm%%:*}
        m=${nm#*:}
        if [ "${m#*:}" != "$m" ]; then
            grid=${m#*:}
            m=${m%%:*}
        fi
    fi
    for dev in $mpi_devices; do
      for ex in $MPI_EXCHANGE; do
       for lim in $MPI_LIMITS; do
        f="mpi_gamg_${dev}_np${np}_${m}_$ex"
        limit_args=""
        if [ "$lim" != default ]; then
            f="${f}_L$lim"
            limit_args="--process-eq-limit $lim"
        fi
        if [ -n "$grid" ]; then
            f="${f}_g$grid"
            limit_args="$limit_args --rank-grid $grid"
        fi
        # each rank's host phases get an equal share of the node's cores
        # shellcheck disable=SC2086
        RAYON_NUM_THREADS=$(( $(nproc) / np > 0 ? $(nproc) / np : 1 )) \
        mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -np "$np" "$here/bin/hexfem" bench gamg \
            --problem ex56 --m "$m" --device "$dev" --exchange "$ex" $limit_args $MPI_GAMG_ARGS --json > "$out/$f.json" 2> "$out/$f.err" \
            || { status=1; tail -n 5 "$out/$f.err"; }
        python3 - "$out/$f.json" "$dev $np ranks m $m exchange $ex limit $lim${grid:+ grid $grid}" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
tag = sys.argv[2]
print(f"[mpi gamg {tag}] {r['unknowns']} unknowns on {r['ranks']} ranks ({'x'.join(map(str, r.get('rank_grid') or []))} boxes) {r['devices']}, levels {r['rows_per_level']} on {r['ranks_per_level']} ranks (process_eq_limit {r['process_eq_limit']}), "
      f"iterations {r['iterations']}, cold {r['setup_cold_s']:.3f} s, hot update {r['setup_hot_s']*1e3:.1f} ms, "
      f"hot solve {r['solve_hot_s']*1e3:.1f} ms, SpMV {r['spmv_s']*1e3:.3f} ms, hot update {r['hot_update_bytes']} B MPI "
      f"({r['hot_update_p_values']} P values), CG iteration {r['cg_iteration']['bytes']:.0f} B MPI, "
      f"rows imbalance {r['rows_imbalance']:.3f}, collective wait max/mean {r['collective_wait_max_s']*1e3:.1f}/{r['collective_wait_mean_s']*1e3:.1f} ms")
print(f"[mpi gamg {tag}] exchange {r.get('exchange')} {r.get('exchange_fallback') or ''}")
for g in r.get("gpu") or []:
    print(f"[mpi gamg {tag}] gpu {json.dumps(g)}")
    print(f"[mpi gamg {tag}] hot update bytes: {g.get('hot_update_host_to_device_bytes')} B host->device, "
          f"{g.get('hot_update_device_to_host_bytes')} B device->host, {g.get('hot_update_mpi_bytes')} B MPI")
PY
       done
      done
    done
done
for m in $NEWTON; do
    "$here/bin/hexfem" bench newton --m "$m" --device cuda --json > "$out/newton_cuda_$m.json" \
        2> "$out/newton_cuda_$m.err" && cat "$out/newton_cuda_$m.json" \
        || { echo "[newton cuda $m] failed:"; tail -n 3 "$out/newton_cuda_$m.err"; status=1; }
done
for m in $NEWTON_CPU; do
    RAYON_NUM_THREADS=2 taskset -c 0,1 "$here/bin/hexfem" bench newton --m "$m" --device cpu --json \
        > "$out/newton_cpu_$m.json" 2> "$out/newton_cpu_$m.err" && cat "$out/newton_cpu_$m.json" \
        || { echo "[newton cpu $m] failed:"; tail -n 3 "$out/newton_cpu_$m.err"; status=1; }
done
if [ "$ASM_TESTS" = 1 ]; then
    "$here/bin/test_assembly_device" --test-threads=1 --nocapture device:: > "$out/asm_tests.log" 2>&1 \
        || status=1
    grep -E "^test |SKIP|test result|panicked|^Q[12] " "$out/asm_tests.log" | tail -n 60
fi
for oc in $ASSEMBLY; do
    o=${oc%%:*}
    c=${oc##*:}
    "$here/bin/hexfem" bench assembly --order "$o" --cells "$c" --repeats 1 --device cuda --json \
        > "$out/assembly_q${o}_$c.json" 2> "$out/assembly_q${o}_$c.err" || { status=1; tail -n 5 "$out/assembly_q${o}_$c.err"; }
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); g=r.pop('gpu'); print(json.dumps(r)); print(json.dumps(g))" \
        "$out/assembly_q${o}_$c.json" || true
done
# one line per benchmark from its JSON
summary() {
    python3 - "$@" <<'PY'
import json, sys
tag, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
g = r.get("gpu") or {}
print(f"[{tag}] {r['unknowns']} unknowns, levels {r['levels']}, iterations {r['iterations']}, "
      f"cold {r['setup_cold_s']:.3f} s, hot update {r['setup_hot_s']*1e3:.1f} ms, hot solve {r['solve_hot_s']*1e3:.1f} ms")
if g:
    print(f"[{tag}] SpMV {g['spmv_ms']:.3f} ms {g['spmv_gbs']:.0f} GB/s ({100*g['spmv_of_copy']:.1f} % of {g['copy_gbs']:.0f}), "
          f"Galerkin {[round(t, 3) for t in g['galerkin_ms_per_level']]} = {g['galerkin_ms_total']:.2f} ms, "
          f"{g['bytes_per_hot_step']} B per hot step, memory peak {g['memory_peak_mib']:.0f} MiB")
PY
}
for m in $GAMG; do
    for prec in $PRECISION; do
        f="gamg_cuda_$m"
        [ "$prec" = double ] || f="${f}_$prec"
        # shellcheck disable=SC2086
        "$here/bin/hexfem" bench gamg --problem ex56 --m "$m" --device cuda --precision "$prec" \
            $GAMG_ARGS --json > "$out/$f.json" 2> "$out/$f.err" \
            && summary "cuda $m $prec" "$out/$f.json" || { status=1; tail -n 3 "$out/$f.err"; }
    done
done
for m in $CPU; do
    RAYON_NUM_THREADS=2 taskset -c 0,1 "$here/bin/hexfem" bench gamg --problem ex56 --m "$m" --json \
        > "$out/gamg_cpu2_$m.json" 2> "$out/gamg_cpu2_$m.err" || status=1
    summary "cpu2 $m" "$out/gamg_cpu2_$m.json" || true
done
for shape in $SPMV; do
    "$here/bin/hexfem" bench spmv --m 66 --block "$shape" --device cuda --json \
        > "$out/spmv_cuda_$shape.json" 2>&1 || status=1
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"[spmv {r['block_rows']}x{r['block_cols']}] {r['rows']} x {r['cols']}, {r['blocks']} blocks: {r['time_ms']:.4f} ms, {r['bytes']/1e6:.1f} MB, {r['gbs']:.0f} GB/s ({100*r['of_copy']:.1f} % of copy)\")" "$out/spmv_cuda_$shape.json" || status=1
done
# capacity: the largest ex56 that sets up and solves, and the guard's error beyond it
for m in $CAPACITY; do
    /usr/bin/time -v "$here/bin/hexfem" bench gamg --problem ex56 --m "$m" --device cuda --json \
        > "$out/capacity_$m.json" 2> "$out/capacity_$m.err" \
        && summary "capacity $m" "$out/capacity_$m.json" \
        || { echo "[capacity $m] failed:"; grep -v "^\s" "$out/capacity_$m.err" | tail -n 2; }
    grep -E "Maximum resident|Elapsed" "$out/capacity_$m.err" | sed "s/^/[capacity $m] /"
done
# end to end: each input with CG + AMG on the CPU and on the GPU, summaries compared
# (MPI_RUNS: the same under mpirun -np MPI_RUNS_NP, the ranks sharing the node's GPUs)
for input in $RUNS ${MPI_RUNS:+$(printf 'mpi:%s ' $MPI_RUNS)}; do
    launcher=()
    if [ "${input#mpi:}" != "$input" ]; then
        input=${input#mpi:}
        launcher=(mpirun --allow-run-as-root --oversubscribe -np "${MPI_RUNS_NP:-2}")
    fi
    for dev in cpu cuda; do
        rm -rf "/tmp/run_$dev"
        # the same method on both (`auto` factors small problems on the CPU, never on the GPU)
        "${launcher[@]}" "$here/bin/hexfem" run "inputs/$input.yaml" --set "device=$dev" \
            --set linear_solver.method=cg_amg -o "/tmp/run_$dev" \
            > "$out/run_${input}_${#launcher[@]}_$dev.log" 2>&1 || status=1
    done
    grep -E "^  device " "$out/run_${input}_${#launcher[@]}_cuda.log" | head -n 1
    python3 - "$input${launcher[*]:+ on ${MPI_RUNS_NP:-2} ranks}" "${#launcher[@]}" <<'PY' || status=1
import glob, json, sys
name = sys.argv[1]
# on ranks the device run is the host rank run's operations (its CG iterations too), and the
# Newton loop runs on each rank's GPU moving scalars only
on_ranks = sys.argv[2] != "0"
def load(dev):
    return json.load(open(glob.glob(f"/tmp/run_{dev}/*.summary.json")[0]))
c, g = load("cpu"), load("cuda")
cs, gs = c["steps"], g["steps"]
same = [a["newton_iterations"] for a in cs] == [b["newton_iterations"] for b in gs]
lin = [a["linear_iterations"] for a in cs] == [b["linear_iterations"] for b in gs]
du = max(abs(a["max_displacement"] - b["max_displacement"]) / max(abs(a["max_displacement"]), 1e-300) for a, b in zip(cs, gs))
its = [it for st in gs for it in st["linear_solver"]]
dev = [it["linear"].get("device") for it in its]
up = [d["upload_bytes"] for d in dev if d]
hot = [d["setup"]["host_to_device_bytes"] + d["setup"]["device_to_host_bytes"] + d["solve"]["host_to_device_bytes"] + d["solve"]["device_to_host_bytes"] for d in dev if d]
# Where the Newton loop ran on the GPUs (every iteration records its uploads): outside the
# linear solve nothing goes up but scalars (<= 64 B), and after the first solve the tangent and
# the right-hand side never go up (assembled on the device).
newton_gpu = bool(its) and all(it.get("upload_bytes") is not None for it in its)
outside = [it["upload_bytes"] - (d["upload_bytes"] + d["setup"]["host_to_device_bytes"] + d["solve"]["host_to_device_bytes"])
           for it, d in zip(its, dev) if d and it.get("upload_bytes") is not None]
scalars_only = newton_gpu and bool(outside) and max(outside) <= 64 and all(u == 0 for u in up[1:])
print(f"[run {name}] steps {len(cs)}/{len(gs)}, same Newton iterations {same}, same linear iterations {lin}, "
      f"max displacement rel diff {du:.1e}; per Newton iteration: tangent+rhs upload {up[-1] if up else None} B, "
      f"set-up+solve {hot[1:] and max(hot[1:])} B (first {hot[0] if hot else None} B); "
      f"Newton loop on the GPUs {newton_gpu}, up outside the solve at most {max(outside) if outside else None} B, "
      f"tangent+rhs after the first solve {sorted(set(up[1:]))} B: scalars only {scalars_only}")
ok = len(cs) == len(gs) and same and du < 1e-8 and (not on_ranks or (lin and scalars_only))
sys.exit(0 if ok else 1)
PY
done

for nc in ${TIMED_RUNS:-}; do
    input=${nc%%:*}
    cells=${nc##*:}
    extra=()
    for kv in ${TIMED_SET:-}; do extra+=(--set "$kv"); done
    for dev in ${TIMED_DEVICES:-cuda cpu} ${TIMED_CPU2:+cpu2}; do
        rm -rf "/tmp/timed_$dev"
        # cpu2: the CPU pinned to two cores (the 2-core reference of the other tables)
        pin=()
        [ "$dev" = cpu2 ] && pin=(env RAYON_NUM_THREADS=2 taskset -c 0,1)
        start=$(date +%s.%N)
        "${pin[@]}" "$here/bin/hexfem" run "inputs/$input.yaml" --set "device=${dev%2}" \
            --set linear_solver.method=cg_amg --set "mesh.box.cells=[$cells,$cells,$cells]" \
            "${extra[@]}" -o "/tmp/timed_$dev" > "$out/timed_${input}_${cells}_$dev${TIMED_TAG:-}.log" 2>&1 || status=1
        end=$(date +%s.%N)
        cp /tmp/timed_$dev/*.summary.json "$out/timed_${input}_${cells}_$dev${TIMED_TAG:-}.summary.json" 2>/dev/null
        python3 - "$out/timed_${input}_${cells}_$dev${TIMED_TAG:-}.summary.json" "$dev${TIMED_TAG:-}" "$input" "$cells" "$start" "$end" <<'PY' || status=1
import json, sys
path, dev, name, cells, start, end = sys.argv[1:]
s = json.load(open(path))
steps = s["steps"]
its = [it for st in steps for it in st["linear_solver"]]
newton = sum(st["newton_iterations"] for st in steps)
lin = sum(sum(st["linear_iterations"]) for st in steps)
tb = [it.get("transfer_bytes") for it in its]
later = [b for st in steps for b in [it.get("transfer_bytes") for it in st["linear_solver"]][1:] if b is not None]
print(f"[timed {name} {cells}^3 {dev}] {s['mesh'].get('unknowns', '?')} unknowns, {len(steps)} steps, {newton} Newton, {lin} CG iterations, "
      f"wall {float(end) - float(start):.2f} s (process), steps {sum(st['wall_s'] for st in steps):.2f} s, "
      f"energy {steps[-1]['strain_energy']:.12e}, max |u| {steps[-1]['max_displacement']:.12e}, "
      f"bytes per later Newton iteration max {max(later) if later else None}")
lin_its = [it.get("linear", it) for it in its]
kinds = {}
for it in lin_its:
    k = str(it.get("setup"))
    n, t = kinds.get(k, (0, 0.0))
    kinds[k] = (n + 1, t + it.get("setup_s", 0.0))
print("   set-ups: " + ", ".join(f"{k} {n} x = {t:.3f} s" for k, (n, t) in kinds.items())
      + f"; solves {sum(it.get('solve_s', 0.0) for it in lin_its):.3f} s")
PY
        grep -E "^(host|device|linear)" "$out/timed_${input}_${cells}_$dev${TIMED_TAG:-}.log" | head -n 3
    done
done

if [ "$PEER" = 1 ] && [ -f "$here/elasticity_peer.py" ] && [ -n "$GAMG" ]; then
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout 300 python3 "$here/elasticity_peer.py" gpu $GAMG $PEER_ARGS > "$out/peer_gpu.txt" 2>&1 || status=1
    tail -n 25 "$out/peer_gpu.txt"
fi
if [ "$KERNELS" = 1 ]; then
    "$here/bin/cuda_bench" --json "$out/bench.json" "$@" > "$out/bench.log" 2>&1 || status=1
    tail -n 30 "$out/bench.log"
fi
# everything in one file (the device tool brings back at most 8)
if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/device-out.tgz" -C "$out" . 2>/dev/null || true
fi
echo "device run status $status"
exit $status
