//! The terminal rendering of a load path's events: one line per failed attempt and, with
//! `run -v`, one per step start and Newton iteration, on standard error.

use solve::newton::{FailedAttempt, IterationRecord, PathObserver};

/// Prints a load path's events on standard error.
pub struct TerminalMonitor {
    /// Every step start and Newton iteration (`run -v`).
    pub iterations: bool,
    /// Every failed attempt (also without `-v`; not with `-q`).
    pub cutbacks: bool,
}

impl PathObserver for TerminalMonitor {
    fn step_started(&self, from: f64, to: f64, load_factor: f64) {
        if self.iterations {
            eprintln!("time {from:.4} -> {to:.4} (load factor {load_factor:.4})");
        }
    }

    fn iteration(&self, iteration: usize, record: &IterationRecord, forcing: Option<f64>) {
        if !self.iterations {
            return;
        }
        let linear = &record.linear;
        let forcing = forcing.map_or(String::new(), |r| format!(" to {r:.1e}"));
        let note = record
            .line_search
            .as_ref()
            .map_or(String::new(), |n| format!(" ({n})"));
        eprintln!(
            "  newton {iteration:>2}  |r| {:.3e}  linear {:>4} iterations{forcing} (set-up {:.3} s, solve {:.3} s)  step {:.3}{note}",
            record.residual_norm, linear.iterations, linear.setup_s, linear.solve_s, record.step_length,
        );
        if let Some(fallback) = &linear.fallback {
            eprintln!("    {fallback}");
        }
        if let Some(bytes) = record.transfer_bytes {
            eprintln!("    {bytes} bytes between host and GPU");
        }
    }

    fn note(&self, text: &str) {
        if self.iterations {
            eprintln!("  {text}");
        }
    }

    fn attempt_failed(&self, attempt: &FailedAttempt, next: Option<f64>) {
        if !(self.cutbacks || self.iterations) {
            return;
        }
        match next {
            Some(next) => {
                eprintln!("  attempt {attempt}; cutting the increment back to {next:.3e}")
            }
            None => eprintln!("  attempt {attempt}"),
        }
    }
}
