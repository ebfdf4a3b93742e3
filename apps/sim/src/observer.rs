//! How a run reports what it does: events as values, in the manner of PETSc's `SNESMonitorSet`.
//! The library prints nothing; a front end implements [`RunObserver`] (the `hexfem` command
//! renders the header, the step lines and, with `-v`, the Newton iterations on standard error).
//!
//! Order of events: [`RunObserver::run_started`] once the first state (the undeformed one, or
//! the state a restart continues from) is handed to the output; then, per load step, the
//! [`PathObserver`] events of its Newton iterations and failed attempts,
//! [`RunObserver::step_finished`] when the converged step's outputs are computed and
//! [`RunObserver::step_written`] when its results, probes and summary are on disk. One process
//! writes a step while the next one computes (`crate::writer`): step `k`'s `step_written` then
//! comes once step `k + 1` has converged, before its `step_finished` (or at the run's end), so
//! `step_finished` and `step_written` still alternate. On ranks the steps are written as they
//! converge, and only rank 0 reports (the others are given [`Quiet`]).

use config::Config;
use io::{MeshInfo, StepRecord};
use solve::linear_solver::{Choice, LinearSolver};
use solve::newton::{ConvergedStep, PathObserver};
use solve::params::NewtonParams;
use solve::problem::Problem;

/// Told of a run's start, its load steps and outputs; its [`PathObserver`] part of every Newton
/// iteration and failed attempt.
pub trait RunObserver: PathObserver + Sync {
    /// The run is set up and its first state handed to the output: what it computes, where,
    /// with what.
    fn run_started(&self, _start: &RunStart) {}
    /// A load step converged and its outputs were computed: `record` is what the summary
    /// records of it.
    fn step_finished(&self, _step: &ConvergedStep, _record: &StepRecord) {}
    /// Step `index` is completely written (results, probes, summary): reported only once it is
    /// on disk (with one process, after the next step converged, or at the run's end).
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use solve::newton::IterationRecord;

    /// Records the events of a run, in order.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Recorder {
        fn push(&self, event: String) {
            if let Ok(mut events) = self.0.lock() {
                events.push(event);
            }
        }
    }

    impl PathObserver for Recorder {
        fn step_started(&self, _from: f64, _to: f64, load_factor: f64) {
            self.push(format!("step_started {load_factor}"));
        }
        fn iteration(&self, iteration: usize, _record: &IterationRecord, _forcing: Option<f64>) {
            self.push(format!("iteration {iteration}"));
        }
    }

    impl RunObserver for Recorder {
        fn run_started(&self, start: &RunStart) {
            let process = matches!(start.placement, Placement::Process { .. });
            self.push(format!("run_started {} {process}", start.mesh.cells));
        }
        fn step_finished(&self, step: &ConvergedStep, record: &StepRecord) {
            assert_eq!(step.load_factor, record.load_factor);
            self.push(format!("step_finished {}", step.index));
        }
        fn step_written(&self, index: usize) {
            self.push(format!("step_written {index}"));
        }
    }

    /// A run of two linear steps tells its observer, in order: the start (after the first
    /// state is handed to the output), then per step its start, its Newton iterations and its
    /// end; each step's files are reported written once they are, which is after the next step
    /// converged (the output writes a step while the next one computes) or at the end.
    #[test]
    fn a_run_reports_its_start_steps_iterations_and_writes_in_order() {
        let dir = std::env::temp_dir().join(format!("sim-observer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bar.yaml");
        std::fs::write(
            &input,
            "mesh: { box: { cells: [3, 1, 1], lower: [0, 0, 0], upper: [3, 1, 1] } }
materials: [{ model: linear, young_modulus: 100.0, poisson_ratio: 0.25 }]
boundary:
  dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }]
  traction: [{ set: xmax, value: [1.0, 0.0, 0.0] }]
loading: { steps: 2 }
",
        )
        .unwrap();
        let options = crate::RunOptions {
            output_dir: Some(dir.clone()),
            ..crate::RunOptions::new(&input)
        };
        let recorder = Recorder::default();
        let outcome = crate::run(&comm::SelfComm::shared(), &options, &recorder).unwrap();
        let events = recorder.0.into_inner().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(outcome.steps, 2);
        let expected = [
            "run_started 3 true",
            "step_started 0.5",
            "iteration 0",
            "step_finished 1",
            "step_started 1",
            "iteration 0",
            "step_written 1",
            "step_finished 2",
            "step_written 2",
        ];
        assert_eq!(events, expected);
    }
}
