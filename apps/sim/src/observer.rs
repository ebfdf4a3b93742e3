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
/// iteration and failed attempt. As in [`PathObserver`], no method has a default body, so that
/// a decorator (the run's stage timer, its interrupt) passes every event on; [`Quiet`] ignores
/// them all.
pub trait RunObserver: PathObserver + Sync {
    /// The run is set up and its first state handed to the output: what it computes, where,
    /// with what.
    fn run_started(&self, start: &RunStart);
    /// A load step converged and its outputs were computed: `record` is what the summary
    /// records of it.
    fn step_finished(&self, step: &ConvergedStep, record: &StepRecord);
    /// Step `index` is completely written (results, probes, summary): reported only once it is
    /// on disk (with one process, after the next step converged, or at the run's end).
    fn step_written(&self, index: usize);
}

/// The observer that reports nothing and never asks to stop: Newton's [`solve::newton::Silent`],
/// which a run needs no second copy of.
pub use solve::newton::Silent as Quiet;

impl RunObserver for Quiet {
    fn run_started(&self, _start: &RunStart) {}
    fn step_finished(&self, _step: &ConvergedStep, _record: &StepRecord) {}
    fn step_written(&self, _index: usize) {}
}

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
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;
    use crate::interrupt::{Interrupt, Interruptible};
    use solve::newton::{FailedAttempt, IterationRecord, LinearSystem, PathPhase};

    /// Runs a linear bar of `cells` cells along x, clamped on xmin and pulled on xmax in two
    /// load steps, in a fresh folder named after `tag` (removed afterwards), reporting to
    /// `observer`.
    fn run_bar(
        tag: &str,
        cells: usize,
        observer: &dyn RunObserver,
    ) -> crate::Result<crate::RunOutcome> {
        let dir = std::env::temp_dir().join(format!("sim-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bar.yaml");
        std::fs::write(
            &input,
            format!(
                "mesh: {{ box: {{ cells: [{cells}, 1, 1], lower: [0, 0, 0], upper: [{cells}, 1, 1] }} }}
materials: [{{ model: linear, young_modulus: 100.0, poisson_ratio: 0.25 }}]
boundary:
  dirichlet: [{{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }}]
  traction: [{{ set: xmax, value: [1.0, 0.0, 0.0] }}]
loading: {{ steps: 2 }}
"
            ),
        )
        .unwrap();
        let options = crate::RunOptions {
            output_dir: Some(dir.clone()),
            ..crate::RunOptions::new(&input)
        };
        let run = crate::run(&comm::SelfComm::shared(), &options, observer);
        let _ = std::fs::remove_dir_all(&dir);
        run
    }
    use crate::stages::{RunStages, Timed};

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
        fn note(&self, _text: &str) {}
        fn attempt_failed(&self, _attempt: &FailedAttempt, _next: Option<f64>) {}
        fn linear_system(&self, _system: &LinearSystem<'_>) {}
        fn stop_requested(&self) -> bool {
            false
        }
        fn timed(&self, _phase: PathPhase<'_>, _seconds: f64) {}
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
        let recorder = Recorder::default();
        let outcome = run_bar("observer", 3, &recorder).unwrap();
        let events = recorder.0.into_inner().unwrap();
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

    /// Counts the calls of each method.
    #[derive(Default)]
    struct Counter(Mutex<BTreeMap<&'static str, usize>>);

    impl Counter {
        fn count(&self, method: &'static str) {
            if let Ok(mut counts) = self.0.lock() {
                *counts.entry(method).or_default() += 1;
            }
        }
        fn counts(&self) -> BTreeMap<&'static str, usize> {
            self.0.lock().map(|c| c.clone()).unwrap_or_default()
        }
    }

    impl PathObserver for Counter {
        fn step_started(&self, _from: f64, _to: f64, _load_factor: f64) {
            self.count("step_started");
        }
        fn iteration(&self, _iteration: usize, _record: &IterationRecord, _forcing: Option<f64>) {
            self.count("iteration");
        }
        fn note(&self, _text: &str) {
            self.count("note");
        }
        fn attempt_failed(&self, _attempt: &FailedAttempt, _next: Option<f64>) {
            self.count("attempt_failed");
        }
        fn linear_system(&self, _system: &LinearSystem<'_>) {
            self.count("linear_system");
        }
        fn stop_requested(&self) -> bool {
            self.count("stop_requested");
            false
        }
        fn timed(&self, _phase: PathPhase<'_>, _seconds: f64) {
            self.count("timed");
        }
    }

    impl RunObserver for Counter {
        fn run_started(&self, _start: &RunStart) {
            self.count("run_started");
        }
        fn step_finished(&self, _step: &ConvergedStep, _record: &StepRecord) {
            self.count("step_finished");
        }
        fn step_written(&self, _index: usize) {
            self.count("step_written");
        }
    }

    /// Counts every event it is told (`told`) and passes it on, through the run's two
    /// decorators as the run stacks them (the stage timer around the interrupt, the interrupt
    /// alone for the run's own events), to `seen`.
    #[derive(Default)]
    struct ThroughDecorators {
        told: Counter,
        seen: Counter,
    }

    impl ThroughDecorators {
        fn interruptible<'a>(&'a self, interrupt: &'a Interrupt) -> Interruptible<'a> {
            Interruptible {
                inner: &self.seen,
                interrupt: Some(interrupt),
                comm: &comm::SelfComm,
            }
        }
        /// Runs `f` on the stage timer around the interrupt around `seen`.
        fn through<T>(&self, method: &'static str, f: impl FnOnce(&dyn PathObserver) -> T) -> T {
            self.told.count(method);
            let interrupt = Interrupt::new();
            let interruptible = self.interruptible(&interrupt);
            let mut stages = RunStages::new(None, std::time::Instant::now());
            let timed = Timed {
                inner: &interruptible,
                stages: std::cell::RefCell::new(&mut stages),
            };
            f(&timed)
        }
    }

    impl PathObserver for ThroughDecorators {
        fn step_started(&self, from: f64, to: f64, load_factor: f64) {
            self.through("step_started", |o| o.step_started(from, to, load_factor));
        }
        fn iteration(&self, iteration: usize, record: &IterationRecord, forcing: Option<f64>) {
            self.through("iteration", |o| o.iteration(iteration, record, forcing));
        }
        fn note(&self, text: &str) {
            self.through("note", |o| o.note(text));
        }
        fn attempt_failed(&self, attempt: &FailedAttempt, next: Option<f64>) {
            self.through("attempt_failed", |o| o.attempt_failed(attempt, next));
        }
        fn linear_system(&self, system: &LinearSystem<'_>) {
            self.through("linear_system", |o| o.linear_system(system));
        }
        fn stop_requested(&self) -> bool {
            self.through("stop_requested", |o| o.stop_requested())
        }
        fn timed(&self, phase: PathPhase<'_>, seconds: f64) {
            self.through("timed", |o| o.timed(phase, seconds));
        }
    }

    impl RunObserver for ThroughDecorators {
        fn run_started(&self, start: &RunStart) {
            self.told.count("run_started");
            self.interruptible(&Interrupt::new()).run_started(start);
        }
        fn step_finished(&self, step: &ConvergedStep, record: &StepRecord) {
            self.told.count("step_finished");
            self.interruptible(&Interrupt::new())
                .step_finished(step, record);
        }
        fn step_written(&self, index: usize) {
            self.told.count("step_written");
            self.interruptible(&Interrupt::new()).step_written(index);
        }
    }

    /// Every method of [`PathObserver`] and [`RunObserver`], called with a run's own arguments
    /// (the two the run does not call, with made ones), reaches the observer inside the stage
    /// timer and the interrupt as often as it was called: neither decorator drops an event.
    #[test]
    fn the_decorators_pass_every_event_on() {
        let observer = ThroughDecorators::default();
        let run = run_bar("decorators", 2, &observer);
        run.unwrap();
        observer.note("a note");
        let attempt = FailedAttempt {
            from: 0.0,
            to: 0.5,
            newton_iterations: 1,
            linear_iterations: 2,
            reason: "a reason".into(),
        };
        observer.attempt_failed(&attempt, Some(0.25));
        let told = observer.told.counts();
        let every = [
            "step_started",
            "iteration",
            "note",
            "attempt_failed",
            "linear_system",
            "stop_requested",
            "timed",
            "run_started",
            "step_finished",
            "step_written",
        ];
        let told_methods: Vec<&str> = told.keys().copied().collect();
        let mut every_sorted = every.to_vec();
        every_sorted.sort_unstable();
        assert_eq!(told_methods, every_sorted, "a method was never called");
        assert_eq!(observer.seen.counts(), told);
    }
}
