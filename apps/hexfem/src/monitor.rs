//! The terminal rendering of a run's events, on standard error: a header (problem size,
//! device, solvers), one line per load step with its reactions and per failed attempt, and with
//! `run -v` one per step start and Newton iteration. Best effort: a closed standard error must
//! not end the run.

use std::io::Write;

use config::Config;
use io::{MeshInfo, StepRecord};
use mesh::CellKind;
use sim::{Placement, RanksDevice, RunObserver, RunStart};
use solve::linear_solver::{LinearSolver, PreconditionerKind, SetupKind};
use solve::newton::{ConvergedStep, FailedAttempt, IterationRecord, PathObserver};
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
}

impl TerminalMonitor {
    fn iterations(&self) -> bool {
        self.progress == Progress::Iterations
    }
}

fn print(text: &str) {
    let _ = write!(std::io::stderr().lock(), "{text}");
}

impl RunObserver for TerminalMonitor {
    fn run_started(&self, start: &RunStart) {
        if self.progress == Progress::Quiet {
            return;
        }
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
        print(&text);
    }

    fn step_finished(&self, step: &ConvergedStep, record: &StepRecord) {
        if self.progress != Progress::Quiet {
            print(&step_lines(step, record));
            for warning in &record.warnings {
                print(&format!("  warning: {warning}\n"));
            }
        }
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
    }

    fn iteration(&self, iteration: usize, record: &IterationRecord, forcing: Option<f64>) {
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
            Some(next) => {
                eprintln!("  attempt {attempt}; cutting the increment back to {next:.3e}")
            }
            None => eprintln!("  attempt {attempt}"),
        }
    }
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
