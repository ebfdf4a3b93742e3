//! Compressible neo-Hookean: `psi = lambda/2 (ln J)^2 - mu ln J + mu/2 (I1 - 3)`, `I1 = F:F`,
//! `P = mu F + (lambda ln J - mu) G` with `G = F^{-T}`,
//! `A_iJkL = mu d_ik d_JL + lambda G_iJ G_kL + (mu - lambda ln J) G_iL G_kJ`.
//!
//! From `h = F - I` without cancellation: `I1 - 3 = 2 tr h + h:h`, so
//! `psi = lambda/2 (ln J)^2 + mu (tr h - ln J + h:h/2)`, and `P = mu (h + (I - G)) + lambda ln J G`.

use nalgebra::Matrix3;

use super::kinematics::volume;
use super::tensor::{add_cross, add_dyad, add_identity, Tangent};
use crate::error::Result;

pub(crate) fn energy(lambda: f64, mu: f64, h: &Matrix3<f64>) -> Result<f64> {
    let v = volume(h)?;
    let lnj = v.ln_j();
    Ok(0.5 * lambda * lnj * lnj + mu * (v.tr_minus_ln_j() + 0.5 * h.component_mul(h).sum()))
}

/// `(P, G = F^{-T}, ln J)`.
#[inline]
fn stress_inverse_log(
    lambda: f64,
    mu: f64,
    h: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Matrix3<f64>, f64)> {
    let v = volume(h)?;
    let (g, id_minus_g) = v.inverse_transpose(h);
    let lnj = v.ln_j();
    Ok(((h + id_minus_g) * mu + g * (lambda * lnj), g, lnj))
}

pub(crate) fn stress(lambda: f64, mu: f64, h: &Matrix3<f64>) -> Result<Matrix3<f64>> {
    stress_inverse_log(lambda, mu, h).map(|(p, _, _)| p)
}

/// `(P, G, mu - lambda ln J)`: the stress with what the element kernel needs to contract the tangent
/// `mu I + lambda G (x) G + (mu - lambda ln J) G_iL G_kJ` without forming it.
#[inline]
pub(crate) fn stress_and_split_tangent(
    lambda: f64,
    mu: f64,
    h: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Matrix3<f64>, f64)> {
    let (p, g, lnj) = stress_inverse_log(lambda, mu, h)?;
    Ok((p, g, mu - lambda * lnj))
}

pub(crate) fn stress_tangent(
    lambda: f64,
    mu: f64,
    h: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Tangent)> {
    let (p, g, lnj) = stress_inverse_log(lambda, mu, h)?;
    let mut a = Tangent::zeros();
    add_identity(&mut a, mu);
    add_dyad(&mut a, lambda, &g, None);
    add_cross(&mut a, mu - lambda * lnj, &g);
    Ok((p, a))
}
