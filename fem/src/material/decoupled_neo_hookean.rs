//! Neo-Hookean with a volumetric/isochoric split:
//! `psi = kappa/4 (J^2 - 1 - 2 ln J) + mu/2 (J^{-2/3} I1 - 3)`.
//!
//! With `G = F^{-T}`, `a = J^{-2/3}`, `p = kappa/2 (J^2 - 1)`:
//! `P = p G + mu a (F - I1/3 G)`,
//! `A = (kappa J^2 + 2/9 mu a I1) G (x) G + (mu a I1 / 3 - p) G_iL G_kJ + mu a d_ik d_JL
//!      - 2/3 mu a (F (x) G + G (x) F)`.
//!
//! From `h = F - I` without cancellation: `J^2 - 1 - 2 ln J = 2 (J - 1 - ln J) + (J - 1)^2`,
//! `a I1 - 3 = a (I1 - 3 J^{2/3})` (second order in `h`, see `isochoric_invariant`) and
//! `F - I1/3 G = h + (I - G) - (I1 - 3)/3 G`.

use nalgebra::Matrix3;

use super::kinematics::{exp_defect, ln_1p_defect, volume, Volume};
use super::tensor::{add_cross, add_dyad, add_identity, Tangent};
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

/// `I1 - 3 = 2 tr h + h:h`.
#[inline]
fn first_invariant_change(v: &Volume, h: &Matrix3<f64>) -> f64 {
    2.0 * v.tr + h.component_mul(h).sum()
}

/// `J^{-2/3} I1 - 3 = J^{-2/3} (I1 - 3 J^{2/3})`, second order in `h`:
/// `I1 - 3 J^{2/3} = 2 (tr h - ln J) + h:h - 3 (e^y - 1 - y)` with `y = 2/3 ln J`.
#[inline]
fn isochoric_invariant_change(v: &Volume, h: &Matrix3<f64>) -> f64 {
    let a = pow_minus_two_thirds(v.j);
    let y = 2.0 / 3.0 * v.ln_j();
    let defect = exp_defect(y, 1.0 / a);
    let change = 2.0 * v.tr_minus_ln_j() + h.component_mul(h).sum() - 3.0 * defect;
    a * change
}

pub(crate) fn energy(kappa: f64, mu: f64, h: &Matrix3<f64>) -> Result<f64> {
    let v = volume(h)?;
    // J^2 - 1 - 2 ln J = 2 (J - 1 - ln J) + (J - 1)^2
    let volumetric = 2.0 * ln_1p_defect(v.jm1) + v.jm1 * v.jm1;
    let isochoric = isochoric_invariant_change(&v, h);
    Ok(0.25 * kappa * volumetric + 0.5 * mu * isochoric)
}

/// The stress and what the tangent reuses.
struct StressParts {
    /// `P = p G + mu J^{-2/3} (h + (I - G) - (I1 - 3)/3 G)` (`= p G + mu J^{-2/3} (F - I1/3 G)`).
    stress: Matrix3<f64>,
    /// `G = F^{-T}`.
    g: Matrix3<f64>,
    j: f64,
    /// `mu J^{-2/3}`.
    mua: f64,
    /// `p = kappa/2 (J^2 - 1) = kappa/2 (J - 1)(2 + (J - 1))`.
    pressure: f64,
    /// `I1 - 3`.
    i1m: f64,
}

#[inline]
fn stress_parts(kappa: f64, mu: f64, h: &Matrix3<f64>) -> Result<StressParts> {
    let v = volume(h)?;
    let (g, id_minus_g) = v.inverse_transpose(h);
    let i1m = first_invariant_change(&v, h);
    let mua = mu * pow_minus_two_thirds(v.j);
    let pressure = 0.5 * kappa * (v.jm1 * (2.0 + v.jm1));
    let dev = h + id_minus_g - g * (i1m / 3.0);
    Ok(StressParts {
        stress: g * pressure + dev * mua,
        g,
        j: v.j,
        mua,
        pressure,
        i1m,
    })
}

pub(crate) fn stress(kappa: f64, mu: f64, h: &Matrix3<f64>) -> Result<Matrix3<f64>> {
    stress_parts(kappa, mu, h).map(|s| s.stress)
}

pub(crate) fn stress_tangent(
    kappa: f64,
    mu: f64,
    h: &Matrix3<f64>,
) -> Result<(Matrix3<f64>, Tangent)> {
    let StressParts {
        stress,
        g,
        j,
        mua,
        pressure: p,
        i1m,
    } = stress_parts(kappa, mu, h)?;
    let f = Matrix3::identity() + h;
    let i1 = 3.0 + i1m;
    let mut a = Tangent::zeros();
    add_identity(&mut a, mua);
    add_dyad(&mut a, kappa * j * j + 2.0 / 9.0 * mua * i1, &g, None);
    add_cross(&mut a, mua * i1 / 3.0 - p, &g);
    add_dyad(&mut a, -2.0 / 3.0 * mua, &f, Some(&g));
    Ok((stress, a))
}
