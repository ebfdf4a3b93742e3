//! Campaign progress on standard error: a bar redrawn in place on a terminal (cases done,
//! running, failed, time left), one line per finished case otherwise (CI, pipes), nothing when
//! quiet. Best effort: a closed standard error must not end the campaign.

use std::io::{IsTerminal, Write};

use sim::campaign::{CampaignObserver, CaseRow, CaseStatus, Tally};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reporter {
    Quiet,
    /// One line per finished case on standard error.
    Lines,
    /// A progress bar on standard error (a terminal).
    Bar,
}

impl Reporter {
    /// A bar on an interactive terminal, lines in CI (`CI` set) or when standard error is piped.
    pub fn auto() -> Self {
        if std::env::var_os("CI").is_none() && std::io::stderr().is_terminal() {
            Reporter::Bar
        } else {
            Reporter::Lines
        }
    }
}

/// Renders a campaign's progress.
pub struct CampaignProgress {
    pub reporter: Reporter,
    /// Test-only: abort the process once N cases have finished (their rows and the table
    /// written).
    pub abort_after_cases: Option<usize>,
    /// Cases finished in this process.
    pub finished: usize,
}

impl CampaignObserver for CampaignProgress {
    fn started(&mut self, tally: &Tally) {
        if self.reporter != Reporter::Quiet && tally.done > 0 {
            say(&format!(
                "resuming: {} of {} cases already completed",
                tally.done, tally.total
            ));
        }
        if self.reporter == Reporter::Bar {
            draw(tally);
        }
    }

    fn case_finished(&mut self, row: &CaseRow, description: &str, tally: &Tally) {
        match self.reporter {
            Reporter::Quiet => {}
            Reporter::Lines => {
                let what = match (&row.status, &row.error) {
                    (CaseStatus::Failed, Some(e)) => {
                        format!("failed: {}", e.lines().next().unwrap_or(""))
                    }
                    _ => format!("completed, {} steps", row.steps),
                };
                say(&format!(
                    "case {:>4} ({}/{}) {what} in {:.2} s  [{description}]",
                    row.case, tally.done, tally.total, row.wall_s
                ));
            }
            Reporter::Bar => draw(tally),
        }
        self.finished += 1;
        if self.abort_after_cases == Some(self.finished) {
            std::process::abort();
        }
    }

    fn done(&mut self, _tally: &Tally) {
        if self.reporter == Reporter::Bar {
            let _ = writeln!(std::io::stderr().lock());
        }
    }
}

fn draw(tally: &Tally) {
    const WIDTH: usize = 30;
    let filled = WIDTH * tally.done / tally.total.max(1);
    let eta = tally.seconds_left();
    let eta = if eta.is_finite() {
        format!("{}:{:02} left", eta as u64 / 60, eta as u64 % 60)
    } else {
        "--:-- left".into()
    };
    let _ = write!(
        std::io::stderr().lock(),
        "\r\x1b[2K[{}{}] {}/{} done  {} running  {} failed  {eta}",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        tally.done,
        tally.total,
        tally.running,
        tally.failed
    );
}

fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
