//! `mpirun -np N hexfem bench gamg --problem ex56`: the sequence of `bench gamg` (cold set-up and
//! CG solve, then per further solve the operator scaled, a hot update and a CG solve) with the
//! distributed hierarchy (`amg::dist_cycle::DistHierarchy`, the serial algorithm and options) on
//! N ranks. Each rank generates its box of the ex56 cube (`mesh::BoxRankGrid`: 2 x 2 x 2 boxes
//! on 8 ranks; one layer of ghost cells) and
//! assembles its owned rows (`assembly::ex56::Ex56::assemble`, the serial rows bit for bit).
//!
//! Reported per rank and as totals (slowest rank for times, sums for traffic): set-up, hot update,
//! solves, SpMV; what the comm layer counted (`comm::Traffic`: messages and bytes sent, time in
//! collectives) per hot update, per CG iteration and per SpMV; the load imbalance (max / mean) of
//! the owned rows and of the time spent in collectives during the hot solve (waiting at the
//! off-process reductions).
//!
//! With `--device cuda` each rank computes on its own GPU (node-local rank mod the node's GPUs,
//! `linalg::dist::select_rank_devices`; the rank -> device map is reported): the hierarchy's
//! fine operator is on the GPU, so are its levels (the cold set-up's stages run on the host
//! copies for now, their results placed on the device); the hot update runs on the device
//! (`DistHierarchy::update`: the new fine values, uploaded before the timed update as a Newton
//! step's assembly would leave them there, then Galerkin products, smoother inverses and
//! eigenvalue estimates on the device, only the off-rank coarse blocks and scalars crossing;
//! `reuse: none` sets up afresh), CG and the V-cycle run on the device, the halo exchanges device to device through
//! NCCL (`--exchange nccl`; `auto`, the default, where every rank has its own GPU and NCCL) or
//! staged through pinned host memory and MPI (`--exchange staged`). The `gpu` field adds the bytes between device and host per SpMV and per hot
//! update (and the hot update's MPI bytes), and the SpMV's parts timed alone (the halo
//! exchange, the diagonal product) beside the overlapped SpMV.

use std::sync::Arc;
use std::time::Instant;

use amg::dist_cycle::DistHierarchy;
use amg::{CgParams, Preconditioner, SetupTimings};
use anyhow::{ensure, Context, Result};
use assembly::ex56::{Ex56, SOFT_SCALE};
use comm::{Comm, Traffic};
use linalg::dist::{
    connect_rank_devices, select_rank_devices, DeviceExchange, DistBsr, DistPattern,
    RankDeviceRequest, RowPartition,
};
use linalg::exact::ExactSum;
use linalg::{Device, Vector};
use mesh::{generate_box_part_on, BoxRankGrid, BoxSpec};
use serde::{Deserialize, Serialize};

use super::best_of;
use super::gamg::{BenchDevice, GamgBench, CG_RTOL, OPERATOR_SCALE, SPMV_REPEATS};

/// The turn (radians, about the vertical axis through the centroid) of the configuration whose
/// rigid-body modes the renewals take.
const RENEWAL_ANGLE: f64 = 0.05;

/// What the comm layer counted in one phase on one rank (see `comm::Traffic`).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PhaseTraffic {
    /// Point-to-point and collective messages this rank sent.
    pub messages: u64,
    /// Bytes this rank sent.
    pub bytes: u64,
    /// Collective calls (reductions, gathers, all-to-alls).
    pub collectives: u64,
    /// Seconds inside collectives (waiting for the slowest rank included).
    pub collective_s: f64,
}

impl PhaseTraffic {
    fn between(before: Traffic, after: Traffic) -> Self {
        let d = after.since(&before);
        Self {
            messages: d.messages,
            bytes: d.bytes,
            collectives: d.collectives,
            collective_s: d.collective_s,
        }
    }

    /// Per unit (an iteration), as floating point.
    fn per(&self, n: usize) -> PerUnit {
        let n = n.max(1) as f64;
        PerUnit {
            messages: self.messages as f64 / n,
            bytes: self.bytes as f64 / n,
        }
    }
}

/// Traffic per unit (a CG iteration).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PerUnit {
    pub messages: f64,
    pub bytes: f64,
}

/// One rank's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct DistGamgRank {
    pub rank: usize,
    /// Owned unknowns.
    pub rows: usize,
    pub assembly_s: f64,
    pub setup_cold_s: f64,
    pub solve_s: f64,
    pub setup_hot_s: f64,
    pub solve_hot_s: f64,
    pub spmv_s: f64,
    /// The first hot update.
    pub hot_update: PhaseTraffic,
    /// The solve after it.
    pub hot_solve: PhaseTraffic,
    /// One fine SpMV.
    pub spmv: PhaseTraffic,
    /// Prolongator values sent by the first hot update (`P_oth` is reused: 0).
    pub hot_update_p_values: usize,
    /// The cold set-up's host stages on this rank (`total_s` is `setup_cold_s` less the time
    /// outside them: see [`DistGpuRank::setup_upload_s`]).
    pub setup_cold_stages: amg::SetupTimings,
    /// A renewal for the rigid-body modes of the configuration turned by
    /// [`RENEWAL_ANGLE`] (Newton's next load step), `renewal: recompute` (the hierarchy's own,
    /// after the hot solves), then `renewal: keep_aggregates` (a second hierarchy, set up cold
    /// with the first modes); on a GPU where the levels live.
    pub renewal_recompute_s: f64,
    pub renewal_keep_s: f64,
    /// The stages of the kept renewal (with `--device cuda` its numeric phases on the device:
    /// see [`DistGpuRank`]).
    pub renewal_keep_stages: amg::SetupTimings,
    /// The stages of the `recompute` renewal: each level's graph and aggregates made anew, then
    /// the kept renewal's path where they came out unchanged ([`Self::renewal_recompute_plans_kept`]
    /// levels), a cold coarsening elsewhere.
    pub renewal_recompute_stages: amg::SetupTimings,
    pub renewal_recompute_plans_kept: usize,
}

/// What one rank's GPU moved and how long the SpMV's parts take alone (`--device cuda`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct DistGpuRank {
    /// One fine SpMV: device to pinned host (packed send values) and back (ghosts), bytes.
    pub spmv_device_to_host_bytes: u64,
    pub spmv_host_to_device_bytes: u64,
    /// The first hot update's bytes host to device and device to host (the fine values'
    /// upload before it not counted), and its Galerkin reductions' bytes sent to other ranks.
    pub hot_update_host_to_device_bytes: u64,
    pub hot_update_device_to_host_bytes: u64,
    pub hot_update_mpi_bytes: u64,
    /// Both directions during the hot solve.
    pub hot_solve_transfer_bytes: u64,
    /// Best of the fine SpMV's halo exchange alone (gather, download, MPI, upload), of its
    /// diagonal product alone, and of the SpMV with the exchange finished before the diagonal
    /// product starts (no overlap: compare with `spmv_s`, which overlaps them), seconds.
    pub spmv_exchange_s: f64,
    pub spmv_diag_s: f64,
    pub spmv_serial_s: f64,
    /// Best of one V-cycle (the preconditioner in CG), of one exact dot product of the fine
    /// owned vectors (device partial sums, download, all-reduce), and of the dot's device part
    /// alone (no all-reduce), seconds: with `spmv_s`, where a CG iteration's time goes.
    pub vcycle_s: f64,
    pub dot_s: f64,
    pub dot_local_s: f64,
    /// Best of the host's time to queue one V-cycle (until `apply` returns, before the
    /// device finishes), seconds: near `vcycle_s` where the launches, not the GPU, set the pace.
    pub vcycle_enqueue_s: f64,
    /// The phases of the fastest device hot update (`DistHierarchy::update`'s report,
    /// each ended by a device synchronisation), seconds: point-block Jacobi inverses and
    /// eigenvalue estimates, Galerkin products with their reductions, the coarsest factor.
    pub hot_update_smoothers_s: f64,
    pub hot_update_galerkin_s: f64,
    pub hot_update_coarse_s: f64,
    /// The cold set-up's time outside its host stages (the fine operator's upload, the levels'
    /// downloads for the host stages and their placement on the device: operators,
    /// prolongators, smoother inverses, Galerkin plans with their pair lists, and the kernels
    /// compiled at their first use), seconds.
    pub setup_upload_s: f64,
    /// The kept renewal on the device (`DistHierarchy::set_near_null_space`, the fine operator
    /// already there): bytes device to host and host to device (`P`'s views and the
    /// near-null rows' exchange on the host; no operator), and its stages, seconds, each ended
    /// by a device synchronisation: the fine values copied, the tentative prolongators with
    /// `P0`'s ghost rows (host), the smoothers' inverses and eigenvalue estimates, `A P0`
    /// with the smoothing and `P`'s values (device; `P0`'s view uploaded), `P`'s views for
    /// the Galerkin product and the restriction (host: the smoothed product downloaded, `P`'s
    /// ghost rows, transposes, uploads), the Galerkin products (device), the coarsest factor.
    pub renewal_keep_device_to_host_bytes: u64,
    pub renewal_keep_host_to_device_bytes: u64,
    pub renewal_keep_copy_s: f64,
    pub renewal_keep_tentative_s: f64,
    pub renewal_keep_smoother_s: f64,
    pub renewal_keep_smoothing_s: f64,
    pub renewal_keep_p_views_s: f64,
    pub renewal_keep_galerkin_s: f64,
    pub renewal_keep_coarse_s: f64,
    /// Capacity: the most device memory this rank had allocated at once (its stream-ordered
    /// allocations, `CudaContext::pool_used_high`: without the context's own few hundred MiB;
    /// its own where ranks share a GPU; `None` without stream-ordered allocation), and its
    /// process's peak resident host memory, MiB.
    pub device_pool_peak_mib: Option<f64>,
    pub host_peak_mib: f64,
}

/// What `mpirun -np N hexfem bench gamg --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct DistGamgResult {
    pub problem: &'static str,
    pub ranks: usize,
    /// Each rank's device (`host`, or the GPU it opened), indexed by rank.
    pub devices: Vec<String>,
    /// How halo exchanges travelled between the GPUs (`ipc`, `nccl` or `staged`; `staged` on
    /// the host), and why where `auto` fell back.
    pub exchange: &'static str,
    pub exchange_fallback: Option<String>,
    /// Per rank, with `--device cuda`.
    pub gpu: Option<Vec<DistGpuRank>>,
    pub nodes_per_side: usize,
    /// How the cube's node grid is cut among the ranks: boxes per axis (`mesh::BoxRankGrid`).
    pub rank_grid: [usize; 3],
    pub order: usize,
    pub unknowns: u64,
    pub levels: usize,
    pub rows_per_level: Vec<usize>,
    /// Ranks holding each level (fewer on the levels `process_eq_limit` gathered).
    pub ranks_per_level: Vec<usize>,
    /// The `process_eq_limit` in force (`--process-eq-limit`, or the default for the ranks'
    /// devices: `amg::params::PROCESS_EQ_LIMIT_CPU` or `_GPU`).
    pub process_eq_limit: usize,
    /// CG iterations of each solve (as `bench gamg`: rtol 1e-8, unpreconditioned residual).
    pub iterations: Vec<usize>,
    pub converged: bool,
    /// Slowest rank's times (hot update and hot solve: the best of the `--solves` - 1 hot
    /// ones on each rank).
    pub assembly_s: f64,
    pub setup_cold_s: f64,
    pub solve_s: f64,
    pub setup_hot_s: f64,
    pub solve_hot_s: f64,
    pub spmv_s: f64,
    /// All ranks together: one hot update, one CG iteration of the hot solve, one SpMV.
    pub hot_update_messages: u64,
    pub hot_update_bytes: u64,
    pub hot_update_p_values: usize,
    pub cg_iteration: PerUnit,
    pub spmv_messages: u64,
    pub spmv_bytes: u64,
    /// Max / mean over the ranks: owned rows, and seconds in collectives during the hot solve.
    pub rows_imbalance: f64,
    pub collective_wait_imbalance: f64,
    /// Largest and mean seconds in collectives during the hot solve.
    pub collective_wait_max_s: f64,
    pub collective_wait_mean_s: f64,
    pub threads: usize,
    pub per_rank: Vec<DistGamgRank>,
}

/// What this rank sent so far: the comm layer's count (MPI) plus the messages NCCL carried
/// between the GPUs.
fn traffic(comm: &Arc<dyn Comm>, device: &Device) -> Traffic {
    let mut t = comm.traffic();
    if let Some(peers) = device.cuda_context().and_then(|c| c.peers()) {
        let (messages, bytes) = peers.sent();
        t.messages += messages;
        t.bytes += bytes;
    }
    t
}

/// Runs the benchmark on the ranks of `comm` (collective); `exchange`: how halo exchanges
/// travel between the GPUs under `--device cuda`; `rank_grid`: the boxes per axis the cube is
/// cut into (their product the rank count; `None`: `mesh::BoxRankGrid::new`'s choice).
pub fn run(
    comm: &Arc<dyn Comm>,
    bench: &GamgBench,
    exchange: DeviceExchange,
    rank_grid: Option<[usize; 3]>,
) -> Result<DistGamgResult> {
    let size = comm.size();
    ensure!(
        bench.solves >= 2,
        "--solves must be at least 2 (one cold, one hot)"
    );
    let (device, devices) = match bench.device {
        BenchDevice::Cpu => (Device::Host, vec!["host".to_string(); size]),
        BenchDevice::Cuda => {
            let d = select_rank_devices(comm, RankDeviceRequest::Cuda).context("--device cuda")?;
            (d.device, d.names)
        }
    };
    ensure!(
        !(device.is_host() && matches!(exchange, DeviceExchange::Nccl | DeviceExchange::Ipc)),
        "--exchange {} moves halos between GPUs: it needs --device cuda (valid with --device \
         cpu: auto, staged)",
        exchange.name()
    );
    let (exchange, exchange_fallback) = connect_rank_devices(comm, &device, exchange)
        .with_context(|| format!("--exchange {}", exchange.name()))?;
    ensure!(
        !bench.scalar,
        "--scalar on {size} MPI ranks (or with --distributed) is not available (the distributed \
         hierarchy stores blocks)"
    );
    let start = Instant::now();
    let cells = Ex56::cells_per_side(bench.m, bench.order)
        .with_context(|| format!("ex56 with --m {} --order {}", bench.m, bench.order))?;
    let kind = fem::CellKind::from_order(bench.order)?;
    let spec = BoxSpec::new([cells; 3], [0.0; 3], [1.0; 3], kind);
    let grid = match rank_grid {
        None => BoxRankGrid::new(spec.node_counts(), size),
        Some(ranks) => {
            let grid = BoxRankGrid::with_ranks(spec.node_counts(), ranks)?;
            ensure!(
                grid.n_ranks() == size,
                "--rank-grid {} has {} boxes for {size} ranks: the product must be the rank count",
                ranks.map(|p| p.to_string()).join("x"),
                grid.n_ranks()
            );
            grid
        }
    };
    let part = generate_box_part_on(&spec, comm.rank(), &grid)?;
    let local = Ex56::assemble(&part.mesh, bench.order, SOFT_SCALE)?;
    let n_owned = part.n_owned_nodes();
    let owned = 3 * n_owned;
    // the serial rigid-body modes: rotations about the exact centroid of all nodes
    let mut sums = assembly::coordinate_sums(&part.mesh.coords[..n_owned]);
    ExactSum::allreduce(&**comm, &mut sums)?;
    let n_global = part.n_global_nodes() as f64;
    let centroid = sums.map(|s| s.value() / n_global);
    let nns = assembly::rigid_body_modes_about(&part.mesh.coords[..n_owned], centroid);
    let partition = RowPartition::new(comm.clone(), n_owned)?;
    let pattern = DistPattern::from_local(partition, local.a.pattern(), &part.node_globals, 3)?;
    let operator = |k: &linalg::Bsr| -> Result<DistBsr> {
        let mut a = DistBsr::zeros(pattern.clone());
        a.set_from_local(k)?;
        Ok(a)
    };
    let mut k = local.a;
    let a = operator(&k)?;
    let mut b = a.new_owned_vector();
    b.host_mut()?.copy_from_slice(&local.b.host()?[..owned]);
    let assembly_s = start.elapsed().as_secs_f64();

    let cg_params = CgParams {
        rtol: CG_RTOL,
        ..CgParams::default()
    };
    // the modes where the levels live, as a run makes them (on a GPU computed there: the
    // tentative prolongators are then made there too)
    let modes_where_levels_live = |modes: Vec<f64>| -> Result<linalg::Vector> {
        Ok(linalg::Vector::from(modes).to_device(&device)?)
    };
    let nns = modes_where_levels_live(nns)?;
    sync(comm)?;
    let t = Instant::now();
    // GPU ranks gather small coarse levels sooner (amg::params::PROCESS_EQ_LIMIT_GPU)
    let amg_params = if device.is_host() {
        bench.amg.clone()
    } else {
        bench.amg.on_gpu_ranks()
    };
    let nns_first = nns.try_clone()?;
    // The fine operator where the solves run, the hierarchy's (its levels live there): the
    // host operator moved, or uploaded and dropped (one copy less in the host peak, which
    // bounds the problem a rank can set up).
    let fine = if device.is_host() {
        a
    } else {
        a.to_device(&device)?
    };
    let mut h = DistHierarchy::new(
        fine,
        &part.node_serial_ids[..n_owned],
        nns,
        assembly::RIGID_BODY_MODES_3D,
        &amg_params,
    )?;
    device.synchronize()?;
    let cold_stages = h.setup_timings().clone();
    let setup_cold_s = t.elapsed().as_secs_f64();
    let setup_upload_s = if device.is_host() {
        0.0
    } else {
        (setup_cold_s - host_stages_s(&cold_stages)).max(0.0)
    };
    let b = b.to_device(&device)?;
    let mut x = h
        .level_operator(0)
        .context("the fine operator")?
        .owned_zeros()?;
    sync(comm)?;
    let t = Instant::now();
    let first = cg(&h, &b, &mut x, &cg_params)?;
    let solve_s = t.elapsed().as_secs_f64();
    let mut iterations = vec![first.iterations];
    let mut converged = first.converged;

    let mut hot: Option<(f64, f64, PhaseTraffic, PhaseTraffic, usize)> = None;
    let mut gpu = DistGpuRank::default();
    let moved = |d: &Device| {
        let t = d.transfers();
        t.host_to_device + t.device_to_host
    };
    let mut best_phases = SetupTimings::default();
    for solve_index in 1..bench.solves {
        k.scale(OPERATOR_SCALE)?;
        let next = operator(&k)?;
        // The new tangent where a Newton step assembles it (on a GPU: into the hierarchy's
        // fine operator, before the timed update, which then copies nothing).
        let fine = if device.is_host() {
            next
        } else {
            let mut fine = h.take_operator().context("the fine operator")?;
            fine.upload_values_from(&next)?;
            device.synchronize()?;
            fine
        };
        sync(comm)?;
        let before = traffic(comm, &device);
        let at = device.transfers();
        let t = Instant::now();
        let report = h.update(fine)?;
        let p_values = report.messages.prolongator_values as usize;
        let mpi_bytes = report.messages.sent_bytes;
        if hot.is_none() || report.timings.total_s < best_phases.total_s {
            best_phases = report.timings;
        }
        device.synchronize()?;
        let setup_hot_s = t.elapsed().as_secs_f64();
        let update_traffic = PhaseTraffic::between(before, traffic(comm, &device));
        let update_transfers = device.transfers();
        x.fill(0.0)?;
        sync(comm)?;
        let before = traffic(comm, &device);
        let transfers = moved(&device);
        let t = Instant::now();
        let outcome = cg(&h, &b, &mut x, &cg_params)?;
        let solve_hot_s = t.elapsed().as_secs_f64();
        let solve_traffic = PhaseTraffic::between(before, traffic(comm, &device));
        if solve_index == 1 {
            let now = device.transfers();
            gpu.hot_update_host_to_device_bytes =
                update_transfers.host_to_device - at.host_to_device;
            gpu.hot_update_device_to_host_bytes =
                update_transfers.device_to_host - at.device_to_host;
            gpu.hot_update_mpi_bytes = mpi_bytes;
            gpu.hot_solve_transfer_bytes = now.host_to_device + now.device_to_host - transfers;
        }
        // the first hot update's traffic; the best time of each hot phase over the solves
        // (`--solves N`: N - 1 hot updates and solves, the same work each)
        match &mut hot {
            None => {
                hot = Some((
                    setup_hot_s,
                    solve_hot_s,
                    update_traffic,
                    solve_traffic,
                    p_values,
                ))
            }
            Some((update_s, solve_s, ..)) => {
                *update_s = update_s.min(setup_hot_s);
                *solve_s = solve_s.min(solve_hot_s);
            }
        }
        iterations.push(outcome.iterations);
        converged &= outcome.converged;
    }
    let (setup_hot_s, solve_hot_s, hot_update, hot_solve, p_values) =
        hot.context("no hot update ran")?;

    // Renewal for new modes, both modes, on the last operator.
    let turned_modes = {
        let (c, s) = (RENEWAL_ANGLE.cos(), RENEWAL_ANGLE.sin());
        let turned: Vec<[f64; 3]> = part.mesh.coords[..n_owned]
            .iter()
            .map(|x| {
                let (dx, dy) = (x[0] - centroid[0], x[1] - centroid[1]);
                [
                    centroid[0] + c * dx - s * dy,
                    centroid[1] + s * dx + c * dy,
                    x[2],
                ]
            })
            .collect();
        modes_where_levels_live(assembly::rigid_body_modes_about(&turned, centroid))?
    };
    // each renewal on the last operator, where the hierarchy's levels live (a kept renewal
    // on a GPU: its numeric phases there, the fine operator not downloaded)
    let on_device = |m: DistBsr| -> Result<DistBsr> {
        Ok(if device.is_host() {
            m
        } else {
            m.to_device(&device)?
        })
    };
    let renew = |h: &mut DistHierarchy| -> Result<(f64, amg::RenewalReport)> {
        let fine = on_device(operator(&k)?)?;
        let modes = turned_modes.try_clone()?;
        device.synchronize()?;
        sync(comm)?;
        let t = Instant::now();
        let report = h.set_near_null_space(fine, modes)?;
        device.synchronize()?;
        Ok((t.elapsed().as_secs_f64(), report))
    };
    let set_up = |renewal: amg::Renewal| -> Result<DistHierarchy> {
        let mut params = amg_params.clone();
        params.renewal = renewal;
        Ok(DistHierarchy::new(
            on_device(operator(&k)?)?,
            &part.node_serial_ids[..n_owned],
            nns_first.try_clone()?,
            assembly::RIGID_BODY_MODES_3D,
            &params,
        )?)
    };
    let (renewal_recompute_s, recompute_report) = if amg_params.renewal == amg::Renewal::Recompute {
        renew(&mut h)?
    } else {
        renew(&mut set_up(amg::Renewal::Recompute)?)?
    };
    let (renewal_keep_s, kept_report) = renew(&mut set_up(amg::Renewal::KeepAggregates)?)?;
    let renewal_keep_stages = kept_report.timings.clone();
    if !device.is_host() {
        let (t, moved) = (&kept_report.timings, &kept_report.transfers);
        gpu.renewal_keep_device_to_host_bytes = moved.device_to_host_bytes;
        gpu.renewal_keep_host_to_device_bytes = moved.host_to_device_bytes;
        gpu.renewal_keep_copy_s = t.copy_operator_s;
        gpu.renewal_keep_tentative_s = t.tentative_s;
        gpu.renewal_keep_smoother_s = t.smoother_setup_s;
        gpu.renewal_keep_smoothing_s = t.smoothing_s;
        gpu.renewal_keep_p_views_s = t.galerkin_symbolic_s;
        gpu.renewal_keep_galerkin_s = t.galerkin_numeric_s;
        gpu.renewal_keep_coarse_s = t.coarse_factor_s;
    }

    let a = h.level_operator(0).context("the fine operator")?;
    let mut y = a.row_zeros()?;
    sync(comm)?;
    let spmv_s = best_of(SPMV_REPEATS, || {
        let t = Instant::now();
        a.apply(&x, &mut y)?;
        device.synchronize()?;
        Ok(t.elapsed().as_secs_f64())
    })?;
    let before = traffic(comm, &device);
    let transfers = device.transfers();
    a.apply(&x, &mut y)?;
    let spmv = PhaseTraffic::between(before, traffic(comm, &device));
    gpu.spmv_device_to_host_bytes = device.transfers().device_to_host - transfers.device_to_host;
    gpu.spmv_host_to_device_bytes = device.transfers().host_to_device - transfers.host_to_device;
    if !device.is_host() {
        (gpu.spmv_exchange_s, gpu.spmv_diag_s, gpu.spmv_serial_s) =
            spmv_parts(comm, &device, a, &x, &mut y)?;
        (
            gpu.vcycle_s,
            gpu.dot_s,
            gpu.dot_local_s,
            gpu.vcycle_enqueue_s,
        ) = cg_parts(comm, &device, &h, &b, &x)?;
        gpu.hot_update_smoothers_s = best_phases.smoother_setup_s;
        gpu.hot_update_galerkin_s = best_phases.galerkin_numeric_s;
        gpu.hot_update_coarse_s = best_phases.coarse_factor_s;
        gpu.setup_upload_s = setup_upload_s;
        let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
        if let Some(ctx) = device.cuda_context() {
            gpu.device_pool_peak_mib = ctx.pool_used_high()?.map(mib);
        }
        gpu.host_peak_mib = mib(sim::memory::peak_resident_bytes());
    }

    let mine = DistGamgRank {
        rank: comm.rank(),
        rows: owned,
        assembly_s,
        setup_cold_s,
        solve_s,
        setup_hot_s,
        solve_hot_s,
        spmv_s,
        hot_update,
        hot_solve,
        spmv,
        hot_update_p_values: p_values,
        setup_cold_stages: SetupTimings {
            total_s: setup_cold_s - setup_upload_s,
            ..cold_stages
        },
        renewal_recompute_s,
        renewal_keep_s,
        renewal_keep_stages,
        renewal_recompute_stages: recompute_report.timings.clone(),
        renewal_recompute_plans_kept: recompute_report.plans_reused,
    };
    let per_rank = gather_ranks(comm, &mine)?;
    let gpu = match device {
        Device::Host => None,
        _ => Some(gather_gpu(comm, &gpu)?),
    };
    let hot_iterations = iterations[1];
    let max = |f: &dyn Fn(&DistGamgRank) -> f64| per_rank.iter().map(f).fold(0.0, f64::max);
    let mean = |f: &dyn Fn(&DistGamgRank) -> f64| per_rank.iter().map(f).sum::<f64>() / size as f64;
    let ratio = |f: &dyn Fn(&DistGamgRank) -> f64| {
        let m = mean(f);
        if m > 0.0 {
            max(f) / m
        } else {
            1.0
        }
    };
    let sum = |f: &dyn Fn(&DistGamgRank) -> u64| per_rank.iter().map(f).sum::<u64>();
    let solve_total = PhaseTraffic {
        messages: sum(&|r| r.hot_solve.messages),
        bytes: sum(&|r| r.hot_solve.bytes),
        ..PhaseTraffic::default()
    };
    let levels = h.level_unknowns();
    Ok(DistGamgResult {
        problem: "ex56",
        ranks: size,
        devices,
        exchange: exchange.name(),
        exchange_fallback,
        gpu,
        nodes_per_side: bench.m,
        rank_grid: grid.ranks,
        order: bench.order,
        unknowns: 3 * part.n_global_nodes(),
        levels: levels.len(),
        rows_per_level: levels,
        ranks_per_level: h.level_ranks(),
        process_eq_limit: amg_params.process_eq_limit(),
        iterations,
        converged,
        assembly_s: max(&|r| r.assembly_s),
        setup_cold_s: max(&|r| r.setup_cold_s),
        solve_s: max(&|r| r.solve_s),
        setup_hot_s: max(&|r| r.setup_hot_s),
        solve_hot_s: max(&|r| r.solve_hot_s),
        spmv_s: max(&|r| r.spmv_s),
        hot_update_messages: sum(&|r| r.hot_update.messages),
        hot_update_bytes: sum(&|r| r.hot_update.bytes),
        hot_update_p_values: per_rank.iter().map(|r| r.hot_update_p_values).sum(),
        cg_iteration: solve_total.per(hot_iterations),
        spmv_messages: sum(&|r| r.spmv.messages),
        spmv_bytes: sum(&|r| r.spmv.bytes),
        rows_imbalance: ratio(&|r| r.rows as f64),
        collective_wait_imbalance: ratio(&|r| r.hot_solve.collective_s),
        collective_wait_max_s: max(&|r| r.hot_solve.collective_s),
        collective_wait_mean_s: mean(&|r| r.hot_solve.collective_s),
        threads: rayon::current_num_threads(),
        per_rank,
    })
}

/// Every rank's numbers on every rank (one all-gather of each rank's fields).
fn gather_ranks(comm: &Arc<dyn Comm>, mine: &DistGamgRank) -> Result<Vec<DistGamgRank>> {
    let traffic = |t: &PhaseTraffic| {
        [
            t.messages as f64,
            t.bytes as f64,
            t.collectives as f64,
            t.collective_s,
        ]
    };
    let mut v = vec![
        mine.rows as f64,
        mine.assembly_s,
        mine.setup_cold_s,
        mine.solve_s,
        mine.setup_hot_s,
        mine.solve_hot_s,
        mine.spmv_s,
        mine.hot_update_p_values as f64,
    ];
    for t in [&mine.hot_update, &mine.hot_solve, &mine.spmv] {
        v.extend(traffic(t));
    }
    v.extend(stage_values(&mine.setup_cold_stages));
    v.extend([mine.renewal_recompute_s, mine.renewal_keep_s]);
    v.extend(stage_values(&mine.renewal_keep_stages));
    v.extend(stage_values(&mine.renewal_recompute_stages));
    v.push(mine.renewal_recompute_plans_kept as f64);
    // the offsets of the blocks after the traffic
    let s = STAGE_VALUES;
    let (cold, renewals) = (20, 20 + s);
    let (keep, recompute) = (renewals + 2, renewals + 2 + s);
    let kept = recompute + s;
    let untraffic = |t: &[f64]| PhaseTraffic {
        messages: t[0] as u64,
        bytes: t[1] as u64,
        collectives: t[2] as u64,
        collective_s: t[3],
    };
    Ok(comm
        .allgatherv_f64(&v)?
        .iter()
        .enumerate()
        .map(|(rank, v)| DistGamgRank {
            rank,
            rows: v[0] as usize,
            assembly_s: v[1],
            setup_cold_s: v[2],
            solve_s: v[3],
            setup_hot_s: v[4],
            solve_hot_s: v[5],
            spmv_s: v[6],
            hot_update_p_values: v[7] as usize,
            hot_update: untraffic(&v[8..12]),
            hot_solve: untraffic(&v[12..16]),
            spmv: untraffic(&v[16..20]),
            setup_cold_stages: stages_from(&v[cold..cold + s]),
            renewal_recompute_s: v[renewals],
            renewal_keep_s: v[renewals + 1],
            renewal_keep_stages: stages_from(&v[keep..keep + s]),
            renewal_recompute_stages: stages_from(&v[recompute..recompute + s]),
            renewal_recompute_plans_kept: v[kept] as usize,
        })
        .collect())
}

/// Values of a set-up's stages in [`gather_ranks`]' message: ten times, then the bytes each
/// stage moved up and down.
const STAGE_VALUES: usize = 10 + 2 * 6;

/// The stages of a cold set-up as the values [`gather_ranks`] sends (and [`stages_from`] reads).
fn stage_values(t: &SetupTimings) -> [f64; STAGE_VALUES] {
    let mut v = [0.0; STAGE_VALUES];
    v[..10].copy_from_slice(&[
        t.graph_s,
        t.aggregation_s,
        t.tentative_s,
        t.smoother_setup_s,
        t.smoothing_s,
        t.galerkin_symbolic_s,
        t.galerkin_numeric_s,
        t.coarse_factor_s,
        t.total_s,
        t.device_plans_s,
    ]);
    for (i, (_, bytes)) in t.transfers.stages().iter().enumerate() {
        v[10 + 2 * i] = bytes.host_to_device_bytes as f64;
        v[11 + 2 * i] = bytes.device_to_host_bytes as f64;
    }
    v
}

fn stages_from(v: &[f64]) -> SetupTimings {
    let bytes = |i: usize| amg::TransferReport {
        host_to_device_bytes: v[10 + 2 * i] as u64,
        device_to_host_bytes: v[11 + 2 * i] as u64,
    };
    let transfers = amg::StageTransfers {
        coarsen: bytes(0),
        smoother: bytes(1),
        tentative: bytes(2),
        smoothing: bytes(3),
        galerkin: bytes(4),
        coarse_factor: bytes(5),
    };
    SetupTimings {
        transfers: Box::new(transfers),
        graph_s: v[0],
        aggregation_s: v[1],
        tentative_s: v[2],
        smoother_setup_s: v[3],
        smoothing_s: v[4],
        galerkin_symbolic_s: v[5],
        galerkin_numeric_s: v[6],
        coarse_factor_s: v[7],
        total_s: v[8],
        device_plans_s: v[9],
        ..SetupTimings::default()
    }
}

/// CG on the hierarchy's fine operator preconditioned by the hierarchy, from `x = 0`.
fn cg(h: &DistHierarchy, b: &Vector, x: &mut Vector, params: &CgParams) -> Result<amg::CgOutcome> {
    let a = h.level_operator(0).context("the fine operator")?;
    x.fill(0.0)?;
    Ok(amg::cg_operator(a, b, x, h, params)?)
}

/// Seconds of a cold set-up's host stages.
fn host_stages_s(t: &SetupTimings) -> f64 {
    t.graph_s
        + t.aggregation_s
        + t.tentative_s
        + t.smoother_setup_s
        + t.smoothing_s
        + t.galerkin_symbolic_s
        + t.galerkin_numeric_s
        + t.coarse_factor_s
}

/// Best times of one V-cycle, one exact dot product, the dot's device part alone on the
/// device and the host's queueing of one V-cycle (collective: the V-cycle's exchanges, the
/// dot's all-reduce).
fn cg_parts(
    comm: &Arc<dyn Comm>,
    device: &Device,
    pc: &dyn Preconditioner,
    b: &Vector,
    x: &Vector,
) -> Result<(f64, f64, f64, f64)> {
    let mut z = b.zeros_like()?;
    sync(comm)?;
    let vcycle_s = best_of(SPMV_REPEATS, || {
        let t = Instant::now();
        pc.apply(b, &mut z)?;
        device.synchronize()?;
        Ok(t.elapsed().as_secs_f64())
    })?;
    sync(comm)?;
    let dot_s = best_of(SPMV_REPEATS, || {
        let t = Instant::now();
        linalg::ops::dot(b, x)?;
        Ok(t.elapsed().as_secs_f64())
    })?;
    let dot_local_s = best_of(SPMV_REPEATS, || {
        let t = Instant::now();
        b.owned_dot_exact(x)?;
        Ok(t.elapsed().as_secs_f64())
    })?;
    let vcycle_enqueue_s = best_of(SPMV_REPEATS, || {
        sync(comm)?;
        let t = Instant::now();
        pc.apply(b, &mut z)?;
        let queued = t.elapsed().as_secs_f64();
        device.synchronize()?;
        Ok(queued)
    })?;
    Ok((vcycle_s, dot_s, dot_local_s, vcycle_enqueue_s))
}

/// Best times of the fine SpMV's halo exchange alone, of its diagonal product alone, and of
/// the SpMV without overlap (exchange, then both products) on the device (collective: the
/// exchange).
fn spmv_parts(
    comm: &Arc<dyn Comm>,
    device: &Device,
    a: &DistBsr,
    x: &Vector,
    y: &mut Vector,
) -> Result<(f64, f64, f64)> {
    sync(comm)?;
    let exchange_s = best_of(SPMV_REPEATS, || {
        let t = Instant::now();
        a.exchange_ghosts(x)?;
        device.synchronize()?;
        Ok(t.elapsed().as_secs_f64())
    })?;
    let diag_s = best_of(SPMV_REPEATS, || {
        let t = Instant::now();
        a.diag().spmv(x, y)?;
        device.synchronize()?;
        Ok(t.elapsed().as_secs_f64())
    })?;
    sync(comm)?;
    let serial_s = best_of(SPMV_REPEATS, || {
        let t = Instant::now();
        a.apply_without_overlap(x, y)?;
        device.synchronize()?;
        Ok(t.elapsed().as_secs_f64())
    })?;
    Ok((exchange_s, diag_s, serial_s))
}

/// Every rank's GPU numbers on every rank (each rank's record sent whole, as JSON).
fn gather_gpu(comm: &Arc<dyn Comm>, mine: &DistGpuRank) -> Result<Vec<DistGpuRank>> {
    comm.allgatherv_bytes(&serde_json::to_vec(mine)?)?
        .iter()
        .map(|bytes| Ok(serde_json::from_slice(bytes)?))
        .collect()
}

/// A collective that every rank passes before a timed phase starts.
fn sync(comm: &Arc<dyn Comm>) -> Result<()> {
    comm.allreduce_sum(&mut [0.0])?;
    Ok(())
}

impl std::fmt::Display for DistGamgResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "ex56 Q{}, {} nodes per side, {} unknowns on {} MPI ranks ({} boxes) x {} threads; levels {:?} on {:?} ranks (process_eq_limit {})",
            self.order,
            self.nodes_per_side,
            self.unknowns,
            self.ranks,
            self.rank_grid.map(|p| p.to_string()).join(" x "),
            self.threads,
            self.rows_per_level,
            self.ranks_per_level,
            self.process_eq_limit
        )?;
        writeln!(
            f,
            "  slowest rank: assembly {:.3} s, cold set-up {:.3} s, solve {:.3} s, hot update {:.3} s, hot solve {:.3} s, SpMV {:.2} ms; CG iterations {:?}{}",
            self.assembly_s,
            self.setup_cold_s,
            self.solve_s,
            self.setup_hot_s,
            self.solve_hot_s,
            self.spmv_s * 1e3,
            self.iterations,
            if self.converged { "" } else { " (NOT converged)" }
        )?;
        writeln!(
            f,
            "  sent by all ranks: hot update {} messages, {:.1} KiB ({} P values); per CG iteration {:.0} messages, {:.1} KiB; per SpMV {} messages, {:.1} KiB",
            self.hot_update_messages,
            self.hot_update_bytes as f64 / 1024.0,
            self.hot_update_p_values,
            self.cg_iteration.messages,
            self.cg_iteration.bytes / 1024.0,
            self.spmv_messages,
            self.spmv_bytes as f64 / 1024.0
        )?;
        writeln!(
            f,
            "  imbalance max/mean: rows {:.3}, time in collectives during the hot solve {:.3} (max {:.3} s, mean {:.3} s)",
            self.rows_imbalance,
            self.collective_wait_imbalance,
            self.collective_wait_max_s,
            self.collective_wait_mean_s
        )?;
        for (r, d) in self.devices.iter().enumerate() {
            writeln!(f, "  rank {r}: device {d}")?;
        }
        for (r, g) in self.gpu.iter().flatten().enumerate() {
            writeln!(
                f,
                "  rank {r} GPU: per SpMV {} B down, {} B up (SpMV's exchange alone {:.3} ms, diagonal product alone {:.3} ms, SpMV without overlap {:.3} ms); hot update moved {} B up, {} B down, sent {} B to other ranks (its fastest: smoothers {:.2} ms, Galerkin {:.2} ms, coarse factor {:.2} ms); hot solve moved {} B",
                g.spmv_device_to_host_bytes,
                g.spmv_host_to_device_bytes,
                g.spmv_exchange_s * 1e3,
                g.spmv_diag_s * 1e3,
                g.spmv_serial_s * 1e3,
                g.hot_update_host_to_device_bytes,
                g.hot_update_device_to_host_bytes,
                g.hot_update_mpi_bytes,
                g.hot_update_smoothers_s * 1e3,
                g.hot_update_galerkin_s * 1e3,
                g.hot_update_coarse_s * 1e3,
                g.hot_solve_transfer_bytes
            )?;
        }
        for r in &self.per_rank {
            writeln!(
                f,
                "  rank {}: {} rows, cold set-up {:.3} s, hot update {:.3} s, hot solve {:.3} s (in collectives {:.3} s), SpMV {:.2} ms",
                r.rank,
                r.rows,
                r.setup_cold_s,
                r.setup_hot_s,
                r.solve_hot_s,
                r.hot_solve.collective_s,
                r.spmv_s * 1e3
            )?;
            // the stages that took time, as "name seconds, ..."
            let stages = |t: &SetupTimings| -> String {
                let named: Vec<String> = t
                    .stages()
                    .iter()
                    .filter(|(_, s)| *s > 0.0)
                    .map(|(name, s)| format!("{name} {s:.3}"))
                    .collect();
                named.join(", ")
            };
            let (cold, kept) = (&r.setup_cold_stages, &r.renewal_keep_stages);
            writeln!(
                f,
                "    host cold set-up {:.3} s: {}",
                cold.total_s,
                stages(cold)
            )?;
            if self.gpu.is_some() {
                let moved: Vec<String> = cold
                    .transfers
                    .stages()
                    .iter()
                    .map(|(name, b)| {
                        format!(
                            "{name} {}/{}",
                            b.host_to_device_bytes, b.device_to_host_bytes
                        )
                    })
                    .collect();
                writeln!(
                    f,
                    "    cold set-up bytes up/down per stage: {}",
                    moved.join(", ")
                )?;
            }
            match self.gpu.as_ref().and_then(|g| g.get(r.rank)) {
                None => writeln!(
                    f,
                    "    renewal for turned modes: recompute {:.3} s ({} levels kept: {}), keep_aggregates {:.3} s (host {:.3} s: {})",
                    r.renewal_recompute_s,
                    r.renewal_recompute_plans_kept,
                    stages(&r.renewal_recompute_stages),
                    r.renewal_keep_s,
                    kept.total_s,
                    stages(kept)
                )?,
                Some(g) => writeln!(
                    f,
                    "    renewal for turned modes: recompute {:.3} s ({} levels kept, their numeric phases on the GPU: {}), keep_aggregates {:.3} s (on the GPU {:.3} s: copy operator {:.3}, tentative + P0 ghost rows (host) {:.3}, smoother {:.3}, A P0 + smoothing + P {:.3}, P views (host) {:.3}, Galerkin {:.3}, coarse factor {:.3}; moved {} B down, {} B up)",
                    r.renewal_recompute_s,
                    r.renewal_recompute_plans_kept,
                    stages(&r.renewal_recompute_stages),
                    r.renewal_keep_s,
                    kept.total_s,
                    g.renewal_keep_copy_s,
                    g.renewal_keep_tentative_s,
                    g.renewal_keep_smoother_s,
                    g.renewal_keep_smoothing_s,
                    g.renewal_keep_p_views_s,
                    g.renewal_keep_galerkin_s,
                    g.renewal_keep_coarse_s,
                    g.renewal_keep_device_to_host_bytes,
                    g.renewal_keep_host_to_device_bytes
                )?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{gather_gpu, DistGpuRank};

    /// `bench gamg --distributed` on one process: the distributed hierarchy on one rank has the
    /// one-process hierarchy's levels and takes its CG iterations (serial is the one-rank case),
    /// with no message between ranks.
    #[test]
    fn the_distributed_hierarchy_on_one_rank_is_the_one_process_one() {
        use crate::gamg::{BenchDevice, GamgBench};
        let bench = GamgBench {
            m: 13,
            order: 1,
            solves: 2,
            scalar: false,
            amg: amg::AmgParams::default(),
            device: BenchDevice::Cpu,
        };
        let serial = crate::gamg::run(&bench).unwrap();
        let comm = linalg::comm::SelfComm::shared();
        let one_rank = super::run(&comm, &bench, linalg::dist::DeviceExchange::Auto, None).unwrap();
        assert_eq!(one_rank.ranks, 1);
        assert_eq!(one_rank.rows_per_level, serial.rows_per_level);
        assert_eq!(one_rank.iterations, serial.iterations);
        assert!(one_rank.converged && serial.converged);
        assert_eq!(one_rank.hot_update_messages + one_rank.spmv_messages, 0);
    }

    /// The gathered record is the rank's own, every field and every bit (u64 counts, f64
    /// seconds).
    #[test]
    fn gpu_numbers_are_gathered_whole() {
        let mine = DistGpuRank {
            spmv_device_to_host_bytes: u64::MAX / 3,
            hot_update_mpi_bytes: 28_485_576,
            spmv_diag_s: 0.000_213_944_000_000_1,
            vcycle_s: 1.0 / 3.0,
            hot_update_coarse_s: 4.3e-3,
            ..DistGpuRank::default()
        };
        let all = gather_gpu(&linalg::comm::SelfComm::shared(), &mine).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(
            serde_json::to_string(&all[0]).unwrap(),
            serde_json::to_string(&mine).unwrap()
        );
        assert_eq!(all[0].vcycle_s.to_bits(), mine.vcycle_s.to_bits());
        assert_eq!(all[0].spmv_device_to_host_bytes, u64::MAX / 3);
    }
}
