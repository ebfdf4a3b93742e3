//! Compressible neo-Hookean: `psi = lambda/2 (ln J)^2 - mu ln J + mu/2 (I1 - 3)`, `I1 = F:F`,
//! `P = mu F + (lambda ln J - mu) H` with `H = F^{-T}`,
//! `A_iJkL = mu d_ik d_JL + lambda H_iJ H_kL + (mu - lambda ln J) H_iL H_kJ`.

use nalgebra::Matrix3;

use super::tensor::{
    add_cross, add_dyad, add_identity, volume_ratio_and_inverse_transpose, Tangent,
};
use crate::error::Result;

pub(crate) fn energy(lambda: f64, mu: f64, f: &Matrix3<f64>) -> Result<f64> {
    let (j, _) = volume_ratio_and_inverse_transpose(f)?;
    let lnj = j.ln();
    let i1 = f.component_mul(f).sum();
    Ok(0.5 * lambda * lnj * lnj - mu * lnj + 0.5 * mu * (i1 - 3.0))
}

pub(crate) fn stress(lambda: f64, mu: f64, f: &Matrix3<f64>) -> Result<Matrix3<f64>> {
    let (j, h) = volume_ratio_and_inverse_transpose(f)?;
    Ok(f * mu + h * (lambda * j.ln() - mu))
}

/// `(P, H, mu - lambda ln J)`: the stress with what the element kernel needs to contract the tangent
/// `mu I + lambda H (x) H + (mu - lambda ln J) H_iL H_kJ` without forming it.
#[inline]
pub(crate) fn stress_and_split_tangent(
    lambda: f64,
    mu: f64,
    f: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Matrix3<f64>, f64)> {
    let (j, h) = volume_ratio_and_inverse_transpose(f)?;
    let lnj = j.ln();
    Ok((f * mu + h * (lambda * lnj - mu), h, mu - lambda * lnj))
}

pub(crate) fn stress_tangent(
    lambda: f64,
    mu: f64,
    f: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Tangent)> {
    let (j, h) = volume_ratio_and_inverse_transpose(f)?;
    let lnj = j.ln();
    let mut a = Tangent::zeros();
    add_identity(&mut a, mu);
    add_dyad(&mut a, lambda, &h, None);
    add_cross(&mut a, mu - lambda * lnj, &h);
    Ok((f * mu + h * (lambda * lnj - mu), a))
}
