//! A campaign's progress as values: where it stands ([`Tally`]) and the observer told of it
//! (the `hexfem campaign` command draws a bar or prints a line per case).

use std::time::Instant;

use super::table::{CaseRow, CaseStatus};

/// Where a running campaign stands.
#[derive(Clone, Debug)]
pub struct Tally {
    pub total: usize,
    /// Cases finished, the resumed ones included.
    pub done: usize,
    pub failed: usize,
    /// Cases at work now.
    pub running: usize,
    /// Cases finished in this process (for the time estimate).
    pub ran: usize,
    pub started: Instant,
}

impl Tally {
    pub(crate) fn new(total: usize, resumed: usize) -> Self {
        Tally {
            total,
            done: resumed,
            failed: 0,
            running: 0,
            ran: 0,
            started: Instant::now(),
        }
    }

    /// Counts a finished case; `started` cases began since the last call.
    pub(crate) fn finished(&mut self, row: &CaseRow, started: usize) {
        self.running = (self.running + started).saturating_sub(1);
        self.done += 1;
        self.ran += 1;
        if row.status == CaseStatus::Failed {
            self.failed += 1;
        }
    }

    /// Seconds left at the mean wall time of the cases run in this process (NaN before the
    /// first).
    pub fn seconds_left(&self) -> f64 {
        if self.ran == 0 {
            return f64::NAN;
        }
        let left = self.total - self.done;
        self.started.elapsed().as_secs_f64() / self.ran as f64 * left as f64
    }
}

/// Told of a campaign's progress, on the thread that collects the cases' rows.
pub trait CampaignObserver {
    /// The cases are validated and about to run (`tally.done`: those resumed).
    fn started(&mut self, _tally: &Tally) {}
    /// A case finished: its row and the table are written.
    fn case_finished(&mut self, _row: &CaseRow, _description: &str, _tally: &Tally) {}
    /// Every case has finished.
    fn done(&mut self, _tally: &Tally) {}
}

impl CampaignObserver for crate::observer::Quiet {}
