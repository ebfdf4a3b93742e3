//! Fault injection for crash tests: stop the output at a chosen write, optionally after writing
//! only part of it, as a kill or a full disk would.
//!
//! Every write, rename and truncation the output makes (HDF5 file, XDMF, step log, summary) is
//! one numbered *write position* (0, 1, ...), counted across all writers sharing one [`Faults`].
//! A plan stops at one position: with [`FaultAction::Abort`] the process aborts there (what the
//! binary's test-only switch does: no destructor, no flush, like `kill -9`); with
//! [`FaultAction::Fail`] the write returns an error and the writers must leave the files as they
//! are (what in-process tests use). The default `Faults` injects nothing and costs one branch.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What happens at the chosen write position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// `std::process::abort()`: the process dies inside the write.
    Abort,
    /// The write returns an error of kind `Other` ("injected fault").
    Fail,
}

/// A shared write counter and an optional stop position.
#[derive(Clone, Debug, Default)]
pub struct Faults(Option<Arc<Plan>>);

#[derive(Debug)]
struct Plan {
    count: AtomicUsize,
    stop_at: Option<usize>,
    torn: bool,
    action: FaultAction,
}

impl Faults {
    /// Injects nothing (production).
    pub fn none() -> Self {
        Faults(None)
    }

    /// Counts writes without stopping (to learn how many positions a run has).
    pub fn counting() -> Self {
        Faults(Some(Arc::new(Plan {
            count: AtomicUsize::new(0),
            stop_at: None,
            torn: false,
            action: FaultAction::Fail,
        })))
    }

    /// Stops at write position `at`; with `torn` the first half of that write's bytes reach the
    /// file first (a kill inside the write call).
    pub fn stop_at(at: usize, torn: bool, action: FaultAction) -> Self {
        Faults(Some(Arc::new(Plan {
            count: AtomicUsize::new(0),
            stop_at: Some(at),
            torn,
            action,
        })))
    }

    /// Write positions passed so far.
    pub fn writes(&self) -> usize {
        self.0
            .as_ref()
            .map_or(0, |p| p.count.load(Ordering::SeqCst))
    }

    /// Called before a write of `len` bytes: `None` to proceed, or `Some(k)`: write only the
    /// first `k` bytes, then call [`Faults::stop`].
    pub(crate) fn hit(&self, len: usize) -> Option<usize> {
        let plan = self.0.as_ref()?;
        let position = plan.count.fetch_add(1, Ordering::SeqCst);
        (plan.stop_at == Some(position)).then_some(if plan.torn { len / 2 } else { 0 })
    }

    /// Ends the run at the stop position: aborts, or returns the injected error.
    pub(crate) fn stop(&self) -> io::Error {
        if let Some(plan) = &self.0 {
            if plan.action == FaultAction::Abort {
                std::process::abort();
            }
        }
        io::Error::other("injected fault")
    }
}
