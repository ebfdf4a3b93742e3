//! The linear solver of each Newton iteration, chosen by [`LinearSolverParams::method`]. Each call to
//! [`LinearSolver::solve`] takes a tangent with new values on the pattern of the previous call and
//! reuses what depends on the pattern only (the direct solver's ordering and profile).

use std::sync::Arc;
use std::time::Instant;

use amg::{
    cg, AmgParams, CgOutcome, CgParams, CgStopReason, Hierarchy, HierarchyReport, NearNullSpace,
    PointBlockJacobi,
};
use anyhow::{bail, Context, Result};
use linalg::direct::{DirectSolver, DirectSymbolic};
use linalg::{Bsr, Vector};
use serde::Serialize;

use crate::params::{LinearSolverMethod, LinearSolverParams};

/// Largest envelope factor the direct solver may allocate: it is meant for small problems, and a
/// larger request is an error naming the alternative rather than an allocation failure.
const DIRECT_MAX_FACTOR_BYTES: f64 = 4e9;

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
    /// The AMG hierarchy (levels, sizes, complexities, stage times) after a cold set-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hierarchy: Option<HierarchyReport>,
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
}

/// A configured linear solver with the state it reuses across calls.
pub enum LinearSolver {
    /// CG preconditioned by point-block (3x3) Jacobi.
    CgJacobi { params: CgParams },
    /// Envelope LDL^T in reverse Cuthill-McKee order; the ordering is computed once.
    Direct {
        symbolic: Option<Arc<DirectSymbolic>>,
    },
    /// CG preconditioned by one V-cycle of smoothed-aggregation AMG. The hierarchy is built at the
    /// first solve (without copying the tangent) and updated (per `amg.reuse`) for every later one.
    CgAmg {
        params: CgParams,
        amg: AmgParams,
        near_null: NearNullSpace,
        hierarchy: Option<Box<Hierarchy>>,
    },
}

impl LinearSolver {
    /// A solver as configured; `near_null` (the rigid-body modes) is used by AMG only.
    pub fn new(params: &LinearSolverParams, near_null: NearNullSpace) -> Self {
        let cg_params = CgParams {
            rtol: params.rtol,
            atol: params.atol,
            max_iterations: params.max_iterations,
            ..CgParams::default()
        };
        match params.method {
            LinearSolverMethod::CgAmg => LinearSolver::CgAmg {
                params: cg_params,
                amg: params.amg.clone(),
                near_null,
                hierarchy: None,
            },
            LinearSolverMethod::CgJacobi => LinearSolver::CgJacobi { params: cg_params },
            LinearSolverMethod::Direct => LinearSolver::Direct { symbolic: None },
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

    /// Solves `k x = b` from `x = 0`. Numerical breakdown (an indefinite tangent under CG, a zero
    /// pivot) is an error; hitting the iteration limit is reported, not an error.
    pub fn solve(&mut self, k: &Bsr, b: &Vector, x: &mut Vector) -> Result<LinearSolveReport> {
        x.fill(0.0)?;
        match self {
            LinearSolver::CgJacobi { params } => {
                let start = Instant::now();
                let jacobi = PointBlockJacobi::new(k).context("point-block Jacobi set-up")?;
                let setup_s = start.elapsed().as_secs_f64();
                let start = Instant::now();
                let outcome = cg(k, b, x, &jacobi, params).context("CG")?;
                cg_report(
                    outcome,
                    setup_s,
                    start.elapsed().as_secs_f64(),
                    SetupKind::Jacobi,
                    None,
                )
            }
            LinearSolver::CgAmg {
                params,
                amg,
                near_null,
                hierarchy,
            } => {
                let start = Instant::now();
                // A failed update leaves no hierarchy behind, so the next solve sets up afresh.
                let (setup, h) = match hierarchy.take() {
                    Some(mut h) => {
                        h.update(k).context("AMG update")?;
                        (SetupKind::AmgHot, h)
                    }
                    None => (
                        SetupKind::AmgCold,
                        Box::new(
                            Hierarchy::setup_external(k, near_null, amg).context("AMG set-up")?,
                        ),
                    ),
                };
                let h = hierarchy.insert(h);
                let setup_s = start.elapsed().as_secs_f64();
                let report = (setup == SetupKind::AmgCold).then(|| h.report().clone());
                let start = Instant::now();
                // the hierarchy keeps no copy of k (blocked storage) or its own expansion (scalar)
                let vcycle = h.with_operator(k)?;
                let outcome =
                    cg(h.operator(0).unwrap_or(k), b, x, &vcycle, params).context("CG")?;
                cg_report(
                    outcome,
                    setup_s,
                    start.elapsed().as_secs_f64(),
                    setup,
                    report,
                )
            }
            LinearSolver::Direct { symbolic } => {
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
                factor.solve(b, x)?;
                Ok(LinearSolveReport {
                    iterations: 1,
                    setup_s,
                    solve_s: start.elapsed().as_secs_f64(),
                    converged: true,
                    setup: SetupKind::Factorization,
                    hierarchy: None,
                })
            }
        }
    }
}

/// A CG outcome as a report; breakdowns are errors, an exhausted iteration limit is not.
fn cg_report(
    outcome: CgOutcome,
    setup_s: f64,
    solve_s: f64,
    setup: SetupKind,
    hierarchy: Option<HierarchyReport>,
) -> Result<LinearSolveReport> {
    match outcome.reason {
        CgStopReason::IndefiniteOperator
        | CgStopReason::IndefinitePreconditioner
        | CgStopReason::NonFinite => {
            bail!(
                "CG broke down after {} iterations: {:?}",
                outcome.iterations,
                outcome.reason
            )
        }
        _ => Ok(LinearSolveReport {
            iterations: outcome.iterations,
            setup_s,
            solve_s,
            converged: outcome.converged,
            setup,
            hierarchy,
        }),
    }
}
