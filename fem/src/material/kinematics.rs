//! Kinematics of `F = I + h` from the displacement gradient `h = grad_X u`, without forming `F`
//! where that loses digits: every quantity that vanishes at `h = 0` (`J - 1`, `ln J`, `I - F^{-T}`,
//! `tr h - ln J`) keeps its relative accuracy down to any strain, so stresses and energies carry
//! round-off proportional to themselves, not to the moduli.
//!
//! Identities used (`cof` the cofactor, `cof_iJ = dJ/dF_iJ`, `i2` the sum of principal 2x2 minors):
//! `J - 1 = tr h + (i2(h) + det h)`, `cof F = I + (tr h I - h^T + cof h)`, hence
//! `I - F^{-T} = (J I - cof F) / J = ((J - 1 - tr h) I + h^T - cof h) / J`.
//!
//! The scalar functions use `+ - * /` and the portable `ln` and `exp` of module `elementary` only,
//! in a fixed order, so that their device twins in `fem/cuda/element.cu` (same operations, same
//! order) give the host's bits.

use nalgebra::Matrix3;

use crate::error::{FemError, Result};

/// `|x|` below which [`ln_1p`] and [`ln_1p_defect`] sum the series in `s = x / (2 + x)`
/// (`|s| < 0.053`: seven terms of [`atanh_tail`] reach round-off).
const LN_SERIES_BOUND: f64 = 0.1;

/// `|y|` below which [`exp_defect`] sums its Taylor series (to `y^16/16!`: round-off for
/// `|y| < 0.5`; above, the difference loses at most a factor `2 / |y| <= 4`).
const EXP_SERIES_BOUND: f64 = 0.5;

/// The cofactor matrix, `cof(M)_iJ = d det M / dM_iJ` (`cof M = det M M^{-T}`).
#[inline(always)]
pub(crate) fn cofactor(m: &Matrix3<f64>) -> Matrix3<f64> {
    Matrix3::new(
        m[(1, 1)] * m[(2, 2)] - m[(1, 2)] * m[(2, 1)],
        m[(1, 2)] * m[(2, 0)] - m[(1, 0)] * m[(2, 2)],
        m[(1, 0)] * m[(2, 1)] - m[(1, 1)] * m[(2, 0)],
        m[(0, 2)] * m[(2, 1)] - m[(0, 1)] * m[(2, 2)],
        m[(0, 0)] * m[(2, 2)] - m[(0, 2)] * m[(2, 0)],
        m[(0, 1)] * m[(2, 0)] - m[(0, 0)] * m[(2, 1)],
        m[(0, 1)] * m[(1, 2)] - m[(0, 2)] * m[(1, 1)],
        m[(0, 2)] * m[(1, 0)] - m[(0, 0)] * m[(1, 2)],
        m[(0, 0)] * m[(1, 1)] - m[(0, 1)] * m[(1, 0)],
    )
}

/// The volume change of `F = I + h`, checked (`J > 0`, finite), with what its inverse and
/// logarithm are built from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Volume {
    /// `J - 1 = tr h + nonlinear`.
    pub jm1: f64,
    /// `J = 1 + (J - 1)`.
    pub j: f64,
    /// `tr h`.
    pub tr: f64,
    /// `J - 1 - tr h = i2(h) + det h` (quadratic and cubic in `h`, no cancellation of `tr h`).
    pub nonlinear: f64,
    /// `cof h`.
    cof: Matrix3<f64>,
}

/// `(tr h, J - 1 - tr h, cof h)`.
#[inline(always)]
fn volume_change(h: &Matrix3<f64>) -> (f64, f64, Matrix3<f64>) {
    let cof = cofactor(h);
    let det = h[(0, 0)] * cof[(0, 0)] + h[(0, 1)] * cof[(0, 1)] + h[(0, 2)] * cof[(0, 2)];
    (h.trace(), cof.trace() + det, cof)
}

/// `J - 1` of `F = I + h`, unchecked (for callers that already checked `J`).
#[inline]
pub(crate) fn j_minus_one(h: &Matrix3<f64>) -> f64 {
    let (tr, nonlinear, _) = volume_change(h);
    tr + nonlinear
}

/// The [`Volume`] of `F = I + h`; `NonPositiveJ` unless `J = 1 + (J - 1) > 0` (NaN included).
#[inline(always)]
pub(crate) fn volume(h: &Matrix3<f64>) -> Result<Volume> {
    let (tr, nonlinear, cof) = volume_change(h);
    let jm1 = tr + nonlinear;
    let j = 1.0 + jm1;
    if !(j > 0.0 && j.is_finite()) {
        return Err(FemError::NonPositiveJ { j });
    }
    Ok(Volume {
        jm1,
        j,
        tr,
        nonlinear,
        cof,
    })
}

impl Volume {
    /// `ln J`, to round-off relative to itself.
    #[inline]
    pub(crate) fn ln_j(&self) -> f64 {
        ln_1p(self.jm1)
    }

    /// `tr h - ln J = (J - 1 - ln J) - (J - 1 - tr h)`, second order in `h`.
    #[inline]
    pub(crate) fn tr_minus_ln_j(&self) -> f64 {
        ln_1p_defect(self.jm1) - self.nonlinear
    }

    /// `(F^{-T}, I - F^{-T})` of `F = I + h` (`h` the matrix this volume was computed from): one
    /// reciprocal of `J` and the cofactor of `h`, no inversion.
    #[inline(always)]
    pub(crate) fn inverse_transpose(&self, h: &Matrix3<f64>) -> (Matrix3<f64>, Matrix3<f64>) {
        let s = 1.0 / self.j;
        let c = &self.cof;
        // cof F - I = tr h I - h^T + cof h and J I - cof F = (J - 1 - tr h) I + h^T - cof h.
        let m = |i: usize, k: usize| {
            if i == k {
                (self.tr - h[(i, i)]) + c[(i, i)]
            } else {
                c[(i, k)] - h[(k, i)]
            }
        };
        let d = |i: usize, k: usize| {
            if i == k {
                (self.nonlinear + h[(i, i)]) - c[(i, i)]
            } else {
                h[(k, i)] - c[(i, k)]
            }
        };
        let finv_t = Matrix3::new(
            (1.0 + m(0, 0)) * s,
            m(0, 1) * s,
            m(0, 2) * s,
            m(1, 0) * s,
            (1.0 + m(1, 1)) * s,
            m(1, 2) * s,
            m(2, 0) * s,
            m(2, 1) * s,
            (1.0 + m(2, 2)) * s,
        );
        let defect = Matrix3::new(
            d(0, 0) * s,
            d(0, 1) * s,
            d(0, 2) * s,
            d(1, 0) * s,
            d(1, 1) * s,
            d(1, 2) * s,
            d(2, 0) * s,
            d(2, 1) * s,
            d(2, 2) * s,
        );
        (finv_t, defect)
    }
}

/// `1/3 + s2/5 + s2^2/7 + ... + s2^6/15`: `(atanh(s) - s) / s^3` to round-off for `s2 = s^2 <
/// 0.0028`, in Estrin's scheme (short dependency chains).
#[inline(always)]
fn atanh_tail(s2: f64) -> f64 {
    let s4 = s2 * s2;
    let s8 = s4 * s4;
    let low = (1.0 / 3.0 + s2 * (1.0 / 5.0)) + s4 * (1.0 / 7.0 + s2 * (1.0 / 9.0));
    let high = (1.0 / 11.0 + s2 * (1.0 / 13.0)) + s4 * (1.0 / 15.0);
    low + s8 * high
}

/// `ln(1 + x)` for `x > -1`, a few ulp from the exact value: `2 atanh(x / (2 + x))` by its series
/// for `|x| < 0.1`, else Kahan's `ln(u) x / (u - 1)` with `u = 1 + x` (which corrects the rounding
/// of `u`).
#[inline]
pub(crate) fn ln_1p(x: f64) -> f64 {
    if x.abs() < LN_SERIES_BOUND {
        let s = x / (2.0 + x);
        let s2 = s * s;
        let two_s = 2.0 * s;
        two_s + two_s * (s2 * atanh_tail(s2))
    } else {
        let u = 1.0 + x;
        super::elementary::ln(u) * (x / (u - 1.0))
    }
}

/// `x - ln(1 + x) >= 0` for `x > -1`, to round-off relative to itself: `s (x - 2 s^2 tail)` with
/// `s = x / (2 + x)` (as `x - 2 s = x s`) for `|x| < 0.1`, else the difference (which loses at most
/// a factor `2 / |x| <= 20` there).
#[inline]
pub(crate) fn ln_1p_defect(x: f64) -> f64 {
    if x.abs() < LN_SERIES_BOUND {
        let s = x / (2.0 + x);
        let s2 = s * s;
        s * (x - 2.0 * (s2 * atanh_tail(s2)))
    } else {
        x - ln_1p(x)
    }
}

/// `e^y - 1`, to round-off relative to itself: `y + (e^y - 1 - y)` by [`exp_defect`]'s series for
/// `|y| < 0.5` (no transcendental call: the device kernels' bits), else `e^y - 1`.
#[inline]
pub(crate) fn exp_m1(y: f64) -> f64 {
    if y.abs() < EXP_SERIES_BOUND {
        y + exp_defect(y, f64::NAN)
    } else {
        super::elementary::exp(y) - 1.0
    }
}

/// `e^y - 1 - y >= 0`, to round-off relative to itself, with `e^y` supplied by the caller
/// (`exp_y`, used only for `|y| >= 0.5`): `y^2 (1/2! + y/3! + ... + y^14/16!)` below.
#[inline]
pub(crate) fn exp_defect(y: f64, exp_y: f64) -> f64 {
    if y.abs() < EXP_SERIES_BOUND {
        // Horner on the coefficients 1/n!, n = 16 down to 2.
        let mut t = 1.0 / 20_922_789_888_000.0;
        for c in [
            1.0 / 1_307_674_368_000.0,
            1.0 / 87_178_291_200.0,
            1.0 / 6_227_020_800.0,
            1.0 / 479_001_600.0,
            1.0 / 39_916_800.0,
            1.0 / 3_628_800.0,
            1.0 / 362_880.0,
            1.0 / 40_320.0,
            1.0 / 5_040.0,
            1.0 / 720.0,
            1.0 / 120.0,
            1.0 / 24.0,
            1.0 / 6.0,
            1.0 / 2.0,
        ] {
            t = c + y * t;
        }
        y * y * t
    } else {
        (exp_y - 1.0) - y
    }
}
