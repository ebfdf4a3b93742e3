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

use anyhow::{bail, Context, Result};
use linalg::Vector;

use solve::newton::PathState;
use solve::problem::Problem;

/// A converged step read from a results file.
#[derive(Clone, Debug)]
pub struct Restart {
    pub file: PathBuf,
    pub step: usize,
    pub load_factor: f64,
    /// The step's pseudo-time (files without the attribute: the load factor).
    pub time: f64,
    pub next_increment: f64,
    /// Node-major displacement (read by [`Restart::read`]; empty after [`Restart::open`]).
    displacement: Vec<f64>,
    /// The file's node coordinates, to check that the input's mesh is the same (as
    /// `displacement`).
    coordinates: Vec<f64>,
}

/// The state a restarted load path starts from.
pub struct RestartState {
    pub displacement: Vector,
    /// Reactions at the restart state (the residual's constrained entries).
    pub reactions: Vector,
    pub path: PathState,
    /// The load factor and pseudo-time of the step continued from.
    pub load_factor: f64,
    pub time: f64,
}

impl Restart {
    /// Opens `FILE.h5[:STEP]` (the last step when `STEP` is omitted) and reads the step's index,
    /// load factor, time and next increment, not its data; checks that it holds a displacement.
    pub fn open(spec: &str) -> Result<Self> {
        let (file, step) = match spec.rsplit_once(':') {
            Some((file, step)) if !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit()) => (
                file,
                Some(step.parse::<usize>().context("--restart: step number")?),
            ),
            _ => (spec, None),
        };
        let file = PathBuf::from(file);
        let context = || format!("--restart {spec}");
        let reader = io::ResultsReader::open(&file).with_context(context)?;
        let steps = reader.steps().with_context(context)?;
        let (step, load_factor) = match step {
            Some(s) => *steps.iter().find(|(i, _)| *i == s).with_context(|| {
                let have: Vec<String> = steps.iter().map(|(i, _)| i.to_string()).collect();
                format!(
                    "--restart {spec}: {} has no step {s} (steps: {})",
                    file.display(),
                    have.join(", ")
                )
            })?,
            None => *steps
                .last()
                .with_context(|| format!("--restart {spec}: {} holds no step", file.display()))?,
        };
        let next_increment = reader
            .step_attribute(step, "next_increment")
            .with_context(context)?
            .with_context(|| {
                format!("--restart {spec}: step {step} has no `next_increment` (written by a hexfem without restarts)")
            })?;
        let time = reader
            .step_attribute(step, "time")
            .with_context(context)?
            .unwrap_or(load_factor);
        let dataset = format!("/steps/{step:06}/displacement");
        if !reader
            .dataset_paths()
            .with_context(context)?
            .contains(&dataset)
        {
            bail!(
                "--restart {spec}: step {step} holds no displacement (the run's output.fields left it out)"
            );
        }
        Ok(Restart {
            file,
            step,
            load_factor,
            time,
            next_increment,
            displacement: Vec::new(),
            coordinates: Vec::new(),
        })
    }

    /// [`Restart::open`] with the step's whole displacement and the file's coordinates (what
    /// [`Restart::state_for`] needs).
    pub fn read(spec: &str) -> Result<Self> {
        let mut restart = Self::open(spec)?;
        let context = || format!("--restart {spec}");
        let reader = io::ResultsReader::open(&restart.file).with_context(context)?;
        (_, restart.displacement) = reader.read_f64(&restart.dataset()).with_context(context)?;
        (_, restart.coordinates) = reader.read_f64("/mesh/coordinates").with_context(context)?;
        Ok(restart)
    }

    /// The step's displacement dataset.
    fn dataset(&self) -> String {
        format!("/steps/{:06}/displacement", self.step)
    }

    /// The state to continue from on `problem` (which must have the file's mesh) along
    /// `loading` (whose end time places the step's pseudo-time on the path).
    pub fn state_for(
        &self,
        problem: &mut Problem,
        loading: &solve::params::LoadingParams,
    ) -> Result<RestartState> {
        let coords: Vec<f64> = problem.mesh.coords.iter().flatten().copied().collect();
        if coords != self.coordinates {
            bail!(
                "--restart {}: the file's mesh ({} nodes) is not the input's ({} nodes, or other coordinates)",
                self.file.display(),
                self.coordinates.len() / 3,
                problem.mesh.n_nodes()
            );
        }
        let n = problem.n_dofs();
        let displacement = Vector::from_vec(self.displacement.clone());
        let path = self.path_state(loading)?;
        // loads and constraints on load curves of their own at the step's time
        problem.set_time(self.time)?;
        let mut residual = Vector::zeros(n);
        problem
            .discrete
            .residual(&displacement, self.load_factor, &mut residual)?;
        let mut reactions = Vector::zeros(n);
        problem
            .discrete
            .constraints
            .copy_constrained(&residual, &mut reactions)?;
        Ok(RestartState {
            displacement,
            reactions,
            path,
            load_factor: self.load_factor,
            time: self.time,
        })
    }

    /// Where on the load path of `loading` the step lies, and the increment tried next.
    pub fn path_state(&self, loading: &solve::params::LoadingParams) -> Result<PathState> {
        let position = self.time / loading.end_time();
        if !(0.0..=1.0 + 1e-12).contains(&position) {
            bail!(
                "--restart {}: step {} is at time {} but the input's load path ends at {}",
                self.file.display(),
                self.step,
                self.time,
                loading.end_time()
            );
        }
        if self.next_increment <= 0.0 && position < 1.0 {
            bail!(
                "--restart {}: step {} has no increment left",
                self.file.display(),
                self.step
            );
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
        let context = || format!("--restart {}", self.file.display());
        let reader = io::ResultsReader::open(&self.file).with_context(context)?;
        let rows = (window / 3).max(1);
        let mut order: Vec<usize> = (0..serial_ids.len()).collect();
        order.sort_unstable_by_key(|&i| serial_ids[i]);
        let mismatch = |n_file: usize, s: u64| {
            anyhow::anyhow!(
                "--restart {}: the file's mesh ({n_file} nodes) is not the input's ({n_nodes} nodes; node {s} differs or is missing)",
                self.file.display()
            )
        };
        let mut at = 0;
        while at < order.len() {
            let k = serial_ids[order[at]] as usize / rows;
            let range = k * rows..(k + 1) * rows;
            let (shape, x_file) = reader
                .read_f64_rows("/mesh/coordinates", range.clone())
                .with_context(context)?;
            let (_, u_file) = reader
                .read_f64_rows(&self.dataset(), range.clone())
                .with_context(context)?;
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
                out[3 * i..3 * i + 3].copy_from_slice(&u_file[3 * r..3 * r + 3]);
                at += 1;
            }
        }
        Ok(())
    }
}
