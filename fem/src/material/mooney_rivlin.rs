//! Compressible Mooney-Rivlin:
//! `psi = lambda/2 (ln J)^2 - (mu1 + 2 mu2) ln J + mu1/2 (I1 - 3) + mu2/2 (I2 - 3)`,
//! `I1 = tr C`, `I2 = (I1^2 - C:C)/2`, `C = F^T F`, `b = F F^T`, `G = F^{-T}`, `c = mu1 + 2 mu2`:
//! `P = (lambda ln J - c) G + (mu1 + mu2 I1) F - mu2 b F`,
//! `A = lambda G (x) G + (c - lambda ln J) G_iL G_kJ + (mu1 + mu2 I1) d_ik d_JL + 2 mu2 F (x) F
//!      - mu2 (d_ik C_JL + b_ik d_JL + F_iL F_kJ)`.
//!
//! Linearised at `F = I` this is isotropic elasticity with shear modulus `mu1 + mu2` and first Lame
//! parameter `lambda + 2 mu2`.
//!
//! From `h = F - I` without cancellation: with `E = (h + h^T + h^T h)/2`, `I1 - 3 = 2 tr E` and
//! `I2 - 3 = 2 (I1 - 3) + 4 i2(E)` (`i2` the sum of principal minors), so
//! `psi = lambda/2 (ln J)^2 + c (tr h - ln J + h:h/2) + 2 mu2 i2(E)`; and
//! `P = lambda ln J G + c (F - G) + mu2 ((I1 - 2) I - b) F` with `F - G = h + (I - G)`,
//! `(I1 - 2) I - b = (I1 - 3) I - (h + h^T + h h^T)`.

use nalgebra::Matrix3;

use super::kinematics::{cofactor, volume, Volume};
use super::tensor::{add_cross, add_dyad, add_identity, add_kronecker, Tangent};
use crate::error::Result;

/// `I1 - 3 = 2 tr h + h:h`.
#[inline]
fn first_invariant_change(v: &Volume, h: &Matrix3<f64>) -> f64 {
    2.0 * v.tr + h.component_mul(h).sum()
}

pub(crate) fn energy(lambda: f64, mu1: f64, mu2: f64, h: &Matrix3<f64>) -> Result<f64> {
    let v = volume(h)?;
    let lnj = v.ln_j();
    // E = (h + h^T + h^T h)/2; i2(E) the sum of its principal minors.
    let e = (h + h.transpose() + h.transpose() * h) * 0.5;
    let i2e = cofactor(&e).trace();
    Ok(0.5 * lambda * lnj * lnj
        + (mu1 + 2.0 * mu2) * (v.tr_minus_ln_j() + 0.5 * h.component_mul(h).sum())
        + 2.0 * mu2 * i2e)
}

/// `(P, G = F^{-T}, ln J, I1 - 3)`, `P = lambda ln J G + c (h + (I - G)) + mu2 (M + M h)` with
/// `M = (I1 - 3) I - (h + h^T + h h^T)` (`= (I1 - 2) I - b`).
#[inline]
fn stress_parts(m: [f64; 3], h: &Matrix3<f64>) -> Result<(Matrix3<f64>, Matrix3<f64>, f64, f64)> {
    let [lambda, mu1, mu2] = m;
    let v = volume(h)?;
    let (g, id_minus_g) = v.inverse_transpose(h);
    let lnj = v.ln_j();
    let i1m = first_invariant_change(&v, h);
    let mm = Matrix3::from_diagonal_element(i1m) - (h + h.transpose() + h * h.transpose());
    let p = g * (lambda * lnj) + (h + id_minus_g) * (mu1 + 2.0 * mu2) + (mm + mm * h) * mu2;
    Ok((p, g, lnj, i1m))
}

pub(crate) fn stress(lambda: f64, mu1: f64, mu2: f64, h: &Matrix3<f64>) -> Result<Matrix3<f64>> {
    stress_parts([lambda, mu1, mu2], h).map(|(p, ..)| p)
}

pub(crate) fn stress_tangent(
    lambda: f64,
    mu1: f64,
    mu2: f64,
    h: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Tangent)> {
    let (p, g, lnj, i1m) = stress_parts([lambda, mu1, mu2], h)?;
    let f = Matrix3::identity() + h;
    let b = f * f.transpose();
    let c = f.transpose() * f;
    let i1 = 3.0 + i1m;
    let mut a = Tangent::zeros();
    add_identity(&mut a, mu1 + mu2 * i1);
    add_dyad(&mut a, lambda, &g, None);
    add_cross(&mut a, mu1 + 2.0 * mu2 - lambda * lnj, &g);
    add_dyad(&mut a, 2.0 * mu2, &f, None);
    add_kronecker(&mut a, -mu2, Some(&c), Some(&b));
    add_cross(&mut a, -mu2, &f);
    Ok((p, a))
}
