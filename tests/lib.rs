//! End-to-end tests of hexfem live in `tests/`: every input of `inputs/` run and checked against
//! physics, the AMG on the ex56 problem, and the verification suite. The command-line tests stay
//! with the binary (`apps/hexfem/tests/cli.rs`). This library holds what the tests share.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use sim::{RunObserver, RunOptions, RunOutcome};

/// `hexfem run` of `options` in this process (one rank), reporting to `observer`.
pub fn run(options: &RunOptions, observer: &dyn RunObserver) -> Result<RunOutcome, sim::Error> {
    sim::run(&linalg::comm::SelfComm::shared(), options, observer)
}

/// `hexfem check` of `input` with `overrides`, as the command prints it.
pub fn check(
    input: &Path,
    overrides: &[String],
    output_dir: Option<&Path>,
) -> anyhow::Result<String> {
    let report = sim::check::check(input, overrides, output_dir)?;
    Ok(hexfem::check_text::render(&report))
}

/// The run of `input` writing its files to `dir`, replacing what an earlier test run left
/// there; further options by [`RunOptions`]' `with_*` methods.
pub fn run_options(input: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> RunOptions {
    RunOptions::new(input)
        .with_output_dir(dir)
        .with_overwrite(true)
}

/// Writes the input `text` as `dir/name.yaml` and runs it (see [`run_options`]), its files in
/// `output_dir`; an error is rendered with its causes (`{e:#}`), as the command prints it.
pub fn run_text(
    dir: &Path,
    name: &str,
    text: &str,
    output_dir: &Path,
) -> Result<RunOutcome, String> {
    let input = dir.join(format!("{name}.yaml"));
    std::fs::write(&input, text).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    run(&run_options(input, output_dir), &sim::Quiet).map_err(|e| format!("{e:#}"))
}

/// The error of [`run_text`] (a run that succeeds fails the test).
pub fn run_text_error(dir: &Path, name: &str, text: &str, output_dir: &Path) -> String {
    match run_text(dir, name, text, output_dir) {
        Ok(_) => panic!("{name}: the run succeeded"),
        Err(e) => e,
    }
}

/// The shape and values of the float64 dataset `name` of step `step` of a run's results.
pub fn step_dataset(outcome: &RunOutcome, step: usize, name: &str) -> (Vec<usize>, Vec<f64>) {
    io::ResultsReader::open(&outcome.h5)
        .and_then(|r| r.read_f64(&format!("steps/{step:06}/{name}")))
        .unwrap_or_else(|e| panic!("{}: step {step} {name}: {e}", outcome.h5.display()))
}

/// A fresh directory under the system's temporary directory, unique to this process and `tag`,
/// removed with everything in it when dropped (a failing test unwinds through the drop too), so
/// that no test leaves files behind.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates `<tmp>/hexfem-<pid>-<tag>` (emptied first if a crashed run left it).
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("hexfem-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        ScratchDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
