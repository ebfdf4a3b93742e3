//! What a converged step's state says about the input: a state that is not finite fails the
//! step (an overflow or 0 * inf somewhere: almost always inconsistent units); with the linear
//! model, a strain scale far outside small strains or an inverted cell is a warning in the step
//! line and the step record, since that model accepts both silently.

use anyhow::{bail, Result};

/// Outside this range of `max |u| / body size` a linear (small-strain) answer is suspect: below,
/// the loads are negligible against the stiffness (or in other units); above, the strains are
/// not small.
pub const PLAUSIBLE_STRAIN: (f64, f64) = (1e-12, 1.0);

/// What the check needs of a state: its figures and the cells' output fields.
pub struct StateFigures<'a> {
    pub step: usize,
    pub max_displacement: f64,
    pub strain_energy: f64,
    /// The body's size (the diagonal of its bounding box).
    pub size: f64,
    /// Whether the materials are linear (small strain).
    pub linear: bool,
    /// Per cell: `(name, values)` of the output fields, one value (or 9) per cell.
    pub fields: &'a [(&'a str, &'a [f64])],
    /// `det F` per cell.
    pub jacobian: &'a [f64],
}

/// The units advice that ends every diagnosis.
fn units_advice(max_displacement: f64, size: f64) -> String {
    format!(
        "check units: max |u| {max_displacement:.3e} is {:.1e} times the body's size {size:.3e}; loads, moduli and lengths must be in one consistent unit system (e.g. N, Pa, m or N, MPa, mm)",
        max_displacement / size
    )
}

/// Refuses a state that is not finite (naming the first quantity and cell); returns the
/// warnings of a linear model's implausible state (empty otherwise).
pub fn check(state: &StateFigures) -> Result<Vec<String>> {
    let advice = || units_advice(state.max_displacement, state.size);
    let not_finite = |what: String| -> Result<Vec<String>> {
        bail!(
            "step {}: the converged state is not finite ({what}): {}",
            state.step,
            advice()
        )
    };
    if !state.max_displacement.is_finite() {
        return not_finite(format!("max |u| = {}", state.max_displacement));
    }
    if !state.strain_energy.is_finite() {
        return not_finite(format!("strain energy = {}", state.strain_energy));
    }
    for (name, values) in state.fields {
        let per_cell = (values.len() / state.jacobian.len().max(1)).max(1);
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return not_finite(format!("{name} = {} in cell {}", values[i], i / per_cell));
        }
    }
    let inverted = state.jacobian.iter().filter(|&&j| j <= 0.0).count();
    let least = state
        .jacobian
        .iter()
        .enumerate()
        .fold(
            (0, f64::INFINITY),
            |m, (c, &j)| if j < m.1 { (c, j) } else { m },
        );
    let where_ = format!(
        "{inverted} cells are inverted (J = det F = {:.3e} in cell {})",
        least.1, least.0
    );
    Ok(warnings(
        state.linear,
        state.max_displacement,
        state.size,
        (inverted > 0).then_some(where_),
    ))
}

/// The warnings of a linear model's finite state with the largest displacement
/// `max_displacement` on a body of `size`; `inverted` describes its inverted cells, if any.
pub fn warnings(
    linear: bool,
    max_displacement: f64,
    size: f64,
    inverted: Option<String>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if !linear {
        return warnings;
    }
    let advice = || units_advice(max_displacement, size);
    let strain = max_displacement / size;
    if strain > 0.0 && !(PLAUSIBLE_STRAIN.0..=PLAUSIBLE_STRAIN.1).contains(&strain) {
        warnings.push(format!(
            "the linear model's answer is implausible: {}",
            advice()
        ));
    }
    if let Some(inverted) = inverted {
        warnings.push(format!(
            "{inverted}: the linear model does not see it; a hyperelastic model (neo_hookean) refuses such states, or {}",
            advice()
        ));
    }
    warnings
}

/// The diagonal of the bounding box of `coords`.
pub fn body_size(coords: &[[f64; 3]]) -> f64 {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for x in coords {
        for d in 0..3 {
            lo[d] = lo[d].min(x[d]);
            hi[d] = hi[d].max(x[d]);
        }
    }
    crate::run::length(&[hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state<'a>(
        u: f64,
        energy: f64,
        j: &'a [f64],
        fields: &'a [(&'a str, &'a [f64])],
    ) -> StateFigures<'a> {
        StateFigures {
            step: 1,
            max_displacement: u,
            strain_energy: energy,
            size: 1.0,
            linear: true,
            fields,
            jacobian: j,
        }
    }

    #[test]
    fn non_finite_states_fail_and_implausible_ones_warn() {
        let j = [1.0, 1.0];
        assert!(check(&state(1e-3, 1.0, &j, &[])).unwrap().is_empty());
        let e = check(&state(1e301, f64::INFINITY, &j, &[]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("strain energy = inf") && e.contains("check units"),
            "{e}"
        );
        let nan = [1.0, f64::NAN];
        let e = check(&state(1e-3, 1.0, &j, &[("jacobian", &nan)]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("jacobian = NaN in cell 1"), "{e}");
        let w = check(&state(108.6, 1.0, &[1.0, -9.5e4], &[])).unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[1].contains("1 cells are inverted (J = det F = -9.500e4 in cell 1)"),
            "{w:?}"
        );
        assert_eq!(check(&state(1e-20, 1.0, &j, &[])).unwrap().len(), 1);
        let mut nonlinear = state(108.6, 1.0, &[1.0, 2.0], &[]);
        nonlinear.linear = false;
        assert!(check(&nonlinear).unwrap().is_empty());
    }
}
