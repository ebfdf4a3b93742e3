//! Restarted GMRES with right preconditioning: the robust fallback where CG cannot go (an
//! indefinite operator, e.g. a Newton tangent past a buckling point or under strong compression,
//! or a preconditioner that is not positive definite). Right preconditioning makes the monitored
//! norm the true residual `||b - A x||_2`, as CG's default, so tolerances mean the same.
//!
//! Arnoldi with modified Gram-Schmidt, Givens rotations on the Hessenberg matrix; at most
//! `restart + 2` vectors of the operator's length besides `x` and `b`. The preconditioner may be
//! any fixed linear operator (an AMG V-cycle with a Chebyshev smoother is one).

use linalg::{ops, Bsr, Vector};
use serde::{Deserialize, Serialize};

use crate::smoother::SmoothingOperator;
use crate::{AmgError, LinearOperator, Preconditioner};

/// Options of [`gmres`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GmresParams {
    /// Relative tolerance on `||b - A x||` against that of the initial guess. Default `1e-8`.
    pub rtol: f64,
    /// Absolute tolerance on `||b - A x||`. Default `1e-50`.
    pub atol: f64,
    /// Iteration limit (matrix-vector products, restarts included). Default `10_000`.
    pub max_iterations: usize,
    /// Krylov vectors kept before a restart (>= 1). Default 60.
    pub restart: usize,
}

impl Default for GmresParams {
    fn default() -> Self {
        Self {
            rtol: 1e-8,
            atol: 1e-50,
            max_iterations: 10_000,
            restart: 60,
        }
    }
}

/// Why GMRES stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GmresStopReason {
    /// `||r|| <= rtol ||r_0||` (converged).
    RelativeTolerance,
    /// `||r|| <= atol` (converged; includes a zero initial residual).
    AbsoluteTolerance,
    /// The iteration limit was reached without convergence.
    MaxIterations,
    /// The Krylov space stopped growing without reaching the tolerance (a singular operator).
    Stagnation,
    /// A NaN or infinity appeared. Not converged.
    NonFinite,
}

impl GmresStopReason {
    /// True for the two tolerance reasons.
    pub fn is_converged(self) -> bool {
        matches!(self, Self::RelativeTolerance | Self::AbsoluteTolerance)
    }
}

/// Result of a [`gmres`] run; `x` holds the last iterate whatever the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GmresOutcome {
    pub iterations: usize,
    pub converged: bool,
    pub reason: GmresStopReason,
    /// `||b - A x_0||`.
    pub initial_residual_norm: f64,
    /// `||b - A x||` of the returned iterate (recomputed at the end).
    pub final_residual_norm: f64,
}

/// Solves `A x = b` by restarted, right-preconditioned GMRES from the `x` given.
pub fn gmres(
    a: &Bsr,
    b: &Vector,
    x: &mut Vector,
    pc: &dyn Preconditioner,
    params: &GmresParams,
) -> Result<GmresOutcome, AmgError> {
    let n = a.n_rows();
    for (what, expected, found) in [
        ("gmres: operator columns", n, a.n_cols()),
        ("gmres: right-hand side length", n, b.len()),
        ("gmres: solution length", n, x.len()),
    ] {
        if expected != found {
            return Err(AmgError::DimensionMismatch {
                what,
                expected,
                found,
            });
        }
    }
    gmres_operator(a, b, x, pc, params)
}

/// [`gmres`] for any operator that can also subtract its product from a residual (a `Bsr`, or a
/// rank's rows of a `linalg::dist::DistBsr`, whose vectors hold the owned entries: every
/// reduction is then over the ranks). Collective on ranks.
pub fn gmres_operator<A: LinearOperator + SmoothingOperator + ?Sized>(
    a: &A,
    b: &Vector,
    x: &mut Vector,
    pc: &dyn Preconditioner,
    params: &GmresParams,
) -> Result<GmresOutcome, AmgError> {
    let n = a.local_len();
    for (what, found) in [
        ("gmres: right-hand side length", b.len()),
        ("gmres: solution length", x.len()),
    ] {
        if found != n {
            return Err(AmgError::DimensionMismatch {
                what,
                expected: n,
                found,
            });
        }
    }
    if !(params.rtol >= 0.0) || !(params.atol >= 0.0) || params.restart == 0 {
        return Err(AmgError::InvalidParameter {
            name: "gmres parameters",
            value: format!(
                "rtol {} atol {} restart {}",
                params.rtol, params.atol, params.restart
            ),
            reason: "tolerances must be non-negative and restart >= 1",
        });
    }
    let m = params.restart;
    let mut r = b.clone();
    a.subtract_product(x, &mut r)?;
    let r0 = ops::norm2(&r)?;
    let target = (params.rtol * r0).max(params.atol);
    let finish = |iterations, reason: GmresStopReason, final_norm| GmresOutcome {
        iterations,
        converged: reason.is_converged(),
        reason,
        initial_residual_norm: r0,
        final_residual_norm: final_norm,
    };
    if !r0.is_finite() {
        return Ok(finish(0, GmresStopReason::NonFinite, r0));
    }
    if r0 <= params.atol {
        return Ok(finish(0, GmresStopReason::AbsoluteTolerance, r0));
    }
    let mut basis: Vec<Vector> = Vec::with_capacity(m + 1);
    // on b's device (a GPU run's fallback solves with device operands)
    let mut z = b.zeros_like()?;
    let mut w = b.zeros_like()?;
    // column-major upper Hessenberg matrix, (m + 1) x m
    let mut h = vec![0.0; (m + 1) * m];
    let (mut cs, mut sn, mut g) = (vec![0.0; m], vec![0.0; m], vec![0.0; m + 1]);
    let mut iterations = 0;
    let mut beta = r0;
    loop {
        basis.clear();
        let mut v0 = r.clone();
        ops::scale(1.0 / beta, &mut v0)?;
        basis.push(v0);
        g.fill(0.0);
        g[0] = beta;
        let mut k = 0; // columns built in this cycle
        let mut reason = None;
        while k < m && iterations < params.max_iterations {
            pc.apply(&basis[k], &mut z)?;
            a.apply(&z, &mut w)?;
            let col = &mut h[k * (m + 1)..(k + 1) * (m + 1)];
            for (i, v) in basis.iter().enumerate() {
                let hij = ops::dot(&w, v)?;
                col[i] = hij;
                ops::axpy(-hij, v, &mut w)?;
            }
            let norm_w = ops::norm2(&w)?;
            col[k + 1] = norm_w;
            for i in 0..k {
                let (a0, a1) = (col[i], col[i + 1]);
                col[i] = cs[i] * a0 + sn[i] * a1;
                col[i + 1] = -sn[i] * a0 + cs[i] * a1;
            }
            let (a0, a1) = (col[k], col[k + 1]);
            let rho = a0.hypot(a1);
            iterations += 1;
            if !rho.is_finite() {
                reason = Some(GmresStopReason::NonFinite);
                break;
            }
            if rho == 0.0 {
                reason = Some(GmresStopReason::Stagnation);
                break;
            }
            cs[k] = a0 / rho;
            sn[k] = a1 / rho;
            col[k] = rho;
            col[k + 1] = 0.0;
            g[k + 1] = -sn[k] * g[k];
            g[k] *= cs[k];
            k += 1;
            if g[k].abs() <= target {
                break;
            }
            if norm_w == 0.0 {
                // happy breakdown: the Krylov space is invariant, the solution is in it
                break;
            }
            let mut v = w.clone();
            ops::scale(1.0 / norm_w, &mut v)?;
            basis.push(v);
        }
        // y = H^{-1} g by back substitution on the k x k triangle, x += M^{-1} V y
        let mut y = vec![0.0; k];
        for i in (0..k).rev() {
            let mut s = g[i];
            for (j, yj) in y.iter().enumerate().skip(i + 1) {
                s -= h[j * (m + 1) + i] * yj;
            }
            y[i] = s / h[i * (m + 1) + i];
        }
        w.fill(0.0)?;
        for (v, yi) in basis.iter().zip(&y) {
            ops::axpy(*yi, v, &mut w)?;
        }
        pc.apply(&w, &mut z)?;
        ops::axpy(1.0, &z, x)?;
        r.copy_from(b)?;
        a.subtract_product(x, &mut r)?;
        beta = ops::norm2(&r)?;
        if !beta.is_finite() {
            return Ok(finish(iterations, GmresStopReason::NonFinite, beta));
        }
        if beta <= target {
            let reason = if beta <= params.atol {
                GmresStopReason::AbsoluteTolerance
            } else {
                GmresStopReason::RelativeTolerance
            };
            return Ok(finish(iterations, reason, beta));
        }
        if let Some(reason) = reason {
            return Ok(finish(iterations, reason, beta));
        }
        if iterations >= params.max_iterations {
            return Ok(finish(iterations, GmresStopReason::MaxIterations, beta));
        }
        if k == 0 {
            return Ok(finish(iterations, GmresStopReason::Stagnation, beta));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krylov::IdentityPreconditioner;
    use crate::PointBlockJacobi;

    /// A symmetric indefinite block-tridiagonal matrix (1D Laplacian shifted past its smallest
    /// eigenvalues) with 3x3 blocks, as a dense reference and a Bsr.
    fn shifted_laplacian(n_blocks: usize, shift: f64) -> (Vec<f64>, Bsr) {
        let n = 3 * n_blocks;
        let mut dense = vec![0.0; n * n];
        for i in 0..n {
            dense[i * n + i] = 2.0 - shift + 0.01 * (i % 7) as f64;
            if i + 3 < n {
                dense[i * n + i + 3] = -1.0;
                dense[(i + 3) * n + i] = -1.0;
            }
            if i % 3 != 2 {
                dense[i * n + i + 1] = 0.3;
                dense[(i + 1) * n + i] = 0.3;
            }
        }
        let a = Bsr::from_dense(&dense, n, n, 3, 3).unwrap();
        (dense, a)
    }

    fn true_residual(dense: &[f64], x: &[f64], b: &[f64]) -> f64 {
        let n = b.len();
        (0..n)
            .map(|i| {
                let ax: f64 = (0..n).map(|j| dense[i * n + j] * x[j]).sum();
                (b[i] - ax).powi(2)
            })
            .sum::<f64>()
            .sqrt()
    }

    #[test]
    fn solves_an_indefinite_system_that_cg_cannot() {
        let (dense, a) = shifted_laplacian(40, 0.05);
        let b = Vector::from_vec((0..120).map(|i| ((i * 37 % 11) as f64) - 5.0).collect());
        let mut x = Vector::zeros(120);
        let cg_outcome = crate::cg(
            &a,
            &b,
            &mut x,
            &IdentityPreconditioner,
            &crate::CgParams::default(),
        )
        .unwrap();
        assert!(!cg_outcome.converged, "the test matrix must defeat CG");
        for restart in [120, 80, 60] {
            let mut x = Vector::zeros(120);
            let params = GmresParams {
                rtol: 1e-10,
                restart,
                ..GmresParams::default()
            };
            let outcome = gmres(&a, &b, &mut x, &IdentityPreconditioner, &params).unwrap();
            assert!(outcome.converged, "restart {restart}: {outcome:?}");
            let res = true_residual(&dense, x.host().unwrap(), b.host().unwrap());
            assert!(
                res <= 1.001e-10 * outcome.initial_residual_norm,
                "restart {restart}: true residual {res:e}"
            );
            assert!((res - outcome.final_residual_norm).abs() <= 1e-12 * res.max(1e-300) + 1e-14);
        }
    }

    #[test]
    fn right_preconditioning_keeps_the_true_residual_and_cuts_iterations() {
        let (dense, a) = shifted_laplacian(60, 0.0);
        let b = Vector::from_vec((0..180).map(|i| (i as f64 * 0.37).sin()).collect());
        let jacobi = PointBlockJacobi::new(&a).unwrap();
        let params = GmresParams {
            rtol: 1e-9,
            restart: 400,
            ..GmresParams::default()
        };
        let mut x_plain = Vector::zeros(180);
        let plain = gmres(&a, &b, &mut x_plain, &IdentityPreconditioner, &params).unwrap();
        let mut x = Vector::zeros(180);
        let pre = gmres(&a, &b, &mut x, &jacobi, &params).unwrap();
        assert!(plain.converged && pre.converged);
        assert!(pre.iterations <= plain.iterations, "{pre:?} vs {plain:?}");
        let res = true_residual(&dense, x.host().unwrap(), b.host().unwrap());
        assert!(res <= 1.001e-9 * pre.initial_residual_norm, "{res:e}");
    }

    #[test]
    fn zero_right_hand_side_and_iteration_limit() {
        let (_, a) = shifted_laplacian(10, 0.0);
        let mut x = Vector::zeros(30);
        let zero = gmres(
            &a,
            &Vector::zeros(30),
            &mut x,
            &IdentityPreconditioner,
            &GmresParams::default(),
        )
        .unwrap();
        assert_eq!(zero.reason, GmresStopReason::AbsoluteTolerance);
        let b = Vector::from_vec(vec![1.0; 30]);
        let params = GmresParams {
            rtol: 1e-14,
            max_iterations: 3,
            restart: 2,
            ..GmresParams::default()
        };
        let limited = gmres(&a, &b, &mut x, &IdentityPreconditioner, &params).unwrap();
        assert_eq!(limited.reason, GmresStopReason::MaxIterations);
        assert_eq!(limited.iterations, 3);
        assert!(!limited.converged);
    }
}
