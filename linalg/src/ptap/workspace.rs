//! [`PtapWorkspace`]: the scratch of [`super::ptap_numeric`], owned by the caller and reused
//! from call to call, so that the hot Galerkin product allocates nothing.

use std::sync::{Mutex, PoisonError};

use super::streamed::WRows;
use super::wrow::UNMARKED;

/// Scratch of one thread: the row `W_i = A_i P` being built and its column marker (one entry
/// per coarse row, [`UNMARKED`] between rows).
#[derive(Debug)]
pub(crate) struct RowScratch {
    pub w_cols: Vec<u32>,
    pub w: Vec<f64>,
    pub w_marker: Vec<u32>,
}

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

/// Scratch of [`super::ptap_numeric`] for one [`super::PtapPlan`]: per-thread rows of `A P` and
/// column markers and, for the streamed strategy, one batch of `A P` rows and a cursor per coarse
/// row. Made by [`super::PtapPlan::workspace`] (the query that sizes it), kept by the caller
/// (the AMG hierarchy keeps one per level) and reused by every numeric call on that plan. The
/// row buffers grow to the longest row of `A P` in the first call and stay.
#[derive(Debug)]
pub struct PtapWorkspace {
    pub(crate) n_coarse: usize,
    pub(crate) rows: PerThread<RowScratch>,
    /// Streamed: markers of step 2 (any content; every use marks before it reads).
    pub(crate) scatter_markers: PerThread<Vec<u32>>,
    /// Streamed: the `W` rows of one batch, one entry per task of step 1.
    pub(crate) w_tasks: Vec<WRows>,
    /// Streamed: per coarse row, the first block of `P^T` whose fine row is not yet added.
    pub(crate) cursors: Vec<usize>,
}

impl PtapWorkspace {
    /// Scratch for a plan with `n_coarse` coarse block rows; `w_tasks` batch buffers for the
    /// streamed strategy (0 for the fused one).
    pub(crate) fn new(n_coarse: usize, w_tasks: usize) -> Self {
        let streamed = w_tasks > 0;
        Self {
            n_coarse,
            rows: PerThread::new(|| RowScratch {
                w_cols: Vec::new(),
                w: Vec::new(),
                w_marker: vec![UNMARKED; n_coarse],
            }),
            scatter_markers: PerThread::new(|| {
                if streamed {
                    vec![0; n_coarse]
                } else {
                    Vec::new()
                }
            }),
            w_tasks: (0..w_tasks).map(|_| WRows::default()).collect(),
            cursors: if streamed {
                vec![0; n_coarse]
            } else {
                Vec::new()
            },
        }
    }
}
