//! The linear solver of each Newton iteration, chosen by [`LinearSolverParams::method`]. Each call to
//! [`LinearSolver::solve`] takes a tangent with new values on the pattern of the previous call and
//! reuses what depends on the pattern only (the direct solver's ordering and profile).

use std::sync::Arc;
use std::time::Instant;

use amg::{
    cg, gmres, AmgParams, CgOutcome, CgParams, CgStopReason, GmresParams, Hierarchy,
    HierarchyReport, NearNullSpace, PointBlockJacobi, Preconditioner, TransferReport,
};
use anyhow::{bail, Context, Result};
use linalg::direct::{DirectSolver, DirectSymbolic};
use linalg::{BlockPattern, Bsr, Device, Vector};
use serde::Serialize;

use crate::params::{DeviceChoice, LinearSolverMethod, LinearSolverParams};

/// Largest envelope factor the direct solver may allocate: it is meant for small problems, and a
/// larger request is an error naming the alternative rather than an allocation failure.
const DIRECT_MAX_FACTOR_BYTES: f64 = 4e9;

/// `method: auto` factors directly where the envelope factor takes at most this many bytes...
const AUTO_DIRECT_MAX_BYTES: f64 = 256e6;
/// ... and one factorization at most this many floating-point operations per stored scalar of the
/// tangent; above either it uses CG with AMG. Measured with `scripts/solver_choice_runs.sh` (table
/// in docs/benchmarks.md): one factorization costs about one AMG Newton iteration (hot update +
/// CG) at 250 (two pinned cores) to 290 (the development machine) flops per stored entry.
const AUTO_DIRECT_MAX_FLOPS_PER_SCALAR: f64 = 250.0;

/// The relative tolerance of GMRES preconditioned by the direct factor (a nonsymmetric tangent):
/// close to what a factorisation gives.
const DIRECT_GMRES_RTOL: f64 = 1e-12;

/// Krylov vectors kept by the GMRES fallback before a restart.
const GMRES_RESTART: usize = 60;

/// What one linear solve did.
#[derive(Clone, Debug, Serialize)]
pub struct LinearSolveReport {
    pub iterations: usize,
    /// Preconditioner set-up or factorisation time.
    pub setup_s: f64,
    pub solve_s: f64,
    /// False when an iterative method stopped at its iteration limit; the iterate is still used.
    pub converged: bool,
    /// What the set-up was.
    pub setup: SetupKind,
    /// The AMG hierarchy (levels, sizes, complexities, stage times) after a cold set-up or a
    /// renewal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hierarchy: Option<HierarchyReport>,
    /// Bytes moved between host and GPU (a solve on a GPU only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceSolveReport>,
    /// The relative tolerance the solve was asked for.
    pub rtol: f64,
    /// Where CG broke down and a robust method took over, what happened (for people).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// What a solve on a GPU moved between host and device. The tangent is assembled on the host,
/// so its values (and the right-hand side) go up and the solution comes back at every call
/// (issue 8 moves assembly to the device); the preconditioner update and the solve move only
/// scalars once the hierarchy is set up.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceSolveReport {
    /// The device's name.
    pub name: String,
    /// Tangent values and right-hand side, host to device (the whole matrix and pattern at the
    /// first call; none where the tangent was assembled on the device).
    pub upload_bytes: u64,
    /// The preconditioner set-up or update, both directions.
    pub setup: TransferReport,
    /// CG with the preconditioner, both directions.
    pub solve: TransferReport,
    /// The solution, device to host.
    pub download_bytes: u64,
}

/// The GPU copies of the tangent, right-hand side and solution a device solver keeps between
/// calls (so later calls upload values only).
pub struct DeviceSide {
    device: Device,
    k: Option<Bsr>,
    b: Option<Vector>,
    x: Option<Vector>,
}

impl DeviceSide {
    /// The device a [`DeviceChoice`] names: `None` for the CPU; an error if `cuda` finds no GPU.
    fn open(choice: DeviceChoice) -> Result<Option<Self>> {
        let device = match choice {
            DeviceChoice::Cpu => return Ok(None),
            DeviceChoice::Auto => Device::auto(),
            DeviceChoice::Cuda => Device::cuda(0)
                .context("device: `cuda` needs a usable GPU (`auto` falls back to the CPU)")?,
        };
        Ok((!device.is_host()).then_some(Self {
            device,
            k: None,
            b: None,
            x: None,
        }))
    }

    /// Brings `k` and `b` to the device (values only when the pattern is the last call's);
    /// returns the bytes uploaded.
    fn upload(&mut self, k: &Bsr, b: &Vector) -> Result<u64> {
        let before = self.device.transfers();
        match &mut self.k {
            Some(dk) if linalg::BlockPattern::same(dk.pattern(), k.pattern()) => {
                dk.upload_values_from(k)?
            }
            slot => {
                // the tangent and its hierarchy must fit before anything is uploaded
                let (hierarchy, operator) = amg::device_memory_estimate(k);
                amg::check_device_memory(&self.device, hierarchy + operator)?;
                *slot = Some(k.to_device(&self.device)?)
            }
        }
        match &mut self.b {
            Some(db) if db.len() == b.len() => db.copy_from_host(b.host()?)?,
            slot => *slot = Some(b.to_device(&self.device)?),
        }
        match &mut self.x {
            Some(dx) if dx.len() == b.len() => dx.fill(0.0)?,
            slot => *slot = Some(Vector::zeros_on(&self.device, b.len())?),
        }
        Ok(self.device.transfers().host_to_device - before.host_to_device)
    }
}

/// The kind of preconditioner or factorisation set-up a solve needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetupKind {
    /// Point-block Jacobi inverted its diagonal blocks.
    Jacobi,
    /// The direct solver factored the matrix.
    Factorization,
    /// The AMG hierarchy was built from scratch.
    AmgCold,
    /// The AMG hierarchy was updated for new values (what `reuse` keeps was kept).
    AmgHot,
    /// The AMG hierarchy was rebuilt for a new near-null space and new values, equal to a cold
    /// set-up bit for bit, with the symbolic plans of at least one transfer kept (those whose
    /// aggregates came out unchanged: `amg::Hierarchy::set_near_null_space`).
    AmgRenewed,
}

/// The Krylov method of an iterative solver: CG for symmetric tangents, GMRES (restarted, right
/// preconditioned, the same preconditioner) where the tangent is not symmetric (follower
/// pressure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Krylov {
    Cg,
    Gmres,
}

impl Krylov {
    /// The method for a tangent that is (or is not) symmetric.
    pub fn for_tangent(symmetric: bool) -> Self {
        if symmetric {
            Krylov::Cg
        } else {
            Krylov::Gmres
        }
    }

    fn name(self) -> &'static str {
        match self {
            Krylov::Cg => "CG",
            Krylov::Gmres => "GMRES",
        }
    }
}

/// A configured linear solver with the state it reuses across calls.
pub enum LinearSolver {
    /// CG (or GMRES) preconditioned by point-block (3x3) Jacobi.
    CgJacobi {
        params: CgParams,
        krylov: Krylov,
        gpu: Option<DeviceSide>,
    },
    /// Envelope LDL^T in reverse Cuthill-McKee order; the ordering is computed once. With
    /// `Krylov::Gmres` (a tangent that is not symmetric) the factor of the matrix's permuted lower
    /// triangle (read as a symmetric matrix) preconditions GMRES on the tangent, solved to
    /// [`DIRECT_GMRES_RTOL`].
    Direct {
        symbolic: Option<Arc<DirectSymbolic>>,
        krylov: Krylov,
    },
    /// CG (or GMRES) preconditioned by one V-cycle of smoothed-aggregation AMG. The hierarchy is
    /// built at the first solve (without copying the tangent) and updated (per `amg.reuse`) for
    /// every later one.
    CgAmg {
        params: CgParams,
        krylov: Krylov,
        amg: AmgParams,
        near_null: NearNullSpace,
        hierarchy: Option<Box<Hierarchy>>,
        /// `near_null` changed since the hierarchy was built: the next solve renews it.
        near_null_changed: bool,
        /// The GPU the hierarchy and CG run on (`None`: the CPU).
        gpu: Option<DeviceSide>,
    },
    /// One rank's share of the distributed solver of a run on several MPI ranks.
    Distributed(Box<crate::dist_solver::DistSolver>),
}

impl LinearSolver {
    /// A solver as configured for a tangent of `pattern`, with a sentence for the run header:
    /// `method: auto` becomes the direct solver where its factor is small and fast (the estimate
    /// is in the sentence) and the solver runs on the CPU, CG with AMG otherwise (`device: cuda`
    /// always takes CG with AMG: the direct solver is host-only). Where the tangent is not
    /// `symmetric` (follower pressure) the iterative methods use GMRES instead of CG with the
    /// same preconditioner, `auto` takes GMRES with AMG (the direct solver is a symmetric
    /// `LDL^T`), and `method: direct` is an error saying why. Errors where `device: cuda` finds
    /// no usable GPU.
    pub fn choose(
        params: &LinearSolverParams,
        near_null: NearNullSpace,
        pattern: &BlockPattern,
        symmetric: bool,
    ) -> Result<(Self, String)> {
        let krylov = Krylov::for_tangent(symmetric).name();
        let fixed = match params.method {
            LinearSolverMethod::CgJacobi => Some(format!("{krylov} with point-block Jacobi")),
            LinearSolverMethod::Direct if !symmetric => Some(
                "GMRES preconditioned by the direct LDL^T factor of the tangent's lower triangle (the follower pressure's tangent is not symmetric)".to_string(),
            ),
            LinearSolverMethod::Direct => Some("direct (envelope LDL^T)".to_string()),
            LinearSolverMethod::CgAmg => Some(format!("{krylov} with smoothed-aggregation AMG")),
            LinearSolverMethod::Auto if params.device == DeviceChoice::Cuda => Some(format!(
                "{krylov} with smoothed-aggregation AMG (auto: the direct solver is host-only)"
            )),
            LinearSolverMethod::Auto => None,
        };
        if let Some(mut what) = fixed {
            if !symmetric
                && matches!(
                    params.method,
                    LinearSolverMethod::CgJacobi | LinearSolverMethod::CgAmg
                )
            {
                what.push_str(" (GMRES: the follower pressure's tangent is not symmetric)");
            }
            let solver = Self::new(params, near_null, symmetric)?;
            let text = match solver.device() {
                Some(device) => format!("{what} on {}", device.name()),
                None => what,
            };
            return Ok((solver, text));
        }
        let symbolic = DirectSymbolic::new(pattern)?;
        let bytes = (symbolic.envelope_size(3) * size_of::<f64>()) as f64;
        let flops = symbolic.factor_flops(3);
        let estimate = format!(
            "direct factor estimate {:.0} MB, {:.1e} flops",
            bytes / 1e6,
            flops
        );
        let max_flops = AUTO_DIRECT_MAX_FLOPS_PER_SCALAR * (pattern.nnz() * 9) as f64;
        if bytes <= AUTO_DIRECT_MAX_BYTES && flops <= max_flops {
            let solver = LinearSolver::Direct {
                symbolic: Some(Arc::new(symbolic)),
                krylov: Krylov::for_tangent(symmetric),
            };
            let text = if symmetric {
                format!("direct (envelope LDL^T; {estimate})")
            } else {
                format!("GMRES preconditioned by the direct LDL^T factor of the tangent's lower triangle (the follower pressure's tangent is not symmetric; {estimate})")
            };
            Ok((solver, text))
        } else {
            let amg = LinearSolverParams {
                method: LinearSolverMethod::CgAmg,
                ..params.clone()
            };
            let solver = Self::new(&amg, near_null, symmetric)?;
            let place = match solver.device() {
                Some(device) => format!(" on {}", device.name()),
                None => String::new(),
            };
            let text = format!(
                "{krylov} with smoothed-aggregation AMG{place} ({estimate}: above {:.0} MB or {:.1e} flops)",
                AUTO_DIRECT_MAX_BYTES / 1e6,
                max_flops
            );
            Ok((solver, text))
        }
    }

    /// A solver as configured for a tangent that is (or is not) `symmetric`; `near_null` (the
    /// rigid-body modes) is used by AMG only (`method: auto` is CG with AMG here;
    /// [`LinearSolver::choose`] resolves it per problem). Errors where `device: cuda` finds no
    /// usable GPU, and for `method: direct` with a tangent that is not symmetric.
    pub fn new(
        params: &LinearSolverParams,
        near_null: NearNullSpace,
        symmetric: bool,
    ) -> Result<Self> {
        let krylov = Krylov::for_tangent(symmetric);
        let cg_params = CgParams {
            rtol: params.rtol,
            atol: params.atol,
            max_iterations: params.max_iterations,
            ..CgParams::default()
        };
        Ok(match params.method {
            LinearSolverMethod::CgAmg | LinearSolverMethod::Auto => LinearSolver::CgAmg {
                params: cg_params,
                krylov,
                amg: params.amg.clone(),
                near_null,
                hierarchy: None,
                near_null_changed: false,
                gpu: DeviceSide::open(params.device)?,
            },
            LinearSolverMethod::CgJacobi => LinearSolver::CgJacobi {
                params: cg_params,
                krylov,
                gpu: DeviceSide::open(params.device)?,
            },
            LinearSolverMethod::Direct => {
                if params.device == DeviceChoice::Cuda {
                    bail!("device: `cuda` runs CG; the direct solver is host-only");
                }
                LinearSolver::Direct {
                    symbolic: None,
                    krylov,
                }
            }
        })
    }

    /// The device the iterative solver runs on (`None`: the CPU).
    pub fn device(&self) -> Option<&Device> {
        match self {
            LinearSolver::CgAmg { gpu, .. } | LinearSolver::CgJacobi { gpu, .. } => {
                gpu.as_ref().map(|g| &g.device)
            }
            LinearSolver::Direct { .. } | LinearSolver::Distributed(_) => None,
        }
    }

    /// Where the Newton loop runs with this solver: the iterative solver's GPU, or (on the ranks
    /// of a distributed run) this rank's GPU where the distributed solver runs there; `None`:
    /// the host.
    pub fn newton_device(&self) -> Option<&Device> {
        match self {
            LinearSolver::Distributed(d) => Some(d.device()).filter(|d| !d.is_host()),
            _ => self.device(),
        }
    }

    /// The Krylov method's name: "CG", or "GMRES" for a tangent that is not symmetric.
    pub fn krylov_name(&self) -> &'static str {
        match self {
            LinearSolver::CgAmg { krylov, .. }
            | LinearSolver::CgJacobi { krylov, .. }
            | LinearSolver::Direct { krylov, .. } => krylov.name(),
            LinearSolver::Distributed(d) => Krylov::for_tangent(d.symmetric).name(),
        }
    }

    /// The AMG hierarchy's report, once one is set up.
    pub fn hierarchy_report(&self) -> Option<&HierarchyReport> {
        match self {
            LinearSolver::CgAmg {
                hierarchy: Some(h), ..
            } => Some(h.report()),
            _ => None,
        }
    }

    /// Replaces the AMG's near-null space (no effect on other methods); the next solve renews the
    /// hierarchy (`amg::Hierarchy::set_near_null_space`: a cold set-up's values, keeping the
    /// symbolic plans where the aggregates did not change). Newton passes the rigid-body modes of the deformed configuration at
    /// the start of each load step: under large rotations those of the reference configuration
    /// are far from the tangent's near-null space and CG iterations grow with the rotation.
    pub fn set_near_null_space(&mut self, modes: NearNullSpace) {
        if let LinearSolver::CgAmg {
            near_null,
            near_null_changed,
            ..
        } = self
        {
            *near_null = modes;
            *near_null_changed = true;
        } else if let LinearSolver::Distributed(d) = self {
            d.set_near_null_space(modes);
        }
    }

    /// Whether the solver uses AMG (and so a near-null space).
    pub fn uses_amg(&self) -> bool {
        match self {
            LinearSolver::CgAmg { .. } => true,
            LinearSolver::Distributed(d) => d.method == crate::dist_solver::DistMethod::Amg,
            _ => false,
        }
    }

    /// Whether the solver is iterative (its tolerance matters).
    pub fn is_iterative(&self) -> bool {
        !matches!(self, LinearSolver::Direct { .. })
    }

    /// Solves `k x = b` from `x = 0` to the configured tolerance (see [`LinearSolver::solve_to`]).
    pub fn solve(&mut self, k: &Bsr, b: &Vector, x: &mut Vector) -> Result<LinearSolveReport> {
        self.solve_to(k, b, x, None)
    }

    /// Solves `k x = b` from `x = 0`; iterative methods to the relative tolerance `rtol`
    /// (`None`: the configured one). Where CG breaks down (an indefinite tangent or
    /// preconditioner) the solve is repeated by GMRES with the same preconditioner, and the report
    /// says so. A zero pivot of the direct solver or a failed fallback is an error; hitting the
    /// iteration limit is reported, not an error.
    pub fn solve_to(
        &mut self,
        k: &Bsr,
        b: &Vector,
        x: &mut Vector,
        rtol: Option<f64>,
    ) -> Result<LinearSolveReport> {
        x.fill(0.0)?;
        if !k.device().is_host() {
            // the operands already live where the solver runs (the Newton loop on the GPU)
            return self.solve_here(k, b, x, rtol);
        }
        let gpu = match self {
            LinearSolver::CgAmg { gpu, .. } | LinearSolver::CgJacobi { gpu, .. } => gpu.as_mut(),
            LinearSolver::Direct { .. } => None,
            LinearSolver::Distributed(d) => return d.solve_to(k, b, x, rtol),
        };
        if let Some(side) = gpu {
            // the same solve on the device copies; the solution comes back to `x`
            let upload_bytes = side.upload(k, b)?;
            let device = side.device.clone();
            let (mut dk, db, mut dx) = (side.k.take(), side.b.take(), side.x.take());
            let result = match (&dk, &db, &mut dx) {
                (Some(dk), Some(db), Some(dx)) => self.solve_here(dk, db, dx, rtol),
                _ => Err(anyhow::anyhow!("device copies missing")),
            };
            let download = (|| -> Result<u64> {
                let before = device.transfers();
                if let (Ok(_), Some(dx)) = (&result, &dx) {
                    x.host_mut()?.copy_from_slice(&dx.to_host_vec()?);
                }
                Ok(device.transfers().device_to_host - before.device_to_host)
            })();
            if let LinearSolver::CgAmg {
                gpu: Some(side), ..
            }
            | LinearSolver::CgJacobi {
                gpu: Some(side), ..
            } = self
            {
                (side.k, side.b, side.x) = (dk.take(), db, dx);
            }
            let mut report = result?;
            if let Some(d) = report.device.as_mut() {
                d.upload_bytes = upload_bytes;
                d.download_bytes = download?;
            }
            return Ok(report);
        }
        self.solve_here(k, b, x, rtol)
    }

    /// [`Self::solve`] with every operand where the solver runs.
    fn solve_here(
        &mut self,
        k: &Bsr,
        b: &Vector,
        x: &mut Vector,
        rtol: Option<f64>,
    ) -> Result<LinearSolveReport> {
        let device = k.device();
        let count = |t0: linalg::Transfers| TransferReport::between(t0, device.transfers());
        let device_report = |setup: TransferReport, solve: TransferReport| {
            (!device.is_host()).then(|| DeviceSolveReport {
                name: device.name(),
                upload_bytes: 0,
                setup,
                solve,
                download_bytes: 0,
            })
        };
        match self {
            LinearSolver::CgJacobi { params, krylov, .. } => {
                let params = CgParams {
                    rtol: rtol.unwrap_or(params.rtol),
                    ..*params
                };
                let start = Instant::now();
                let t0 = device.transfers();
                let jacobi = PointBlockJacobi::new(k).context("point-block Jacobi set-up")?;
                let setup_s = start.elapsed().as_secs_f64();
                let setup_moved = count(t0);
                let start = Instant::now();
                let t0 = device.transfers();
                if *krylov == Krylov::Gmres {
                    let mut report = gmres_report(k, b, x, &jacobi, &params)?;
                    (report.setup_s, report.setup) = (setup_s, SetupKind::Jacobi);
                    report.solve_s = start.elapsed().as_secs_f64();
                    report.device = device_report(setup_moved, count(t0));
                    return Ok(report);
                }
                let outcome = cg(k, b, x, &jacobi, &params).context("CG")?;
                let fallback = robust_fallback(&outcome, k, b, x, &jacobi, &params)?;
                let mut report = cg_report(
                    outcome,
                    fallback,
                    setup_s,
                    start.elapsed().as_secs_f64(),
                    SetupKind::Jacobi,
                    None,
                    params.rtol,
                )?;
                report.device = device_report(setup_moved, count(t0));
                Ok(report)
            }
            LinearSolver::CgAmg {
                params,
                krylov,
                amg,
                near_null,
                hierarchy,
                near_null_changed,
                ..
            } => {
                let params = CgParams {
                    rtol: rtol.unwrap_or(params.rtol),
                    ..*params
                };
                let t0 = device.transfers();
                let start = Instant::now();
                // A failed update leaves no hierarchy behind, so the next solve sets up afresh.
                let (setup, h) = match hierarchy.take() {
                    Some(mut h) if *near_null_changed => {
                        let renewal = h
                            .set_near_null_space(k, near_null)
                            .context("AMG renewal for a new near-null space")?;
                        *near_null_changed = false;
                        let kind = if renewal.plans_reused > 0 {
                            SetupKind::AmgRenewed
                        } else {
                            SetupKind::AmgCold
                        };
                        (kind, h)
                    }
                    Some(mut h) => {
                        h.update(k).context("AMG update")?;
                        (SetupKind::AmgHot, h)
                    }
                    None => {
                        *near_null_changed = false;
                        let h =
                            Hierarchy::setup_external(k, near_null, amg).context("AMG set-up")?;
                        (SetupKind::AmgCold, Box::new(h))
                    }
                };
                let h = hierarchy.insert(h);
                let setup_s = start.elapsed().as_secs_f64();
                let setup_moved = count(t0);
                let report_h = matches!(setup, SetupKind::AmgCold | SetupKind::AmgRenewed)
                    .then(|| h.report().clone());
                let start = Instant::now();
                let t0 = device.transfers();
                // the hierarchy keeps no copy of k (blocked storage) or its own expansion (scalar)
                let vcycle = h.with_operator(k)?;
                let operator = h.operator(0).unwrap_or(k);
                if *krylov == Krylov::Gmres {
                    let mut report = gmres_report(operator, b, x, &vcycle, &params)?;
                    (report.setup_s, report.setup, report.hierarchy) = (setup_s, setup, report_h);
                    report.solve_s = start.elapsed().as_secs_f64();
                    report.device = device_report(setup_moved, count(t0));
                    return Ok(report);
                }
                let outcome = cg(operator, b, x, &vcycle, &params).context("CG")?;
                let fallback = robust_fallback(&outcome, operator, b, x, &vcycle, &params)?;
                let mut report = cg_report(
                    outcome,
                    fallback,
                    setup_s,
                    start.elapsed().as_secs_f64(),
                    setup,
                    report_h,
                    params.rtol,
                )?;
                report.device = device_report(setup_moved, count(t0));
                Ok(report)
            }
            LinearSolver::Distributed(d) => d.solve_to(k, b, x, rtol),
            LinearSolver::Direct { symbolic, krylov } => {
                let start = Instant::now();
                let symbolic = match symbolic {
                    Some(s) if s.pattern() == k.pattern().as_ref() => s.clone(),
                    slot => {
                        let s = DirectSymbolic::new(k.pattern())?;
                        let bytes = (s.envelope_size(k.block_rows()) * size_of::<f64>()) as f64;
                        if bytes > DIRECT_MAX_FACTOR_BYTES {
                            bail!(
                                "linear_solver.method = direct: the factor would take {:.1} GB (limit {:.0} GB); use cg_amg for a problem of {} unknowns",
                                bytes / 1e9,
                                DIRECT_MAX_FACTOR_BYTES / 1e9,
                                k.n_rows()
                            );
                        }
                        slot.insert(Arc::new(s)).clone()
                    }
                };
                let factor = DirectSolver::factor(&symbolic, k)?;
                let setup_s = start.elapsed().as_secs_f64();
                let start = Instant::now();
                if *krylov == Krylov::Gmres {
                    let params = CgParams {
                        rtol: DIRECT_GMRES_RTOL,
                        atol: 0.0,
                        max_iterations: 500,
                        ..CgParams::default()
                    };
                    let mut report =
                        gmres_report(k, b, x, &FactorPreconditioner(&factor), &params)?;
                    (report.setup_s, report.setup) = (setup_s, SetupKind::Factorization);
                    report.solve_s = start.elapsed().as_secs_f64();
                    return Ok(report);
                }
                factor.solve(b, x)?;
                Ok(LinearSolveReport {
                    iterations: 1,
                    setup_s,
                    solve_s: start.elapsed().as_secs_f64(),
                    converged: true,
                    setup: SetupKind::Factorization,
                    hierarchy: None,
                    device: None,
                    rtol: 0.0,
                    fallback: None,
                })
            }
        }
    }
}

/// The direct factor as a preconditioner (`z = (L D L^T)^{-1} r`).
struct FactorPreconditioner<'a>(&'a DirectSolver);

impl Preconditioner for FactorPreconditioner<'_> {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), amg::AmgError> {
        Ok(self.0.solve(r, z)?)
    }
}

/// GMRES from `x = 0` with the preconditioner `pc` to the tolerances of `params`, for a tangent
/// that is not symmetric; the set-up fields of the report are left for the caller. Exhausting
/// the iteration limit is reported, a NaN is an error.
fn gmres_report(
    a: &Bsr,
    b: &Vector,
    x: &mut Vector,
    pc: &dyn Preconditioner,
    params: &CgParams,
) -> Result<LinearSolveReport> {
    x.fill(0.0)?;
    let g = gmres(a, b, x, pc, &gmres_params(params)).context("GMRES")?;
    if g.reason == amg::GmresStopReason::NonFinite {
        bail!("GMRES met a NaN or infinity after {} iterations; an element may be close to inversion: use more loading.steps", g.iterations);
    }
    Ok(LinearSolveReport {
        iterations: g.iterations,
        setup_s: 0.0,
        solve_s: 0.0,
        converged: g.converged,
        setup: SetupKind::Jacobi,
        hierarchy: None,
        device: None,
        rtol: params.rtol,
        fallback: None,
    })
}

/// GMRES's parameters for CG's tolerances and iteration limit.
pub(crate) fn gmres_params(params: &CgParams) -> GmresParams {
    GmresParams {
        rtol: params.rtol,
        atol: params.atol,
        max_iterations: params.max_iterations,
        restart: GMRES_RESTART,
    }
}

/// What the GMRES fallback did after a CG breakdown.
pub(crate) struct Fallback {
    pub(crate) iterations: usize,
    pub(crate) converged: bool,
    pub(crate) note: String,
}

/// After a CG breakdown (an indefinite operator or preconditioner, or a NaN), solves again from
/// zero by GMRES with the same preconditioner and tolerance. `None` where CG did not break down.
/// GMRES ending in a NaN is an error naming both attempts.
fn robust_fallback(
    outcome: &CgOutcome,
    a: &Bsr,
    b: &Vector,
    x: &mut Vector,
    pc: &dyn Preconditioner,
    params: &CgParams,
) -> Result<Option<Fallback>> {
    gmres_after_breakdown(outcome, x, |x| {
        Ok(gmres(a, b, x, pc, &gmres_params(params))?)
    })
}

/// [`robust_fallback`] with the GMRES solve given (`solve` starts from `x = 0`): on one
/// process or on ranks.
pub(crate) fn gmres_after_breakdown(
    outcome: &CgOutcome,
    x: &mut Vector,
    solve: impl FnOnce(&mut Vector) -> Result<amg::GmresOutcome>,
) -> Result<Option<Fallback>> {
    let why = match outcome.reason {
        CgStopReason::IndefiniteOperator => "the tangent is not positive definite",
        CgStopReason::IndefinitePreconditioner => "the preconditioner is not positive definite",
        CgStopReason::NonFinite => "a NaN or infinity appeared",
        _ => return Ok(None),
    };
    x.fill(0.0)?;
    let g = solve(x).context("GMRES")?;
    let cg_part = format!("CG stopped after {} iterations ({why})", outcome.iterations);
    if g.reason == amg::GmresStopReason::NonFinite {
        bail!("{cg_part}, and GMRES with the same preconditioner met a NaN or infinity after {} iterations; an element may be close to inversion: use more loading.steps", g.iterations);
    }
    let result = if g.converged {
        format!(
            "GMRES with the same preconditioner converged in {} iterations",
            g.iterations
        )
    } else {
        format!(
            "GMRES with the same preconditioner reached a relative residual of {:.1e} in {} iterations",
            g.final_residual_norm / g.initial_residual_norm.max(f64::MIN_POSITIVE),
            g.iterations
        )
    };
    Ok(Some(Fallback {
        iterations: g.iterations,
        converged: g.converged,
        note: format!("{cg_part}; {result}"),
    }))
}

/// A CG outcome (and its fallback's) as a report; a breakdown without a fallback is an error,
/// an exhausted iteration limit is not.
fn cg_report(
    outcome: CgOutcome,
    fallback: Option<Fallback>,
    setup_s: f64,
    solve_s: f64,
    setup: SetupKind,
    hierarchy: Option<HierarchyReport>,
    rtol: f64,
) -> Result<LinearSolveReport> {
    if let Some(f) = fallback {
        return Ok(LinearSolveReport {
            iterations: outcome.iterations + f.iterations,
            setup_s,
            solve_s,
            converged: f.converged,
            setup,
            hierarchy,
            device: None,
            rtol,
            fallback: Some(f.note),
        });
    }
    match outcome.reason {
        CgStopReason::IndefiniteOperator
        | CgStopReason::IndefinitePreconditioner
        | CgStopReason::NonFinite => {
            bail!(
                "CG stopped after {} iterations: {}",
                outcome.iterations,
                match outcome.reason {
                    CgStopReason::IndefiniteOperator => "the tangent is not positive definite",
                    CgStopReason::IndefinitePreconditioner =>
                        "the preconditioner is not positive definite",
                    _ => "a NaN or infinity appeared",
                }
            )
        }
        _ => Ok(LinearSolveReport {
            iterations: outcome.iterations,
            setup_s,
            solve_s,
            converged: outcome.converged,
            setup,
            hierarchy,
            device: None,
            rtol,
            fallback: None,
        }),
    }
}
