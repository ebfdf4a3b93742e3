//! The element formulation of a run in words (`formulation: auto` resolved per material), and
//! the warning where the displacement formulation meets a nearly incompressible material
//! (volumetric locking).

use config::{Config, ElementFormulation};
use fem::{Formulation, Material, LOCKING_POISSON_RATIO};

/// Each `materials` entry's material (`None` where it does not convert: the run reports that).
fn materials(config: &Config) -> Vec<Option<Material>> {
    config.materials.iter().map(|m| m.material().ok()).collect()
}

/// The formulation each `materials` entry runs with on cells of `order`, in input order (what
/// `solve::params::FormulationChoice::resolve` gives the run).
pub fn resolved(config: &Config, order: usize) -> Vec<Formulation> {
    materials(config)
        .iter()
        .map(|m| match (config.formulation, m) {
            (ElementFormulation::Displacement, _) => Formulation::Displacement,
            (ElementFormulation::Projected, _) => Formulation::Projected,
            (ElementFormulation::Auto, Some(m)) => Formulation::for_material(order, m),
            (ElementFormulation::Auto, None) => Formulation::Displacement,
        })
        .collect()
}

/// A formulation in words, for cells of `order`.
fn words(formulation: Formulation, order: usize) -> &'static str {
    match formulation {
        Formulation::Displacement => "displacement",
        Formulation::Projected if order == 1 => {
            "projected volume ratio (mean dilatation: J projected on constants per cell)"
        }
        Formulation::Projected => {
            "projected volume ratio (Q2-P1: J projected on linear functions per cell)"
        }
    }
}

/// The header's formulation line for cells of `order`: `auto` names what each material got and
/// why (its Poisson's ratio against the order's locking limit).
pub fn describe(config: &Config, order: usize) -> String {
    let resolved = resolved(config, order);
    match config.formulation {
        ElementFormulation::Displacement | ElementFormulation::Projected => resolved
            .first()
            .map_or("displacement", |&f| words(f, order))
            .to_string(),
        ElementFormulation::Auto => {
            let limit = LOCKING_POISSON_RATIO.get(order.wrapping_sub(1));
            let mut parts: Vec<String> = Vec::new();
            for formulation in Formulation::ALL {
                let entries: Vec<String> = materials(config)
                    .iter()
                    .zip(&resolved)
                    .enumerate()
                    .filter(|(_, (_, &f))| f == formulation)
                    .map(|(i, (m, _))| match m {
                        Some(m) => format!(
                            "materials[{i}], Poisson's ratio {:.4}",
                            m.small_strain_poisson_ratio()
                        ),
                        None => format!("materials[{i}]"),
                    })
                    .collect();
                if !entries.is_empty() {
                    parts.push(format!(
                        "{} for {}",
                        words(formulation, order),
                        entries.join("; ")
                    ));
                }
            }
            match limit {
                Some(limit) => format!(
                    "auto: {} (Q{order} cells lock from Poisson's ratio {limit})",
                    parts.join("; ")
                ),
                None => format!("auto: {}", parts.join("; ")),
            }
        }
    }
}

/// A warning where an explicit `formulation: displacement` meets, on cells of `order`, a
/// material that locks ([`Formulation::locks`]): the first such material entry.
pub fn locking_warning(config: &Config, order: usize) -> Option<String> {
    if config.formulation != ElementFormulation::Displacement {
        return None;
    }
    let limit = *LOCKING_POISSON_RATIO.get(order.checked_sub(1)?)?;
    materials(config).iter().enumerate().find_map(|(i, m)| {
        let m = m.as_ref()?;
        let nu = m.small_strain_poisson_ratio();
        Formulation::locks(order, m).then(|| {
            format!(
                "Q{order} cells of the displacement formulation lock volumetrically at Poisson's \
                 ratio {nu:.4} (materials[{i}], {limit} or more): displacements come out too \
                 small; `formulation: projected` (or `auto`, the default) removes the locking"
            )
        })
    })
}
