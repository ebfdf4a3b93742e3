//! Small tensor helpers shared by the material models: the volume ratio and `F^{-T}`, and
//! accumulation of the index patterns that closed-form tangents are built from.
//!
//! Flattening: `A[(3 i + J, 3 k + L)] = dP_iJ / dF_kL` (ARCHITECTURE.md).

use nalgebra::{Matrix3, SMatrix};

use crate::error::{FemError, Result};

/// The 9x9 material tangent.
pub type Tangent = SMatrix<f64, 9, 9>;

/// `(J, F^{-T})`, with `J = det F`; `NonPositiveJ` unless `J > 0` (NaN included).
#[inline]
pub(crate) fn volume_ratio_and_inverse_transpose(f: &Matrix3<f64>) -> Result<(f64, Matrix3<f64>)> {
    // Cofactor matrix: cof_iJ = dJ/dF_iJ, so F^{-T} = cof / J.
    let cof = Matrix3::new(
        f[(1, 1)] * f[(2, 2)] - f[(1, 2)] * f[(2, 1)],
        f[(1, 2)] * f[(2, 0)] - f[(1, 0)] * f[(2, 2)],
        f[(1, 0)] * f[(2, 1)] - f[(1, 1)] * f[(2, 0)],
        f[(0, 2)] * f[(2, 1)] - f[(0, 1)] * f[(2, 2)],
        f[(0, 0)] * f[(2, 2)] - f[(0, 2)] * f[(2, 0)],
        f[(0, 1)] * f[(2, 0)] - f[(0, 0)] * f[(2, 1)],
        f[(0, 1)] * f[(1, 2)] - f[(0, 2)] * f[(1, 1)],
        f[(0, 2)] * f[(1, 0)] - f[(0, 0)] * f[(1, 2)],
        f[(0, 0)] * f[(1, 1)] - f[(0, 1)] * f[(1, 0)],
    );
    let j = f[(0, 0)] * cof[(0, 0)] + f[(0, 1)] * cof[(0, 1)] + f[(0, 2)] * cof[(0, 2)];
    if !(j > 0.0 && j.is_finite()) {
        return Err(FemError::NonPositiveJ { j });
    }
    Ok((j, cof / j))
}

/// `A[(3i+J, 3k+L)] += c delta_ik delta_JL`.
#[inline(always)]
pub(crate) fn add_identity(a: &mut Tangent, c: f64) {
    for r in 0..9 {
        a[(r, r)] += c;
    }
}

/// `A[(3i+J, 3k+L)] += c (X_iJ Y_kL + Y_iJ X_kL)`, or `c X_iJ X_kL` when `y` is `None`.
#[inline(always)]
pub(crate) fn add_dyad(a: &mut Tangent, c: f64, x: &Matrix3<f64>, y: Option<&Matrix3<f64>>) {
    for k in 0..3 {
        for l in 0..3 {
            let col = 3 * k + l;
            for i in 0..3 {
                for j in 0..3 {
                    let v = match y {
                        None => x[(i, j)] * x[(k, l)],
                        Some(y) => x[(i, j)] * y[(k, l)] + y[(i, j)] * x[(k, l)],
                    };
                    a[(3 * i + j, col)] += c * v;
                }
            }
        }
    }
}

/// `A[(3i+J, 3k+L)] += c X_iL X_kJ` (the derivative pattern of `F^{-T}` and of `F F^T F`).
#[inline(always)]
pub(crate) fn add_cross(a: &mut Tangent, c: f64, x: &Matrix3<f64>) {
    for k in 0..3 {
        for l in 0..3 {
            let col = 3 * k + l;
            for i in 0..3 {
                for j in 0..3 {
                    a[(3 * i + j, col)] += c * x[(i, l)] * x[(k, j)];
                }
            }
        }
    }
}

/// `A[(3i+J, 3k+L)] += c (delta_ik M_JL + N_ik delta_JL)` for symmetric `M` (material side) and
/// symmetric `N` (spatial side); either may be absent.
#[inline(always)]
pub(crate) fn add_kronecker(
    a: &mut Tangent,
    c: f64,
    m: Option<&Matrix3<f64>>,
    n: Option<&Matrix3<f64>>,
) {
    for i in 0..3 {
        for k in 0..3 {
            for j in 0..3 {
                for l in 0..3 {
                    let mut v = 0.0;
                    if let Some(m) = m {
                        if i == k {
                            v += m[(j, l)];
                        }
                    }
                    if let Some(n) = n {
                        if j == l {
                            v += n[(i, k)];
                        }
                    }
                    a[(3 * i + j, 3 * k + l)] += c * v;
                }
            }
        }
    }
}

/// `sqrt(3/2 s:s)` with `s` the deviator of the (symmetric) stress `sigma`.
pub fn von_mises(sigma: &Matrix3<f64>) -> f64 {
    let p = sigma.trace() / 3.0;
    let s = sigma - Matrix3::from_diagonal_element(p);
    (1.5 * s.component_mul(&s).sum()).sqrt()
}
