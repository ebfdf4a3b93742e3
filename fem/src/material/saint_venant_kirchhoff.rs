//! Saint Venant-Kirchhoff: `psi = lambda/2 (tr E)^2 + mu E:E`, `E = (F^T F - I)/2`,
//! `S = lambda tr(E) I + 2 mu E`, `P = F S`,
//! `A_iJkL = d_ik S_JL + lambda F_iJ F_kL + mu (b_ik d_JL + F_iL F_kJ)`, `b = F F^T`.
//! The energy is defined for every `F`, but inverted states are rejected like in the other
//! finite-strain models (`J <= 0` is an error).
//!
//! From `h = F - I`: `E = (h + h^T + h^T h)/2` and `P = S + h S`.

use nalgebra::Matrix3;

use super::kinematics::volume;
use super::tensor::{add_cross, add_dyad, add_kronecker, Tangent};
use crate::error::Result;

/// `E = (h + h^T + h^T h)/2`.
#[inline]
fn green_lagrange(h: &Matrix3<f64>) -> Matrix3<f64> {
    (h + h.transpose() + h.transpose() * h) * 0.5
}

#[inline]
fn second_piola(lambda: f64, mu: f64, e: &Matrix3<f64>) -> Matrix3<f64> {
    e * (2.0 * mu) + Matrix3::from_diagonal_element(lambda * e.trace())
}

pub(crate) fn energy(lambda: f64, mu: f64, h: &Matrix3<f64>) -> Result<f64> {
    volume(h)?;
    let e = green_lagrange(h);
    let tr = e.trace();
    Ok(0.5 * lambda * tr * tr + mu * e.component_mul(&e).sum())
}

pub(crate) fn stress(lambda: f64, mu: f64, h: &Matrix3<f64>) -> Result<Matrix3<f64>> {
    volume(h)?;
    let s = second_piola(lambda, mu, &green_lagrange(h));
    Ok(s + h * s)
}

pub(crate) fn stress_tangent(
    lambda: f64,
    mu: f64,
    h: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Tangent)> {
    volume(h)?;
    let s = second_piola(lambda, mu, &green_lagrange(h));
    let f = Matrix3::identity() + h;
    let b = f * f.transpose();
    let mut a = Tangent::zeros();
    add_kronecker(&mut a, 1.0, Some(&s), None);
    add_kronecker(&mut a, mu, None, Some(&b));
    add_dyad(&mut a, lambda, &f, None);
    add_cross(&mut a, mu, &f);
    Ok((s + h * s, a))
}
