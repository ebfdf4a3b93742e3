//! `hexfem bench gamg --problem ex56`: PETSc's `-two_solves` sequence on ex56 - cold AMG set-up and
//! CG solve, then (per further solve) the operator scaled, a hot set-up that reuses the
//! interpolation, and a CG solve again. With `--device cuda` the operator, right-hand side and
//! solution are uploaded once after assembly and everything after runs on the GPU (the host
//! builds graph, aggregates and tentative prolongators in the cold set-up); the GPU's own
//! metrics (device events) are reported in [`GpuMetrics`].

use std::time::Instant;

use amg::{
    cg, AmgParams, CgOutcome, CgParams, Hierarchy, HierarchyReport, Renewal, RenewalReport,
    SetupTimings, Storage, TransferReport, UpdateReport,
};
use anyhow::{ensure, Context, Result};
use assembly::ex56::Ex56;
use linalg::gpu::CudaContext;
use linalg::{Bsr, Device, Vector};
use serde::Serialize;
use solve::problem::near_null_space;

use super::galerkin_traffic::{galerkin_traffic, GalerkinTraffic};
use super::{best_of, peak_rss_mb};

/// Relative tolerance of every CG solve, on the unpreconditioned residual (PETSc ex56's).
pub const CG_RTOL: f64 = 1e-8;
/// Factor the operator is scaled by before each hot set-up (a new operator on the same pattern
/// whose hierarchy needs exactly what the first one needed: iterations must not change).
pub const OPERATOR_SCALE: f64 = 2.0;
/// Timed fine-level SpMVs (after a warm-up); the best is reported.
pub const SPMV_REPEATS: usize = 10;
/// Device-event repeats of the GPU's SpMV and per-level Galerkin products; the median is reported.
pub const GPU_REPEATS: usize = 20;

/// Where `bench gamg` (and the other benchmarks with `--device`) runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchDevice {
    /// The CPU (rayon threads).
    #[default]
    Cpu,
    /// The first CUDA GPU.
    Cuda,
}

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct GamgBench {
    /// Nodes per side.
    pub m: usize,
    pub order: usize,
    /// Total solves: the first after a cold set-up, each further one after scaling the operator by
    /// [`OPERATOR_SCALE`] and a hot set-up. At least 2.
    pub solves: usize,
    /// Run the same algorithm with every operator and prolongator stored as 1x1 blocks (the
    /// coarsening itself stays blocked), to measure what the blocks buy.
    pub scalar: bool,
    pub amg: AmgParams,
    /// Where the set-up and solves run.
    pub device: BenchDevice,
}

/// What a GPU run measures besides the CPU fields (device events, device counters).
#[derive(Clone, Debug, Serialize)]
pub struct GpuMetrics {
    /// Device-to-device copy of 1 GiB, bytes read + written per second: the bandwidth ceiling.
    pub copy_gbs: f64,
    /// Hot fine SpMV, median of [`GPU_REPEATS`] device-event timings.
    pub spmv_ms: f64,
    /// Bytes a fine SpMV must move: values, `u32` column indices and row offsets, `x`, `y`.
    pub spmv_bytes: f64,
    pub spmv_gbs: f64,
    /// One V-cycle (the preconditioner's application in CG) and one dot product of fine
    /// vectors, medians of [`GPU_REPEATS`] timings (the dot includes its download).
    pub vcycle_ms: f64,
    pub dot_ms: f64,
    /// Best of the host's time to queue one V-cycle (until `apply` returns, before the device
    /// finishes): near `vcycle_ms` where the launches, not the GPU, set the pace.
    pub vcycle_enqueue_ms: f64,
    /// `spmv_gbs / copy_gbs`.
    pub spmv_of_copy: f64,
    /// Numeric Galerkin product per transfer (finest first), median of device-event timings.
    pub galerkin_ms_per_level: Vec<f64>,
    pub galerkin_ms_total: f64,
    /// What each level's product must move and compute (see [`GalerkinTraffic`]).
    pub galerkin_traffic_per_level: Vec<GalerkinTraffic>,
    /// Each level's `two_pass_bytes` over its measured time, and that over `copy_gbs`: how far
    /// the product is from the bandwidth limit of the passes it runs.
    pub galerkin_gbs_per_level: Vec<f64>,
    pub galerkin_of_copy_per_level: Vec<f64>,
    /// Wall time of the first hot update (ends with a device synchronisation).
    pub update_hot_ms: f64,
    /// Wall time of the CG solve after it (CG synchronises at every dot product).
    pub ksp_hot_ms: f64,
    /// Bytes between host and device in the first hot update and the solve after it.
    pub hot_update_bytes: TransferReport,
    pub hot_solve_bytes: TransferReport,
    pub bytes_per_hot_step: u64,
    /// Largest device memory in use (total minus free) seen at the phase boundaries, and the
    /// same before anything was allocated (the context's own).
    pub memory_peak_mib: f64,
    /// Device memory in use right after the cold setup, the memory pool trimmed (the operator,
    /// the finished hierarchy and its plans; with `--precision mixed` its fp32 form, the fp64
    /// one built first is freed).
    pub memory_after_setup_mib: f64,
    pub memory_baseline_mib: f64,
    pub memory_total_mib: f64,
}

/// What `hexfem bench gamg --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct GamgBenchResult {
    pub problem: &'static str,
    pub nodes_per_side: usize,
    pub order: usize,
    pub unknowns: usize,
    /// Operators stored as 1x1 blocks (`--scalar`).
    pub scalar: bool,
    /// `double` or `mixed` (`--precision`: fp32 prolongators, coarse operators and smoother
    /// inverses).
    pub precision: &'static str,
    /// Bytes of the values the hierarchy stores (coarse operators, prolongators, smoother
    /// inverses, in their stored precision; `Hierarchy::value_bytes`), MiB.
    pub hierarchy_values_mib: f64,
    pub levels: usize,
    pub rows_per_level: Vec<usize>,
    pub block_size_per_level: Vec<usize>,
    pub operator_complexity: f64,
    pub grid_complexity: f64,
    /// CG iterations of each solve ([`CG_RTOL`] on the unpreconditioned residual).
    pub iterations: Vec<usize>,
    pub converged: bool,
    pub assembly_s: f64,
    pub setup_cold_s: f64,
    /// Hot set-up of the first re-solve; `setup_hot_all_s` lists each.
    pub setup_hot_s: f64,
    pub setup_hot_all_s: Vec<f64>,
    pub solve_s: f64,
    /// Solve after the first hot set-up.
    pub solve_hot_s: f64,
    /// One SpMV with the fine operator in the storage the solve used (best of [`SPMV_REPEATS`]
    /// after a warm-up).
    pub spmv_s: f64,
    /// Numeric Galerkin products of the first hot set-up, all levels.
    pub galerkin_numeric_s: f64,
    pub peak_rss_mb: Option<f64>,
    pub threads: usize,
    /// `host` or the GPU's name.
    pub device: String,
    pub hierarchy: HierarchyReport,
    pub hot_update: UpdateReport,
    /// After the hot solves: the rigid-body modes of a deformed configuration (the nodes moved
    /// by [`deformed`]; on the hierarchy's device before the clock starts) given to the hierarchy, as Newton does at a load step's start
    /// (`Hierarchy::set_near_null_space`; the operator's strength graph is unchanged, so every
    /// plan is kept), then the same modes in a cold set-up for comparison.
    pub renewal: RenewalComparison,
    /// The GPU's metrics (`--device cuda`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuMetrics>,
}

/// A renewal for new modes against a cold set-up with them (see [`GamgBenchResult::renewal`]).
#[derive(Clone, Debug, Serialize)]
pub struct RenewalComparison {
    pub renewal_s: f64,
    pub renewal: RenewalReport,
    /// CG iterations after the renewal and after the cold set-up (equal: the same hierarchy).
    pub iterations: [usize; 2],
    pub cold_s: f64,
    /// Bytes between host and device of the cold set-up.
    pub cold_transfers: TransferReport,
    /// The stage timings and per-stage bytes of this cold set-up (the process's second: its
    /// kernels compiled and its memory pool warm, unlike [`GamgBenchResult::hierarchy`]'s).
    pub cold_timings: SetupTimings,
    /// The same renewal in the other `renewal` mode (from a cold set-up with the first modes):
    /// the mode, its time, report and the CG iterations after it.
    pub other_mode: Renewal,
    pub other_mode_s: f64,
    pub other_mode_report: RenewalReport,
    pub other_mode_iterations: usize,
}

/// The nodes moved smoothly by a few per cent of the box (a deformed configuration).
fn deformed(coords: &[[f64; 3]]) -> Vec<[f64; 3]> {
    coords
        .iter()
        .map(|&[x, y, z]| {
            [
                x + 0.03 * (3.0 * z).sin(),
                y + 0.02 * (2.0 * x).cos(),
                z + 0.01 * x * y,
            ]
        })
        .collect()
}

/// Device memory in use, MiB.
fn used_mib(ctx: &CudaContext) -> Result<f64> {
    let (free, total) = ctx.memory_info()?;
    Ok((total - free) as f64 / (1 << 20) as f64)
}

/// Median of device-event timings of `f` (ms) after one warm-up call.
pub(crate) fn event_median(
    ctx: &CudaContext,
    repeats: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        let start = ctx.record_event()?;
        f()?;
        let end = ctx.record_event()?;
        t.push(start.elapsed_ms(&end)? as f64);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// Copy bandwidth of the device: 1 GiB copied device to device (read + written), best of 5.
pub(crate) fn copy_gbs(ctx: &CudaContext) -> Result<f64> {
    let n = (1usize << 30) / 8;
    let src = ctx.filled(n, 1.0)?;
    let mut dst = ctx.zeros::<f64>(n)?;
    let ms = event_median(ctx, 5, || Ok(ctx.copy(&src, &mut dst)?))?;
    Ok(2.0 * (n * 8) as f64 / (ms * 1e-3) / 1e9)
}

/// Runs the benchmark.
pub fn run(bench: &GamgBench) -> Result<GamgBenchResult> {
    ensure!(
        bench.solves >= 2,
        "--solves must be at least 2 (one cold, one hot)"
    );
    let start = Instant::now();
    let Ex56 { a, b, coords, .. } = Ex56::new(bench.m, bench.order)
        .with_context(|| format!("ex56 with --m {} --order {}", bench.m, bench.order))?;
    let near_null = near_null_space(&coords)?;
    let assembly_s = start.elapsed().as_secs_f64();
    let device = match bench.device {
        BenchDevice::Cpu => Device::Host,
        BenchDevice::Cuda => Device::cuda(0).context("--device cuda")?,
    };
    let ctx = device.cuda_context().cloned();
    let memory_baseline_mib = ctx.as_ref().map(|c| used_mib(c)).transpose()?;
    let mut memory_peak_mib = memory_baseline_mib.unwrap_or(0.0);
    let sample = |peak: &mut f64| -> Result<()> {
        if let Some(c) = &ctx {
            *peak = peak.max(used_mib(c)?);
        }
        Ok(())
    };
    // the operator and its hierarchy must fit before anything is uploaded
    let (hierarchy_bytes, operator_bytes) = amg::device_memory_estimate(&a);
    amg::check_device_memory(&device, hierarchy_bytes + operator_bytes)?;
    // one upload after assembly; everything below runs where `device` says
    let (mut a, b) = (a.to_device(&device)?, b.to_device(&device)?);
    // the modes where the operator lives, as a Newton run on a GPU makes them there: the cold
    // set-up's clock and byte counts hold the set-up's own work only
    let near_null = near_null.to_device(&device)?;
    let cg_params = CgParams {
        rtol: CG_RTOL,
        ..CgParams::default()
    };
    let mut x = Vector::zeros_on(&device, b.len())?;
    let amg_params = AmgParams {
        storage: if bench.scalar {
            Storage::Scalar
        } else {
            Storage::Blocked
        },
        ..bench.amg.clone()
    };

    let start = Instant::now();
    let mut hierarchy = Hierarchy::setup_external(&a, &near_null, &amg_params)?;
    let setup_cold_s = start.elapsed().as_secs_f64();
    sample(&mut memory_peak_mib)?;
    // what stays resident: the pool's freed blocks (the set-up's temporaries; with `mixed` the
    // fp64 forms rounded to fp32) given back first
    let memory_after_setup_mib = ctx
        .as_ref()
        .map(|c| {
            c.trim_pool()?;
            used_mib(c)
        })
        .transpose()?;
    let (first, solve_s) = solve(&hierarchy, &a, &b, &mut x, &cg_params)?;
    sample(&mut memory_peak_mib)?;
    let mut hot_solve_bytes = TransferReport::default();

    let mut iterations = vec![first.iterations];
    let mut converged = first.converged;
    let mut setup_hot_all_s = Vec::new();
    let mut solve_hot_s = 0.0;
    let mut hot_update = None;
    for solve_index in 1..bench.solves {
        a.scale(OPERATOR_SCALE)?;
        let start = Instant::now();
        let update = hierarchy.update(&a)?;
        setup_hot_all_s.push(start.elapsed().as_secs_f64());
        x.fill(0.0)?;
        let before = device.transfers();
        let (outcome, seconds) = solve(&hierarchy, &a, &b, &mut x, &cg_params)?;
        if solve_index == 1 {
            solve_hot_s = seconds;
            hot_update = Some(update);
            hot_solve_bytes = TransferReport::between(before, device.transfers());
        }
        sample(&mut memory_peak_mib)?;
        iterations.push(outcome.iterations);
        converged &= outcome.converged;
    }
    // the fine operator in the storage the solve used
    let fine = hierarchy.operator(0).unwrap_or(&a);
    let mut y = Vector::zeros_on(&device, b.len())?;
    let spmv_s = best_of(SPMV_REPEATS, || {
        let start = Instant::now();
        fine.spmv(&x, &mut y)?;
        device.synchronize()?;
        Ok(start.elapsed().as_secs_f64())
    })?;
    let hot_update = hot_update.ok_or_else(|| anyhow::anyhow!("no hot update ran"))?;
    let gpu = match &ctx {
        None => None,
        Some(ctx) => {
            let spmv_ms = event_median(ctx, GPU_REPEATS, || Ok(fine.spmv(&x, &mut y)?))?;
            let vcycle = hierarchy.with_operator(&a)?;
            let vcycle_ms = event_median(ctx, GPU_REPEATS, || {
                Ok(amg::Preconditioner::apply(&vcycle, &b, &mut y)?)
            })?;
            let vcycle_enqueue_ms = 1e3
                * best_of(GPU_REPEATS, || {
                    device.synchronize()?;
                    let start = Instant::now();
                    amg::Preconditioner::apply(&vcycle, &b, &mut y)?;
                    let queued = start.elapsed().as_secs_f64();
                    device.synchronize()?;
                    Ok(queued)
                })?;
            let dot_ms = event_median(ctx, GPU_REPEATS, || {
                linalg::ops::dot(&b, &x)?;
                Ok(())
            })?;
            let p = fine.pattern();
            let spmv_bytes = (p.nnz() * fine.block_len() * 8
                + p.nnz() * 4
                + (p.n_block_rows() + 1) * 4
                + fine.n_cols() * 8
                + fine.n_rows() * 8) as f64;
            let galerkin_ms_per_level = (0..hierarchy.n_levels() - 1)
                .map(|l| event_median(ctx, GPU_REPEATS, || Ok(hierarchy.galerkin_level(&a, l)?)))
                .collect::<Result<Vec<f64>>>()?;
            sample(&mut memory_peak_mib)?;
            let copy = copy_gbs(ctx)?;
            let galerkin_traffic_per_level = (0..hierarchy.n_levels() - 1)
                .map(|l| {
                    let missing = "bench gamg: a level of the hierarchy is missing";
                    // level 0 of an external hierarchy is the caller's (the fine operator)
                    let a = match (l, hierarchy.operator(l)) {
                        (0, None) => &a,
                        (_, a_l) => a_l.context(missing)?,
                    };
                    let p = hierarchy.prolongator(l).context(missing)?;
                    let ac = hierarchy.operator(l + 1).context(missing)?;
                    Ok(galerkin_traffic(
                        a.pattern(),
                        p.pattern(),
                        ac.pattern(),
                        p.block_rows(),
                        p.block_cols(),
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            let galerkin_gbs_per_level: Vec<f64> = galerkin_traffic_per_level
                .iter()
                .zip(&galerkin_ms_per_level)
                .map(|(t, ms)| t.two_pass_bytes / (ms * 1e-3) / 1e9)
                .collect();
            let spmv_gbs = spmv_bytes / (spmv_ms * 1e-3) / 1e9;
            let (_, total) = ctx.memory_info()?;
            Some(GpuMetrics {
                copy_gbs: copy,
                spmv_ms,
                vcycle_ms,
                vcycle_enqueue_ms,
                dot_ms,
                spmv_bytes,
                spmv_gbs,
                spmv_of_copy: spmv_gbs / copy,
                galerkin_ms_total: galerkin_ms_per_level.iter().sum(),
                galerkin_ms_per_level,
                galerkin_of_copy_per_level: galerkin_gbs_per_level
                    .iter()
                    .map(|g| g / copy)
                    .collect(),
                galerkin_gbs_per_level,
                galerkin_traffic_per_level,
                update_hot_ms: setup_hot_all_s[0] * 1e3,
                ksp_hot_ms: solve_hot_s * 1e3,
                hot_update_bytes: hot_update.transfers,
                hot_solve_bytes,
                bytes_per_hot_step: hot_update.transfers.total_bytes()
                    + hot_solve_bytes.total_bytes(),
                memory_peak_mib,
                memory_after_setup_mib: memory_after_setup_mib.unwrap_or(0.0),
                memory_baseline_mib: memory_baseline_mib.unwrap_or(0.0),
                memory_total_mib: total as f64 / (1 << 20) as f64,
            })
        }
    };
    let report = hierarchy.report().clone();
    let hierarchy_values_mib = hierarchy.value_bytes() as f64 / (1 << 20) as f64;
    let renewal = {
        // where the operator lives, as a Newton run on a GPU computes them there
        // (`assembly::device::DeviceProblem::rigid_body_modes`): the renewal moves no near-null
        // values
        let modes = near_null_space(&deformed(&coords))?.to_device(&device)?;
        let start = Instant::now();
        let renewal = hierarchy.set_near_null_space(&a, &modes)?;
        device.synchronize()?;
        let renewal_s = start.elapsed().as_secs_f64();
        x.fill(0.0)?;
        let (after_renewal, _) = solve(&hierarchy, &a, &b, &mut x, &cg_params)?;
        drop(hierarchy);
        let before = device.transfers();
        let start = Instant::now();
        let cold = Hierarchy::setup_external(&a, &modes, &amg_params)?;
        device.synchronize()?;
        let cold_s = start.elapsed().as_secs_f64();
        let cold_transfers = TransferReport::between(before, device.transfers());
        let cold_timings = cold.report().setup.clone();
        x.fill(0.0)?;
        let (after_cold, _) = solve(&cold, &a, &b, &mut x, &cg_params)?;
        drop(cold);
        // the same renewal in the other mode (`keep_aggregates` against `recompute`)
        let keep = AmgParams {
            renewal: match amg_params.renewal {
                Renewal::KeepAggregates => Renewal::Recompute,
                Renewal::Recompute => Renewal::KeepAggregates,
            },
            ..amg_params.clone()
        };
        let mut kept = Hierarchy::setup_external(&a, &near_null, &keep)?;
        let start = Instant::now();
        let kept_renewal = kept.set_near_null_space(&a, &modes)?;
        device.synchronize()?;
        let kept_s = start.elapsed().as_secs_f64();
        x.fill(0.0)?;
        let (after_kept, _) = solve(&kept, &a, &b, &mut x, &cg_params)?;
        RenewalComparison {
            renewal_s,
            renewal,
            iterations: [after_renewal.iterations, after_cold.iterations],
            cold_s,
            cold_transfers,
            cold_timings,
            other_mode: keep.renewal,
            other_mode_s: kept_s,
            other_mode_report: kept_renewal,
            other_mode_iterations: after_kept.iterations,
        }
    };
    Ok(GamgBenchResult {
        problem: "ex56",
        nodes_per_side: bench.m,
        order: bench.order,
        unknowns: b.len(),
        scalar: bench.scalar,
        precision: bench.amg.precision.name(),
        hierarchy_values_mib,
        levels: report.levels.len(),
        rows_per_level: report.levels.iter().map(|l| l.rows).collect(),
        block_size_per_level: report.levels.iter().map(|l| l.block_size).collect(),
        operator_complexity: report.operator_complexity,
        grid_complexity: report.grid_complexity,
        iterations,
        converged,
        assembly_s,
        setup_cold_s,
        setup_hot_s: setup_hot_all_s[0],
        setup_hot_all_s,
        solve_s,
        solve_hot_s,
        spmv_s,
        galerkin_numeric_s: hot_update.timings.galerkin_numeric_s,
        peak_rss_mb: peak_rss_mb(),
        threads: rayon::current_num_threads(),
        device: device.name(),
        hierarchy: report,
        hot_update,
        renewal,
        gpu,
    })
}

impl std::fmt::Display for GamgBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let storage = if self.scalar {
            "scalar storage (1x1 blocks)"
        } else {
            "blocked"
        };
        writeln!(
            f,
            "gamg benchmark: ex56, {}^3 nodes, Q{}, {} unknowns, {storage}, {} precision, {} threads, on {}",
            self.nodes_per_side, self.order, self.unknowns, self.precision, self.threads, self.device
        )?;
        writeln!(
            f,
            "  levels {}: rows {:?}, block sizes {:?}",
            self.levels, self.rows_per_level, self.block_size_per_level
        )?;
        writeln!(
            f,
            "  operator complexity {:.3}, grid complexity {:.3}",
            self.operator_complexity, self.grid_complexity
        )?;
        writeln!(
            f,
            "  CG iterations per solve {:?}{}",
            self.iterations,
            if self.converged {
                ""
            } else {
                "  (NOT CONVERGED)"
            }
        )?;
        writeln!(f, "  problem assembly   {:8.3} s", self.assembly_s)?;
        writeln!(f, "  cold set-up        {:8.3} s", self.setup_cold_s)?;
        writeln!(f, "  solve              {:8.3} s", self.solve_s)?;
        writeln!(
            f,
            "  hot set-up         {:8.3} s  (Galerkin numeric {:.3} s)",
            self.setup_hot_s, self.galerkin_numeric_s
        )?;
        writeln!(f, "  solve after hot    {:8.3} s", self.solve_hot_s)?;
        let r = &self.renewal;
        writeln!(
            f,
            "  new modes: renewal {:.3} s ({} plans kept, {} built, {} B up, {} B down) against cold {:.3} s ({} B moved); CG {:?} iterations",
            r.renewal_s,
            r.renewal.plans_reused,
            r.renewal.plans_built,
            r.renewal.transfers.host_to_device_bytes,
            r.renewal.transfers.device_to_host_bytes,
            r.cold_s,
            r.cold_transfers.total_bytes(),
            r.iterations
        )?;
        writeln!(
            f,
            "  new modes, renewal {:?}: {:.3} s ({} B up, {} B down); CG {} iterations",
            r.other_mode,
            r.other_mode_s,
            r.other_mode_report.transfers.host_to_device_bytes,
            r.other_mode_report.transfers.device_to_host_bytes,
            r.other_mode_iterations
        )?;
        writeln!(
            f,
            "  cold set-up stages: {}",
            stage_line(&self.hierarchy.setup)
        )?;
        writeln!(f, "  second cold stages: {}", stage_line(&r.cold_timings))?;
        writeln!(
            f,
            "  second cold set-up bytes up/down per stage: {}",
            bytes_line(&r.cold_timings.transfers)
        )?;
        writeln!(
            f,
            "  hot update stages:  {}",
            stage_line(&self.hot_update.timings)
        )?;
        writeln!(
            f,
            "  renewal stages:     {}",
            stage_line(&r.renewal.timings)
        )?;
        writeln!(
            f,
            "  renewal {:?} stages: {}",
            r.other_mode,
            stage_line(&r.other_mode_report.timings)
        )?;
        for (mode, report) in [
            // the bench's own mode is the other one's other
            (
                format!(
                    "{:?}",
                    match r.other_mode {
                        Renewal::KeepAggregates => Renewal::Recompute,
                        Renewal::Recompute => Renewal::KeepAggregates,
                    }
                ),
                &r.renewal,
            ),
            (format!("{:?}", r.other_mode), &r.other_mode_report),
        ] {
            writeln!(
                f,
                "  renewal {mode} bytes up/down per stage: {}",
                bytes_line(&report.timings.transfers)
            )?;
        }
        writeln!(f, "  fine SpMV          {:8.5} s", self.spmv_s)?;
        if let Some(mb) = self.peak_rss_mb {
            writeln!(f, "  peak resident memory {:6.0} MiB", mb)?;
        }
        if let Some(g) = &self.gpu {
            writeln!(
                f,
                "  GPU: copy {:.0} GB/s; hot SpMV {:.3} ms, {:.0} GB/s ({:.1} % of copy)",
                g.copy_gbs,
                g.spmv_ms,
                g.spmv_gbs,
                100.0 * g.spmv_of_copy
            )?;
            writeln!(
                f,
                "  GPU: hot Galerkin per level {:?} ms, total {:.3} ms",
                g.galerkin_ms_per_level
                    .iter()
                    .map(|t| (t * 1e3).round() / 1e3)
                    .collect::<Vec<_>>(),
                g.galerkin_ms_total
            )?;
            writeln!(
                f,
                "  GPU: Galerkin bytes per level (two passes) {:?} MB, {:?} % of copy bandwidth",
                g.galerkin_traffic_per_level
                    .iter()
                    .map(|t| (t.two_pass_bytes / 1e6).round())
                    .collect::<Vec<_>>(),
                g.galerkin_of_copy_per_level
                    .iter()
                    .map(|x| (1e3 * x).round() / 10.0)
                    .collect::<Vec<_>>()
            )?;
            writeln!(
                f,
                "  GPU: hot update {:.2} ms, hot KSP {:.2} ms, {} bytes moved per hot step",
                g.update_hot_ms, g.ksp_hot_ms, g.bytes_per_hot_step
            )?;
            writeln!(
                f,
                "  GPU: memory peak {:.0} MiB of {:.0} (context {:.0} MiB)",
                g.memory_peak_mib, g.memory_total_mib, g.memory_baseline_mib
            )?;
        }
        Ok(())
    }
}

/// A set-up's stages that took time, in milliseconds, then the whole call and what the stages
/// do not hold of it.
/// The stages that moved bytes, `name up/down`, or `none`.
fn bytes_line(t: &amg::StageTransfers) -> String {
    let parts: Vec<String> = t
        .stages()
        .iter()
        .filter(|(_, b)| b.total_bytes() > 0)
        .map(|(name, b)| {
            format!(
                "{name} {}/{}",
                b.host_to_device_bytes, b.device_to_host_bytes
            )
        })
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

fn stage_line(t: &amg::SetupTimings) -> String {
    let stages = t.stages();
    let mut parts: Vec<String> = stages
        .iter()
        .filter(|(_, s)| *s > 0.0)
        .map(|(name, s)| format!("{name} {:.2}", 1e3 * s))
        .collect();
    let held: f64 = stages.iter().map(|(_, s)| s).sum();
    parts.push(format!(
        "total {:.2} ms (outside the stages {:.2})",
        1e3 * t.total_s,
        1e3 * (t.total_s - held)
    ));
    parts.join(", ")
}

/// One timed CG solve preconditioned by the hierarchy's V-cycle on the operator in the hierarchy's
/// storage (its own scalar expansion, or the caller's blocked `a`).
fn solve(
    hierarchy: &Hierarchy,
    a: &Bsr,
    b: &Vector,
    x: &mut Vector,
    cg_params: &CgParams,
) -> Result<(CgOutcome, f64)> {
    let vcycle = hierarchy.with_operator(a)?;
    let operator = hierarchy.operator(0).unwrap_or(a);
    let start = Instant::now();
    let outcome = cg(operator, b, x, &vcycle, cg_params)?;
    Ok((outcome, start.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(scalar: bool) -> GamgBenchResult {
        run(&GamgBench {
            m: 9,
            order: 1,
            solves: 2,
            scalar,
            amg: AmgParams {
                renewal: Renewal::Recompute,
                ..AmgParams::default()
            },
            device: BenchDevice::Cpu,
        })
        .unwrap()
    }

    /// Blocked and scalar storage run the same method (the same iterations); scaling the operator
    /// changes nothing the method depends on (the same iterations again, no Galerkin plan
    /// rebuilt); every reported time is measured.
    #[test]
    fn both_storages_report_the_same_iterations() {
        let (b, s) = (bench(false), bench(true));
        assert!(b.converged && s.converged);
        assert_eq!(b.iterations, s.iterations);
        assert_eq!(b.iterations[0], b.iterations[1]);
        assert_eq!(b.hot_update.galerkin_plans_rebuilt, 0);
        assert_eq!(
            b.galerkin_numeric_s,
            b.hot_update.timings.galerkin_numeric_s
        );
        assert_eq!(
            (b.block_size_per_level[0], s.block_size_per_level[0]),
            (3, 3)
        );
        assert!(!b.scalar && s.scalar);
        for r in [&b, &s] {
            assert!(r.spmv_s > 0.0 && r.galerkin_numeric_s > 0.0 && r.setup_hot_s > 0.0);
            assert_eq!(r.setup_hot_all_s.len(), 1);
            // new modes on an operator of the same strength graph: the renewal is the cold
            // set-up (the same iterations) and keeps the plans (scalar storage: A P0's only)
            let [renewed, cold] = r.renewal.iterations;
            assert_eq!(renewed, cold);
            assert_eq!(
                r.renewal.renewal.plans_built,
                if r.scalar { r.levels - 1 } else { 0 }
            );
            // the other mode keeps every level's aggregates: about the same iterations
            assert_eq!(r.renewal.other_mode, Renewal::KeepAggregates);
            assert!(r.renewal.other_mode_iterations <= renewed + 2);
            assert_eq!(r.renewal.other_mode_report.timings.graph_s, 0.0);
            // the second cold set-up's own stages, inside its wall time
            let t = &r.renewal.cold_timings;
            assert!(t.graph_s > 0.0 && t.aggregation_s > 0.0);
            assert!(t.total_s > 0.0 && t.total_s <= r.renewal.cold_s);
        }
    }

    #[test]
    fn fewer_than_two_solves_is_an_error() {
        let one = GamgBench {
            m: 5,
            order: 1,
            solves: 1,
            scalar: false,
            amg: AmgParams::default(),
            device: BenchDevice::Cpu,
        };
        assert!(run(&one).is_err());
    }
}
