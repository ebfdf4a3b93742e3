//! What a converged step's state says about the input: a state that is not finite fails the
//! step (an overflow or 0 * inf somewhere: almost always inconsistent units); with the linear
//! model, a strain scale far outside small strains or an inverted cell is a warning in the step
//! line and the step record, since that model accepts both silently.

use crate::error::fail;
use crate::Result;

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
        fail!(
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
    let inverted = InvertedCells::of((0u64..).zip(state.jacobian.iter().copied()));
    Ok(warnings(
        state.linear,
        state.max_displacement,
        state.size,
        inverted.as_ref(),
    ))
}

/// A state's inverted cells (`det F <= 0`): how many, and the least `det F` with its cell (the
/// serial mesh's cell number, the lowest where several cells share the least). The same on any
/// rank count: ranks [`merge`](Self::merge) their owned cells' figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InvertedCells {
    pub count: u64,
    pub least_j: f64,
    pub cell: u64,
}

impl InvertedCells {
    /// Of the cells `(serial cell number, det F)` (finite); `None` where none is inverted.
    pub fn of(cells: impl IntoIterator<Item = (u64, f64)>) -> Option<Self> {
        cells
            .into_iter()
            .filter(|&(_, j)| j <= 0.0)
            .map(|(cell, least_j)| Self {
                count: 1,
                least_j,
                cell,
            })
            .reduce(Self::merge)
    }

    /// The figures of the union of two disjoint sets of cells (in any order: the result is
    /// the same).
    pub fn merge(self, other: Self) -> Self {
        let other_least = other.least_j < self.least_j
            || (other.least_j == self.least_j && other.cell < self.cell);
        let least = if other_least { other } else { self };
        Self {
            count: self.count + other.count,
            ..least
        }
    }

    /// `N cells are inverted (J = det F = J in cell C)`.
    pub fn describe(&self) -> String {
        format!(
            "{} cells are inverted (J = det F = {:.3e} in cell {})",
            self.count, self.least_j, self.cell
        )
    }
}

/// The warnings of a linear model's finite state with the largest displacement
/// `max_displacement` on a body of `size` whose inverted cells are `inverted`, if any.
pub fn warnings(
    linear: bool,
    max_displacement: f64,
    size: f64,
    inverted: Option<&InvertedCells>,
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
            "{}: the linear model does not see it; a hyperelastic model (neo_hookean) refuses such states, or {}",
            inverted.describe(),
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
