//! The element formulation of a run in words, and the warning where the displacement
//! formulation meets a nearly incompressible material (volumetric locking).

use config::{Config, ElementFormulation};

/// Poisson's ratio above which displacement-formulation cells of order 1 and 2 lock visibly: the
/// Q1 cantilever of `inputs/cantilever_q1.yaml` is 8 % too stiff at 0.45, 20 % at 0.49 and 40 % at
/// 0.499; Q2 on the same mesh 0.8 % at 0.49 and 1.2 % at 0.499, more on coarse meshes (Cook's
/// membrane on 2 x 2 Q2 cells: 30 % at 0.4999).
const LOCKING_POISSON: [f64; 2] = [0.45, 0.49];

/// The header's formulation line for cells of `order`.
pub fn describe(config: &Config, order: usize) -> String {
    match config.formulation {
        ElementFormulation::Displacement => "displacement".to_string(),
        ElementFormulation::Projected if order == 1 => {
            "projected volume ratio (mean dilatation: J projected on constants per cell)"
                .to_string()
        }
        ElementFormulation::Projected => {
            "projected volume ratio (Q2-P1: J projected on linear functions per cell)".to_string()
        }
    }
}

/// A warning where displacement-formulation cells of `order` meet a material whose Poisson's
/// ratio (of its linearisation) exceeds [`LOCKING_POISSON`]: the first such material entry.
pub fn locking_warning(config: &Config, order: usize) -> Option<String> {
    if config.formulation != ElementFormulation::Displacement {
        return None;
    }
    let limit = *LOCKING_POISSON.get(order.checked_sub(1)?)?;
    config.materials.iter().enumerate().find_map(|(i, m)| {
        let (lambda, mu) = m.material().ok()?.small_strain_moduli();
        let nu = 0.5 * lambda / (lambda + mu);
        (nu > limit).then(|| {
            format!(
                "Q{order} cells of the displacement formulation lock volumetrically at Poisson's \
                 ratio {nu:.4} (materials[{i}], above {limit}): displacements come out too small; \
                 `formulation: projected` removes the locking"
            )
        })
    })
}
