//! Where a run's time goes (PETSc's `-log_view`, MOOSE's PerfGraph): the run driver times its
//! own stages (configuration, mesh, problem and plans, output) and takes the load path's from
//! its [`PathObserver::timed`] reports, the linear solves' set-up and solve times being their
//! reports' own. The summary records the table ([`io::StageTable`]) when the run ends, merged
//! over the ranks (minimum, maximum and mean of each stage), with the time no stage holds in
//! an explicit [`OTHER`] row.
//!
//! The stages are flat. Kernels are compiled (or read from the kernel cache) at their first
//! use, inside whatever stage first needs them: their time ([`linalg::kernel_build_seconds`])
//! is taken out of the stage it fell in, in the order the stage's parts are given, and shown as
//! [`KERNELS`].

use std::cell::RefCell;
use std::time::Instant;

use comm::{Comm, Stages};
use io::{StageRow, StageTable};
use solve::linear_solver::{LinearSolveReport, SetupKind};
use solve::newton::{FailedAttempt, IterationRecord, LinearSystem, PathObserver, PathPhase};

use crate::observer::RunObserver;

/// From the process's start to the run's start: argument parsing, MPI's start-up (given where
/// the caller knows when the process started: [`crate::RunOptions::with_process_started`]).
pub const START_UP: &str = "start-up";
/// The input read, validated, and the checks before anything is built.
pub const CONFIGURATION: &str = "configuration";
/// The mesh generated or read (on ranks: each rank's part, its geometry checked).
pub const MESH: &str = "mesh";
/// Materials, the element loop with its COO plans, constraints, loads, probes.
pub const PROBLEM: &str = "problem and plans";
/// The state a restart continues from.
pub const RESTART: &str = "restart";
/// The linear solver chosen and made, with the GPU's context (on ranks: each rank's device).
pub const SOLVER: &str = "device and linear solver";
/// Kernels compiled or read from the kernel cache, and loaded.
pub const KERNELS: &str = "kernel compilation";
/// The Newton loop's buffers and the problem uploaded to the GPU.
pub const UPLOADS: &str = "uploads";
/// The files created, each state's outputs computed and handed to the output writer (one
/// process) or written (on ranks) with its summary record: the run's own time, waits for the
/// writer included.
pub const OUTPUT: &str = "output";
/// The output writer's thread writing the states handed to it, while the run goes on: a row of
/// [`StageTable::overlapped`], outside the stages' sum.
pub const OUTPUT_WRITER: &str = "output writer (background)";
/// Per step: loads at the step's time; per Newton iteration: residual, tangent, elimination.
pub const ASSEMBLY: &str = "assembly";
/// Per step: the rigid-body modes of the deformed configuration.
pub const NEAR_NULL_SPACE: &str = "near-null space";
/// AMG set-ups: from scratch, renewed for new modes (plans kept), updated for new values.
pub const AMG_COLD: &str = "AMG set-up cold";
pub const AMG_RENEWAL: &str = "AMG renewal";
pub const AMG_HOT: &str = "AMG hot update";
/// The other preconditioners' set-ups.
pub const JACOBI: &str = "Jacobi set-up";
pub const FACTORIZATION: &str = "factorization";
/// Krylov iterations (or the direct solve).
pub const SOLVE: &str = "solve";
/// A linear solve's time besides its set-up and solve (the system moved to its device).
pub const LINEAR_REST: &str = "linear system";
/// The line search and the update.
pub const LINE_SEARCH: &str = "line search";
/// A converged step's state brought to the host (displacement, reactions, cell fields).
pub const CONVERGED_STATE: &str = "converged state";
/// Whether to stop, asked before each step and Newton iteration (on ranks a collective: the
/// wait for the slowest rank shows here).
pub const STOP_CHECKS: &str = "stop checks";
/// The time no stage holds.
pub const OTHER: &str = StageTable::OTHER;

/// The order of the table's rows: the run's course, then a step's; stages not listed follow in
/// the order they first occurred, [`OTHER`] last.
pub const ORDER: [&str; 21] = [
    START_UP,
    CONFIGURATION,
    MESH,
    PROBLEM,
    RESTART,
    SOLVER,
    KERNELS,
    UPLOADS,
    OUTPUT,
    ASSEMBLY,
    NEAR_NULL_SPACE,
    AMG_COLD,
    AMG_RENEWAL,
    AMG_HOT,
    JACOBI,
    FACTORIZATION,
    SOLVE,
    LINEAR_REST,
    LINE_SEARCH,
    CONVERGED_STATE,
    STOP_CHECKS,
];

/// The stage of a set-up of `kind`.
pub fn setup_stage(kind: SetupKind) -> &'static str {
    match kind {
        SetupKind::AmgCold => AMG_COLD,
        SetupKind::AmgRenewed => AMG_RENEWAL,
        SetupKind::AmgHot => AMG_HOT,
        SetupKind::Jacobi => JACOBI,
        SetupKind::Factorization => FACTORIZATION,
    }
}

/// One rank's stages of a run, timed from the process's start.
#[derive(Debug)]
pub struct RunStages {
    stages: Stages,
    /// Work on other threads that overlaps the stages ([`StageTable::overlapped`]).
    overlapped: Stages,
    process_started: Instant,
    /// [`linalg::kernel_build_seconds`] at the last stage.
    kernels_seen_s: f64,
}

impl RunStages {
    /// Stages of a run that starts at `run_started` in a process that started at
    /// `process_started` (`None`: unknown, the run's start), which is [`START_UP`].
    pub fn new(process_started: Option<Instant>, run_started: Instant) -> Self {
        let process = process_started.unwrap_or(run_started);
        let mut stages = RunStages {
            stages: Stages::new(),
            overlapped: Stages::new(),
            process_started: process,
            kernels_seen_s: linalg::kernel_build_seconds(),
        };
        if process_started.is_some() {
            stages.add(START_UP, run_started.duration_since(process).as_secs_f64());
        }
        stages
    }

    /// One occurrence of `name` lasting `seconds`.
    pub fn add(&mut self, name: &str, seconds: f64) {
        self.add_parts(&[(name, seconds)]);
    }

    /// One occurrence of `name` from `started` to now.
    pub fn since(&mut self, name: &str, started: Instant) {
        self.add(name, started.elapsed().as_secs_f64());
    }

    /// Runs `f` as one occurrence of `name`.
    pub fn time<T>(&mut self, name: &str, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let value = f();
        self.since(name, started);
        value
    }

    /// One occurrence of each of `parts`, the pieces of one interval that just ended: the
    /// kernels built since the last stage are taken out of them in order (what remains was
    /// built between stages) and added to [`KERNELS`].
    pub fn add_parts(&mut self, parts: &[(&str, f64)]) {
        let built = linalg::kernel_build_seconds();
        let mut kernels = (built - self.kernels_seen_s).max(0.0);
        self.kernels_seen_s = built;
        if kernels > 0.0 {
            self.stages.add(KERNELS, kernels);
        }
        for &(name, seconds) in parts {
            let inside = kernels.min(seconds.max(0.0));
            kernels -= inside;
            self.stages.add(name, seconds - inside);
        }
    }

    /// `count` occurrences of `name` lasting `seconds` together on a thread of its own,
    /// overlapping the stages (not in their sum).
    pub fn add_overlapped(&mut self, name: &str, seconds: f64, count: u64) {
        self.overlapped.add_counted(name, seconds, count);
    }

    /// This rank's stages so far.
    pub fn stages(&self) -> &Stages {
        &self.stages
    }

    /// Collective: the table of every rank's stages up to now, with [`OTHER`] (each rank's
    /// wall time from its process's start less its stages) last.
    pub fn table(&mut self, comm: &dyn Comm) -> Result<StageTable, comm::CommError> {
        self.add_parts(&[]);
        let wall_s = self.process_started.elapsed().as_secs_f64();
        // the wall time travels as one more stage, under a name no stage has
        const WALL: &str = "\u{1}wall";
        let mut all = self.stages.with_rest(OTHER, wall_s);
        all.add(WALL, wall_s);
        let merged = all.merge(comm)?;
        let overlapped = self.overlapped.merge(comm)?;
        let row = |m: comm::MergedStage| StageRow {
            name: m.name,
            count: m.count,
            min_s: m.min_s,
            max_s: m.max_s,
            mean_s: m.mean_s,
        };
        let (mut wall, mut other) = (None, None);
        let mut stages = Vec::with_capacity(merged.len());
        for m in merged {
            match m.name.as_str() {
                WALL => wall = Some(row(m)),
                OTHER => other = Some(row(m)),
                _ => stages.push(row(m)),
            }
        }
        // a stable sort: the stages [`ORDER`] does not list keep their order, after it
        stages.sort_by_key(|r| {
            ORDER
                .iter()
                .position(|&name| name == r.name)
                .unwrap_or(ORDER.len())
        });
        stages.extend(other);
        let wall = wall.map_or_else(
            || StageRow {
                name: "wall".into(),
                count: 1,
                min_s: wall_s,
                max_s: wall_s,
                mean_s: wall_s,
            },
            |w| StageRow {
                name: "wall".into(),
                ..w
            },
        );
        Ok(StageTable {
            ranks: comm.size(),
            wall,
            stages,
            overlapped: overlapped.into_iter().map(row).collect(),
        })
    }
}

/// The run's observer during the load path: passes every event on to `inner` and records the
/// path's [`PathObserver::timed`] phases in `stages`.
pub(crate) struct Timed<'a> {
    pub(crate) inner: &'a dyn RunObserver,
    pub(crate) stages: RefCell<&'a mut RunStages>,
}

impl PathObserver for Timed<'_> {
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
    fn linear_system(&self, system: &LinearSystem<'_>) {
        self.inner.linear_system(system);
    }
    fn stop_requested(&self) -> bool {
        let started = Instant::now();
        let stop = self.inner.stop_requested();
        self.stages.borrow_mut().since(STOP_CHECKS, started);
        stop
    }
    fn timed(&self, phase: PathPhase<'_>, seconds: f64) {
        self.inner.timed(phase, seconds);
        let mut stages = self.stages.borrow_mut();
        match phase {
            PathPhase::Upload => stages.add(UPLOADS, seconds),
            PathPhase::Assembly => stages.add(ASSEMBLY, seconds),
            PathPhase::NearNullSpace => stages.add(NEAR_NULL_SPACE, seconds),
            PathPhase::LineSearch => stages.add(LINE_SEARCH, seconds),
            PathPhase::ConvergedState => stages.add(CONVERGED_STATE, seconds),
            PathPhase::LinearSolve(report) => stages.add_parts(&linear_parts(report, seconds)),
        }
    }
}

/// A linear solve of `seconds` in its stages: the report's set-up and solve, and the rest.
fn linear_parts(report: &LinearSolveReport, seconds: f64) -> [(&'static str, f64); 3] {
    [
        (setup_stage(report.setup), report.setup_s),
        (SOLVE, report.solve_s),
        (
            LINEAR_REST,
            (seconds - report.setup_s - report.solve_s).max(0.0),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One process: every row's minimum, maximum and mean are its seconds; the named rows and
    /// `other` add up to the wall time, `other` last; the start-up is the time before the run.
    #[test]
    fn the_table_of_one_process_adds_up_to_its_wall_time() {
        let process = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let mut stages = RunStages::new(Some(process), Instant::now());
        stages.add(MESH, 0.001);
        stages.add_parts(&[(AMG_COLD, 0.002), (SOLVE, 0.003)]);
        stages.add(SOLVE, 0.001);
        let table = stages.table(&comm::SelfComm).unwrap();
        assert_eq!(table.ranks, 1);
        let names: Vec<&str> = table.stages.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, [START_UP, MESH, AMG_COLD, SOLVE, OTHER]);
        assert!(table.row(START_UP).unwrap().mean_s >= 0.005);
        assert_eq!(
            table.row(SOLVE).map(|r| (r.count, r.mean_s)),
            Some((2, 0.004))
        );
        let sum: f64 = table.stages.iter().map(|r| r.mean_s).sum();
        assert!((sum - table.wall.mean_s).abs() < 1e-12);
        for r in table.stages.iter().chain([&table.wall]) {
            assert_eq!((r.min_s, r.max_s), (r.mean_s, r.mean_s), "{}", r.name);
        }
        let other = table.row(OTHER).unwrap().mean_s;
        let coverage = 1.0 - other / table.wall.mean_s;
        assert!((table.coverage() - coverage).abs() < 1e-12);
    }

    /// The time of kernels built during a stage's interval leaves the stage's parts in order
    /// and shows as kernel compilation.
    #[test]
    fn kernels_built_inside_a_stage_are_taken_out_of_it() {
        let mut stages = RunStages::new(None, Instant::now());
        // as if 0.5 s of kernels had been built since the last stage
        stages.kernels_seen_s -= 0.5;
        stages.add_parts(&[(AMG_COLD, 0.3), (SOLVE, 0.4), (LINEAR_REST, 0.1)]);
        let s = stages.stages();
        let of = |name| s.get(name).map(|st| st.seconds);
        assert_eq!(of(KERNELS), Some(0.5));
        assert_eq!(of(AMG_COLD), Some(0.0));
        assert!((of(SOLVE).unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(of(LINEAR_REST), Some(0.1));
        assert!((s.total_s() - 0.8).abs() < 1e-12);
    }
}
