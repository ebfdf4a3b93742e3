//! The campaign's results: one [`CaseRow`] per case, written as `case_NNNN/case.json` when the
//! case ends and gathered into `results.csv` and `results.jsonl` (case order).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Context;
use config::campaign::CaseSpec;
use serde::{Deserialize, Serialize};

use crate::run::RunOutcome;
use crate::Result;

/// How a case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    Completed,
    Failed,
}

/// One case's line of the results table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseRow {
    pub case: usize,
    /// Hash of the resolved input (see `--resume`).
    pub hash: String,
    pub directory: PathBuf,
    /// The case's parameter values, by key path (JSON values).
    pub parameters: serde_json::Map<String, serde_json::Value>,
    pub status: CaseStatus,
    /// The first error of a failed case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Converged load steps and the load factor reached.
    pub steps: usize,
    pub load_factor: f64,
    pub newton_iterations: usize,
    pub linear_iterations: usize,
    pub amg_cold_setups: usize,
    pub amg_hot_setups: usize,
    /// AMG renewals for a new near-null space (absent from rows written before they existed).
    #[serde(default)]
    pub amg_renewed_setups: usize,
    /// Seconds in preconditioner set-ups.
    pub setup_s: f64,
    /// Seconds of the first set-up (cold, or hot on the solver of the case before).
    #[serde(default)]
    pub first_setup_s: f64,
    /// Seconds to build the problem, or to reconfigure the one of the case before.
    #[serde(default)]
    pub problem_s: f64,
    /// Wall time of the case.
    pub wall_s: f64,
    /// At the last converged step.
    pub strain_energy: Option<f64>,
    pub max_displacement: Option<f64>,
    /// Total reaction force on each node and face set.
    pub reactions: BTreeMap<String, [f64; 3]>,
    pub probes: BTreeMap<String, f64>,
    /// Whether the mesh and element loop, and the linear solver, came from the case before.
    pub reused_problem: bool,
    pub reused_solver: bool,
    /// Where the case ran: the host, the worker (`--jobs`) or rank group (under MPI), the
    /// ranks that ran it, and the GPU of its first rank (none on the CPU). Rows written before
    /// these existed read as an unnamed host.
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub group: usize,
    #[serde(default)]
    pub ranks: usize,
    #[serde(default)]
    pub gpu: Option<usize>,
    /// Read from an earlier campaign's `case.json` by `--resume` (not saved).
    #[serde(skip)]
    pub resumed: bool,
}

impl CaseRow {
    /// A row for `spec` before it runs.
    pub fn new(case: usize, hash: &str, directory: &Path, spec: &CaseSpec) -> Self {
        let parameters = spec
            .values
            .iter()
            .map(|v| {
                let value = serde_json::from_str(&v.json)
                    .unwrap_or_else(|_| serde_json::Value::String(v.json.clone()));
                (v.path.clone(), value)
            })
            .collect();
        CaseRow {
            case,
            hash: hash.to_owned(),
            directory: directory.to_owned(),
            parameters,
            status: CaseStatus::Failed,
            error: None,
            steps: 0,
            load_factor: 0.0,
            newton_iterations: 0,
            linear_iterations: 0,
            amg_cold_setups: 0,
            amg_hot_setups: 0,
            amg_renewed_setups: 0,
            setup_s: 0.0,
            first_setup_s: 0.0,
            problem_s: 0.0,
            wall_s: 0.0,
            strain_energy: None,
            max_displacement: None,
            reactions: BTreeMap::new(),
            probes: BTreeMap::new(),
            reused_problem: false,
            reused_solver: false,
            host: String::new(),
            group: 0,
            ranks: 1,
            gpu: None,
            resumed: false,
        }
    }

    pub(crate) fn completed(&mut self, outcome: &RunOutcome) {
        let f = &outcome.figures;
        self.status = CaseStatus::Completed;
        self.steps = outcome.steps;
        self.load_factor = f.load_factor;
        self.newton_iterations = f.newton_iterations;
        self.linear_iterations = f.linear_iterations;
        self.amg_cold_setups = f.amg_cold_setups;
        self.amg_hot_setups = f.amg_hot_setups;
        self.amg_renewed_setups = f.amg_renewed_setups;
        self.setup_s = f.setup_s;
        self.first_setup_s = f.first_setup_s;
        self.problem_s = f.problem_s;
        self.strain_energy = Some(f.strain_energy);
        self.max_displacement = Some(f.max_displacement);
        self.reactions = f.reactions.clone();
        self.probes = f.probes.clone();
        self.reused_problem = f.reused_problem;
        self.reused_solver = f.reused_solver;
    }

    pub(crate) fn failed(&mut self, error: &str) {
        self.status = CaseStatus::Failed;
        self.error = Some(error.to_owned());
        // the converged steps the failed run left, from its summary when there is one
        if let Ok(entries) = std::fs::read_dir(&self.directory) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.to_string_lossy().ends_with(".summary.json") {
                    if let Ok(summary) = io::Summary::read(&path) {
                        self.steps = summary.steps_completed;
                        if let Some(last) = summary.steps.as_ref().and_then(|s| s.last()) {
                            self.load_factor = last.load_factor;
                            self.strain_energy = Some(last.strain_energy);
                            self.max_displacement = Some(last.max_displacement);
                        }
                    }
                }
            }
        }
    }

    /// Whether this row, read from a completed case's `case.json`, can stand for the case
    /// `expected` (a fresh row of it) whose run is named `name`: the same case, directory and
    /// parameters; a summary that says completed with the row's steps and figures; and an HDF5
    /// file that opens with steps `0..=steps`, the last at the row's load factor with a finite
    /// displacement of the row's largest length. `Err` says what disagrees (the case is rerun).
    pub(crate) fn agrees_with_files(&self, expected: &CaseRow, name: &str) -> Result<(), String> {
        let close = |what: &str, a: f64, b: f64| {
            if a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs()) {
                Ok(())
            } else {
                Err(format!("{what}: case.json says {a}, the files {b}"))
            }
        };
        if (self.case, &self.directory, &self.parameters)
            != (expected.case, &expected.directory, &expected.parameters)
        {
            return Err("case.json names another case, directory or parameter values".into());
        }
        let summary_path = self.directory.join(format!("{name}.summary.json"));
        let summary = io::Summary::read(&summary_path).map_err(|e| e.to_string())?;
        if summary.status != io::RunStatus::Completed || summary.steps_completed != self.steps {
            return Err(format!(
                "{}: not a completed run of {} steps",
                summary_path.display(),
                self.steps
            ));
        }
        let last = summary
            .steps
            .as_ref()
            .and_then(|s| s.last())
            .ok_or_else(|| format!("{}: no step records", summary_path.display()))?;
        close("load factor", self.load_factor, last.load_factor)?;
        close(
            "strain energy",
            self.strain_energy.unwrap_or(f64::NAN),
            last.strain_energy,
        )?;
        close(
            "max displacement",
            self.max_displacement.unwrap_or(f64::NAN),
            last.max_displacement,
        )?;
        if self.probes.keys().ne(last.probes.keys()) {
            return Err("probes: case.json lists other columns than the summary".into());
        }
        for (column, value) in &self.probes {
            close(column, *value, last.probes[column])?;
        }
        let h5 = self.directory.join(format!("{name}.h5"));
        let reader = io::ResultsReader::open(&h5).map_err(|e| e.to_string())?;
        let steps = reader.steps().map_err(|e| e.to_string())?;
        if steps.iter().map(|s| s.0).ne(0..=self.steps) {
            return Err(format!(
                "{}: holds {} steps, not 0..={}",
                h5.display(),
                steps.len(),
                self.steps
            ));
        }
        close("load factor (HDF5)", self.load_factor, steps[self.steps].1)?;
        let (_, u) = reader
            .read_f64(&format!("/steps/{:06}/displacement", self.steps))
            .map_err(|e| e.to_string())?;
        let (nodes, _) = u.as_chunks::<3>();
        if u.iter().any(|v| !v.is_finite()) {
            return Err(format!(
                "{}: a displacement that is not finite",
                h5.display()
            ));
        }
        let longest = nodes.iter().map(crate::run::length).fold(0.0, f64::max);
        close(
            "max displacement (HDF5)",
            self.max_displacement.unwrap_or(f64::NAN),
            longest,
        )
    }

    /// The row saved at `path`, if it can be read.
    pub fn read(path: &Path) -> Option<CaseRow> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut row: CaseRow = serde_json::from_str(&text).ok()?;
        row.resumed = true;
        Some(row)
    }

    /// Saves the row at `path` (replaced atomically).
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomic(path, serde_json::to_string(self)? + "\n")
    }
}

/// `results.csv` and `results.jsonl` of a campaign directory.
pub(crate) struct Table {
    pub csv: PathBuf,
    pub jsonl: PathBuf,
    parameters: Vec<String>,
}

impl Table {
    pub fn new(directory: &Path, parameters: &[String]) -> Self {
        Table {
            csv: directory.join("results.csv"),
            jsonl: directory.join("results.jsonl"),
            parameters: parameters.to_vec(),
        }
    }

    /// Writes both files with the rows there are, in case order.
    pub fn write(&self, rows: &[Option<CaseRow>]) -> Result<()> {
        let rows: Vec<&CaseRow> = rows.iter().flatten().collect();
        let mut jsonl = String::new();
        for row in &rows {
            jsonl.push_str(&serde_json::to_string(row)?);
            jsonl.push('\n');
        }
        write_atomic(&self.jsonl, jsonl)?;
        write_atomic(&self.csv, self.csv_text(&rows))
    }

    /// The CSV, one line per row: `case`, `status`, the parameters, the figures,
    /// `reaction.<set>.f{x,y,z}`, `probe.<column>`, where it ran (`host`, `group`, `ranks`,
    /// `gpu`), `error` (its lines joined by ` | `), `directory`. Reaction and probe columns are the union over the
    /// rows, sorted; a row without one leaves it empty.
    fn csv_text(&self, rows: &[&CaseRow]) -> String {
        let sets: std::collections::BTreeSet<&String> =
            rows.iter().flat_map(|r| r.reactions.keys()).collect();
        let probes: std::collections::BTreeSet<&String> =
            rows.iter().flat_map(|r| r.probes.keys()).collect();
        let mut header: Vec<String> = vec!["case".into(), "status".into()];
        header.extend(self.parameters.iter().cloned());
        header.extend(
            [
                "steps",
                "load_factor",
                "newton_iterations",
                "linear_iterations",
                "amg_cold_setups",
                "amg_hot_setups",
                "amg_renewed_setups",
                "wall_s",
                "strain_energy",
                "max_displacement",
            ]
            .map(String::from),
        );
        for s in &sets {
            header.extend(["fx", "fy", "fz"].map(|c| format!("reaction.{s}.{c}")));
        }
        header.extend(probes.iter().map(|p| format!("probe.{p}")));
        header.extend(["host", "group", "ranks", "gpu", "error", "directory"].map(String::from));
        let mut out = header
            .iter()
            .map(|h| field(h))
            .collect::<Vec<_>>()
            .join(",")
            + "\n";
        for r in rows {
            let mut line: Vec<String> = vec![
                r.case.to_string(),
                match r.status {
                    CaseStatus::Completed => "completed".into(),
                    CaseStatus::Failed => "failed".into(),
                },
            ];
            for p in &self.parameters {
                line.push(field(
                    &r.parameters.get(p).map_or(String::new(), |v| v.to_string()),
                ));
            }
            line.extend([
                r.steps.to_string(),
                number(r.load_factor),
                r.newton_iterations.to_string(),
                r.linear_iterations.to_string(),
                r.amg_cold_setups.to_string(),
                r.amg_hot_setups.to_string(),
                r.amg_renewed_setups.to_string(),
                number(r.wall_s),
                r.strain_energy.map_or(String::new(), number),
                r.max_displacement.map_or(String::new(), number),
            ]);
            for s in &sets {
                match r.reactions.get(*s) {
                    Some(f) => line.extend(f.map(number)),
                    None => line.extend([String::new(), String::new(), String::new()]),
                }
            }
            for p in &probes {
                line.push(r.probes.get(*p).map_or(String::new(), |&v| number(v)));
            }
            line.extend([
                field(&r.host),
                r.group.to_string(),
                r.ranks.to_string(),
                r.gpu.map_or(String::new(), |g| g.to_string()),
            ]);
            // one line per row (spreadsheets, grep): the error's lines joined; results.jsonl
            // and case.json keep it whole
            let error = r.error.as_deref().unwrap_or("");
            let error: Vec<&str> = error.lines().map(str::trim).collect();
            line.push(field(&error.join(" | ")));
            line.push(field(&r.directory.to_string_lossy()));
            out.push_str(&line.join(","));
            out.push('\n');
        }
        out
    }
}

/// A number in its shortest round-trip form.
fn number(v: f64) -> String {
    serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// Writes `text` to `path` through a temporary file and a rename: readers see the old file or
/// the new one, never a part.
pub(crate) fn write_atomic(path: &Path, text: String) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
    Ok(())
}
