//! Stopping a run at a safe point: a front end's request (the `hexfem` command sets it from
//! SIGINT / SIGTERM; this library installs no signal handler) is seen by the load path before
//! each step and each Newton iteration ([`PathObserver::stop_requested`]); the run then ends
//! with every converged step written, its summary `interrupted` with the `--restart` argument
//! that continues it, and returns [`Interrupted`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use comm::Comm;
use io::StepRecord;
use solve::newton::{
    ConvergedStep, FailedAttempt, IterationRecord, LinearSystem, PathObserver, PathPhase,
};

use crate::observer::{RunObserver, RunStart};

/// A request to stop, shared between whoever asks (a signal handler: setting an `AtomicBool`
/// is async-signal-safe) and the runs that honour it.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    pub fn new() -> Self {
        Self::default()
    }

    /// The flag itself, for a signal handler to set.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }

    /// Asks every run holding this token to stop at its next safe point.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for (on this process).
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The error of a run that stopped on request: its files hold every converged step up to
/// `step`, and `hexfem run INPUT --restart {restart}` continues it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("interrupted after step {step}; continue with --restart {restart}")]
pub struct Interrupted {
    /// The last step written.
    pub step: usize,
    /// `FILE.h5:STEP`, the `--restart` argument that continues the run.
    pub restart: String,
    /// The run's summary (its state `interrupted`).
    pub summary: PathBuf,
}

/// A run's observer that also answers [`PathObserver::stop_requested`] from an [`Interrupt`],
/// agreed over the ranks of `comm` (any rank's request stops all of them, at the same point).
/// Forwards every event to `inner`.
pub(crate) struct Interruptible<'a> {
    pub(crate) inner: &'a dyn RunObserver,
    pub(crate) interrupt: Option<&'a Interrupt>,
    pub(crate) comm: &'a dyn Comm,
}

impl PathObserver for Interruptible<'_> {
    fn step_started(&self, from: f64, to: f64, load_factor: f64) {
        self.inner.step_started(from, to, load_factor);
    }
    fn iteration(&self, iteration: usize, record: &IterationRecord, forcing: Option<f64>) {
        self.inner.iteration(iteration, record, forcing);
    }
    fn note(&self, text: &str) {
        self.inner.note(text);
    }
    fn attempt_failed(&self, attempt: &FailedAttempt, next: Option<f64>) {
        self.inner.attempt_failed(attempt, next);
    }
    fn linear_system(&self, system: &LinearSystem<'_>) {
        self.inner.linear_system(system);
    }
    fn timed(&self, phase: PathPhase<'_>, seconds: f64) {
        self.inner.timed(phase, seconds);
    }
    fn stop_requested(&self) -> bool {
        let Some(interrupt) = self.interrupt else {
            return self.inner.stop_requested();
        };
        let local = interrupt.requested() || self.inner.stop_requested();
        if self.comm.size() == 1 {
            return local;
        }
        let mut any = [if local { 1.0 } else { 0.0 }];
        match self.comm.allreduce_max(&mut any) {
            Ok(()) => any[0] > 0.0,
            // a failed reduction fails the next collective of the path too: go on to report it
            Err(_) => false,
        }
    }
}

impl RunObserver for Interruptible<'_> {
    fn run_started(&self, start: &RunStart) {
        self.inner.run_started(start);
    }
    fn step_finished(&self, step: &ConvergedStep, record: &StepRecord) {
        self.inner.step_finished(step, record);
    }
    fn step_written(&self, index: usize) {
        self.inner.step_written(index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks to stop once step 1 has converged (it is written before the run ends: one process
    /// writes a step while the next computes, so `step_written` would come only after step 2).
    struct StopAfterFirstStep(AtomicBool);

    impl PathObserver for StopAfterFirstStep {
        fn step_started(&self, _from: f64, _to: f64, _load_factor: f64) {}
        fn iteration(&self, _iteration: usize, _record: &IterationRecord, _forcing: Option<f64>) {}
        fn note(&self, _text: &str) {}
        fn attempt_failed(&self, _attempt: &FailedAttempt, _next: Option<f64>) {}
        fn linear_system(&self, _system: &LinearSystem<'_>) {}
        fn stop_requested(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
        fn timed(&self, _phase: PathPhase<'_>, _seconds: f64) {}
    }

    impl RunObserver for StopAfterFirstStep {
        fn run_started(&self, _start: &RunStart) {}
        fn step_written(&self, _index: usize) {}
        fn step_finished(&self, _step: &ConvergedStep, _record: &StepRecord) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A run asked to stop after its first step ends with [`Interrupted`] at step 1: the file
    /// holds steps 0 and 1, the summary says `interrupted` with `FILE.h5:1`; a token requested
    /// before the start stops it before any step (restart at step 0).
    #[test]
    fn a_stop_request_ends_the_run_between_steps_with_an_interrupted_summary() {
        let dir = std::env::temp_dir().join(format!("sim-interrupt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bar.yaml");
        std::fs::write(
            &input,
            "mesh: { box: { cells: [3, 1, 1], lower: [0, 0, 0], upper: [3, 1, 1] } }
materials: [{ model: neo_hookean, young_modulus: 100.0, poisson_ratio: 0.25 }]
boundary:
  dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }]
  traction: [{ set: xmax, value: [1.0, 0.0, 0.0] }]
loading: { steps: 4 }
",
        )
        .unwrap();
        let options = crate::RunOptions {
            output_dir: Some(dir.clone()),
            ..crate::RunOptions::new(&input)
        };
        let comm = comm::SelfComm::shared();
        let observer = StopAfterFirstStep(AtomicBool::new(false));
        let error = crate::run(&comm, &options, &observer).unwrap_err();
        let crate::Error::Interrupted(stopped) = error else {
            panic!("not interrupted: {error:#}");
        };
        let h5 = dir.join("bar.h5");
        assert_eq!(stopped.step, 1);
        assert_eq!(stopped.restart, format!("{}:1", h5.display()));
        let steps = io::ResultsReader::open(&h5).unwrap().steps().unwrap();
        assert_eq!(steps.len(), 2);
        let summary = io::Summary::read(&stopped.summary).unwrap();
        assert_eq!(
            summary.status,
            io::RunStatus::Interrupted {
                restart: stopped.restart.clone()
            }
        );
        let interrupt = Interrupt::new();
        interrupt.request();
        // the same directory again: the first run's files are replaced on purpose
        let options = crate::RunOptions {
            interrupt: Some(interrupt),
            overwrite: true,
            ..options
        };
        let error = crate::run(&comm, &options, &crate::Quiet).unwrap_err();
        let crate::Error::Interrupted(stopped) = error else {
            panic!("not interrupted: {error:#}");
        };
        assert_eq!(stopped.step, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
