//! The linear solver of each Newton iteration, chosen by `linear_solver.method`. Each call to
//! [`LinearSolver::solve`] takes a tangent with new values on the pattern of the previous call and
//! reuses what depends on the pattern only (the direct solver's ordering and profile).

use std::sync::Arc;
use std::time::Instant;

use amg::{cg, CgParams, CgStopReason, PointBlockJacobi};
use anyhow::{bail, Context, Result};
use linalg::direct::{DirectSolver, DirectSymbolic};
use linalg::{Bsr, Vector};
use serde::Serialize;

use crate::config::{LinearSolverMethod, LinearSolverParams};

/// What one linear solve did.
#[derive(Clone, Debug, Serialize)]
pub struct LinearSolveReport {
    pub iterations: usize,
    /// Preconditioner set-up or factorisation time.
    pub setup_s: f64,
    pub solve_s: f64,
    /// False when an iterative method stopped at its iteration limit; the iterate is still used.
    pub converged: bool,
}

/// A configured linear solver with the state it reuses across calls.
pub enum LinearSolver {
    /// CG preconditioned by point-block (3x3) Jacobi.
    CgJacobi { params: CgParams },
    /// Envelope LDL^T in reverse Cuthill-McKee order; the ordering is computed once.
    Direct { symbolic: Option<Arc<DirectSymbolic>> },
}

impl LinearSolver {
    pub fn new(params: &LinearSolverParams) -> Self {
        match params.method {
            LinearSolverMethod::CgJacobi => LinearSolver::CgJacobi {
                params: CgParams { rtol: params.rtol, atol: params.atol, max_iterations: params.max_iterations, ..CgParams::default() },
            },
            LinearSolverMethod::Direct => LinearSolver::Direct { symbolic: None },
        }
    }

    /// Solves `k x = b` from `x = 0`. Numerical breakdown (an indefinite tangent under CG, a zero
    /// pivot) is an error; hitting the iteration limit is reported, not an error.
    pub fn solve(&mut self, k: &Bsr, b: &Vector, x: &mut Vector) -> Result<LinearSolveReport> {
        x.fill(0.0);
        match self {
            LinearSolver::CgJacobi { params } => {
                let start = Instant::now();
                let jacobi = PointBlockJacobi::new(k).context("point-block Jacobi set-up")?;
                let setup_s = start.elapsed().as_secs_f64();
                let start = Instant::now();
                let outcome = cg(k, b, x, &jacobi, params).context("CG")?;
                let solve_s = start.elapsed().as_secs_f64();
                match outcome.reason {
                    CgStopReason::IndefiniteOperator | CgStopReason::IndefinitePreconditioner | CgStopReason::NonFinite => {
                        bail!("CG broke down after {} iterations: {:?}", outcome.iterations, outcome.reason)
                    }
                    _ => {}
                }
                Ok(LinearSolveReport { iterations: outcome.iterations, setup_s, solve_s, converged: outcome.converged })
            }
            LinearSolver::Direct { symbolic } => {
                let start = Instant::now();
                let symbolic = match symbolic {
                    Some(s) if s.pattern() == k.pattern().as_ref() => s.clone(),
                    slot => slot.insert(Arc::new(DirectSymbolic::new(k.pattern())?)).clone(),
                };
                let factor = DirectSolver::factor(&symbolic, k)?;
                let setup_s = start.elapsed().as_secs_f64();
                let start = Instant::now();
                factor.solve(b, x)?;
                Ok(LinearSolveReport { iterations: 1, setup_s, solve_s: start.elapsed().as_secs_f64(), converged: true })
            }
        }
    }
}
