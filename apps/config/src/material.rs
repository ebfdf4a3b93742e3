//! Material entries: the model, the cells it applies to and its elastic parameters, given either
//! as Young's modulus and Poisson's ratio or as the model's own moduli.

use std::fmt;

use fem::Material;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Constitutive model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MaterialModel {
    /// Small-strain linear elasticity.
    Linear,
    /// St. Venant-Kirchhoff: linear in the Green-Lagrange strain.
    SaintVenantKirchhoff,
    /// Compressible neo-Hookean with Lame constants.
    NeoHookean,
    /// Neo-Hookean with an isochoric/volumetric split (bulk modulus `kappa`).
    DecoupledNeoHookean,
    /// Compressible Mooney-Rivlin (`mu1`, `mu2` on I1, I2; shear modulus `mu1 + mu2`).
    MooneyRivlin,
}

impl MaterialModel {
    /// The YAML name of the model.
    pub fn name(self) -> &'static str {
        match self {
            MaterialModel::Linear => "linear",
            MaterialModel::SaintVenantKirchhoff => "saint_venant_kirchhoff",
            MaterialModel::NeoHookean => "neo_hookean",
            MaterialModel::DecoupledNeoHookean => "decoupled_neo_hookean",
            MaterialModel::MooneyRivlin => "mooney_rivlin",
        }
    }

    /// The parameter sets the model accepts; an entry gives exactly one of them.
    pub fn accepted_parameters(self) -> &'static [&'static [&'static str]] {
        match self {
            MaterialModel::Linear
            | MaterialModel::SaintVenantKirchhoff
            | MaterialModel::NeoHookean => &[ENGINEERING, &["lambda", "mu"]],
            MaterialModel::DecoupledNeoHookean => &[ENGINEERING, &["kappa", "mu"]],
            MaterialModel::MooneyRivlin => &[
                &["lambda", "mu1", "mu2"],
                &["young_modulus", "poisson_ratio", "mu2_fraction"],
            ],
        }
    }
}

const ENGINEERING: &[&str] = &["young_modulus", "poisson_ratio"];

/// The parameter keys of a material entry, in the order of [`MaterialParams`]' fields.
pub(crate) const PARAMETER_KEYS: [&str; 8] = [
    "young_modulus",
    "poisson_ratio",
    "lambda",
    "mu",
    "kappa",
    "mu1",
    "mu2",
    "mu2_fraction",
];

/// The cells a material entry applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CellSelection {
    /// Every cell (YAML `all`).
    #[default]
    All,
    /// The cells of a cell set, by its name or its numeric id (Exodus II element blocks).
    Set(String),
}

impl<'de> Deserialize<'de> for CellSelection {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = crate::params::set_name(deserializer)?;
        Ok(match name.as_str() {
            "all" => CellSelection::All,
            _ => CellSelection::Set(name),
        })
    }
}

impl Serialize for CellSelection {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CellSelection::All => serializer.serialize_str("all"),
            CellSelection::Set(name) => serializer.serialize_str(name),
        }
    }
}

/// One `materials` entry. Exactly one of the model's accepted parameter sets must be given
/// (see [`MaterialModel::accepted_parameters`]); [`MaterialParams::material`] resolves it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialParams {
    /// A cell set (its name, or its numeric id) or `all`. Default `all`.
    #[serde(default)]
    pub cells: CellSelection,
    /// Constitutive model (required).
    pub model: MaterialModel,
    /// Young's modulus E > 0, with `poisson_ratio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub young_modulus: Option<f64>,
    /// Poisson's ratio, -1 < nu < 0.5, with `young_modulus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poisson_ratio: Option<f64>,
    /// First Lame constant lambda (3 lambda + 2 mu > 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
    /// Shear modulus mu > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu: Option<f64>,
    /// Bulk modulus kappa > 0 (`decoupled_neo_hookean`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kappa: Option<f64>,
    /// Mooney-Rivlin coefficient of I1, mu1 >= 0 (mu1 + mu2 > 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu1: Option<f64>,
    /// Mooney-Rivlin coefficient of I2, mu2 >= 0 (mu1 + mu2 > 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu2: Option<f64>,
    /// Mooney-Rivlin from (E, nu): the share of the shear modulus carried by I2, in [0, 1]
    /// (`mu2 = mu2_fraction * mu`, `mu1 = mu - mu2`, lambda chosen so that the linearisation at
    /// F = I is the (E, nu) material).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu2_fraction: Option<f64>,
}

/// Why a material entry's parameters do not define the model.
#[derive(Clone, Debug, PartialEq)]
pub enum MaterialError {
    /// The given keys are not exactly one accepted parameter set.
    Parameters {
        model: MaterialModel,
        given: Vec<&'static str>,
    },
    /// A parameter is out of range; `key` names the offending YAML key.
    OutOfRange {
        key: &'static str,
        value: f64,
        requirement: &'static str,
    },
}

impl MaterialError {
    /// The YAML key the error is about, if a single one.
    pub fn key(&self) -> Option<&'static str> {
        match self {
            MaterialError::Parameters { .. } => None,
            MaterialError::OutOfRange { key, .. } => Some(key),
        }
    }
}

impl fmt::Display for MaterialError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            MaterialError::Parameters { model, given } => {
                let sets: Vec<String> = model
                    .accepted_parameters()
                    .iter()
                    .map(|set| format!("({})", set.join(", ")))
                    .collect();
                let given = if given.is_empty() {
                    "none".to_owned()
                } else {
                    given.join(", ")
                };
                write!(
                    f,
                    "model `{}` takes exactly one of the parameter sets {}; given: {given}",
                    model.name(),
                    sets.join(" or ")
                )
            }
            MaterialError::OutOfRange {
                key,
                value,
                requirement,
            } => write!(f, "`{key}` = {value} is out of range: {requirement}"),
        }
    }
}

impl std::error::Error for MaterialError {}

impl MaterialParams {
    /// The parameters given, as (key, value) in schema order.
    fn given(&self) -> Vec<(&'static str, f64)> {
        PARAMETER_KEYS
            .into_iter()
            .zip([
                self.young_modulus,
                self.poisson_ratio,
                self.lambda,
                self.mu,
                self.kappa,
                self.mu1,
                self.mu2,
                self.mu2_fraction,
            ])
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect()
    }

    /// Resolves the element layer's material from whichever accepted parameter set is given,
    /// checking ranges: E > 0, -1 < nu < 0.5, mu > 0, kappa > 0, 3 lambda + 2 mu > 0, mu1,
    /// mu2 >= 0 with mu1 + mu2 > 0. From (E, nu): lambda = E nu / ((1 + nu)(1 - 2 nu)), mu = E / (2 (1 + nu)),
    /// kappa = E / (3 (1 - 2 nu)).
    pub fn material(&self) -> Result<Material, MaterialError> {
        let given = self.given();
        let keys: Vec<&'static str> = given.iter().map(|(k, _)| *k).collect();
        let set = self
            .model
            .accepted_parameters()
            .iter()
            .find(|set| set.len() == keys.len() && set.iter().all(|k| keys.contains(k)))
            .ok_or_else(|| MaterialError::Parameters {
                model: self.model,
                given: keys.clone(),
            })?;
        for &(key, value) in &given {
            require(key, value, value.is_finite(), "must be finite")?;
        }
        let value = |key: &str| given.iter().find(|(k, _)| *k == key).map_or(0.0, |g| g.1);
        // (lambda, mu, kappa) of the isotropic models from the set given.
        let isotropic = || -> Result<(f64, f64, f64), MaterialError> {
            if *set == ENGINEERING {
                let (e, nu) = (value("young_modulus"), value("poisson_ratio"));
                require("young_modulus", e, e > 0.0, "must be > 0")?;
                let range = "must satisfy -1 < nu < 0.5";
                require("poisson_ratio", nu, nu > -1.0 && nu < 0.5, range)?;
                let lambda = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
                Ok((lambda, e / (2.0 * (1.0 + nu)), e / (3.0 * (1.0 - 2.0 * nu))))
            } else if set.contains(&"kappa") {
                let (kappa, mu) = (value("kappa"), value("mu"));
                require("mu", mu, mu > 0.0, "must be > 0")?;
                require("kappa", kappa, kappa > 0.0, "must be > 0")?;
                Ok((kappa - 2.0 * mu / 3.0, mu, kappa))
            } else {
                let (lambda, mu) = (value("lambda"), value("mu"));
                require("mu", mu, mu > 0.0, "must be > 0")?;
                let kappa = lambda + 2.0 * mu / 3.0;
                require("lambda", lambda, kappa > 0.0, "3 lambda + 2 mu must be > 0")?;
                Ok((lambda, mu, kappa))
            }
        };
        Ok(match self.model {
            MaterialModel::Linear => {
                let (lambda, mu, _) = isotropic()?;
                Material::Linear { lambda, mu }
            }
            MaterialModel::SaintVenantKirchhoff => {
                let (lambda, mu, _) = isotropic()?;
                Material::SaintVenantKirchhoff { lambda, mu }
            }
            MaterialModel::NeoHookean => {
                let (lambda, mu, _) = isotropic()?;
                Material::NeoHookean { lambda, mu }
            }
            MaterialModel::DecoupledNeoHookean => {
                let (_, mu, kappa) = isotropic()?;
                Material::DecoupledNeoHookean { kappa, mu }
            }
            MaterialModel::MooneyRivlin => {
                // the element layer owns the model's admissible range; report it on the YAML key
                let material = if set.contains(&"mu2_fraction") {
                    let (e, nu) = (value("young_modulus"), value("poisson_ratio"));
                    fem::Moduli::from_young_poisson(e, nu)
                        .and_then(|m| Material::mooney_rivlin(m, value("mu2_fraction")))
                } else {
                    let m = Material::MooneyRivlin {
                        lambda: value("lambda"),
                        mu1: value("mu1"),
                        mu2: value("mu2"),
                    };
                    m.validate().map(|()| m)
                };
                material.map_err(out_of_range)?
            }
        })
    }
}

/// A range error of the element layer, reported on the YAML key it concerns.
fn out_of_range(e: fem::FemError) -> MaterialError {
    match e {
        fem::FemError::InvalidMaterial {
            name,
            value,
            requirement,
        } => {
            let key = match name {
                "E" => "young_modulus",
                "nu" => "poisson_ratio",
                "mu1" => "mu1",
                "mu2" | "mu1 + mu2" => "mu2",
                "mu2_fraction" => "mu2_fraction",
                _ => "lambda",
            };
            MaterialError::OutOfRange {
                key,
                value,
                requirement,
            }
        }
        _ => MaterialError::OutOfRange {
            key: "lambda",
            value: f64::NAN,
            requirement: "is not an admissible material",
        },
    }
}

fn require(
    key: &'static str,
    value: f64,
    ok: bool,
    requirement: &'static str,
) -> Result<(), MaterialError> {
    if ok {
        Ok(())
    } else {
        Err(MaterialError::OutOfRange {
            key,
            value,
            requirement,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(model: MaterialModel) -> MaterialParams {
        MaterialParams {
            cells: CellSelection::All,
            model,
            young_modulus: None,
            poisson_ratio: None,
            lambda: None,
            mu: None,
            kappa: None,
            mu1: None,
            mu2: None,
            mu2_fraction: None,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn engineering_constants_convert_to_lame_and_bulk() {
        let e = 210.0e3;
        let nu = 0.3;
        let m = MaterialParams {
            young_modulus: Some(e),
            poisson_ratio: Some(nu),
            ..entry(MaterialModel::NeoHookean)
        };
        let Material::NeoHookean { lambda, mu } = m.material().unwrap() else {
            panic!("wrong variant")
        };
        // Textbook values for steel-like constants: lambda = 121153.846..., mu = 80769.230...
        assert!(close(lambda, 121_153.846_153_846_15), "{lambda}");
        assert!(close(mu, 80_769.230_769_230_77), "{mu}");
        // Back-conversion: E = mu (3 lambda + 2 mu) / (lambda + mu), nu = lambda / (2 (lambda + mu)).
        assert!(close(mu * (3.0 * lambda + 2.0 * mu) / (lambda + mu), e));
        assert!(close(lambda / (2.0 * (lambda + mu)), nu));

        let m = MaterialParams {
            model: MaterialModel::DecoupledNeoHookean,
            ..m
        };
        let Material::DecoupledNeoHookean { kappa, mu } = m.material().unwrap() else {
            panic!("wrong variant")
        };
        assert!(close(kappa, e / (3.0 * (1.0 - 2.0 * nu))));
        assert!(close(kappa, 175_000.0));
        assert!(close(mu, 80_769.230_769_230_77));
    }

    #[test]
    fn own_moduli_pass_through() {
        let m = MaterialParams {
            kappa: Some(5.0),
            mu: Some(2.0),
            ..entry(MaterialModel::DecoupledNeoHookean)
        };
        assert_eq!(
            m.material().unwrap(),
            Material::DecoupledNeoHookean {
                kappa: 5.0,
                mu: 2.0
            }
        );
        let m = MaterialParams {
            lambda: Some(3.0),
            mu1: Some(1.0),
            mu2: Some(0.5),
            ..entry(MaterialModel::MooneyRivlin)
        };
        assert_eq!(
            m.material().unwrap(),
            Material::MooneyRivlin {
                lambda: 3.0,
                mu1: 1.0,
                mu2: 0.5
            }
        );
        let m = MaterialParams {
            lambda: Some(-0.5),
            mu: Some(1.0),
            ..entry(MaterialModel::Linear)
        };
        assert_eq!(
            m.material().unwrap(),
            Material::Linear {
                lambda: -0.5,
                mu: 1.0
            }
        );
    }

    #[test]
    fn incomplete_mixed_or_out_of_range_parameters_are_rejected() {
        let only_e = MaterialParams {
            young_modulus: Some(1.0),
            ..entry(MaterialModel::Linear)
        };
        let err = only_e.material().unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("(young_modulus, poisson_ratio) or (lambda, mu)"),
            "{text}"
        );
        assert!(text.contains("given: young_modulus"), "{text}");

        let mixed = MaterialParams {
            poisson_ratio: Some(0.3),
            mu: Some(1.0),
            ..only_e.clone()
        };
        assert!(matches!(
            mixed.material(),
            Err(MaterialError::Parameters { .. })
        ));

        let kappa_for_svk = MaterialParams {
            kappa: Some(1.0),
            mu: Some(1.0),
            ..entry(MaterialModel::SaintVenantKirchhoff)
        };
        assert!(matches!(
            kappa_for_svk.material(),
            Err(MaterialError::Parameters { .. })
        ));

        for (nu, ok) in [(0.5, false), (-1.0, false), (0.4999, true), (-0.99, true)] {
            let m = MaterialParams {
                poisson_ratio: Some(nu),
                ..only_e.clone()
            };
            assert_eq!(m.material().is_ok(), ok, "nu = {nu}");
            if !ok {
                assert_eq!(m.material().unwrap_err().key(), Some("poisson_ratio"));
            }
        }
        let soft = MaterialParams {
            lambda: Some(-1.0),
            mu: Some(1.0),
            ..entry(MaterialModel::NeoHookean)
        };
        assert_eq!(soft.material().unwrap_err().key(), Some("lambda"));
        let nan = MaterialParams {
            lambda: Some(f64::NAN),
            mu: Some(1.0),
            ..entry(MaterialModel::NeoHookean)
        };
        assert_eq!(nan.material().unwrap_err().key(), Some("lambda"));
        let mr = MaterialParams {
            lambda: Some(1.0),
            mu1: Some(0.0),
            mu2: Some(0.0),
            ..entry(MaterialModel::MooneyRivlin)
        };
        assert_eq!(mr.material().unwrap_err().key(), Some("mu2"));
    }

    /// Mooney-Rivlin from (E, nu, mu2_fraction) linearises to the (E, nu) material.
    #[test]
    fn mooney_rivlin_from_young_poisson_and_fraction() {
        let mut m = entry(MaterialModel::MooneyRivlin);
        m.young_modulus = Some(10.0);
        m.poisson_ratio = Some(0.3);
        m.mu2_fraction = Some(0.25);
        let Material::MooneyRivlin { lambda, mu1, mu2 } = m.material().unwrap() else {
            panic!("mooney_rivlin resolves to MooneyRivlin moduli");
        };
        let (lam, mu) = (10.0 * 0.3 / (1.3 * 0.4), 10.0 / 2.6);
        assert!((mu1 + mu2 - mu).abs() < 1e-12 && (mu2 - 0.25 * mu).abs() < 1e-12);
        assert!(
            (lambda + 2.0 * mu2 - lam).abs() < 1e-12,
            "small-strain lambda is lambda + 2 mu2"
        );
        m.mu2_fraction = Some(1.5);
        assert_eq!(m.material().unwrap_err().key(), Some("mu2_fraction"));
    }

    /// The admissible range is the element layer's: a negative lambda is fine while the
    /// linearised bulk modulus stays positive.
    #[test]
    fn mooney_rivlin_range_is_the_element_layers() {
        let mut m = entry(MaterialModel::MooneyRivlin);
        (m.lambda, m.mu1, m.mu2) = (Some(-20.0), Some(10.0), Some(10.0));
        assert!(m.material().is_ok(), "{:?}", m.material());
        m.lambda = Some(-40.0);
        assert_eq!(m.material().unwrap_err().key(), Some("lambda"));
    }
}
