//! The peers of `hexfem bench incompressible`: each case's linear system, exactly as hexfem's
//! CG + AMG sees it, exported in PETSc's binary format ([`SystemCapture`], through
//! [`solve::newton::PathObserver::linear_system`]), then solved by the peer scripts beside
//! `scripts/incompressible_pyamg.py` (PyAMG's smoothed aggregation) and
//! `scripts/incompressible_petsc.py` (PETSc CG + GAMG, and hypre BoomerAMG where PETSc has it),
//! each run by the first Python interpreter that has its module. A peer that cannot run is
//! skipped with a note, never an error.
//!
//! A case's directory holds `A.petsc` (the eliminated tangent as AIJ, `A.petsc.info` giving
//! block size 3: constrained rows and columns zero but the diagonal, which keeps a fraction of
//! the tangent's, as PETSc's `MatZeroRowsColumns` with those diagonal values), `b.petsc` (the right-hand side; the solve starts from zero),
//! `coordinates.petsc` (node-major x, y, z: the rigid-body modes' configuration) and
//! `constrained.petsc` (1 at constrained unknowns, else 0). `systems.json` lists the cases with
//! the relative tolerance and hexfem's own figures.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result};
use io::StepRecord;
use serde::{Deserialize, Serialize};
use sim::{RunObserver, RunStart};
use solve::newton::{
    ConvergedStep, FailedAttempt, IterationRecord, LinearSystem, PathObserver, PathPhase,
};

use crate::petsc_binary;

/// The manifest of the exported systems, in the export directory.
pub const MANIFEST: &str = "systems.json";

/// Interpreters tried for each peer script, in order (Debian's `python3-petsc4py` is importable
/// by the system interpreter only; PyAMG is often installed for another).
pub const INTERPRETERS: [&str; 2] = ["python3", "/usr/bin/python3"];

/// The exit status by which a peer script says its module is not importable.
pub const PEER_MODULE_MISSING: i32 = 3;

/// The peer scripts: a name and the file in `scripts/`.
pub const PEERS: [(&str, &str); 2] = [
    ("PyAMG", "incompressible_pyamg.py"),
    ("PETSc", "incompressible_petsc.py"),
];

/// The repository's `scripts/` directory (where the peers live), as compiled.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts")
}

/// Observes one run: writes the first linear system of its first step to `export` (where
/// given) and adds up the linear solves' set-up and solve times.
pub struct SystemCapture {
    export: Option<PathBuf>,
    state: Mutex<CaptureState>,
}

#[derive(Default)]
struct CaptureState {
    written: bool,
    error: Option<String>,
    setup_s: f64,
    solve_s: f64,
}

impl SystemCapture {
    /// A capture that writes into `export` (created where missing), or only times (`None`).
    pub fn new(export: Option<PathBuf>) -> Self {
        Self {
            export,
            state: Mutex::new(CaptureState::default()),
        }
    }

    /// The linear solves' set-up and solve seconds; an error where the export failed or the
    /// run solved no linear system while one was to be written.
    pub fn finish(self) -> Result<(f64, f64)> {
        let state = self
            .state
            .into_inner()
            .map_err(|_| anyhow::anyhow!("a capture's lock was poisoned"))?;
        if let Some(error) = state.error {
            anyhow::bail!("exporting the linear system: {error}");
        }
        if let (Some(dir), false) = (&self.export, state.written) {
            anyhow::bail!("{}: the run solved no linear system", dir.display());
        }
        Ok((state.setup_s, state.solve_s))
    }
}

/// Writes `system` into `dir` (see the module's documentation for the files).
pub fn write_system(dir: &Path, system: &LinearSystem<'_>) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tangent = system.tangent.to_host()?;
    petsc_binary::write_matrix(&dir.join("A.petsc"), &tangent)?;
    petsc_binary::write_vector(&dir.join("b.petsc"), system.rhs.host()?)?;
    let coordinates: Vec<f64> = system
        .reference_coordinates
        .iter()
        .flatten()
        .copied()
        .collect();
    petsc_binary::write_vector(&dir.join("coordinates.petsc"), &coordinates)?;
    let mask = system.constrained;
    let constrained: Vec<f64> = (0..mask.n_blocks())
        .flat_map(|i| (0..mask.block_size()).map(move |c| ((mask.bits(i) >> c) & 1) as f64))
        .collect();
    petsc_binary::write_vector(&dir.join("constrained.petsc"), &constrained)?;
    Ok(())
}

impl PathObserver for SystemCapture {
    fn step_started(&self, _from: f64, _to: f64, _load_factor: f64) {}

    fn iteration(&self, _iteration: usize, record: &IterationRecord, _forcing: Option<f64>) {
        if let Ok(mut state) = self.state.lock() {
            state.setup_s += record.linear.setup_s;
            state.solve_s += record.linear.solve_s;
        }
    }

    fn linear_system(&self, system: &LinearSystem<'_>) {
        let (Some(dir), Ok(mut state)) = (&self.export, self.state.lock()) else {
            return;
        };
        if state.written || state.error.is_some() {
            return;
        }
        match write_system(dir, system) {
            Ok(()) => state.written = true,
            Err(e) => state.error = Some(format!("{}: {e:#}", dir.display())),
        }
    }

    fn note(&self, _text: &str) {}
    fn attempt_failed(&self, _attempt: &FailedAttempt, _next: Option<f64>) {}
    fn stop_requested(&self) -> bool {
        false
    }
    fn timed(&self, _phase: PathPhase<'_>, _seconds: f64) {}
}

impl RunObserver for SystemCapture {
    fn run_started(&self, _start: &RunStart) {}
    fn step_finished(&self, _step: &ConvergedStep, _record: &StepRecord) {}
    fn step_written(&self, _index: usize) {}
}

/// One exported system, as listed in the manifest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExportedSystem {
    /// `{problem}_{element}_nu{poisson_ratio}`: the key of the peers' results.
    pub name: String,
    pub problem: String,
    pub element: String,
    pub poisson_ratio: f64,
    /// The directory of its files, relative to the manifest.
    pub dir: String,
    pub unknowns: usize,
    pub cg_iterations: usize,
}

/// The manifest: the systems, the tolerance every solver is held to and hexfem's iteration limit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub rtol: f64,
    pub block_size: usize,
    pub systems: Vec<ExportedSystem>,
}

/// One peer solver's configuration, as the peer reports it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeerSolver {
    pub name: String,
    /// The options it ran with (PETSc's options database entries, or keyword arguments).
    pub options: String,
}

/// A peer solver's result on one system.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeerResult {
    /// [`ExportedSystem::name`].
    pub system: String,
    pub solver: String,
    pub iterations: usize,
    pub converged: bool,
    pub setup_s: f64,
    pub solve_s: f64,
}

/// What one peer script printed (`--json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeerOutput {
    pub peer: String,
    pub version: String,
    pub solvers: Vec<PeerSolver>,
    pub results: Vec<PeerResult>,
    /// The interpreter that ran it (filled in by the bench).
    #[serde(default)]
    pub interpreter: String,
}

/// Runs every peer on the manifest in `dir`: the outputs of those that ran and a note for each
/// one skipped (why).
pub fn run_peers(dir: &Path) -> (Vec<PeerOutput>, Vec<String>) {
    let scripts = scripts_dir();
    let manifest = dir.join(MANIFEST);
    let (mut outputs, mut notes) = (Vec::new(), Vec::new());
    for (peer, script) in PEERS {
        let path = scripts.join(script);
        if !path.is_file() {
            notes.push(format!("{peer} skipped: {} not found", path.display()));
            continue;
        }
        match run_peer(&path, &manifest) {
            Ok(output) => outputs.push(output),
            Err(why) => notes.push(format!("{peer} skipped: {why}")),
        }
    }
    (outputs, notes)
}

/// The first interpreter of [`INTERPRETERS`] that runs `script` on `manifest`; otherwise why
/// each did not.
fn run_peer(script: &Path, manifest: &Path) -> std::result::Result<PeerOutput, String> {
    let mut why = Vec::new();
    for python in INTERPRETERS {
        let output = match Command::new(python)
            .arg(script)
            .arg("--systems")
            .arg(manifest)
            .arg("--json")
            .output()
        {
            Ok(output) => output,
            Err(e) => {
                why.push(format!("{python}: {e}"));
                continue;
            }
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.trim().lines().last().unwrap_or("").to_string();
        if !output.status.success() {
            why.push(match output.status.code() {
                Some(PEER_MODULE_MISSING) => format!("{python}: {last}"),
                code => format!("{python}: exit status {code:?}: {last}"),
            });
            continue;
        }
        return match serde_json::from_slice::<PeerOutput>(&output.stdout) {
            Ok(mut out) => {
                out.interpreter = python.to_string();
                Ok(out)
            }
            Err(e) => Err(format!("{python}: unreadable output ({e})")),
        };
    }
    Err(why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_peer_is_a_note_not_an_error() {
        // a manifest that does not exist: each peer found fails or is skipped, and says so
        let dir = std::env::temp_dir().join(format!("hexfem-no-peers-{}", std::process::id()));
        let (outputs, notes) = run_peers(&dir);
        assert!(outputs.is_empty());
        assert_eq!(notes.len(), PEERS.len(), "{notes:?}");
        for ((peer, _), note) in PEERS.iter().zip(&notes) {
            assert!(note.starts_with(&format!("{peer} skipped: ")), "{note}");
        }
    }

    /// Where petsc4py cannot be imported (here: a `petsc4py` that fails on import, first on the
    /// path) the PETSc peer exits with [`PEER_MODULE_MISSING`] and says why, before it reads
    /// anything; PyAMG's likewise.
    #[test]
    fn a_peer_without_its_module_exits_with_the_skip_status() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("hexfem-fake-modules-{}", std::process::id()));
        for module in ["petsc4py", "pyamg"] {
            std::fs::create_dir_all(dir.join(module))?;
            std::fs::write(
                dir.join(module).join("__init__.py"),
                format!("raise ImportError('{module} hidden by the test')\n"),
            )?;
        }
        for (_, script) in PEERS {
            let output = match Command::new("python3")
                .arg(scripts_dir().join(script))
                .args(["--systems", "no-such-manifest.json", "--json"])
                .env("PYTHONPATH", &dir)
                .output()
            {
                Ok(output) => output,
                Err(e) => {
                    eprintln!("skipped: no python3 ({e})");
                    return Ok(());
                }
            };
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(PEER_MODULE_MISSING),
                "{script}: {stderr}"
            );
            assert!(stderr.contains("hidden by the test"), "{script}: {stderr}");
            assert!(output.stdout.is_empty());
        }
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
