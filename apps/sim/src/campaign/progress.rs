//! Campaign progress: a bar redrawn in place on a terminal (cases done, running, failed, time
//! left), one line per finished case otherwise (CI, pipes), nothing when quiet.

use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::time::Instant;

use super::table::{CaseRow, CaseStatus};

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

    pub(crate) fn start(self, total: usize, resumed: usize) -> Display {
        let (tx, rx) = mpsc::channel();
        let display = Display {
            kind: self,
            total,
            done: resumed,
            failed: 0,
            running: 0,
            ran: 0,
            started: Instant::now(),
            events: rx,
            sender: tx,
        };
        if self != Reporter::Quiet && resumed > 0 {
            say(&format!(
                "resuming: {resumed} of {total} cases already completed"
            ));
        }
        if self == Reporter::Bar {
            display.draw();
        }
        display
    }
}

/// What a worker reports while it runs.
pub(crate) enum Event {
    Started,
}

/// The progress display of a running campaign (owned by the thread that collects results).
pub(crate) struct Display {
    kind: Reporter,
    total: usize,
    done: usize,
    failed: usize,
    running: usize,
    /// Cases finished in this process (for the time estimate).
    ran: usize,
    started: Instant,
    events: mpsc::Receiver<Event>,
    sender: mpsc::Sender<Event>,
}

impl Display {
    /// A sender for the workers' events.
    pub fn events(&self) -> mpsc::Sender<Event> {
        self.sender.clone()
    }

    /// Records a finished case and redraws.
    pub fn finished(&mut self, row: &CaseRow, description: &str) {
        while let Ok(Event::Started) = self.events.try_recv() {
            self.running += 1;
        }
        self.running = self.running.saturating_sub(1);
        self.done += 1;
        self.ran += 1;
        if row.status == CaseStatus::Failed {
            self.failed += 1;
        }
        match self.kind {
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
                    row.case, self.done, self.total, row.wall_s
                ));
            }
            Reporter::Bar => self.draw(),
        }
    }

    fn draw(&self) {
        const WIDTH: usize = 30;
        let filled = WIDTH * self.done / self.total.max(1);
        let left = self.total - self.done;
        let eta = if self.ran > 0 {
            self.started.elapsed().as_secs_f64() / self.ran as f64 * left as f64
        } else {
            f64::NAN
        };
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
            self.done,
            self.total,
            self.running,
            self.failed
        );
    }

    /// Ends the display (the bar's line).
    pub fn done(&self) {
        if self.kind == Reporter::Bar {
            let _ = writeln!(std::io::stderr().lock());
        }
    }
}

fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
