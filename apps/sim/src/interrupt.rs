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
use solve::newton::{ConvergedStep, FailedAttempt, IterationRecord, PathObserver};

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
