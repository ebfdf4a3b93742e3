//! Conjugate gradients with a preconditioner, and the [`Preconditioner`] trait every AMG component
//! implements.
//!
//! Convergence is judged on the residual norm chosen by [`ResidualNorm`]:
//! `||r_k|| <= max(rtol * ||r_0||, atol)`, with `r_0` the residual of the initial guess. The outcome
//! reports the reason the iteration stopped; it never claims convergence that was not reached.

use crate::AmgError;
use linalg::dist::DistBsr;
use linalg::{ops, Bsr, Vector};
use serde::{Deserialize, Serialize};

/// `z = M^{-1} r` for a symmetric positive definite preconditioner `M` (CG needs symmetry).
pub trait Preconditioner: Sync {
    /// Writes `z = M^{-1} r`; `z` has the length of `r`, its previous content is ignored. Fails
    /// where a kernel or a message does (lengths, devices, a busy workspace).
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError>;
}

/// `y = A x` for a square operator: a [`Bsr`] on one rank, or a rank's owned rows of a
/// [`DistBsr`] (vectors of its owned layout; reductions go over the layout's ranks).
pub trait LinearOperator: Sync {
    /// Local entries of the vectors the operator maps (and returns).
    fn local_len(&self) -> usize;
    /// `y = A x`.
    fn apply(&self, x: &Vector, y: &mut Vector) -> Result<(), AmgError>;
}

impl LinearOperator for Bsr {
    fn local_len(&self) -> usize {
        self.n_rows()
    }

    fn apply(&self, x: &Vector, y: &mut Vector) -> Result<(), AmgError> {
        Ok(self.spmv(x, y)?)
    }
}

impl LinearOperator for DistBsr {
    fn local_len(&self) -> usize {
        self.pattern().owned_layout().len()
    }

    fn apply(&self, x: &Vector, y: &mut Vector) -> Result<(), AmgError> {
        Ok(DistBsr::apply(self, x, y)?)
    }
}

/// `M = I`: plain CG.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdentityPreconditioner;

impl Preconditioner for IdentityPreconditioner {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        Ok(z.copy_from(r)?)
    }
}

/// Which residual norm CG monitors and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResidualNorm {
    /// `||b - A x||_2`: comparable across preconditioners and formats (default).
    #[default]
    Unpreconditioned,
    /// `||M^{-1} (b - A x)||_2` (PETSc's default for CG).
    Preconditioned,
}

/// Options of [`cg`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CgParams {
    /// Relative tolerance on the monitored residual norm, relative to the initial one. Default `1e-8`.
    pub rtol: f64,
    /// Absolute tolerance on the monitored residual norm. Default `1e-50` (PETSc's).
    pub atol: f64,
    /// Iteration limit. Default `10_000`.
    pub max_iterations: usize,
    /// The monitored norm. Default [`ResidualNorm::Unpreconditioned`].
    pub norm: ResidualNorm,
}

impl Default for CgParams {
    fn default() -> Self {
        Self {
            rtol: 1e-8,
            atol: 1e-50,
            max_iterations: 10_000,
            norm: ResidualNorm::Unpreconditioned,
        }
    }
}

/// Why CG stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CgStopReason {
    /// `||r_k|| <= rtol ||r_0||` (converged).
    RelativeTolerance,
    /// `||r_k|| <= atol` (converged; includes a zero initial residual).
    AbsoluteTolerance,
    /// The iteration limit was reached without convergence.
    MaxIterations,
    /// `p^T A p <= 0`: the operator is not positive definite (or breakdown). Not converged.
    IndefiniteOperator,
    /// `r^T M^{-1} r <= 0` with `r != 0`: the preconditioner is not positive definite. Not converged.
    IndefinitePreconditioner,
    /// A NaN or infinity appeared in the iteration. Not converged.
    NonFinite,
}

impl CgStopReason {
    /// True for the two tolerance reasons.
    pub fn is_converged(self) -> bool {
        matches!(self, Self::RelativeTolerance | Self::AbsoluteTolerance)
    }
}

/// Result of a [`cg`] run. `x` holds the last iterate whatever the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CgOutcome {
    /// Iterations performed (matrix-vector products after the initial residual).
    pub iterations: usize,
    /// True only if a tolerance was met.
    pub converged: bool,
    /// Why the iteration stopped.
    pub reason: CgStopReason,
    /// The monitored norm, initial one first, one entry per iteration after it.
    pub residual_history: Vec<f64>,
    /// Monitored norm of the initial residual.
    pub initial_residual_norm: f64,
    /// Monitored norm of the last residual (recursively updated residual).
    pub final_residual_norm: f64,
    /// Which norm the numbers above are.
    pub norm: ResidualNorm,
}

/// Solves `A x = b` by preconditioned conjugate gradients, starting from the `x` given.
///
/// `a` must be square (block and scalar dimensions) and of the length of `b` and `x`, otherwise
/// an error is returned before any work. Numerical trouble (indefiniteness, NaN) is reported in
/// [`CgOutcome::reason`], not as an error.
pub fn cg(
    a: &Bsr,
    b: &Vector,
    x: &mut Vector,
    pc: &dyn Preconditioner,
    params: &CgParams,
) -> Result<CgOutcome, AmgError> {
    if a.n_cols() != a.n_rows() {
        return Err(AmgError::DimensionMismatch {
            what: "cg: operator columns",
            expected: a.n_rows(),
            found: a.n_cols(),
        });
    }
    cg_operator(a, b, x, pc, params)
}

/// [`cg`] on any [`LinearOperator`]: under MPI, every rank calls it with its owned rows and
/// owned entries; the iterates, residual norms and stopping decisions are the same on every
/// rank (the reductions are).
pub fn cg_operator(
    a: &dyn LinearOperator,
    b: &Vector,
    x: &mut Vector,
    pc: &dyn Preconditioner,
    params: &CgParams,
) -> Result<CgOutcome, AmgError> {
    let n = a.local_len();
    if b.len() != n {
        return Err(AmgError::DimensionMismatch {
            what: "cg: right-hand side length",
            expected: n,
            found: b.len(),
        });
    }
    if x.len() != n {
        return Err(AmgError::DimensionMismatch {
            what: "cg: solution length",
            expected: n,
            found: x.len(),
        });
    }
    if !(params.rtol >= 0.0) || !(params.atol >= 0.0) {
        return Err(AmgError::InvalidParameter {
            name: "cg tolerances",
            value: format!("rtol {} atol {}", params.rtol, params.atol),
            reason: "must be non-negative numbers",
        });
    }

    // r = b - A x (b + (-(A x)) rounds as the fused `spmv_add(-1, x, 1, r)` did)
    let mut r = b.try_clone()?;
    let mut z = b.zeros_like()?;
    a.apply(x, &mut z)?;
    ops::axpy(-1.0, &z, &mut r)?;
    pc.apply(&r, &mut z)?;
    // `r . z` and the monitored norm's square in one reduction (each `ops::dot`'s bits)
    let reduce = |r: &Vector, z: &Vector| -> Result<(f64, f64), AmgError> {
        let watched = match params.norm {
            ResidualNorm::Unpreconditioned => r,
            ResidualNorm::Preconditioned => z,
        };
        let [rz, squared] = ops::dots([(r, z), (watched, watched)])?;
        Ok((rz, squared.sqrt()))
    };
    let (mut rz, r0) = reduce(&r, &z)?;
    let mut history = vec![r0];
    let target = (params.rtol * r0).max(params.atol);
    let finish = |iterations: usize, reason: CgStopReason, history: Vec<f64>| CgOutcome {
        iterations,
        converged: reason.is_converged(),
        reason,
        initial_residual_norm: r0,
        final_residual_norm: *history.last().unwrap_or(&r0),
        residual_history: history,
        norm: params.norm,
    };
    if !r0.is_finite() || !rz.is_finite() {
        return Ok(finish(0, CgStopReason::NonFinite, history));
    }
    if r0 <= params.atol {
        return Ok(finish(0, CgStopReason::AbsoluteTolerance, history));
    }
    if r0 == 0.0 {
        return Ok(finish(0, CgStopReason::RelativeTolerance, history));
    }
    if rz <= 0.0 {
        return Ok(finish(0, CgStopReason::IndefinitePreconditioner, history));
    }

    let mut p = z.try_clone()?;
    // One buffer holds `q = A p` and `z = M^{-1} r` in turn (each is dead when the other is
    // written): three vectors besides `x` and `b`.
    let mut q = z;
    for it in 1..=params.max_iterations {
        a.apply(&p, &mut q)?;
        let pq = ops::dot(&p, &q)?;
        if !pq.is_finite() {
            return Ok(finish(it - 1, CgStopReason::NonFinite, history));
        }
        if pq <= 0.0 {
            return Ok(finish(it - 1, CgStopReason::IndefiniteOperator, history));
        }
        let alpha = rz / pq;
        ops::axpy(alpha, &p, x)?;
        ops::axpy(-alpha, &q, &mut r)?;
        pc.apply(&r, &mut q)?;
        let z = &q;
        let (rz_new, rn) = reduce(&r, z)?;
        history.push(rn);
        if !rn.is_finite() || !rz_new.is_finite() {
            return Ok(finish(it, CgStopReason::NonFinite, history));
        }
        if rn <= target {
            let reason = if rn <= params.atol {
                CgStopReason::AbsoluteTolerance
            } else {
                CgStopReason::RelativeTolerance
            };
            return Ok(finish(it, reason, history));
        }
        if rz_new <= 0.0 {
            return Ok(finish(it, CgStopReason::IndefinitePreconditioner, history));
        }
        let beta = rz_new / rz;
        rz = rz_new;
        ops::axpby(1.0, z, beta, &mut p)?; // p = z + beta p
    }
    Ok(finish(
        params.max_iterations,
        CgStopReason::MaxIterations,
        history,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{laplace_1d_blocks, rand_vec};

    fn dense_residual(a: &Bsr, x: &Vector, b: &Vector) -> f64 {
        let mut r = b.clone();
        a.spmv_add(-1.0, x, 1.0, &mut r).unwrap();
        ops::norm2(&r).unwrap()
    }

    #[test]
    fn cg_converges_and_reports_true_residual() {
        let a = laplace_1d_blocks(40, 3);
        let b = Vector::from_vec(rand_vec(1, a.n_rows()));
        let mut x = Vector::zeros(a.n_rows());
        let params = CgParams {
            rtol: 1e-10,
            ..Default::default()
        };
        let out = cg(&a, &b, &mut x, &IdentityPreconditioner, &params).unwrap();
        assert!(out.converged, "{out:?}");
        assert_eq!(out.reason, CgStopReason::RelativeTolerance);
        assert_eq!(out.residual_history.len(), out.iterations + 1);
        let true_res = dense_residual(&a, &x, &b);
        assert!(
            true_res <= 1e-9 * out.initial_residual_norm,
            "true residual {true_res}"
        );
        // Exact arithmetic: at most n distinct eigenvalues -> n iterations; 1D Laplacian block-diag copies
        // have 40 distinct eigenvalues.
        assert!(out.iterations <= 45, "iterations {}", out.iterations);
    }

    #[test]
    fn cg_reports_max_iterations_without_claiming_convergence() {
        let a = laplace_1d_blocks(100, 1);
        let b = Vector::from_vec(rand_vec(2, 100));
        let mut x = Vector::zeros(100);
        let params = CgParams {
            rtol: 1e-12,
            max_iterations: 5,
            ..Default::default()
        };
        let out = cg(&a, &b, &mut x, &IdentityPreconditioner, &params).unwrap();
        assert!(!out.converged);
        assert_eq!(out.reason, CgStopReason::MaxIterations);
        assert_eq!(out.iterations, 5);
        assert!(out.final_residual_norm > 1e-12 * out.initial_residual_norm);
    }

    #[test]
    fn cg_detects_indefinite_operator() {
        let mut a = laplace_1d_blocks(10, 1);
        a.scale(-1.0).unwrap();
        let b = Vector::from_vec(vec![1.0; 10]);
        let mut x = Vector::zeros(10);
        let out = cg(
            &a,
            &b,
            &mut x,
            &IdentityPreconditioner,
            &CgParams::default(),
        )
        .unwrap();
        assert_eq!(out.reason, CgStopReason::IndefiniteOperator);
        assert!(!out.converged);
        assert_eq!(out.iterations, 0);
    }

    #[test]
    fn cg_zero_rhs_and_dimension_errors() {
        let a = laplace_1d_blocks(5, 2);
        let b = Vector::zeros(10);
        let mut x = Vector::zeros(10);
        let out = cg(
            &a,
            &b,
            &mut x,
            &IdentityPreconditioner,
            &CgParams::default(),
        )
        .unwrap();
        assert!(out.converged && out.iterations == 0);
        let mut short = Vector::zeros(9);
        assert!(matches!(
            cg(
                &a,
                &b,
                &mut short,
                &IdentityPreconditioner,
                &CgParams::default()
            ),
            Err(AmgError::DimensionMismatch { .. })
        ));
    }

    #[test]
    fn preconditioned_norm_is_monitored_when_asked() {
        let a = laplace_1d_blocks(20, 1);
        let b = Vector::from_vec(rand_vec(5, 20));
        let mut x = Vector::zeros(20);
        /// M^{-1} = 0.5 I: the preconditioned norm is half the plain one.
        struct Half;
        impl Preconditioner for Half {
            fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
                z.copy_from(r)?;
                Ok(ops::scale(0.5, z)?)
            }
        }
        let params = CgParams {
            norm: ResidualNorm::Preconditioned,
            ..Default::default()
        };
        let out = cg(&a, &b, &mut x, &Half, &params).unwrap();
        assert!((out.initial_residual_norm - 0.5 * ops::norm2(&b).unwrap()).abs() < 1e-14);
        assert!(out.converged);
    }
}
