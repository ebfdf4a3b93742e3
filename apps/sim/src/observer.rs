//! How a run reports what it does: events as values, in the manner of PETSc's `SNESMonitorSet`.
//! The library prints nothing; a front end implements [`RunObserver`] (the `hexfem` command
//! renders the header, the step lines and, with `-v`, the Newton iterations on standard error).
//!
//! Order of events: [`RunObserver::run_started`] once the first state (the undeformed one, or
//! the state a restart continues from) is written; then, per load step, the
//! [`PathObserver`] events of its Newton iterations and failed attempts,
//! [`RunObserver::step_finished`] when the converged step's outputs are computed and
//! [`RunObserver::step_written`] when its results, probes and summary are on disk. On ranks
//! only rank 0 reports (the others are given [`Quiet`]).

use config::Config;
use io::{MeshInfo, StepRecord};
use solve::linear_solver::{Choice, LinearSolver};
use solve::newton::{ConvergedStep, PathObserver};
use solve::params::NewtonParams;
use solve::problem::Problem;

/// Told of a run's start, its load steps and outputs; its [`PathObserver`] part of every Newton
/// iteration and failed attempt.
pub trait RunObserver: PathObserver + Sync {
    /// The run is set up and its first state written: what it computes, where, with what.
    fn run_started(&self, _start: &RunStart) {}
    /// A load step converged and its outputs were computed: `record` is what the summary
    /// records of it.
    fn step_finished(&self, _step: &ConvergedStep, _record: &StepRecord) {}
    /// Step `index` is completely written (results, probes, summary).
    fn step_written(&self, _index: usize) {}
}

/// The observer that reports nothing.
pub struct Quiet;

impl PathObserver for Quiet {}
impl RunObserver for Quiet {}

/// What a run computes and where, as it starts.
pub struct RunStart<'a> {
    pub config: &'a Config,
    /// This process's problem (on ranks: rank 0's part).
    pub problem: &'a Problem,
    /// The whole mesh's size.
    pub mesh: &'a MeshInfo,
    pub placement: Placement<'a>,
    /// The linear solver chosen for the options (`method: auto` resolved).
    pub solver: &'a Choice,
    pub newton: &'a NewtonParams,
}

/// Where a run computes.
pub enum Placement<'a> {
    /// One process: its linear solver (with the GPU where the Newton loop runs there) and, where
    /// `device: auto` stayed on the CPU because the GPU lacks a feature of the problem, why.
    Process {
        solver: &'a LinearSolver,
        fallback: Option<&'a str>,
    },
    /// MPI ranks: their devices, and each rank's owned nodes and owned cells.
    Ranks {
        device: &'a RanksDevice,
        loads: &'a [[u64; 2]],
    },
}

/// Where a run's ranks compute (`device:` under mpirun): the agreed choice and every rank's
/// device.
pub struct RanksDevice {
    pub device: linalg::Device,
    /// Each rank's device name.
    pub names: Vec<String>,
    /// Why `auto` runs on the CPUs.
    pub why_host: Option<String>,
    /// How halo exchanges travel between the GPUs (`nccl` or `staged`), and why not NCCL.
    pub exchange: (linalg::dist::DeviceExchange, Option<String>),
}
