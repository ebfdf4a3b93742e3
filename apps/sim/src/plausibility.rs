//! What a converged step's state says about the input: a state that is not finite fails the
//! step (an overflow or 0 * inf somewhere: almost always inconsistent units); with the linear
//! model, a strain scale far outside small strains or an inverted cell is a warning in the step
//! line and the step record, since that model accepts both silently.

use rayon::prelude::*;

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
    let names: Vec<&str> = state.fields.iter().map(|(name, _)| *name).collect();
    let finiteness = Finiteness::of(state, 0u64..);
    finiteness.refuse(state.step, state.size, &names)?;
    // the scan in order only where some cell is inverted (found in parallel)
    let inverted = if state.jacobian.par_iter().any(|&j| j <= 0.0) {
        InvertedCells::of((0u64..).zip(state.jacobian.iter().copied()))
    } else {
        None
    };
    Ok(warnings(
        state.linear,
        state.max_displacement,
        state.size,
        inverted.as_ref(),
    ))
}

/// What decides whether a state is finite and names where it is not, the same on any rank
/// count: ranks [`merge`](Self::merge) the figures of their owned cells (as
/// [`InvertedCells`]), so that the error names the serial mesh's cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Finiteness {
    /// The largest displacement (NaN where one is).
    pub max_displacement: f64,
    /// The total strain energy (not finite where a cell's is not; its finite value depends
    /// on the order of the sum and is not reported).
    pub strain_energy: f64,
    /// The first value that is not finite among the cells' output fields: the field's index,
    /// the serial number of its first cell holding one, and that cell's first such value.
    pub first: Option<(usize, u64, f64)>,
}

impl Finiteness {
    /// Of the fields of `state`, whose cells have the serial numbers `serial` (in order; only
    /// the cells given there are looked at).
    pub fn of(state: &StateFigures, serial: impl IntoIterator<Item = u64> + Clone) -> Self {
        let cells = state.jacobian.len();
        // the values looked at are finite (checked in parallel): no first one to look for
        let finite = state.fields.par_iter().all(|(_, values)| {
            let per_cell = (values.len() / cells.max(1)).max(1);
            let looked_at = &values[..values.len().min(cells * per_cell)];
            looked_at.par_iter().all(|v| v.is_finite())
        });
        let first = (!finite)
            .then(|| {
                state
                    .fields
                    .iter()
                    .enumerate()
                    .find_map(|(f, (_, values))| {
                        let per_cell = (values.len() / cells.max(1)).max(1);
                        serial
                            .clone()
                            .into_iter()
                            .enumerate()
                            .take(cells)
                            .filter_map(|(c, id)| {
                                let cell = values.get(c * per_cell..(c + 1) * per_cell)?;
                                let bad = cell.iter().find(|v| !v.is_finite())?;
                                Some((id, *bad))
                            })
                            .min_by_key(|&(id, _)| id)
                            .map(|(id, value)| (f, id, value))
                    })
            })
            .flatten();
        Finiteness {
            max_displacement: state.max_displacement,
            strain_energy: state.strain_energy,
            first,
        }
    }

    /// The figures of the union of two disjoint sets of cells (and nodes).
    pub fn merge(self, other: Self) -> Self {
        let max_displacement = if self.max_displacement.is_nan() || other.max_displacement.is_nan()
        {
            f64::NAN
        } else {
            self.max_displacement.max(other.max_displacement)
        };
        let first = match (self.first, other.first) {
            (Some(a), Some(b)) => Some(if (b.0, b.1) < (a.0, a.1) { b } else { a }),
            (a, b) => a.or(b),
        };
        Finiteness {
            max_displacement,
            strain_energy: self.strain_energy + other.strain_energy,
            first,
        }
    }

    /// The figures as values, to gather them over ranks (cell numbers below 2^53 are exact).
    pub fn to_values(&self) -> [f64; 6] {
        let (has, (field, cell, value)) = match self.first {
            Some((f, c, v)) => (1.0, (f as f64, c as f64, v)),
            None => (0.0, (0.0, 0.0, 0.0)),
        };
        [
            self.max_displacement,
            self.strain_energy,
            has,
            field,
            cell,
            value,
        ]
    }

    /// The figures of [`Self::to_values`]' values (`None`: not six values).
    pub fn from_values(values: &[f64]) -> Option<Self> {
        let &[max_displacement, strain_energy, has, field, cell, value] = values else {
            return None;
        };
        Some(Finiteness {
            max_displacement,
            strain_energy,
            first: (has > 0.0).then_some((field as usize, cell as u64, value)),
        })
    }

    /// Refuses the state of step `step` of a body of `size` where it is not finite; `names`
    /// are the fields' names.
    pub fn refuse(&self, step: usize, size: f64, names: &[&str]) -> Result<()> {
        let not_finite = |what: String| -> Result<()> {
            fail!(
                "step {step}: the converged state is not finite ({what}): {}",
                units_advice(self.max_displacement, size)
            )
        };
        if !self.max_displacement.is_finite() {
            return not_finite(format!("max |u| = {}", self.max_displacement));
        }
        if !self.strain_energy.is_finite() {
            return not_finite(format!("strain energy = {}", self.strain_energy));
        }
        if let Some((field, cell, value)) = self.first {
            let name = names.get(field).copied().unwrap_or("a field");
            return not_finite(format!("{name} = {value} in cell {cell}"));
        }
        Ok(())
    }
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

    /// The figures of two ranks' cells (given by their serial numbers, in any order, a ghost
    /// cell on both), merged, are the serial state's: the same error text.
    #[test]
    fn merged_figures_of_parts_name_the_serial_cell() {
        let j = [1.0, 1.0, 1.0, 1.0];
        let stress = [1.0, 2.0, f64::INFINITY, 4.0];
        let vm = [1.0, f64::NAN, 3.0, f64::NAN];
        let fields: [(&str, &[f64]); 2] = [("cauchy", &stress), ("von_mises", &vm)];
        let serial = state(1e-3, 1.0, &j, &fields);
        let whole = Finiteness::of(&serial, 0u64..);
        assert_eq!(whole.first.map(|(f, c, _)| (f, c)), Some((0, 2)));
        // rank 0 holds cells 3, 2 (ghost) ; rank 1 cells 0, 1, 2
        let part = |cells: &[usize]| {
            let pick = |v: &[f64]| cells.iter().map(|&c| v[c]).collect::<Vec<f64>>();
            (pick(&j), pick(&stress), pick(&vm))
        };
        let (j0, s0, v0) = part(&[3, 2]);
        let (j1, s1, v1) = part(&[0, 1, 2]);
        let f0 = Finiteness::of(
            &state(1e-3, 0.5, &j0, &[("cauchy", &s0), ("von_mises", &v0)]),
            [3, 2],
        );
        let f1 = Finiteness::of(
            &state(1e-3, 0.5, &j1, &[("cauchy", &s1), ("von_mises", &v1)]),
            [0, 1, 2],
        );
        let gathered = [f1.to_values(), f0.to_values()];
        let merged = gathered
            .iter()
            .filter_map(|v| Finiteness::from_values(v))
            .reduce(Finiteness::merge)
            .unwrap();
        let names = ["cauchy", "von_mises"];
        let text = |f: &Finiteness| f.refuse(1, 1.0, &names).unwrap_err().to_string();
        assert_eq!(text(&merged), text(&whole));
        assert!(
            text(&whole).contains("cauchy = inf in cell 2"),
            "{}",
            text(&whole)
        );
        // without the stress, the first NaN von Mises is cell 1's on either side
        let vm_only = |f: Finiteness| Finiteness { first: None, ..f };
        let f0 = Finiteness::of(&state(1e-3, 0.5, &j0, &[("von_mises", &v0)]), [3, 2]);
        let f1 = Finiteness::of(&state(1e-3, 0.5, &j1, &[("von_mises", &v1)]), [0, 1, 2]);
        assert_eq!(f0.merge(f1).first.map(|(_, c, _)| c), Some(1));
        let bits = |f: Finiteness| f.to_values().map(f64::to_bits);
        assert_eq!(bits(f1.merge(f0)), bits(f0.merge(f1)));
        let nan_u = Finiteness {
            max_displacement: f64::NAN,
            ..vm_only(f0)
        };
        assert!(nan_u.merge(vm_only(f1)).max_displacement.is_nan());
        assert!(vm_only(f1).merge(nan_u).max_displacement.is_nan());
    }
}
