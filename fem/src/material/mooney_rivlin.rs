//! Compressible Mooney-Rivlin:
//! `psi = lambda/2 (ln J)^2 - (mu1 + 2 mu2) ln J + mu1/2 (I1 - 3) + mu2/2 (I2 - 3)`,
//! `I1 = tr C`, `I2 = (I1^2 - C:C)/2`, `C = F^T F`, `b = F F^T`, `H = F^{-T}`, `c = mu1 + 2 mu2`:
//! `P = (lambda ln J - c) H + (mu1 + mu2 I1) F - mu2 b F`,
//! `A = lambda H (x) H + (c - lambda ln J) H_iL H_kJ + (mu1 + mu2 I1) d_ik d_JL + 2 mu2 F (x) F
//!      - mu2 (d_ik C_JL + b_ik d_JL + F_iL F_kJ)`.
//!
//! Linearised at `F = I` this is isotropic elasticity with shear modulus `mu1 + mu2` and first Lame
//! parameter `lambda + 2 mu2`.

use nalgebra::Matrix3;

use super::tensor::{
    add_cross, add_dyad, add_identity, add_kronecker, volume_ratio_and_inverse_transpose, Tangent,
};
use crate::error::Result;

pub(crate) fn energy(lambda: f64, mu1: f64, mu2: f64, f: &Matrix3<f64>) -> Result<f64> {
    let (j, _) = volume_ratio_and_inverse_transpose(f)?;
    let lnj = j.ln();
    let c = f.transpose() * f;
    let i1 = c.trace();
    let i2 = 0.5 * (i1 * i1 - c.component_mul(&c).sum());
    Ok(0.5 * lambda * lnj * lnj - (mu1 + 2.0 * mu2) * lnj
        + 0.5 * mu1 * (i1 - 3.0)
        + 0.5 * mu2 * (i2 - 3.0))
}

/// `P` from the precomputed `ln J`, `H`, `b` (and `I1 = tr b`).
#[inline]
fn first_piola(
    m: [f64; 3],
    f: &Matrix3<f64>,
    lnj: f64,
    h: &Matrix3<f64>,
    b: &Matrix3<f64>,
) -> Matrix3<f64> {
    let [lambda, mu1, mu2] = m;
    h * (lambda * lnj - (mu1 + 2.0 * mu2)) + f * (mu1 + mu2 * b.trace()) - (b * f) * mu2
}

pub(crate) fn stress(lambda: f64, mu1: f64, mu2: f64, f: &Matrix3<f64>) -> Result<Matrix3<f64>> {
    let (j, h) = volume_ratio_and_inverse_transpose(f)?;
    let b = f * f.transpose();
    Ok(first_piola([lambda, mu1, mu2], f, j.ln(), &h, &b))
}

pub(crate) fn stress_tangent(
    lambda: f64,
    mu1: f64,
    mu2: f64,
    f: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Tangent)> {
    let (j, h) = volume_ratio_and_inverse_transpose(f)?;
    let lnj = j.ln();
    let b = f * f.transpose();
    let c = f.transpose() * f;
    let i1 = b.trace();
    let mut a = Tangent::zeros();
    add_identity(&mut a, mu1 + mu2 * i1);
    add_dyad(&mut a, lambda, &h, None);
    add_cross(&mut a, mu1 + 2.0 * mu2 - lambda * lnj, &h);
    add_dyad(&mut a, 2.0 * mu2, f, None);
    add_kronecker(&mut a, -mu2, Some(&c), Some(&b));
    add_cross(&mut a, -mu2, f);
    Ok((first_piola([lambda, mu1, mu2], f, lnj, &h, &b), a))
}
