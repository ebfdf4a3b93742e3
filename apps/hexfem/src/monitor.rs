//! The terminal rendering of a run's events, on standard error: a header (problem size,
//! device, solvers), one line per load step with its reactions and per failed attempt, and with
//! `run -v` one per step start and Newton iteration. On an interactive terminal (standard error
//! a TTY, `CI` unset) the step lines also say `step k/N`, the time elapsed and an estimate of
//! the time left, and a live line (the Newton iteration and residual of the step under way) is
//! redrawn in place; piped, the output is one line per step. Best effort: a closed standard
//! error must not end the run.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Instant;

use config::Config;
use io::{MeshInfo, StepRecord};
use mesh::CellKind;
use sim::{Placement, RanksDevice, RunObserver, RunStart};
use solve::linear_solver::{LinearSolver, PreconditionerKind, SetupKind};
use solve::newton::{
    ConvergedStep, FailedAttempt, IterationRecord, LinearSystem, PathObserver, PathPhase,
};
use solve::problem::Problem;

/// How much progress to print on standard error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Nothing but errors (`-q`).
    Quiet,
    /// A header (problem size, device, solver), one line per load step and per failed attempt
    /// (the default, on a terminal or piped).
    Steps,
    /// Also one line per Newton iteration (`-v`).
    Iterations,
}

/// Prints a run's events on standard error.
pub struct TerminalMonitor {
    pub progress: Progress,
    /// Test-only (crash tests): abort the process right after step N is completely written.
    pub abort_after_step: Option<usize>,
    /// On an interactive terminal (default progress): where the run stands, for `step k/N`,
    /// the time estimate and the live line.
    live: Option<Mutex<Live>>,
}

/// Where a run stands, as the live line and the step lines on a terminal show it.
#[derive(Default)]
struct Live {
    /// Nominal load steps (`loading.steps`).
    steps: usize,
    /// Pseudo-time at the end of the load path.
    end_time: f64,
    /// The first step's start: path position and when.
    first: Option<(f64, Instant)>,
    /// The last step written (`None` before the first one of this run).
    last_index: Option<usize>,
    /// The step under way: when it started.
    step_started: Option<Instant>,
    /// Whether the live line is on the screen (to be cleared before other output).
    shown: bool,
}

impl Live {
    /// `elapsed M:SS, about M:SS left` at path position `position` (none before the first step).
    fn timing(&self, position: f64) -> String {
        let Some((start, when)) = self.first else {
            return String::new();
        };
        let elapsed = when.elapsed().as_secs_f64();
        let done = position - start;
        let left = if done > 0.0 {
            format!(
                ", about {} left",
                clock(elapsed / done * (1.0 - position).max(0.0))
            )
        } else {
            String::new()
        };
        format!("elapsed {}{left}", clock(elapsed))
    }

    /// `k/N`: the step's index and the nominal step count (more where cutbacks added steps).
    fn of(&self, index: usize) -> String {
        format!("{index:>3}/{}", self.steps.max(index))
    }
}

/// Seconds as `M:SS` (`H:MM:SS` from an hour on).
fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// Erases the terminal's current line.
const CLEAR_LINE: &str = "\r\x1b[2K";

impl TerminalMonitor {
    /// A monitor printing `progress`; live progress where standard error is an interactive
    /// terminal (not in CI).
    pub fn new(progress: Progress, abort_after_step: Option<usize>) -> Self {
        let interactive = std::env::var_os("CI").is_none() && std::io::stderr().is_terminal();
        TerminalMonitor {
            progress,
            abort_after_step,
            live: (interactive && progress == Progress::Steps).then(|| Mutex::new(Live::default())),
        }
    }

    fn iterations(&self) -> bool {
        self.progress == Progress::Iterations
    }

    /// Runs `f` on the live state, if any (a poisoned lock: no live output).
    fn with_live<T>(&self, f: impl FnOnce(&mut Live) -> T) -> Option<T> {
        let mut live = self.live.as_ref()?.lock().ok()?;
        Some(f(&mut live))
    }

    /// Prints `text` after clearing the live line.
    fn say(&self, text: &str) {
        let cleared = self.with_live(|live| std::mem::take(&mut live.shown));
        if cleared == Some(true) {
            print(CLEAR_LINE);
        }
        print(text);
    }

    /// Redraws the live line (`text`: one line, no newline).
    fn show(&self, text: &str) {
        if self.with_live(|live| live.shown = true).is_some() {
            print(&format!("{CLEAR_LINE}{text}"));
        }
    }

    /// The run ended: clears the live line.
    pub fn finish(&self) {
        self.say("");
    }
}

fn print(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{text}");
    let _ = err.flush();
}

impl RunObserver for TerminalMonitor {
    fn run_started(&self, start: &RunStart) {
        if self.progress == Progress::Quiet {
            return;
        }
        self.with_live(|live| {
            live.steps = start.config.loading.steps;
            live.end_time = solve::params::LoadingParams::from(&start.config.loading).end_time();
        });
        let size = problem_text(start.mesh, start.problem.mesh.kind);
        let solver = sim::solver_text::render(start.solver);
        let text = match &start.placement {
            Placement::Process {
                solver: linear,
                fallback,
            } => header(
                start.config,
                start.problem,
                &device_text(start.config, linear, *fallback),
                &solver,
                start.newton,
                &size,
            ),
            Placement::Ranks { device, loads } => {
                let mut text = header(
                    start.config,
                    start.problem,
                    &ranks_device_text(device, loads.len()),
                    &solver,
                    start.newton,
                    &size,
                );
                text.push_str("  ranks        rank: owned nodes, owned cells\n");
                for (r, l) in loads.iter().enumerate() {
                    text.push_str(&format!("               {r}: {}, {}\n", l[0], l[1]));
                }
                text
            }
        };
        self.say(&text);
    }

    fn step_finished(&self, step: &ConvergedStep, record: &StepRecord) {
        if self.progress == Progress::Quiet {
            return;
        }
        let mut text = step_lines(step, record);
        // on a terminal: `step k/N` and the time elapsed and left
        let progress = self.with_live(|live| {
            live.last_index = Some(step.index);
            (live.of(step.index), live.timing(step.position))
        });
        if let Some((of, timing)) = progress {
            let first_line = text.find('\n').unwrap_or(text.len());
            let line = text[..first_line].replacen(
                &format!("step {:>3}", step.index),
                &format!("step {of}"),
                1,
            );
            text = format!("{line}  {timing}{}", &text[first_line..]);
        }
        for warning in &record.warnings {
            text.push_str(&format!("  warning: {warning}\n"));
        }
        self.say(&text);
    }

    fn step_written(&self, index: usize) {
        if self.abort_after_step == Some(index) {
            std::process::abort();
        }
    }
}

impl PathObserver for TerminalMonitor {
    fn step_started(&self, from: f64, to: f64, load_factor: f64) {
        if self.iterations() {
            eprintln!("time {from:.4} -> {to:.4} (load factor {load_factor:.4})");
        }
        let line = self.with_live(|live| {
            let end = if live.end_time > 0.0 {
                live.end_time
            } else {
                1.0
            };
            live.first.get_or_insert((from / end, Instant::now()));
            live.step_started = Some(Instant::now());
            let step = live.last_index.map_or("  next".into(), |k| live.of(k + 1));
            format!(
                "step {step}  load {load_factor:.4}  ...  {}",
                live.timing(from / end)
            )
        });
        if let Some(line) = line {
            self.show(&line);
        }
    }

    fn iteration(&self, iteration: usize, record: &IterationRecord, forcing: Option<f64>) {
        let line = self.with_live(|live| {
            let step = live.last_index.map_or("  next".into(), |k| live.of(k + 1));
            let in_step = live.step_started.map_or(0.0, |t| t.elapsed().as_secs_f64());
            format!(
                "step {step}  newton {iteration:>2}  |r| {:.3e}  linear {:>4}  ({in_step:.1} s in this step)",
                record.residual_norm, record.linear.iterations
            )
        });
        if let Some(line) = line {
            self.show(&line);
        }
        if !self.iterations() {
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
        if self.iterations() {
            eprintln!("  {text}");
        }
    }

    fn attempt_failed(&self, attempt: &FailedAttempt, next: Option<f64>) {
        if self.progress == Progress::Quiet {
            return;
        }
        match next {
            Some(next) => self.say(&format!(
                "  attempt {attempt}; cutting the increment back to {next:.3e}\n"
            )),
            None => self.say(&format!("  attempt {attempt}\n")),
        }
    }

    fn linear_system(&self, _system: &LinearSystem<'_>) {}

    fn stop_requested(&self) -> bool {
        false
    }

    fn timed(&self, _phase: PathPhase<'_>, _seconds: f64) {}
}

/// The progress lines of a converged step: the step line (with cutbacks and, on the GPU, the
/// most bytes an iteration after the step's first moved and the bytes of the step's output) and
/// one line per constrained set's
/// reaction force and moment.
fn step_lines(step: &ConvergedStep, record: &StepRecord) -> String {
    let gpu_bytes = step
        .iterations
        .iter()
        .skip(1)
        .filter_map(|it| it.transfer_bytes)
        .max()
        .map_or(String::new(), |b| {
            format!(", GPU transfers <= {b} B per later iteration")
        });
    let output_bytes = step
        .output_transfer_bytes
        .map_or(String::new(), |b| format!(", {b} B for the output"));
    // the step's AMG set-ups from scratch or renewals (the first iteration's, after new modes)
    let setups: Vec<String> = step
        .iterations
        .iter()
        .filter_map(|it| {
            let kind = match it.linear.setup {
                SetupKind::AmgCold => "cold",
                SetupKind::AmgRenewed => "renewed",
                _ => return None,
            };
            let moved = it.linear.device.as_ref().map_or(String::new(), |d| {
                format!(" {:.1} MB", d.setup.total_bytes() as f64 / 1e6)
            });
            Some(format!("{kind} {:.2} s{moved}", it.linear.setup_s))
        })
        .collect();
    let setups = match setups.is_empty() {
        true => String::new(),
        false => format!(", AMG set-up: {}", setups.join(", ")),
    };
    let cutbacks = match step.cutbacks {
        0 => String::new(),
        n => format!(", after {n} cut back attempts"),
    };
    let mut text = format!(
        "step {:>3}  load {:.4}  newton {:>2}  linear {:>5}  |r| {:.3e}  energy {:.6e}  max |u| {:.4e}  ({:.2} s{cutbacks}{setups}{gpu_bytes}{output_bytes})\n",
        step.index,
        step.load_factor,
        record.newton_iterations,
        record.linear_iterations.iter().sum::<usize>(),
        step.residual_norm,
        record.strain_energy,
        record.max_displacement,
        step.wall_s,
    );
    if let Some(sets) = record.reactions.as_object() {
        for (set, total) in sets {
            let v = |key: &str| -> Vec<String> {
                total[key]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|x| format!("{:.4e}", x.as_f64().unwrap_or(f64::NAN)))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            text.push_str(&format!(
                "           reaction on {set}: force [{}]  moment [{}]\n",
                v("force").join(", "),
                v("moment").join(", ")
            ));
        }
    }
    text
}

/// The problem in one line: unknowns, cells, nodes.
fn problem_text(info: &MeshInfo, kind: CellKind) -> String {
    format!(
        "{} unknowns ({} constrained), {} {} cells, {} nodes",
        info.dofs,
        info.constrained_dofs,
        info.cells,
        match kind {
            CellKind::Hex8 => "Q1",
            CellKind::Hex27 => "Q2",
        },
        info.nodes
    )
}

fn device_text(config: &Config, solver: &LinearSolver, fallback: Option<&str>) -> String {
    let host = format!("host CPU, {} threads", rayon::current_num_threads());
    if let Some(why) = fallback {
        return format!("{host} (device: auto stays on the CPU: {why})");
    }
    match (solver.device(), config.device) {
        (Some(gpu), _) => format!(
            "{host}; the Newton loop (assembly, constraints, line search, AMG + {}) on {}",
            solver.krylov().name(),
            gpu.name()
        ),
        (None, config::ComputeDevice::Auto)
            if solver.preconditioner() == PreconditionerKind::Direct =>
        {
            format!("{host} (device: auto; the direct solver chosen is host-only)")
        }
        (None, config::ComputeDevice::Auto) => {
            format!("{host} (device: auto found no usable GPU)")
        }
        (None, _) => host,
    }
}

/// The lines printed at the start of a run: problem size, device and threads, solvers.
fn header(
    config: &Config,
    problem: &Problem,
    device: &str,
    solver: &str,
    newton: &solve::params::NewtonParams,
    size: &str,
) -> String {
    let line_search = match newton.line_search {
        solve::params::LineSearch::Energy if !problem.has_potential() => {
            "energy (the loads have no potential: full steps)"
        }
        other => other.name(),
    };
    let order = problem.mesh.order();
    let formulation = match sim::formulation::locking_warning(config, order) {
        Some(warning) => format!(
            "{}\n  warning      {warning}",
            sim::formulation::describe(config, order)
        ),
        None => sim::formulation::describe(config, order),
    };
    format!(
        "hexfem {}: {size}
  device       {device}
  formulation  {formulation}
  linear solver {solver}
  newton       line search {line_search}, forcing {}, rtol {:.1e}, at most {} iterations
  loading      {} steps
",
        env!("CARGO_PKG_VERSION"),
        newton.forcing.name(),
        newton.rtol,
        newton.max_iterations,
        config.loading.steps,
    )
}

fn ranks_device_text(device: &RanksDevice, size: usize) -> String {
    if device.device.is_host() {
        let mut s = format!(
            "host CPUs: {size} MPI ranks, {} threads each",
            rayon::current_num_threads()
        );
        if let Some(why) = &device.why_host {
            s.push_str(&format!(" (device auto: {why})"));
        }
        return s;
    }
    let map: Vec<String> = device
        .names
        .iter()
        .enumerate()
        .map(|(r, n)| format!("rank {r}: {n}"))
        .collect();
    let exchange = match &device.exchange {
        (e, None) => e.name().to_string(),
        (e, Some(why)) => format!("{} ({why})", e.name()),
    };
    format!(
        "GPUs: {size} MPI ranks, one GPU each ({}); the Newton iteration (assembly of each rank's part, norms, line search), hot updates, CG (GMRES for a follower pressure) and the V-cycle on the GPUs, the AMG cold set-up on each rank's CPU (hierarchy levels uploaded); halo exchanges {exchange}",
        map.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_read_minutes_and_hours() {
        assert_eq!(clock(0.4), "0:00");
        assert_eq!(clock(59.6), "1:00");
        assert_eq!(clock(754.0), "12:34");
        assert_eq!(clock(3725.0), "1:02:05");
        assert_eq!(clock(-3.0), "0:00");
    }

    /// A quarter of the path done in 10 s leaves about 30 s; nothing before the first step.
    #[test]
    fn the_estimate_scales_the_time_so_far_by_the_path_left() {
        let mut live = Live {
            steps: 8,
            ..Live::default()
        };
        assert_eq!(live.timing(0.5), "");
        let ten_s_ago = Instant::now() - std::time::Duration::from_secs(10);
        live.first = Some((0.0, ten_s_ago));
        assert_eq!(live.timing(0.25), "elapsed 0:10, about 0:30 left");
        assert_eq!(live.of(3), "  3/8");
        assert_eq!(live.of(11), " 11/11");
    }
}
