//! Hyperelastic (and linear) isotropic materials: energy density, first Piola stress `P` and the
//! material tangent `A = dP/dF` (`A[(3 i + J, 3 k + L)] = dP_iJ / dF_kL`), all per unit reference
//! volume and in closed form.
//!
//! Every function takes the displacement gradient `h = grad_X u` (`F = I + h`), not `F`: the models
//! are written so that stresses and energies keep their relative accuracy at any strain (no
//! `1 + small` rounding, no cancellation of `F` against `F^{-T}`, of `ln J` against `tr h` or of
//! `I1` against 3; see `kinematics`), so their round-off is proportional to the stress, not to the
//! moduli. Every model linearises at `h = 0` to isotropic linear elasticity with the moduli given
//! by [`Material::small_strain_moduli`]; all finite-strain models reject `J = det F <= 0` (NaN
//! included) with [`FemError::NonPositiveJ`]. Constructors validate their parameters; a `Material`
//! built directly from the enum can be checked with [`Material::validate`] (the kernels do not
//! re-check).

mod decoupled_neo_hookean;
mod elementary;
mod kinematics;
mod linear;
mod mooney_rivlin;
mod neo_hookean;
mod saint_venant_kirchhoff;
mod tensor;

#[cfg(test)]
mod tests;

use nalgebra::Matrix3;

pub(crate) use kinematics::{exp_m1, j_minus_one, ln_1p};
pub use tensor::{von_mises, Tangent};

use crate::error::{FemError, Result};

/// Isotropic small-strain moduli (Lame parameters), validated: `mu > 0` and bulk modulus
/// `kappa = lambda + 2 mu / 3 > 0` (equivalently `E > 0`, `-1 < nu < 1/2`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moduli {
    lambda: f64,
    mu: f64,
}

impl Moduli {
    /// From Young's modulus `e > 0` and Poisson's ratio `-1 < nu < 1/2`.
    pub fn from_young_poisson(e: f64, nu: f64) -> Result<Self> {
        if !(e > 0.0 && e.is_finite()) {
            return Err(invalid(
                "E",
                e,
                "Young's modulus must be positive and finite",
            ));
        }
        if !(nu > -1.0 && nu < 0.5) {
            return Err(invalid("nu", nu, "Poisson's ratio must lie in (-1, 0.5)"));
        }
        let lambda = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
        let mu = e / (2.0 * (1.0 + nu));
        Self::from_lame(lambda, mu)
    }

    /// From the Lame parameters.
    pub fn from_lame(lambda: f64, mu: f64) -> Result<Self> {
        check_shear_bulk("mu", mu, "lambda + 2 mu / 3", lambda + 2.0 * mu / 3.0)?;
        Ok(Self { lambda, mu })
    }

    /// First Lame parameter.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// Shear modulus.
    pub fn mu(&self) -> f64 {
        self.mu
    }

    /// Bulk modulus `lambda + 2 mu / 3`.
    pub fn kappa(&self) -> f64 {
        self.lambda + 2.0 * self.mu / 3.0
    }

    /// Young's modulus.
    pub fn young(&self) -> f64 {
        self.mu * (3.0 * self.lambda + 2.0 * self.mu) / (self.lambda + self.mu)
    }

    /// Poisson's ratio.
    pub fn poisson(&self) -> f64 {
        0.5 * self.lambda / (self.lambda + self.mu)
    }
}

fn invalid(name: &'static str, value: f64, requirement: &'static str) -> FemError {
    FemError::InvalidMaterial {
        name,
        value,
        requirement,
    }
}

fn check_shear_bulk(
    mu_name: &'static str,
    mu: f64,
    kappa_name: &'static str,
    kappa: f64,
) -> Result<()> {
    if !(mu > 0.0 && mu.is_finite()) {
        return Err(invalid(
            mu_name,
            mu,
            "shear modulus must be positive and finite",
        ));
    }
    if !(kappa > 0.0 && kappa.is_finite()) {
        return Err(invalid(
            kappa_name,
            kappa,
            "bulk modulus must be positive and finite",
        ));
    }
    Ok(())
}

/// An isotropic elastic material (see the module of each model for its formulas).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Material {
    /// Small-strain linear elasticity, `eps = sym(h)`, `P = sigma(eps)`.
    Linear { lambda: f64, mu: f64 },
    /// `psi = lambda/2 (tr E)^2 + mu E:E`.
    SaintVenantKirchhoff { lambda: f64, mu: f64 },
    /// `psi = lambda/2 (ln J)^2 - mu ln J + mu/2 (I1 - 3)`.
    NeoHookean { lambda: f64, mu: f64 },
    /// `psi = kappa/4 (J^2 - 1 - 2 ln J) + mu/2 (J^{-2/3} I1 - 3)`.
    DecoupledNeoHookean { kappa: f64, mu: f64 },
    /// `psi = lambda/2 (ln J)^2 - (mu1 + 2 mu2) ln J + mu1/2 (I1 - 3) + mu2/2 (I2 - 3)`;
    /// small-strain moduli: shear `mu1 + mu2`, first Lame `lambda + 2 mu2`.
    MooneyRivlin { lambda: f64, mu1: f64, mu2: f64 },
}

impl Material {
    /// Linear elasticity with the given moduli.
    pub fn linear(m: Moduli) -> Self {
        Material::Linear {
            lambda: m.lambda,
            mu: m.mu,
        }
    }

    /// Saint Venant-Kirchhoff with the given moduli.
    pub fn saint_venant_kirchhoff(m: Moduli) -> Self {
        Material::SaintVenantKirchhoff {
            lambda: m.lambda,
            mu: m.mu,
        }
    }

    /// Compressible neo-Hookean with the given moduli.
    pub fn neo_hookean(m: Moduli) -> Self {
        Material::NeoHookean {
            lambda: m.lambda,
            mu: m.mu,
        }
    }

    /// Decoupled neo-Hookean with `kappa = lambda + 2 mu / 3`.
    pub fn decoupled_neo_hookean(m: Moduli) -> Self {
        Material::DecoupledNeoHookean {
            kappa: m.kappa(),
            mu: m.mu,
        }
    }

    /// Mooney-Rivlin whose linearisation at `h = 0` is `m`: the shear modulus is split as
    /// `mu2 = mu2_fraction * mu`, `mu1 = mu - mu2`, and the energy's `lambda` is `m.lambda - 2 mu2`.
    /// `mu2_fraction` must lie in `[0, 1]`.
    pub fn mooney_rivlin(m: Moduli, mu2_fraction: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&mu2_fraction) {
            return Err(invalid("mu2_fraction", mu2_fraction, "must lie in [0, 1]"));
        }
        let mu2 = mu2_fraction * m.mu;
        let mat = Material::MooneyRivlin {
            lambda: m.lambda - 2.0 * mu2,
            mu1: m.mu - mu2,
            mu2,
        };
        mat.validate()?;
        Ok(mat)
    }

    /// Checks the parameters: positive finite shear and bulk moduli of the linearisation at `h = 0`
    /// (and `mu1, mu2 >= 0` for Mooney-Rivlin).
    pub fn validate(&self) -> Result<()> {
        match *self {
            Material::Linear { lambda, mu }
            | Material::SaintVenantKirchhoff { lambda, mu }
            | Material::NeoHookean { lambda, mu } => {
                check_shear_bulk("mu", mu, "lambda + 2 mu / 3", lambda + 2.0 * mu / 3.0)
            }
            Material::DecoupledNeoHookean { kappa, mu } => {
                check_shear_bulk("mu", mu, "kappa", kappa)
            }
            Material::MooneyRivlin { lambda, mu1, mu2 } => {
                if mu1 < 0.0 || mu1.is_nan() {
                    return Err(invalid("mu1", mu1, "must be non-negative"));
                }
                if mu2 < 0.0 || mu2.is_nan() {
                    return Err(invalid("mu2", mu2, "must be non-negative"));
                }
                let mu = mu1 + mu2;
                check_shear_bulk(
                    "mu1 + mu2",
                    mu,
                    "lambda + 2 mu2 + 2 (mu1 + mu2) / 3",
                    lambda + 2.0 * mu2 + 2.0 * mu / 3.0,
                )
            }
        }
    }

    /// Moduli of the linearisation at `h = 0` (the tangent there is
    /// `lambda I (x) I + mu (d_ik d_JL + d_iL d_kJ)`). Not validated.
    pub fn small_strain_moduli(&self) -> (f64, f64) {
        match *self {
            Material::Linear { lambda, mu }
            | Material::SaintVenantKirchhoff { lambda, mu }
            | Material::NeoHookean { lambda, mu } => (lambda, mu),
            Material::DecoupledNeoHookean { kappa, mu } => (kappa - 2.0 * mu / 3.0, mu),
            Material::MooneyRivlin { lambda, mu1, mu2 } => (lambda + 2.0 * mu2, mu1 + mu2),
        }
    }

    /// Poisson's ratio of the linearisation at `h = 0`, `lambda / (2 (lambda + mu))` of
    /// [`Self::small_strain_moduli`], for every model (given as Young's modulus and Poisson's
    /// ratio, Lame's or bulk and shear moduli alike). Not validated.
    pub fn small_strain_poisson_ratio(&self) -> f64 {
        let (lambda, mu) = self.small_strain_moduli();
        0.5 * lambda / (lambda + mu)
    }

    /// Short name of the model.
    pub fn name(&self) -> &'static str {
        match self {
            Material::Linear { .. } => "linear",
            Material::SaintVenantKirchhoff { .. } => "saint_venant_kirchhoff",
            Material::NeoHookean { .. } => "neo_hookean",
            Material::DecoupledNeoHookean { .. } => "decoupled_neo_hookean",
            Material::MooneyRivlin { .. } => "mooney_rivlin",
        }
    }

    /// The model's number in the device kernels (`MATERIAL` of `fem/cuda/element.cu`): 0 linear,
    /// 1 Saint Venant-Kirchhoff, 2 neo-Hookean, 3 decoupled neo-Hookean, 4 Mooney-Rivlin.
    pub fn device_code(&self) -> i64 {
        match self {
            Material::Linear { .. } => 0,
            Material::SaintVenantKirchhoff { .. } => 1,
            Material::NeoHookean { .. } => 2,
            Material::DecoupledNeoHookean { .. } => 3,
            Material::MooneyRivlin { .. } => 4,
        }
    }

    /// The parameters `(p0, p1, p2)` the device kernels take: `(lambda, mu, 0)` for linear, SVK and
    /// neo-Hookean, `(kappa, mu, 0)` for decoupled neo-Hookean, `(lambda, mu1, mu2)` for
    /// Mooney-Rivlin.
    pub fn device_params(&self) -> [f64; 3] {
        match *self {
            Material::Linear { lambda, mu }
            | Material::SaintVenantKirchhoff { lambda, mu }
            | Material::NeoHookean { lambda, mu } => [lambda, mu, 0.0],
            Material::DecoupledNeoHookean { kappa, mu } => [kappa, mu, 0.0],
            Material::MooneyRivlin { lambda, mu1, mu2 } => [lambda, mu1, mu2],
        }
    }

    /// Strain energy per unit reference volume at the displacement gradient `h = grad_X u`
    /// (`F = I + h`).
    pub fn energy(&self, h: &Matrix3<f64>) -> Result<f64> {
        match *self {
            Material::Linear { lambda, mu } => Ok(linear::energy(lambda, mu, h)),
            Material::SaintVenantKirchhoff { lambda, mu } => {
                saint_venant_kirchhoff::energy(lambda, mu, h)
            }
            Material::NeoHookean { lambda, mu } => neo_hookean::energy(lambda, mu, h),
            Material::DecoupledNeoHookean { kappa, mu } => {
                decoupled_neo_hookean::energy(kappa, mu, h)
            }
            Material::MooneyRivlin { lambda, mu1, mu2 } => {
                mooney_rivlin::energy(lambda, mu1, mu2, h)
            }
        }
    }

    /// First Piola stress `P = d psi / dF` at `h = grad_X u` (`F = I + h`).
    pub fn stress(&self, h: &Matrix3<f64>) -> Result<Matrix3<f64>> {
        match *self {
            Material::Linear { lambda, mu } => Ok(linear::stress(lambda, mu, h)),
            Material::SaintVenantKirchhoff { lambda, mu } => {
                saint_venant_kirchhoff::stress(lambda, mu, h)
            }
            Material::NeoHookean { lambda, mu } => neo_hookean::stress(lambda, mu, h),
            Material::DecoupledNeoHookean { kappa, mu } => {
                decoupled_neo_hookean::stress(kappa, mu, h)
            }
            Material::MooneyRivlin { lambda, mu1, mu2 } => {
                mooney_rivlin::stress(lambda, mu1, mu2, h)
            }
        }
    }

    /// `(P, A)` at `h = grad_X u` (`F = I + h`), with `A[(3 i + J, 3 k + L)] = dP_iJ / dF_kL`
    /// (`= dP_iJ / dh_kL`; symmetric for every model here).
    #[inline]
    pub fn stress_tangent(&self, h: &Matrix3<f64>) -> Result<(Matrix3<f64>, Tangent)> {
        match *self {
            Material::Linear { lambda, mu } => {
                Ok((linear::stress(lambda, mu, h), linear::tangent(lambda, mu)))
            }
            Material::SaintVenantKirchhoff { lambda, mu } => {
                saint_venant_kirchhoff::stress_tangent(lambda, mu, h)
            }
            Material::NeoHookean { lambda, mu } => neo_hookean::stress_tangent(lambda, mu, h),
            Material::DecoupledNeoHookean { kappa, mu } => {
                decoupled_neo_hookean::stress_tangent(kappa, mu, h)
            }
            Material::MooneyRivlin { lambda, mu1, mu2 } => {
                mooney_rivlin::stress_tangent(lambda, mu1, mu2, h)
            }
        }
    }

    /// Cauchy stress `sigma = P F^T / J` at `h = grad_X u` (`F = I + h`); for
    /// [`Material::Linear`] the small-strain stress `P` itself (no distinction between
    /// configurations).
    pub fn cauchy(&self, h: &Matrix3<f64>) -> Result<Matrix3<f64>> {
        let p = self.stress(h)?;
        Ok(cauchy_from_piola(self, &p, h))
    }
}

/// Stress and tangent of a model whose tangent has the form
/// `A = c[0] I + c[1] G (x) G + c[2] G_iL G_kJ` (`I` the 9x9 identity, `G = finv_t`), which element
/// kernels contract with gradients through `G g_a` in `O(1)` per node pair instead of forming `A`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SplitTangent {
    pub p: Matrix3<f64>,
    /// `G`: `F^{-T}` for neo-Hookean, `I` for the linear model.
    pub finv_t: Matrix3<f64>,
    pub c: [f64; 3],
}

/// The [`SplitTangent`] at `h = grad_X u` (`F = I + h`) of neo-Hookean and linear (`G = I`)
/// materials; `None` for other models.
#[inline]
pub(crate) fn split_tangent(material: &Material, h: &Matrix3<f64>) -> Option<Result<SplitTangent>> {
    match *material {
        Material::Linear { lambda, mu } => Some(Ok(SplitTangent {
            p: linear::stress(lambda, mu, h),
            finv_t: Matrix3::identity(),
            c: [mu, lambda, mu],
        })),
        Material::NeoHookean { lambda, mu } => {
            Some(neo_hookean::stress_and_split_tangent(lambda, mu, h).map(
                |(p, finv_t, c_cross)| SplitTangent {
                    p,
                    finv_t,
                    c: [mu, lambda, c_cross],
                },
            ))
        }
        _ => None,
    }
}

/// `sym(P F^T) / J = sym(P + P h^T) / (1 + (J - 1))` at `h = grad_X u` for finite-strain models
/// (whose `stress` already checked `J > 0`); `P` for the linear model.
#[inline]
pub(crate) fn cauchy_from_piola(
    material: &Material,
    p: &Matrix3<f64>,
    h: &Matrix3<f64>,
) -> Matrix3<f64> {
    match material {
        Material::Linear { .. } => *p,
        _ => {
            let s = (p + p * h.transpose()) / (1.0 + j_minus_one(h));
            (s + s.transpose()) * 0.5
        }
    }
}
