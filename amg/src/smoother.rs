//! Level smoothers, preconditioned by point-block Jacobi `D`: Chebyshev (degree `d`, interval
//! `[lower emax, upper emax]` of `D^{-1} A`) and damped Jacobi. Both are the same polynomial in
//! `D^{-1} A` for pre- and post-smoothing, so the V-cycle built from them is symmetric.

use crate::{AmgError, PointBlockJacobi};
use linalg::dist::DistBsr;
use linalg::{ops, Bsr, Device, Vector};

/// An operator a smoother can smooth with: it subtracts its product from a residual.
pub trait SmoothingOperator {
    /// `r -= A x`.
    fn subtract_product(&self, x: &Vector, r: &mut Vector) -> Result<(), AmgError>;
}

impl SmoothingOperator for Bsr {
    fn subtract_product(&self, x: &Vector, r: &mut Vector) -> Result<(), AmgError> {
        Ok(self.spmv_add(-1.0, x, 1.0, r)?)
    }
}

impl SmoothingOperator for DistBsr {
    /// Collective (the halo exchange of `x`); `x` and `r` hold the owned entries. The product's
    /// scratch is the matrix's ([`DistBsr::add_scaled_product`]): no allocation after the first.
    fn subtract_product(&self, x: &Vector, r: &mut Vector) -> Result<(), AmgError> {
        Ok(self.add_scaled_product(-1.0, x, r)?)
    }
}

/// The polynomial in `D^{-1} A` a smoother applies, with its coefficients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SmoothingPolynomial {
    /// Chebyshev iteration of `degree` steps on `[lower emax, upper emax]`.
    Chebyshev {
        degree: usize,
        lower: f64,
        upper: f64,
    },
    /// `sweeps` damped Jacobi sweeps with weight `omega`.
    Jacobi { sweeps: usize, omega: f64 },
}

/// A smoother's state: the block-diagonal inverses, the estimate of `lambda_max(D^{-1} A)` and
/// the polynomial.
#[derive(Debug, Clone)]
pub struct Smoother {
    /// `D^{-1}` of the level operator.
    pub pbj: PointBlockJacobi,
    /// Estimate of `lambda_max(D^{-1} A)`.
    pub emax: f64,
    polynomial: SmoothingPolynomial,
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
    /// Scratch for `n` unknowns (host).
    pub fn new(n: usize) -> Self {
        Self {
            r: Vector::zeros(n),
            d: Vector::zeros(n),
        }
    }

    /// Scratch for `n` unknowns on `device`.
    pub fn new_on(device: &Device, n: usize) -> Result<Self, AmgError> {
        Ok(Self {
            r: Vector::zeros_on(device, n)?,
            d: Vector::zeros_on(device, n)?,
        })
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
            polynomial: SmoothingPolynomial::Chebyshev {
                degree,
                lower,
                upper,
            },
        }
    }

    /// Damped Jacobi, `sweeps` sweeps with weight `omega`.
    pub fn jacobi(pbj: PointBlockJacobi, emax: f64, sweeps: usize, omega: f64) -> Self {
        Self {
            pbj,
            emax,
            polynomial: SmoothingPolynomial::Jacobi { sweeps, omega },
        }
    }

    /// The polynomial and its coefficients.
    pub fn polynomial(&self) -> SmoothingPolynomial {
        self.polynomial
    }

    /// Smooths `A x = b`. With `x_is_zero` the incoming `x` is not read (saves one SpMV).
    pub fn smooth<A: SmoothingOperator + ?Sized>(
        &self,
        a: &A,
        b: &Vector,
        x: &mut Vector,
        x_is_zero: bool,
        w: &mut SmootherWork,
    ) -> Result<(), AmgError> {
        match self.polynomial {
            SmoothingPolynomial::Chebyshev {
                degree,
                lower,
                upper,
            } => self.chebyshev_apply(a, b, x, x_is_zero, w, (degree, lower, upper)),
            SmoothingPolynomial::Jacobi { sweeps, omega } => {
                for sweep in 0..sweeps {
                    if x_is_zero && sweep == 0 {
                        self.pbj.apply_scaled(omega, b, 0.0, x)?;
                        continue;
                    }
                    w.r.copy_from(b)?;
                    a.subtract_product(x, &mut w.r)?;
                    self.pbj.apply_scaled(omega, &w.r, 1.0, x)?;
                }
                Ok(())
            }
        }
    }

    /// Chebyshev iteration (Saad, Iterative Methods, Alg. 12.1) on `D^{-1} A`.
    fn chebyshev_apply<A: SmoothingOperator + ?Sized>(
        &self,
        a: &A,
        b: &Vector,
        x: &mut Vector,
        x_is_zero: bool,
        w: &mut SmootherWork,
        (degree, lower, upper): (usize, f64, f64),
    ) -> Result<(), AmgError> {
        let (lo, hi) = (lower * self.emax, upper * self.emax);
        let theta = 0.5 * (hi + lo);
        let delta = 0.5 * (hi - lo);
        let sigma = theta / delta;
        let mut rho = 1.0 / sigma;
        // r = b - A x; d = D^{-1} r / theta; x += d
        w.r.copy_from(b)?;
        if !x_is_zero {
            a.subtract_product(x, &mut w.r)?;
        }
        self.pbj.apply_scaled(1.0 / theta, &w.r, 0.0, &mut w.d)?;
        if x_is_zero {
            x.copy_from(&w.d)?;
        } else {
            ops::axpy(1.0, &w.d, x)?;
        }
        for _ in 1..degree {
            a.subtract_product(&w.d, &mut w.r)?;
            let rho_new = 1.0 / (2.0 * sigma - rho);
            self.pbj
                .apply_scaled(2.0 * rho_new / delta, &w.r, rho_new * rho, &mut w.d)?;
            ops::axpy(1.0, &w.d, x)?;
            rho = rho_new;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eig::estimate_emax;
    use crate::test_util::{laplace_1d_blocks, rand_vec};

    /// Error-propagation factor on the highest mode: a Chebyshev(2) sweep must damp it strongly,
    /// and the smoother must be a fixed linear map (same result from zero or via `x_is_zero`).
    #[test]
    fn chebyshev_damps_high_frequencies_and_is_linear() {
        let n = 64;
        let a = laplace_1d_blocks(n, 2);
        let pbj = PointBlockJacobi::new(&a).unwrap();
        let emax = estimate_emax(&a, &pbj, 10).unwrap().unwrap();
        let s = Smoother::chebyshev(pbj, emax, 2, 0.1, 1.1);
        assert_eq!(
            s.polynomial(),
            SmoothingPolynomial::Chebyshev {
                degree: 2,
                lower: 0.1,
                upper: 1.1
            }
        );
        // Oscillating error e = (-1)^i: exact solution 0, b = 0, x0 = e.
        let e: Vec<f64> = (0..2 * n)
            .map(|i| if (i / 2) % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let mut x = Vector::from_vec(e.clone());
        let b = Vector::zeros(2 * n);
        let mut w = SmootherWork::new(2 * n);
        s.smooth(&a, &b, &mut x, false, &mut w).unwrap();
        let ratio = ops::norm2(&x).unwrap() / ops::norm2(&Vector::from_vec(e)).unwrap();
        assert!(ratio < 0.3, "high-frequency reduction {ratio}");
        let rhs = Vector::from_vec(rand_vec(3, 2 * n));
        let mut x1 = Vector::zeros(2 * n);
        s.smooth(&a, &rhs, &mut x1, false, &mut w).unwrap();
        let mut x2 = Vector::from_vec(vec![f64::NAN; 2 * n]);
        s.smooth(&a, &rhs, &mut x2, true, &mut w).unwrap();
        for (u, v) in x1.host().unwrap().iter().zip(x2.host().unwrap()) {
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
        s.smooth(&a, &b, &mut x, true, &mut w).unwrap();
        let mut r = b.clone();
        a.spmv_add(-1.0, &x, 1.0, &mut r).unwrap();
        assert!(ops::norm2(&r).unwrap() < ops::norm2(&b).unwrap());
        // A scratch of the wrong length is an error, not a panic.
        assert!(s
            .smooth(&a, &b, &mut x, false, &mut SmootherWork::new(89))
            .is_err());
    }
}
