//! `hexfem run INPUT --restart FILE.h5[:STEP]`: continue a load path from a converged step of an
//! earlier run's results.
//!
//! A step of the HDF5 file carries what the rest of the path depends on: the displacement, the
//! load factor, the step index (its name) and the increment the path tries next (attribute
//! `next_increment`). The restarted run writes that state as its first step, under its index,
//! then continues; with the same input, device and thread count its steps are bit-identical to
//! the uninterrupted run's (the AMG hierarchy is set up afresh at the start of every load step,
//! on the rigid-body modes of the deformed state, in both runs). Where loads follow load curves,
//! the step's pseudo-time (attribute `time`) places it on the path.

use std::path::PathBuf;

use std::fmt::Display;

use linalg::Vector;

use solve::newton::PathState;
use solve::problem::Problem;

use crate::{Error, Result};

/// `--restart` names no state the input can continue from: `--restart ARGUMENT: reason`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("--restart {argument}: {reason}")]
pub struct RestartError {
    /// What the message names after `--restart`: the argument as given, or its file.
    pub argument: String,
    /// Why, with the causes of a file that could not be read.
    pub reason: String,
}

/// The [`RestartError`] of `argument` for `reason`.
fn refused(argument: impl Display, reason: String) -> Error {
    Error::Restart(RestartError {
        argument: argument.to_string(),
        reason,
    })
}

/// The [`RestartError`] of `argument` whose file could not be read (`error`, with its causes).
fn unreadable(argument: impl Display, error: io::OutputError) -> Error {
    refused(argument, format!("{:#}", Error::from(error)))
}

/// A converged step read from a results file.
#[derive(Clone, Debug)]
pub struct Restart {
    pub file: PathBuf,
    pub step: usize,
    pub load_factor: f64,
    /// The step's pseudo-time (files without the attribute: the load factor).
    pub time: f64,
    pub next_increment: f64,
    /// `FILE.h5[:STEP]` as given (errors name it).
    spec: String,
}

impl Restart {
    /// Opens `FILE.h5[:STEP]` (the last step when `STEP` is omitted) and reads the step's index,
    /// load factor, time and next increment, not its data; checks that it holds a displacement.
    pub fn open(spec: &str) -> Result<Self> {
        let (file, step) = match spec.rsplit_once(':') {
            Some((file, step)) if !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit()) => (
                file,
                Some(
                    step.parse::<usize>()
                        .map_err(|e| refused(spec, format!("step number: {e}")))?,
                ),
            ),
            _ => (spec, None),
        };
        let file = PathBuf::from(file);
        let context = |e| unreadable(spec, e);
        let reader = io::ResultsReader::open(&file).map_err(context)?;
        let steps = reader.steps().map_err(context)?;
        let (step, load_factor) = match step {
            Some(s) => *steps.iter().find(|(i, _)| *i == s).ok_or_else(|| {
                let have: Vec<String> = steps.iter().map(|(i, _)| i.to_string()).collect();
                refused(
                    spec,
                    format!(
                        "{} has no step {s} (steps: {})",
                        file.display(),
                        have.join(", ")
                    ),
                )
            })?,
            None => *steps
                .last()
                .ok_or_else(|| refused(spec, format!("{} holds no step", file.display())))?,
        };
        let next_increment = reader
            .step_attribute(step, "next_increment")
            .map_err(context)?
            .ok_or_else(|| {
                refused(spec, format!("step {step} has no `next_increment` (written by a hexfem without restarts)"))
            })?;
        let time = reader
            .step_attribute(step, "time")
            .map_err(context)?
            .unwrap_or(load_factor);
        let refuse = |why: String| refused(file.display(), format!("step {step} {why}"));
        for (what, value, least) in [
            ("load_factor", load_factor, f64::NEG_INFINITY),
            ("time", time, 0.0),
            ("next_increment", next_increment, 0.0),
        ] {
            if !value.is_finite() || value < least {
                return Err(refuse(format!(
                    "has the attribute {what} = {value}, not a finite number{}",
                    if least == 0.0 { " >= 0" } else { "" }
                )));
            }
        }
        // the steps a run writes are consecutive, in increasing pseudo-time
        let mut earlier: Option<(usize, f64)> = None;
        for &(index, factor) in steps.iter().take_while(|(i, _)| *i <= step) {
            let t = reader
                .step_attribute(index, "time")
                .map_err(context)?
                .unwrap_or(factor);
            if let Some((i, t_i)) = earlier {
                if index != i + 1 || t.is_nan() || t <= t_i {
                    return Err(refuse(format!(
                        "is not where a run puts it: the file's step {index} (time {t}) follows step {i} (time {t_i}); a run writes consecutive steps in increasing time"
                    )));
                }
            }
            earlier = Some((index, t));
        }
        let dataset = format!("/steps/{step:06}/displacement");
        if !reader.dataset_paths().map_err(context)?.contains(&dataset) {
            return Err(refused(
                spec,
                format!("step {step} holds no displacement (the run's output.fields left it out)"),
            ));
        }
        if !reader.is_f64(&dataset).map_err(context)? {
            return Err(refuse(
                "stores its displacement in another type than float64; a restart continues from the exact state the run wrote and does not widen or convert values".into(),
            ));
        }
        let shape_of = |path: &str| -> Result<Vec<usize>> {
            Ok(reader.read_f64_rows(path, 0..0).map_err(context)?.0)
        };
        let (u_shape, x_shape) = (shape_of(&dataset)?, shape_of("/mesh/coordinates")?);
        if u_shape.len() != 2 || u_shape[1] != 3 || u_shape != x_shape {
            return Err(refuse(format!(
                "has a displacement of shape {u_shape:?} for a mesh of {} nodes ({x_shape:?}): one row of 3 values per node",
                x_shape.first().copied().unwrap_or(0)
            )));
        }
        Ok(Restart {
            file,
            step,
            load_factor,
            time,
            next_increment,
            spec: spec.to_owned(),
        })
    }

    /// The step's whole displacement on the mesh with the nodes `coords` (one process's
    /// mesh), which must be the file's.
    pub fn displacement_of_mesh(&self, coords: &[[f64; 3]]) -> Result<Vector> {
        let context = |e| unreadable(&self.spec, e);
        let reader = io::ResultsReader::open(&self.file).map_err(context)?;
        let (_, displacement) = reader.read_f64(&self.dataset()).map_err(context)?;
        self.check_finite(&displacement, |i| i as u64)?;
        let (_, coordinates) = reader.read_f64("/mesh/coordinates").map_err(context)?;
        if coords.as_flattened() != coordinates.as_slice() {
            let differs = match coordinates.len() == 3 * coords.len() {
                true => coordinates
                    .chunks(3)
                    .zip(coords)
                    .position(|(a, b)| a != b)
                    .map_or(String::new(), |n| format!("; node {n} lies elsewhere")),
                false => String::new(),
            };
            return Err(self.refused(format!(
                "lies on another mesh: the file's mesh ({} nodes) is not the input's ({} nodes{differs})",
                coordinates.len() / 3,
                coords.len()
            )));
        }
        Ok(Vector::from_vec(displacement))
    }

    /// The [`RestartError`] `--restart FILE: step STEP {why}`.
    fn refused(&self, why: String) -> Error {
        refused(self.file.display(), format!("step {} {why}", self.step))
    }

    /// The step's displacement dataset.
    fn dataset(&self) -> String {
        format!("/steps/{:06}/displacement", self.step)
    }

    /// Refuses a displacement (node-major values) with a value that is not finite, naming the
    /// node (`node(i)`: the file's index of the `i`-th node of `values`).
    fn check_finite(&self, values: &[f64], node: impl Fn(usize) -> u64) -> Result<()> {
        match values.iter().position(|v| !v.is_finite()) {
            None => Ok(()),
            Some(at) => Err(self.refused(format!(
                "has a displacement that is not finite ({} at node {}): not a converged state",
                values[at],
                node(at / 3)
            ))),
        }
    }

    /// The reactions of the step's state `u` on `problem` (set to the step's time): the
    /// constrained entries of the residual at the step's load factor. Refuses a state out of
    /// equilibrium: a free residual above what a converged step of `newton` can leave
    /// (`atol`, or `max(rtol, ROUNDOFF_RESIDUAL)` of the support reactions, with a margin of
    /// 10), or one that cannot be evaluated (an inverted cell). Collective on ranks.
    pub fn reactions_in_equilibrium(
        &self,
        problem: &mut Problem,
        u: &Vector,
        newton: &solve::params::NewtonParams,
    ) -> Result<Vector> {
        let refuse = |why: String| self.refused(why);
        let mut residual = problem.discrete.zeros()?;
        problem
            .discrete
            .residual(u, self.load_factor, &mut residual)
            .map_err(|e| refuse(format!("is not a state the input can continue from: {e}")))?;
        let mut reactions = problem.discrete.zeros()?;
        problem
            .discrete
            .constraints
            .copy_constrained(&residual, &mut reactions)?;
        let mut scratch = problem.discrete.zeros()?;
        let free = problem.discrete.free_norm(&residual, &mut scratch)?;
        let support = linalg::ops::norm2(&reactions)?;
        let allowed = newton
            .atol
            .max(10.0 * newton.rtol.max(solve::newton::ROUNDOFF_RESIDUAL) * support);
        if free.is_nan() || free > allowed {
            return Err(refuse(format!(
                "is not in equilibrium at its load factor {}: the free residual is {free:.3e}, {:.1e} of the support reactions ({support:.3e}), above the {allowed:.3e} a converged step leaves (newton.rtol {:.0e}, newton.atol {:.0e}); the file was changed, or was written for another input",
                self.load_factor,
                free / support,
                newton.rtol,
                newton.atol
            )));
        }
        Ok(reactions)
    }

    /// Where on the load path of `loading` the step lies, and the increment tried next.
    pub fn path_state(&self, loading: &solve::params::LoadingParams) -> Result<PathState> {
        let position = self.time / loading.end_time();
        if !(0.0..=1.0 + 1e-12).contains(&position) {
            return Err(self.refused(format!(
                "is at time {} but the input's load path ends at {}",
                self.time,
                loading.end_time()
            )));
        }
        let expected = loading.factor_at(self.time);
        let scale = loading.curve.iter().fold(1.0f64, |m, p| m.max(p[1].abs()));
        let off = (self.load_factor - expected).abs();
        if off.is_nan() || off > 1e-9 * scale {
            return Err(self.refused(format!(
                "has the load factor {} but its time {} is at the load factor {expected} on the input's load path",
                self.load_factor, self.time
            )));
        }
        if self.next_increment <= 0.0 && position < 1.0 {
            return Err(self.refused("has no increment left".into()));
        }
        // a run's next increment is at most the nominal one and, short of the path's end, at
        // least loading.min_increment (a cutback below it stops the run)
        let nominal = 1.0 / loading.steps as f64;
        let remaining = 1.0 - position;
        let least = loading.min_increment.min(remaining);
        if self.next_increment > nominal * (1.0 + 1e-12)
            || (remaining > 1e-12 && self.next_increment < 0.5 * least)
        {
            return Err(self.refused(format!(
                "has the next increment {:e} (of the path from 0 to 1), outside what a run of the input takes: between loading.min_increment = {:e} and the nominal 1 / loading.steps = {nominal:e}; the file was changed, or was written with other `loading` settings",
                self.next_increment, loading.min_increment
            )));
        }
        Ok(PathState {
            position,
            increment: self.next_increment,
            index: self.step,
        })
    }

    /// The step's displacement at the nodes of one rank's part, read from the file window by
    /// window (rows `[k w, (k + 1) w)` of at most `window` values, only windows holding a node
    /// of the part): `serial_ids` names each local node (owned and ghosts) in the file's
    /// (serial) numbering, `coords` are its coordinates (checked against the file's, whose node
    /// count must be `n_nodes`); node-major into `out` (`3 serial_ids.len()` entries). Memory:
    /// one window besides the part.
    pub fn displacement_of_part(
        &self,
        serial_ids: &[u64],
        coords: &[[f64; 3]],
        n_nodes: u64,
        window: usize,
        out: &mut [f64],
    ) -> Result<()> {
        let context = |e| unreadable(self.file.display(), e);
        let reader = io::ResultsReader::open(&self.file).map_err(context)?;
        let rows = (window / 3).max(1);
        let mut order: Vec<usize> = (0..serial_ids.len()).collect();
        order.sort_unstable_by_key(|&i| serial_ids[i]);
        let mismatch = |n_file: usize, s: u64| {
            self.refused(format!(
                "lies on another mesh: the file's mesh ({n_file} nodes) is not the input's ({n_nodes} nodes; node {s} differs or is missing)"
            ))
        };
        let mut at = 0;
        while at < order.len() {
            let k = serial_ids[order[at]] as usize / rows;
            let range = k * rows..(k + 1) * rows;
            let (shape, x_file) = reader
                .read_f64_rows("/mesh/coordinates", range.clone())
                .map_err(context)?;
            let (_, u_file) = reader
                .read_f64_rows(&self.dataset(), range.clone())
                .map_err(context)?;
            let n_file = shape[0];
            while at < order.len() && range.contains(&(serial_ids[order[at]] as usize)) {
                let (i, s) = (order[at], serial_ids[order[at]]);
                let r = s as usize - range.start;
                if n_file as u64 != n_nodes || 3 * r + 3 > x_file.len().min(u_file.len()) {
                    return Err(mismatch(n_file, s));
                }
                if x_file[3 * r..3 * r + 3] != coords[i][..] {
                    return Err(mismatch(n_file, s));
                }
                let values = &u_file[3 * r..3 * r + 3];
                self.check_finite(values, |_| s)?;
                out[3 * i..3 * i + 3].copy_from_slice(values);
                at += 1;
            }
        }
        Ok(())
    }
}
