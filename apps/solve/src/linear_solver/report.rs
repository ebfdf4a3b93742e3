//! What one linear solve did: the report every solve returns, whatever its axes.

use amg::{HierarchyReport, TransferReport};
use serde::Serialize;

use super::krylov::KrylovOutcome;

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
    /// renewal (one process).
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
    /// CG met a direction of non-positive curvature (`p^T K p <= 0`, or `r^T M^{-1} r <= 0` of
    /// the preconditioner built from the tangent): the tangent is not positive definite (past a
    /// limit or bifurcation point).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub negative_curvature: bool,
    /// The direct factor's negative pivots: the tangent's negative eigenvalues (Sylvester's
    /// inertia); `None` for the iterative methods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub negative_eigenvalues: Option<usize>,
}

impl LinearSolveReport {
    /// The report of a Krylov `outcome` after a set-up of `setup_s` seconds, with the device's
    /// transfers and the hierarchy report left out.
    pub(crate) fn of(
        outcome: KrylovOutcome,
        setup: SetupKind,
        setup_s: f64,
        solve_s: f64,
        rtol: f64,
    ) -> Self {
        LinearSolveReport {
            iterations: outcome.iterations,
            setup_s,
            solve_s,
            converged: outcome.converged,
            setup,
            hierarchy: None,
            device: None,
            rtol,
            fallback: outcome.fallback,
            negative_curvature: outcome.negative_curvature,
            negative_eigenvalues: None,
        }
    }

    /// Evidence that the tangent is not positive definite, in words (`None`: none seen).
    pub fn indefinite_tangent(&self) -> Option<String> {
        match self.negative_eigenvalues {
            Some(n) if n > 0 => Some(format!(
                "the tangent has {n} negative eigenvalue{} (the direct factor's pivots)",
                if n == 1 { "" } else { "s" }
            )),
            _ => self.negative_curvature.then(|| {
                "CG met negative curvature (of the tangent or of its AMG): the tangent is not positive definite"
                    .to_string()
            }),
        }
    }
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
