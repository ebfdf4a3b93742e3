//! hexfem's simulation library: a run of a validated configuration (problem, Newton load path,
//! output, probes, restart, memory guard) on one rank or many, campaigns of runs, the
//! verification suite and the input check. It prints nothing: a run reports through a
//! [`RunObserver`] and returns typed results; the `hexfem` command line (`apps/hexfem`) parses
//! arguments and renders.
//!
//! A run from Rust: a small clamped box pulled on its free face, its files written to a
//! directory, the displacement read back.
//!
//! ```
//! use sim::{run, Quiet, RunOptions};
//!
//! let dir = std::env::temp_dir().join(format!("sim-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let input = dir.join("block.yaml");
//! std::fs::write(&input, "
//! mesh: { box: { cells: [4, 2, 2], lower: [0, 0, 0], upper: [2, 1, 1] } }
//! materials: [{ model: linear, young_modulus: 1.0e3, poisson_ratio: 0.3 }]
//! boundary:
//!   dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }]
//!   traction: [{ set: xmax, value: [1.0, 0.0, 0.0] }]
//! ")?;
//! let options = RunOptions::new(&input).with_output_dir(&dir);
//! let outcome = run(&comm::SelfComm::shared(), &options, &Quiet)?;
//!
//! // the last step's nodal displacements, three per node, from the HDF5 file
//! let results = io::ResultsReader::open(&outcome.h5)?;
//! let (_, u) = results.read_f64(&format!("steps/{:06}/displacement", outcome.steps))?;
//! let stretch = u.chunks(3).map(|u| u[0]).fold(0.0, f64::max);
//! // about F L / (E A) = 1 * 2 / 1e3 (the clamp stiffens it a little)
//! assert!((1.5e-3..2.1e-3).contains(&stretch), "{stretch}");
//! assert!(stretch <= outcome.figures.max_displacement); // the largest |u|
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), sim::Error>(())
//! ```

pub mod campaign;
pub mod charts;
pub mod check;
pub mod dist_output;
pub mod distributed;
mod driver;
mod error;
pub mod fields;
pub mod formulation;
pub mod interrupt;
pub mod locate;
pub mod memory;
pub mod nodal;
pub mod observer;
pub mod plausibility;
pub mod probes;
pub mod restart;
pub mod run;
pub mod solver_text;
pub mod stages;
mod state_write;
pub mod verify;
pub mod windows;
mod writer;

#[cfg(test)]
mod gpu_runs;

use std::sync::Arc;

use comm::Comm;

pub use error::{Error, Failure, Result, WriterFailure};
pub use interrupt::{Interrupt, Interrupted};
pub use observer::{Placement, Quiet, RanksDevice, RunObserver, RunStart};
pub use run::{RunFigures, RunOptions, RunOutcome};
// the output writer's cost per field group, for `hexfem bench writer` (its one entry point:
// the writer's pipeline stays private)
pub use state_write::timings::{writer_timings, WriterTimings};

/// Runs `options` on the ranks of `comm` (one rank: this process, as `hexfem run`; more: each
/// rank its part of the mesh, as `mpirun -np N hexfem run`), reporting to `observer` (on rank 0).
/// Every rank returns; rank 0's outcome names the files and holds the figures. On a failed load
/// path the files written so far are kept and the summary records the failure.
pub fn run(
    comm: &Arc<dyn Comm>,
    options: &RunOptions,
    observer: &dyn RunObserver,
) -> Result<RunOutcome, Error> {
    // rank 0 reports; every rank asks whether to stop (an agreed answer)
    let observer = interrupt::Interruptible {
        inner: if comm.rank() == 0 { observer } else { &Quiet },
        interrupt: options.interrupt.as_ref(),
        comm: &**comm,
    };
    run::run(comm, options, &observer)
}

/// `hexfem check`: validates `input` (with `overrides`) and builds everything a run needs but
/// the solve, on this process or on the ranks of `comm` (each rank its part of the mesh);
/// returns what it found (on ranks: the partition), for the command line to render.
pub fn check(
    comm: &Arc<dyn Comm>,
    input: &std::path::Path,
    overrides: &[String],
    output_dir: Option<&std::path::Path>,
) -> Result<check::CheckReport, Error> {
    check_input(comm, &Input::File(input), overrides, output_dir)
}

/// [`check`] of an input file or of the text read from standard input.
pub fn check_input(
    comm: &Arc<dyn Comm>,
    input: &Input,
    overrides: &[String],
    output_dir: Option<&std::path::Path>,
) -> Result<check::CheckReport, Error> {
    if comm.size() > 1 {
        distributed::check_on_ranks(comm, input, overrides, output_dir)
    } else {
        check::check_source(input, overrides, output_dir)
    }
}

/// The text of an input read by rank 0 (`read`: standard input's bytes for `hexfem run -`),
/// shared with every rank of `comm`: text that is not UTF-8 is refused at the line and column
/// of the first bad byte, as the configuration loader does; a failure is every rank's.
pub fn read_input_text(
    comm: &dyn Comm,
    read: impl FnOnce() -> std::io::Result<Vec<u8>>,
) -> Result<String, Error> {
    let local = if comm.rank() == 0 {
        read()
            .map_err(|e| Error::failure(format!("reading the input from standard input: {e}")))
            .and_then(|bytes| match String::from_utf8(bytes) {
                Ok(text) => Ok(text),
                // the configuration's own error: line, column and the byte
                Err(e) => match config::load_reader(e.as_bytes(), &[]) {
                    Err(located) => Err(Error::Input(located)),
                    Ok(_) => Err(Error::failure("standard input is not UTF-8 text".into())),
                },
            })
    } else {
        Ok(String::new())
    };
    if comm.size() == 1 {
        return local;
    }
    let text = distributed::agreed(comm, local)?;
    let root = if comm.rank() == 0 {
        text.as_bytes()
    } else {
        &[]
    };
    let all = comm.allgatherv_bytes(root)?;
    let text = all.into_iter().next().unwrap_or_default();
    Ok(String::from_utf8(text)?)
}

/// Where a run's input comes from: a YAML file, or its text (`hexfem run -`: standard input,
/// named [`config::STDIN_NAME`] in errors; relative paths are relative to the working directory).
pub enum Input<'a> {
    File(&'a std::path::Path),
    Text(&'a str),
}

impl Input<'_> {
    /// The name errors and the default output name use.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Input::File(path) => path,
            Input::Text(_) => std::path::Path::new(config::STDIN_NAME),
        }
    }

    /// Reads and validates the configuration with `overrides`.
    pub fn load(&self, overrides: &[String]) -> Result<config::Config, config::ConfigError> {
        match self {
            Input::File(path) => config::load_with_overrides(path, overrides),
            Input::Text(text) => config::load_str(text, self.path(), overrides),
        }
    }
}
