//! Linear (small-strain) isotropic elasticity:
//! `psi = lambda/2 tr(eps)^2 + mu eps:eps`, `eps = sym(h)` (`h = grad_X u = F - I`),
//! `P = sigma = lambda tr(eps) I + 2 mu eps`,
//! `A_iJkL = lambda d_iJ d_kL + mu (d_ik d_JL + d_iL d_kJ)` (constant). Defined for every `h`.

use nalgebra::Matrix3;

use super::tensor::{add_identity, Tangent};

#[inline]
fn strain(h: &Matrix3<f64>) -> Matrix3<f64> {
    (h + h.transpose()) * 0.5
}

pub(crate) fn energy(lambda: f64, mu: f64, h: &Matrix3<f64>) -> f64 {
    let e = strain(h);
    let tr = e.trace();
    0.5 * lambda * tr * tr + mu * e.component_mul(&e).sum()
}

#[inline]
pub(crate) fn stress(lambda: f64, mu: f64, h: &Matrix3<f64>) -> Matrix3<f64> {
    let e = strain(h);
    e * (2.0 * mu) + Matrix3::from_diagonal_element(lambda * e.trace())
}

/// The constant tangent `lambda I (x) I + mu (d_ik d_JL + d_iL d_kJ)`.
pub(crate) fn tangent(lambda: f64, mu: f64) -> Tangent {
    let mut a = Tangent::zeros();
    add_identity(&mut a, mu);
    for i in 0..3 {
        for k in 0..3 {
            // d_iJ d_kL: J = i, L = k.
            a[(4 * i, 4 * k)] += lambda;
            // d_iL d_kJ: L = i, J = k.
            a[(3 * i + k, 3 * k + i)] += mu;
        }
    }
    a
}
