//! The JSON run summary `<dir>/<name>.summary.json` and its step log `<name>.steps.jsonl`.
//!
//! The step log gets one line (a [`StepRecord`] as JSON) per converged step, appended: O(1) per
//! step. The summary, bounded in size while the run goes on (run, mesh, status, number of steps
//! logged, preconditioner), is replaced atomically after every step so that it always parses;
//! when the run ends it is replaced by the full summary, with every step record in `steps`. A
//! killed run leaves a summary with status `running` and `steps_completed` complete lines in the
//! log (a last, partial line without its newline is not a step). [`Summary::read`] reads either.
//!
//! Full disk: every summary written while the run goes on is padded with a page or more of
//! trailing whitespace, so that if the final replacement cannot be written the final status is
//! still written in place over it (without the step list, which stays in the log).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::atomic::{write_at_position, write_atomic};
use super::faults::Faults;
use super::OutputError;

/// Trailing whitespace reserved after a summary written during the run.
const RESERVE: usize = 4096;

/// Everything known about a run; serialised as the summary file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub run: RunInfo,
    pub mesh: MeshInfo,
    /// Converged steps recorded in the step log.
    pub steps_completed: usize,
    /// File name of the step log (JSON Lines, one [`StepRecord`] per line), beside the summary.
    pub steps_log: String,
    /// One record per converged load step, in order: written when the run ends (completed or
    /// failed); absent while it runs (and after a kill), when the records are in the step log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepRecord>>,
    /// Wall time of the whole run so far, in seconds.
    pub wall_s: f64,
    pub status: RunStatus,
    /// The preconditioner as last set up (for AMG: levels, rows, block sizes, nonzeros,
    /// complexities and set-up stage times); absent for methods without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditioner: Option<serde_json::Value>,
    /// A run on several MPI ranks: the rank count and each rank's load (owned rows and cells);
    /// absent for a serial run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RanksInfo>,
    /// Where the time went, as PETSc's `-log_view` stages: set when the run ends (absent while
    /// it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<StageTable>,
}

/// Where a run's time went: flat stages (none nests in another) whose rows, with the explicit
/// [`StageTable::OTHER`] row (what no stage holds), add up to the wall time on every rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageTable {
    /// Ranks whose stages are merged (1: one process).
    pub ranks: usize,
    /// Seconds from the process's start to the table (the run's end, before the final summary
    /// is written), over the ranks.
    pub wall: StageRow,
    /// In the order each stage first occurred; [`StageTable::OTHER`] last.
    pub stages: Vec<StageRow>,
    /// Work on threads of its own, overlapping the stages (not part of their sum): the output
    /// writer's seconds, while the stages hold only the time the run waited for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlapped: Vec<StageRow>,
}

/// One stage over the ranks: how often it occurred (the most on any rank) and its inclusive
/// seconds' minimum, maximum and mean over the ranks (a rank without it counts 0 s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    pub name: String,
    pub count: u64,
    pub min_s: f64,
    pub max_s: f64,
    pub mean_s: f64,
}

impl StageTable {
    /// The name of the row of the time no stage holds.
    pub const OTHER: &'static str = "other";

    /// The row `name`, if the run had that stage.
    pub fn row(&self, name: &str) -> Option<&StageRow> {
        self.stages.iter().find(|r| r.name == name)
    }

    /// The share of the mean wall time that named stages (all but [`StageTable::OTHER`]) hold.
    pub fn coverage(&self) -> f64 {
        let named: f64 = self
            .stages
            .iter()
            .filter(|r| r.name != Self::OTHER)
            .map(|r| r.mean_s)
            .sum();
        if self.wall.mean_s > 0.0 {
            named / self.wall.mean_s
        } else {
            1.0
        }
    }
}

/// The ranks of a distributed run and their loads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RanksInfo {
    pub ranks: usize,
    /// Owned rows (unknowns) of each rank, by rank.
    pub owned_rows: Vec<u64>,
    /// Owned cells of each rank, by rank.
    pub owned_cells: Vec<u64>,
    /// max/mean of the owned rows (1: balanced).
    pub row_imbalance: f64,
    /// Bytes of output state each rank held at most, by rank: on rank 0 one window of the
    /// windowed gathers (the messages received and the merged window); on the others their
    /// largest message. Set when the run ends.
    #[serde(default)]
    pub output_bytes: Vec<u64>,
    /// Seconds of each rank in the load path (Newton: assembly and linear solves) without the
    /// output, by rank. Set when the run ends.
    #[serde(default)]
    pub newton_s: Vec<f64>,
    /// Seconds of each rank in the output (cell outputs, gathers, writes), by rank.
    #[serde(default)]
    pub output_s: Vec<f64>,
    /// Peak resident memory of each rank's process (`VmHWM`; 0 where unknown), by rank, when the
    /// run ended.
    #[serde(default)]
    pub peak_resident_bytes: Vec<u64>,
    /// Each rank's device (`host`, or the GPU it computed on), by rank.
    #[serde(default)]
    pub devices: Vec<String>,
    /// How halo exchanges travelled between the ranks' GPUs: `nccl` (GPU to GPU) or `staged`
    /// (through host memory and MPI; also on CPU ranks), and why not `nccl` where it fell back.
    #[serde(default)]
    pub exchange: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_fallback: Option<String>,
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
    /// The results file and step a restarted run continued from (`FILE.h5:STEP`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<String>,
    /// The element formulation each `materials` entry runs with (`displacement` or `projected`),
    /// in input order: `formulation: auto` resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub formulations: Vec<String>,
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
    /// The convergence test the step passed (e.g. `relative_residual`, `round_off`); empty
    /// where not recorded.
    #[serde(default)]
    pub converged_by: String,
    /// The attempts at this step that failed and were cut back, each with its reason (a list;
    /// `null` where not recorded).
    #[serde(default)]
    pub failed_attempts: serde_json::Value,
    /// Total reaction force and moment (about the origin, in the deformed configuration) of each
    /// constrained set: `{ "<set>": { "force": [..], "moment": [..] } }`; `null` where not
    /// recorded.
    #[serde(default)]
    pub reactions: serde_json::Value,
    /// The run's probes at the end of the step, by column name (`tip.uz`); empty without probes.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub probes: std::collections::BTreeMap<String, f64>,
    /// What the state says is suspect though the step converged (e.g. the linear model's
    /// strains far from small, inverted cells); absent when nothing is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Where the Newton loop ran on a GPU: bytes moved for the converged step's output (the
    /// displacement, the reactions and the cells' output fields coming down); absent on the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_transfer_bytes: Option<u64>,
}

/// State of the run: `{"state": "running"}`, `{"state": "completed"}`,
/// `{"state": "failed", "message": "..."}` or `{"state": "interrupted", "restart": "FILE.h5:STEP"}`
/// (stopped by a signal at a step boundary or a Newton iteration; `restart` is the
/// `--restart` argument that continues it from its last written step).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Completed,
    Failed { message: String },
    Interrupted { restart: String },
}

impl Summary {
    /// Reads a summary file; while the run goes on (or after a kill) the step records are read
    /// from the step log: its first `steps_completed` lines.
    pub fn read(path: &Path) -> Result<Summary, OutputError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| OutputError::Io { path, source }
        };
        let text = fs::read_to_string(path).map_err(io(path))?;
        let mut summary: Summary =
            serde_json::from_str(&text).map_err(|source| OutputError::Json {
                path: path.to_owned(),
                source,
            })?;
        if summary.steps.is_none() {
            let log = path.with_file_name(&summary.steps_log);
            summary.steps = Some(read_log(&log, summary.steps_completed)?);
        }
        Ok(summary)
    }
}

/// The first `count` records of the step log at `path`.
fn read_log(path: &Path, count: usize) -> Result<Vec<StepRecord>, OutputError> {
    let file = fs::File::open(path).map_err(|source| OutputError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut steps = Vec::with_capacity(count.min(1 << 20));
    for line in BufReader::new(file).lines().take(count) {
        let line = line.map_err(|source| OutputError::Io {
            path: path.to_owned(),
            source,
        })?;
        steps.push(
            serde_json::from_str(&line).map_err(|source| OutputError::Json {
                path: path.to_owned(),
                source,
            })?,
        );
    }
    if steps.len() < count {
        return Err(OutputError::InvalidData(format!(
            "{}: {} step records, the summary counts {count}",
            path.display(),
            steps.len()
        )));
    }
    Ok(steps)
}

/// Keeps the [`Summary`] of a run and its files in step. Calling order:
/// [`SummaryWriter::create`], [`SummaryWriter::record_step`] per converged step,
/// [`SummaryWriter::finish`] once. Non-finite numbers are written as `null`.
#[derive(Debug)]
pub struct SummaryWriter {
    path: PathBuf,
    log_path: PathBuf,
    log: fs::File,
    /// Bytes of complete lines in the log.
    log_len: u64,
    /// The summary without its steps.
    summary: Summary,
    /// Length of the summary file as last written.
    file_len: usize,
    faults: Faults,
}

impl SummaryWriter {
    /// Writes `<dir>/<name>.summary.json` with status `running` and an empty step log
    /// `<name>.steps.jsonl`, replacing files of those names. `dir` must exist.
    pub fn create(
        dir: &Path,
        name: &str,
        run: RunInfo,
        mesh: MeshInfo,
        faults: &Faults,
    ) -> Result<Self, OutputError> {
        let steps_log = format!("{name}.steps.jsonl");
        let log_path = dir.join(&steps_log);
        let log = fs::File::create(&log_path).map_err(|source| OutputError::Io {
            path: log_path.clone(),
            source,
        })?;
        let mut writer = SummaryWriter {
            path: dir.join(format!("{name}.summary.json")),
            log_path,
            log,
            log_len: 0,
            summary: Summary {
                run,
                mesh,
                steps_completed: 0,
                steps_log,
                steps: None,
                wall_s: 0.0,
                status: RunStatus::Running,
                preconditioner: None,
                ranks: None,
                stages: None,
            },
            file_len: 0,
            faults: faults.clone(),
        };
        writer.write_running()?;
        Ok(writer)
    }

    /// The summary file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The step log.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The summary as written so far (without the step records).
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Appends a step record to the log, then updates the run's wall time and step count in
    /// the summary.
    pub fn record_step(&mut self, record: StepRecord, wall_s: f64) -> Result<(), OutputError> {
        let mut line = serde_json::to_string(&record).map_err(|source| OutputError::Json {
            path: self.log_path.clone(),
            source,
        })?;
        line.push('\n');
        write_at_position(&self.log, &self.faults, self.log_len, line.as_bytes()).map_err(
            |source| OutputError::Io {
                path: self.log_path.clone(),
                source,
            },
        )?;
        self.log_len += line.len() as u64;
        self.summary.steps_completed += 1;
        self.summary.wall_s = wall_s;
        self.write_running()
    }

    /// Records the preconditioner's description; written with the next step or at the finish.
    pub fn set_preconditioner(&mut self, preconditioner: serde_json::Value) {
        self.summary.preconditioner = Some(preconditioner);
    }

    /// Records the ranks of a distributed run and their loads; written with the next step or at
    /// the finish.
    pub fn set_ranks(&mut self, ranks: RanksInfo) {
        self.summary.ranks = Some(ranks);
    }

    /// Records where the run's time went; written with the next record or
    /// [`SummaryWriter::finish`].
    pub fn set_stages(&mut self, stages: StageTable) {
        self.summary.stages = Some(stages);
    }

    /// Changes the ranks' figures set by [`SummaryWriter::set_ranks`] (none set: nothing);
    /// written with the next record or [`SummaryWriter::finish`].
    pub fn update_ranks(&mut self, change: impl FnOnce(&mut RanksInfo)) {
        if let Some(r) = &mut self.summary.ranks {
            change(r);
        }
    }

    /// Sets the final status and wall time and writes the full summary (with every step
    /// record). If that fails (a full disk), the summary without the step list (which stays in
    /// the log) is written in place over the last one instead; an error means that failed too.
    pub fn finish(&mut self, status: RunStatus, wall_s: f64) -> Result<(), OutputError> {
        self.summary.status = status;
        self.summary.wall_s = wall_s;
        let full = read_log(&self.log_path, self.summary.steps_completed).and_then(|steps| {
            let full = Summary {
                steps: Some(steps),
                ..self.summary.clone()
            };
            write_atomic(&self.path, &self.render(&full, 0)?, &self.faults)
        });
        if let Err(error) = full {
            return self.write_in_place().map_err(|_| error);
        }
        Ok(())
    }

    fn render(&self, summary: &Summary, reserve: usize) -> Result<Vec<u8>, OutputError> {
        let mut text = serde_json::to_vec_pretty(summary).map_err(|source| OutputError::Json {
            path: self.path.clone(),
            source,
        })?;
        text.push(b'\n');
        text.resize(text.len() + reserve, b' ');
        Ok(text)
    }

    /// Replaces the summary (without steps) atomically, with trailing space in reserve.
    fn write_running(&mut self) -> Result<(), OutputError> {
        let text = self.render(&self.summary, RESERVE)?;
        write_atomic(&self.path, &text, &self.faults)?;
        self.file_len = text.len();
        Ok(())
    }

    /// Overwrites the summary in place (no new space needed) with the summary without steps,
    /// padded with spaces to the file's length.
    fn write_in_place(&mut self) -> Result<(), OutputError> {
        let io = |source| OutputError::Io {
            path: self.path.clone(),
            source,
        };
        let mut text = self.render(&self.summary, 0)?;
        if text.len() > self.file_len {
            return Err(OutputError::InvalidData(format!(
                "{}: the final summary ({} bytes) does not fit in the {} bytes reserved",
                self.path.display(),
                text.len(),
                self.file_len
            )));
        }
        text.resize(self.file_len, b' ');
        let file = fs::OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(io)?;
        write_at_position(&file, &self.faults, 0, &text).map_err(io)
    }
}
