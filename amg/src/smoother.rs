//! Level smoothers, preconditioned by point-block Jacobi `D`: Chebyshev (degree `d`, interval
//! `[lower emax, upper emax]` of `D^{-1} A`) and damped Jacobi. Both are the same polynomial in
//! `D^{-1} A` for pre- and post-smoothing, so the V-cycle built from them is symmetric.

use crate::{PointBlockJacobi, SmootherKind};
use linalg::{Bsr, Vector};

/// A smoother's state: the block-diagonal inverses and the coefficients derived from `emax`.
#[derive(Debug, Clone)]
pub struct Smoother {
    /// `D^{-1}` of the level operator.
    pub pbj: PointBlockJacobi,
    /// Estimate of `lambda_max(D^{-1} A)`.
    pub emax: f64,
    kind: SmootherKind,
    /// Chebyshev: degree; Jacobi: sweeps.
    steps: usize,
    /// Chebyshev: `(lower, upper)` factors; Jacobi: `(omega, _)`.
    coef: (f64, f64),
}

/// Scratch vectors of one level (length of the level).
#[derive(Debug, Clone)]
pub struct SmootherWork {
    /// Residual.
    pub r: Vector,
    /// Search direction / correction.
    pub d: Vector,
}

impl SmootherWork {
    /// Scratch for `n` unknowns.
    pub fn new(n: usize) -> Self {
        Self {
            r: Vector::zeros(n),
            d: Vector::zeros(n),
        }
    }
}

impl Smoother {
    /// Chebyshev smoother of `degree` on `[lower emax, upper emax]`.
    pub fn chebyshev(
        pbj: PointBlockJacobi,
        emax: f64,
        degree: usize,
        lower: f64,
        upper: f64,
    ) -> Self {
        Self {
            pbj,
            emax,
            kind: SmootherKind::Chebyshev,
            steps: degree,
            coef: (lower, upper),
        }
    }

    /// Damped Jacobi, `sweeps` sweeps with weight `omega`.
    pub fn jacobi(pbj: PointBlockJacobi, emax: f64, sweeps: usize, omega: f64) -> Self {
        Self {
            pbj,
            emax,
            kind: SmootherKind::Jacobi,
            steps: sweeps,
            coef: (omega, 0.0),
        }
    }

    /// Smooths `A x = b`. With `x_is_zero` the incoming `x` is not read (saves one SpMV).
    pub fn smooth(
        &self,
        a: &Bsr,
        b: &Vector,
        x: &mut Vector,
        x_is_zero: bool,
        w: &mut SmootherWork,
    ) {
        match self.kind {
            SmootherKind::Chebyshev => self.chebyshev_apply(a, b, x, x_is_zero, w),
            SmootherKind::Jacobi => {
                let omega = self.coef.0;
                for sweep in 0..self.steps {
                    if x_is_zero && sweep == 0 {
                        self.pbj
                            .apply_axpby(omega, b.as_slice(), 0.0, x.as_mut_slice());
                        continue;
                    }
                    w.r.copy_from(b);
                    a.spmv_add(-1.0, x, 1.0, &mut w.r);
                    self.pbj
                        .apply_axpby(omega, w.r.as_slice(), 1.0, x.as_mut_slice());
                }
            }
        }
    }

    /// Chebyshev iteration (Saad, Iterative Methods, Alg. 12.1) on `D^{-1} A`.
    fn chebyshev_apply(
        &self,
        a: &Bsr,
        b: &Vector,
        x: &mut Vector,
        x_is_zero: bool,
        w: &mut SmootherWork,
    ) {
        let (lo, hi) = (self.coef.0 * self.emax, self.coef.1 * self.emax);
        let theta = 0.5 * (hi + lo);
        let delta = 0.5 * (hi - lo);
        let sigma = theta / delta;
        let mut rho = 1.0 / sigma;
        // r = b - A x; d = D^{-1} r / theta; x += d
        w.r.copy_from(b);
        if !x_is_zero {
            a.spmv_add(-1.0, x, 1.0, &mut w.r);
        }
        self.pbj
            .apply_axpby(1.0 / theta, w.r.as_slice(), 0.0, w.d.as_mut_slice());
        if x_is_zero {
            x.copy_from(&w.d);
        } else {
            linalg::ops::axpy(1.0, &w.d, x);
        }
        for _ in 1..self.steps {
            a.spmv_add(-1.0, &w.d, 1.0, &mut w.r);
            let rho_new = 1.0 / (2.0 * sigma - rho);
            self.pbj.apply_axpby(
                2.0 * rho_new / delta,
                w.r.as_slice(),
                rho_new * rho,
                w.d.as_mut_slice(),
            );
            linalg::ops::axpy(1.0, &w.d, x);
            rho = rho_new;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eig::estimate_emax;
    use crate::test_util::{laplace_1d_blocks, rand_vec};
    use linalg::ops;

    /// Error-propagation factor on the highest mode: a Chebyshev(2) sweep must damp it strongly,
    /// and the smoother must be a fixed linear map (same result from zero or via `x_is_zero`).
    #[test]
    fn chebyshev_damps_high_frequencies_and_is_linear() {
        let n = 64;
        let a = laplace_1d_blocks(n, 2);
        let pbj = PointBlockJacobi::new(&a).unwrap();
        let emax = estimate_emax(&a, &pbj, 10).unwrap();
        let s = Smoother::chebyshev(pbj, emax, 2, 0.1, 1.1);
        // Oscillating error e = (-1)^i: exact solution 0, b = 0, x0 = e.
        let e: Vec<f64> = (0..2 * n)
            .map(|i| if (i / 2) % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let mut x = Vector::from_vec(e.clone());
        let b = Vector::zeros(2 * n);
        let mut w = SmootherWork::new(2 * n);
        s.smooth(&a, &b, &mut x, false, &mut w);
        let ratio = ops::norm2(&x) / ops::norm2(&Vector::from_vec(e));
        assert!(ratio < 0.3, "high-frequency reduction {ratio}");
        let rhs = Vector::from_vec(rand_vec(3, 2 * n));
        let mut x1 = Vector::zeros(2 * n);
        s.smooth(&a, &rhs, &mut x1, false, &mut w);
        let mut x2 = Vector::from_vec(vec![f64::NAN; 2 * n]);
        s.smooth(&a, &rhs, &mut x2, true, &mut w);
        for (u, v) in x1.as_slice().iter().zip(x2.as_slice()) {
            assert!((u - v).abs() < 1e-14);
        }
    }

    #[test]
    fn jacobi_sweeps_reduce_the_residual() {
        let a = laplace_1d_blocks(30, 3);
        let pbj = PointBlockJacobi::new(&a).unwrap();
        let s = Smoother::jacobi(pbj, 2.0, 3, 2.0 / 3.0);
        let b = Vector::from_vec(rand_vec(1, 90));
        let mut x = Vector::zeros(90);
        let mut w = SmootherWork::new(90);
        s.smooth(&a, &b, &mut x, true, &mut w);
        let mut r = b.clone();
        a.spmv_add(-1.0, &x, 1.0, &mut r);
        assert!(ops::norm2(&r) < ops::norm2(&b));
    }
}
