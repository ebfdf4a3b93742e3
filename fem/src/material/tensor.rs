//! Small tensor helpers shared by the material models: accumulation of the index patterns that
//! closed-form tangents are built from (the kinematics are in `kinematics`).
//!
//! Flattening: `A[(3 i + J, 3 k + L)] = dP_iJ / dF_kL` (ARCHITECTURE.md).

use nalgebra::{Matrix3, SMatrix};

/// The 9x9 material tangent.
pub type Tangent = SMatrix<f64, 9, 9>;

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
