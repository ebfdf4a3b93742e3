//! [`PtapWorkspace`]: the scratch of [`super::ptap_numeric`], owned by the caller and reused
//! from call to call, so that the hot Galerkin product allocates nothing.

use std::sync::{Mutex, PoisonError};

use super::streamed::WRows;
use super::wrow::UNMARKED;

/// One item per thread, each behind its own lock: a task takes the item of the thread it runs
/// on (uncontended), so that per-thread scratch lives in the caller's workspace instead of being
/// allocated inside the call. Tasks hold an item only while they run sequential code.
#[derive(Debug)]
pub(crate) struct PerThread<T> {
    items: Vec<Mutex<T>>,
}

impl<T> PerThread<T> {
    /// One item per thread of the current rayon pool.
    fn new(make: impl Fn() -> T) -> Self {
        let n = rayon::current_num_threads().max(1);
        Self {
            items: (0..n).map(|_| Mutex::new(make())).collect(),
        }
    }

    /// Runs `f` with the item of the calling thread (shared with another thread, in turn, when
    /// the call runs in a larger pool than the workspace was sized for).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let i = rayon::current_thread_index().unwrap_or(0) % self.items.len();
        let mut item = self.items[i].lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut item)
    }
}

/// Scratch of [`super::ptap_numeric`] for one [`super::PtapPlan`]: per-thread column markers,
/// one batch of `A P` rows and a cursor per coarse row. Made by [`super::PtapPlan::workspace`]
/// (the query that sizes it), kept by the caller (the AMG hierarchy keeps one per level) and
/// reused by every numeric call on that plan. The batch buffers grow to the batch's rows of `A P`
/// in the first call and stay.
#[derive(Debug)]
pub struct PtapWorkspace {
    pub(crate) n_coarse: usize,
    /// Markers of step 1 (one entry per coarse column, [`UNMARKED`] between rows).
    pub(crate) w_markers: PerThread<Vec<u32>>,
    /// Markers of step 2 (any content; every use marks before it reads).
    pub(crate) scatter_markers: PerThread<Vec<u32>>,
    /// The `W` rows of one batch, one entry per task of step 1.
    pub(crate) w_tasks: Vec<WRows>,
    /// Per coarse row, the first block of `P^T` whose fine row is not yet added.
    pub(crate) cursors: Vec<usize>,
}

impl PtapWorkspace {
    /// Scratch for a plan with `n_coarse` coarse block rows and `w_tasks` batch buffers.
    pub(crate) fn new(n_coarse: usize, w_tasks: usize) -> Self {
        Self {
            n_coarse,
            w_markers: PerThread::new(|| vec![UNMARKED; n_coarse]),
            scatter_markers: PerThread::new(|| vec![0; n_coarse]),
            w_tasks: (0..w_tasks).map(|_| WRows::default()).collect(),
            cursors: vec![0; n_coarse],
        }
    }
}
