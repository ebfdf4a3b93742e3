//! Neo-Hookean with a volumetric/isochoric split:
//! `psi = kappa/4 (J^2 - 1 - 2 ln J) + mu/2 (J^{-2/3} I1 - 3)`.
//!
//! With `H = F^{-T}`, `a = J^{-2/3}`, `p = kappa/2 (J^2 - 1)`:
//! `P = p H + mu a (F - I1/3 H)`,
//! `A = (kappa J^2 + 2/9 mu a I1) H (x) H + (mu a I1 / 3 - p) H_iL H_kJ + mu a d_ik d_JL
//!      - 2/3 mu a (F (x) H + H (x) F)`.

use nalgebra::Matrix3;

use super::tensor::{
    add_cross, add_dyad, add_identity, volume_ratio_and_inverse_transpose, Tangent,
};
use crate::error::Result;

pub(crate) fn energy(kappa: f64, mu: f64, f: &Matrix3<f64>) -> Result<f64> {
    let (j, _) = volume_ratio_and_inverse_transpose(f)?;
    let i1 = f.component_mul(f).sum();
    Ok(0.25 * kappa * (j * j - 1.0 - 2.0 * j.ln()) + 0.5 * mu * (j.powf(-2.0 / 3.0) * i1 - 3.0))
}

pub(crate) fn stress(kappa: f64, mu: f64, f: &Matrix3<f64>) -> Result<Matrix3<f64>> {
    let (j, h) = volume_ratio_and_inverse_transpose(f)?;
    let i1 = f.component_mul(f).sum();
    let mua = mu * j.powf(-2.0 / 3.0);
    let p = 0.5 * kappa * (j * j - 1.0);
    Ok(f * mua + h * (p - mua * i1 / 3.0))
}

pub(crate) fn stress_tangent(
    kappa: f64,
    mu: f64,
    f: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Tangent)> {
    let (j, h) = volume_ratio_and_inverse_transpose(f)?;
    let i1 = f.component_mul(f).sum();
    let mua = mu * j.powf(-2.0 / 3.0);
    let p = 0.5 * kappa * (j * j - 1.0);
    let mut a = Tangent::zeros();
    add_identity(&mut a, mua);
    add_dyad(&mut a, kappa * j * j + 2.0 / 9.0 * mua * i1, &h, None);
    add_cross(&mut a, mua * i1 / 3.0 - p, &h);
    add_dyad(&mut a, -2.0 / 3.0 * mua, f, Some(&h));
    Ok((f * mua + h * (p - mua * i1 / 3.0), a))
}
