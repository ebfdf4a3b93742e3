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

/// The first guess of `x^(-1/3)` on the bits: the exponent times `-1/3` (within a factor 4/3).
const INVERSE_CUBE_ROOT_GUESS: u64 = 0x5540_0000_0000_0000;

/// Newton steps of [`pow_minus_two_thirds`]: from the guess's 33 % to round-off takes 7.
const INVERSE_CUBE_ROOT_STEPS: usize = 8;

/// `j^(-2/3)` for finite `j > 0`, a few ulp from the exact power (3 at most at powers of 8 over the
/// whole range and in a 60-digit check of random `j`; `powf(-2.0 / 3.0)` raises to the rounded
/// exponent: 2 ulp off at `j = 1e-3`, 230 at `j = 1e300`).
///
/// Built from operations that round identically everywhere (integer arithmetic on the bits, then
/// `*`, `-`, `/`, never fused) so that the device twin `pow_minus_two_thirds` in
/// `fem/cuda/element.cu` (the same operations in the same order) gives the same bits; the C
/// library's `pow` and CUDA's round differently. Newton's iteration for `y = x^(-1/3)`,
/// `y <- y (4 - x y^3) / 3`, a fixed number of times, then `y^2`; a subnormal `j` is scaled by
/// `2^54` first (exactly: `(2^54)^(-1/3) = 2^-18`).
pub(crate) fn pow_minus_two_thirds(j: f64) -> f64 {
    let (x, scale) = if j < f64::MIN_POSITIVE {
        (j * 2f64.powi(54), 2f64.powi(18))
    } else {
        (j, 1.0)
    };
    let mut y = f64::from_bits(INVERSE_CUBE_ROOT_GUESS - x.to_bits() / 3);
    for _ in 0..INVERSE_CUBE_ROOT_STEPS {
        let c = x * y * y * y;
        y *= (4.0 - c) / 3.0;
    }
    let y = y * scale;
    y * y
}

pub(crate) fn energy(kappa: f64, mu: f64, f: &Matrix3<f64>) -> Result<f64> {
    let (j, _) = volume_ratio_and_inverse_transpose(f)?;
    let i1 = f.component_mul(f).sum();
    Ok(0.25 * kappa * (j * j - 1.0 - 2.0 * j.ln())
        + 0.5 * mu * (pow_minus_two_thirds(j) * i1 - 3.0))
}

pub(crate) fn stress(kappa: f64, mu: f64, f: &Matrix3<f64>) -> Result<Matrix3<f64>> {
    let (j, h) = volume_ratio_and_inverse_transpose(f)?;
    let i1 = f.component_mul(f).sum();
    let mua = mu * pow_minus_two_thirds(j);
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
    let mua = mu * pow_minus_two_thirds(j);
    let p = 0.5 * kappa * (j * j - 1.0);
    let mut a = Tangent::zeros();
    add_identity(&mut a, mua);
    add_dyad(&mut a, kappa * j * j + 2.0 / 9.0 * mua * i1, &h, None);
    add_cross(&mut a, mua * i1 / 3.0 - p, &h);
    add_dyad(&mut a, -2.0 / 3.0 * mua, f, Some(&h));
    Ok((f * mua + h * (p - mua * i1 / 3.0), a))
}
