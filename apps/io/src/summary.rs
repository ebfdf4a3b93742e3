//! The JSON run summary `<dir>/<name>.summary.json`, rewritten atomically after every step so
//! that it always parses and describes every completed step.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::atomic::write_atomic;
use super::OutputError;

/// Everything known about a run; serialised as the summary file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub run: RunInfo,
    pub mesh: MeshInfo,
    /// One record per converged load step, in order.
    pub steps: Vec<StepRecord>,
    /// Wall time of the whole run so far, in seconds.
    pub wall_s: f64,
    pub status: RunStatus,
    /// The preconditioner as last set up (for AMG: levels, rows, block sizes, nonzeros,
    /// complexities and set-up stage times); absent for methods without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditioner: Option<serde_json::Value>,
}

/// What was run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Program name and version, e.g. `hexfem 0.1.0`.
    pub program: String,
    /// The configuration file.
    pub input: PathBuf,
    /// Start time, seconds since the Unix epoch.
    pub started_unix_s: u64,
    /// Worker threads used.
    pub threads: usize,
    /// The resolved configuration (`serde_json::to_value(&config)`).
    pub config: serde_json::Value,
}

/// Size of the discrete problem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeshInfo {
    pub nodes: usize,
    pub cells: usize,
    pub nodes_per_cell: usize,
    /// Degrees of freedom, `3 * nodes`.
    pub dofs: usize,
    /// Degrees of freedom fixed by Dirichlet conditions.
    pub constrained_dofs: usize,
}

/// One converged load step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub step: usize,
    pub load_factor: f64,
    /// Cutbacks taken before this step converged.
    pub cutbacks: usize,
    pub newton_iterations: usize,
    /// Linear solver iterations of each Newton iteration.
    pub linear_iterations: Vec<usize>,
    /// Residual norm before each Newton iteration and after the last one
    /// (`newton_iterations + 1` entries).
    pub residual_norms: Vec<f64>,
    /// Total strain energy at the end of the step.
    pub strain_energy: f64,
    /// Largest nodal displacement magnitude.
    pub max_displacement: f64,
    /// Wall time of the step, cutbacks included, in seconds.
    pub wall_s: f64,
    /// Free-form report of the linear solver (e.g. the AMG hierarchy); `null` when absent.
    #[serde(default)]
    pub linear_solver: serde_json::Value,
}

/// State of the run: `{"state": "running"}`, `{"state": "completed"}` or
/// `{"state": "failed", "message": "..."}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Completed,
    Failed { message: String },
}

/// Keeps the [`Summary`] of a run and its file in step. Calling order: [`SummaryWriter::create`],
/// [`SummaryWriter::record_step`] per converged step, [`SummaryWriter::finish`] once; each call
/// rewrites the file. Non-finite numbers are written as `null`.
#[derive(Debug)]
pub struct SummaryWriter {
    path: PathBuf,
    summary: Summary,
}

impl SummaryWriter {
    /// Writes `<dir>/<name>.summary.json` with no steps and status `running`. `dir` must exist
    /// (the results writer creates it).
    pub fn create(
        dir: &Path,
        name: &str,
        run: RunInfo,
        mesh: MeshInfo,
    ) -> Result<Self, OutputError> {
        let writer = SummaryWriter {
            path: dir.join(format!("{name}.summary.json")),
            summary: Summary {
                run,
                mesh,
                steps: Vec::new(),
                wall_s: 0.0,
                status: RunStatus::Running,
                preconditioner: None,
            },
        };
        writer.write()?;
        Ok(writer)
    }

    /// The summary file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Appends a step record, updates the run's wall time and rewrites the file.
    pub fn record_step(&mut self, record: StepRecord, wall_s: f64) -> Result<(), OutputError> {
        self.summary.steps.push(record);
        self.summary.wall_s = wall_s;
        self.write()
    }

    /// Records the preconditioner's description; written with the next step or at the finish.
    pub fn set_preconditioner(&mut self, preconditioner: serde_json::Value) {
        self.summary.preconditioner = Some(preconditioner);
    }

    /// Sets the final status and wall time and rewrites the file.
    pub fn finish(&mut self, status: RunStatus, wall_s: f64) -> Result<(), OutputError> {
        self.summary.status = status;
        self.summary.wall_s = wall_s;
        self.write()
    }

    fn write(&self) -> Result<(), OutputError> {
        let mut text =
            serde_json::to_string_pretty(&self.summary).map_err(|source| OutputError::Json {
                path: self.path.clone(),
                source,
            })?;
        text.push('\n');
        write_atomic(&self.path, text.as_bytes())
    }
}
