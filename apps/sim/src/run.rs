//! `hexfem run`: configuration -> problem -> load path, writing HDF5 + XDMF and the JSON summary
//! after every converged step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use comm::Comm;
use linalg::Vector;
use mesh::{CellKind, HexMesh, NodeOrdering};
use rayon::prelude::*;

use crate::dist_output::StateFigures;
use crate::distributed::agreed;
use crate::driver::{InvertedScope, Layout};
use crate::error::{fail, Context};
use crate::fields::StrainCells;
use crate::nodal::NodeCells;
use crate::observer::{Placement, RunObserver};
use crate::restart::Restart;
use crate::stages::{RunStages, CONFIGURATION, MESH, PROBLEM};
use crate::writer::StepOutput;
use crate::Result;
use config::{self, Config, OutputField};
use io::{
    Faults, MeshData, MeshInfo, ResultsWriter, RunInfo, RunStatus, StepRecord, SummaryWriter,
};
use solve::linear_solver::{Choice, LinearSolver, OperatorKind, SetupKind};
use solve::newton::ConvergedStep;
use solve::problem::{near_null_space, Problem};

/// Options of one run.
pub struct RunOptions {
    pub input: PathBuf,
    /// `key.path=value` overrides (`--set`).
    pub overrides: Vec<String>,
    /// Replaces `output.directory` (`-o`).
    pub output_dir: Option<PathBuf>,
    /// Continue from a converged step of an earlier run's HDF5 file (`--restart FILE[:STEP]`).
    pub restart: Option<String>,
    /// Replace the results of an earlier run of the same name in the output directory
    /// (`--overwrite`); without it such a run is refused before anything is written.
    pub overwrite: bool,
    /// Fault injection for crash tests (test-only; [`Faults::none`] otherwise).
    pub faults: Faults,
    /// On ranks: values per window of the output's gathers to rank 0
    /// ([`crate::windows::DEFAULT_WINDOW_VALUES`]; small in tests: many windows per dataset).
    pub output_window: usize,
    /// The input's text where it was not read from `input` (`hexfem run -`: standard input;
    /// `input` is then [`config::STDIN_NAME`]).
    pub input_text: Option<String>,
    /// Stops the run at its next step or Newton iteration when requested (see
    /// [`crate::interrupt`]); `None`: runs to the end.
    pub interrupt: Option<crate::Interrupt>,
    /// When the process started (the summary's stage table counts from there); `None`: from
    /// the run's start.
    pub process_started: Option<Instant>,
}

impl RunOptions {
    /// The run of the input file `input` as it is: no overrides, output where the input says,
    /// no restart.
    pub fn new(input: impl Into<PathBuf>) -> Self {
        RunOptions {
            input: input.into(),
            overrides: Vec::new(),
            output_dir: None,
            restart: None,
            overwrite: false,
            faults: Faults::none(),
            output_window: crate::windows::DEFAULT_WINDOW_VALUES,
            input_text: None,
            interrupt: None,
            process_started: None,
        }
    }

    /// The run of `text` (standard input's): named [`config::STDIN_NAME`].
    pub fn from_text(text: String) -> Self {
        RunOptions {
            input_text: Some(text),
            ..RunOptions::new(config::STDIN_NAME)
        }
    }

    /// With the `key.path=value` overrides `overrides` (`--set`), after any given before.
    pub fn with_overrides<S: Into<String>>(
        mut self,
        overrides: impl IntoIterator<Item = S>,
    ) -> Self {
        self.overrides.extend(overrides.into_iter().map(Into::into));
        self
    }

    /// With the output in `dir` (`-o`).
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = Some(dir.into());
        self
    }

    /// Replacing (`true`, `--overwrite`) or keeping the results of an earlier run of the same
    /// name.
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// Continuing from `FILE.h5[:STEP]` (`--restart`).
    pub fn with_restart(mut self, spec: impl Into<String>) -> Self {
        self.restart = Some(spec.into());
        self
    }

    /// With injected faults (crash tests).
    pub fn with_faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// With at most `values` values per window of the output's gathers on ranks.
    pub fn with_output_window(mut self, values: usize) -> Self {
        self.output_window = values;
        self
    }

    /// Stopping at the next step or Newton iteration once `interrupt` is requested.
    pub fn with_interrupt(mut self, interrupt: crate::Interrupt) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// With the stage table timed from `started`, the process's start (`hexfem` takes it first
    /// thing in `main`).
    pub fn with_process_started(mut self, started: Instant) -> Self {
        self.process_started = Some(started);
        self
    }

    /// Where the input comes from.
    pub fn source(&self) -> crate::Input<'_> {
        match &self.input_text {
            Some(text) => crate::Input::Text(text),
            None => crate::Input::File(&self.input),
        }
    }
}

/// Where the results went, and the run's figures at its last converged step.
#[derive(Debug)]
pub struct RunOutcome {
    pub h5: PathBuf,
    pub xdmf: PathBuf,
    pub summary: PathBuf,
    /// `<name>.probes.csv`, when the run has probes.
    pub probes_csv: Option<PathBuf>,
    /// Index of the last converged step.
    pub steps: usize,
    pub figures: RunFigures,
}

/// What a run did and reached: totals over its converged steps and the state of the last one.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RunFigures {
    pub load_factor: f64,
    pub newton_iterations: usize,
    pub linear_iterations: usize,
    /// AMG set-ups from scratch, updates of a kept hierarchy, and renewals for a new near-null
    /// space that kept symbolic plans (the values of a cold set-up, see `SetupKind::AmgRenewed`).
    pub amg_cold_setups: usize,
    pub amg_hot_setups: usize,
    pub amg_renewed_setups: usize,
    /// Seconds in preconditioner set-ups.
    pub setup_s: f64,
    /// Seconds of the run's first preconditioner set-up (cold, or hot on a shared solver).
    pub first_setup_s: f64,
    /// Seconds to build the problem (mesh, element loop, plans, constraints, loads), or to
    /// reconfigure a reused one.
    pub problem_s: f64,
    pub strain_energy: f64,
    pub max_displacement: f64,
    /// Total reaction force on each constrained set (named by a Dirichlet or twist condition).
    pub reactions: BTreeMap<String, [f64; 3]>,
    /// The probes, by column.
    pub probes: BTreeMap<String, f64>,
    /// Whether the mesh and element loop were reused from an earlier run in this process.
    pub reused_problem: bool,
    /// Whether the linear solver (its AMG hierarchy) was reused from an earlier run.
    pub reused_solver: bool,
    /// Where the run's time went (the summary's `stages`), on rank 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<io::StageTable>,
}

impl RunFigures {
    /// Adds a converged step's iterations and preconditioner set-ups (the serial run and the
    /// ranks' rank 0 count the same way).
    pub(crate) fn count_step(&mut self, step: &ConvergedStep, record: &StepRecord) {
        self.newton_iterations += record.newton_iterations;
        self.linear_iterations += record.linear_iterations.iter().sum::<usize>();
        for it in &step.iterations {
            if self.amg_cold_setups + self.amg_hot_setups + self.amg_renewed_setups == 0
                && self.setup_s == 0.0
            {
                self.first_setup_s = it.linear.setup_s;
            }
            self.setup_s += it.linear.setup_s;
            match it.linear.setup {
                SetupKind::AmgCold => self.amg_cold_setups += 1,
                SetupKind::AmgHot => self.amg_hot_setups += 1,
                SetupKind::AmgRenewed => self.amg_renewed_setups += 1,
                _ => {}
            }
        }
    }
}

/// One run of a validated configuration: where its files go and how it reports.
pub struct Case<'a> {
    pub config: &'a Config,
    /// The configuration file (named in the summary).
    pub input: &'a Path,
    pub dir: PathBuf,
    pub name: String,
    pub restart: Option<Restart>,
    pub faults: Faults,
    /// Told of the run's start, steps and Newton iterations.
    pub observer: &'a dyn RunObserver,
}

/// What a process keeps from one run for the next (a campaign's cases): the problem (mesh,
/// element loop with its COO plans) for a run on the same mesh and quadrature, and, when
/// `share_solver`, the linear solver with its AMG hierarchy for a run on the same mesh with the
/// same solver options (its first set-up is then a hot one: aggregates and prolongators kept).
#[derive(Default)]
pub struct Warm {
    problem: Option<(String, Problem)>,
    solver: Option<(String, LinearSolver, Choice)>,
    pub share_solver: bool,
}

impl Warm {
    /// Keeps the problem, and the linear solver when `share_solver`.
    pub fn new(share_solver: bool) -> Self {
        Warm {
            share_solver,
            ..Warm::default()
        }
    }

    /// The [`problem_key`] of the problem kept, if any.
    pub fn problem_key(&self) -> Option<&str> {
        self.problem.as_ref().map(|(key, _)| key.as_str())
    }
}

/// Sections of the input that a reused problem takes from each run (`Problem::reconfigure`),
/// and the output; every other section (mesh, quadrature, and any later one, such as where the
/// run is computed) must be equal for a problem to be reused.
const PER_RUN_SECTIONS: [&str; 7] = [
    "materials",
    "body_force",
    "boundary",
    "loading",
    "newton",
    "linear_solver",
    "output",
];

/// The key under which a problem is reused: the input without [`PER_RUN_SECTIONS`].
pub fn problem_key(config: &Config) -> Result<String> {
    section_key(config, &PER_RUN_SECTIONS)
}

/// The key under which a linear solver is shared: the problem's key and the solver options.
fn solver_key(config: &Config) -> Result<String> {
    let sections: Vec<&str> = PER_RUN_SECTIONS
        .into_iter()
        .filter(|s| *s != "linear_solver")
        .collect();
    section_key(config, &sections)
}

/// `config` as JSON without the top-level `sections`.
fn section_key(config: &Config, sections: &[&str]) -> Result<String> {
    let mut value = serde_json::to_value(config)?;
    if let Some(map) = value.as_object_mut() {
        for s in sections {
            map.remove(*s);
        }
    }
    Ok(value.to_string())
}

/// Builds (or reconfigures, on the same mesh) the problem of `config` and resolves its probes,
/// as a run starts: a campaign's check of its cases before any runs. The problem stays in `warm`.
pub fn prepare_problem(config: &Config, warm: &mut Warm) -> Result<()> {
    let unrecorded = &mut RunStages::new(None, Instant::now());
    let (problem, _) = take_problem(config, warm, unrecorded)?;
    let probes = crate::probes::Probes::new(config, &problem.mesh);
    warm.problem = Some((problem_key(config)?, problem));
    probes.map(|_| ())
}

/// The problem of `config`: `warm`'s, reconfigured, when it is on the same mesh, else a new
/// one; and whether it was reused. Its stages: [`MESH`], [`PROBLEM`].
fn take_problem(
    config: &Config,
    warm: &mut Warm,
    stages: &mut RunStages,
) -> Result<(Problem, bool)> {
    let key = problem_key(config)?;
    let started = Instant::now();
    let params = config.problem_params()?;
    match warm.problem.take() {
        Some((k, mut problem)) if k == key => {
            crate::locate::located(config, problem.reconfigure(&params))?;
            crate::locate::check_dirichlet_in_time(config, &params, &problem.mesh)?;
            stages.since(PROBLEM, started);
            Ok((problem, true))
        }
        _ => {
            let mesh = crate::locate::located(config, Problem::mesh_of(&params))?;
            stages.since(MESH, started);
            let started = Instant::now();
            let problem = crate::locate::located(config, Problem::on_mesh(&params, mesh))?;
            crate::locate::check_dirichlet_in_time(config, &params, &problem.mesh)?;
            host_plans_for(config, &problem);
            stages.since(PROBLEM, started);
            Ok((problem, false))
        }
    }
}

/// Makes the tangent's host plan of `problem` now, in the problem's stage, where `config` runs
/// on the CPU (`auto`: where this thread's GPU is not usable); a GPU makes its own as the
/// problem goes up, and the host's is then made only where the host assembles.
fn host_plans_for(config: &Config, problem: &Problem) {
    let on_cpu = match config.device {
        config::ComputeDevice::Cpu => true,
        config::ComputeDevice::Auto => linalg::Device::auto().is_host(),
        config::ComputeDevice::Cuda => false,
    };
    if on_cpu {
        problem.discrete.assembler.matrix_plan();
    }
}

/// Runs `options` on the ranks of `comm` (one rank: this process), reporting to `observer`
/// (give the ranks but 0 a quiet one: [`crate::run`] does): the configuration, the checks before
/// anything is built ([`preflight`]), then the run of the problem on this process
/// ([`execute`]) or on each rank's part of the mesh
/// ([`crate::distributed::execute_on_ranks`]), both by the one driver ([`crate::driver`]).
/// Every rank returns; rank 0's outcome names the files and holds the figures. On a failed load
/// path the files written so far are kept (every converged step) and the summary records the
/// failure.
pub fn run(
    comm: &Arc<dyn Comm>,
    options: &RunOptions,
    observer: &dyn RunObserver,
) -> Result<RunOutcome> {
    let started = Instant::now();
    let mut stages = RunStages::new(options.process_started, started);
    let c = &**comm;
    let config = agreed(c, options.source().load(&options.overrides))?;
    let dir = output_dir(&config, options.output_dir.as_deref());
    let name = output_name(&config, &options.input);
    let restart = agreed(c, preflight(c, &config, options, &dir, &name))?;
    stages.since(CONFIGURATION, started);
    let case = Case {
        config: &config,
        input: &options.input,
        dir,
        name,
        restart,
        faults: options.faults.clone(),
        observer,
    };
    in_pool(|| {
        let stages = &mut stages;
        if c.size() == 1 {
            execute_in_stages(&case, &mut Warm::default(), started, stages)
        } else {
            let window = options.output_window;
            Ok(crate::distributed::execute_on_ranks(
                comm, &case, window, started, stages,
            )?)
        }
    })
}

/// The checks of a run before anything is built: rank 0 checks that its output files can be
/// written, that memory suffices (one process: the whole problem's estimate) and that no
/// earlier results would be replaced; every rank opens the step a restart continues from.
fn preflight(
    comm: &dyn Comm,
    config: &Config,
    options: &RunOptions,
    dir: &Path,
    name: &str,
) -> Result<Option<Restart>> {
    let rank0 = comm.rank() == 0;
    if rank0 {
        check_output(config, options.output_dir.as_deref(), dir, name)?;
    }
    if comm.size() == 1 {
        crate::memory::guard(config)?;
    }
    let restart = options.restart.as_deref().map(Restart::open).transpose()?;
    if rank0 {
        keep_earlier_results(
            dir,
            name,
            options.overwrite,
            restart.as_ref().map(|r| r.file.as_path()),
        )?;
    }
    Ok(restart)
}

/// Runs `f` on a thread of a rayon pool (of the default size): the parallel loops of a run
/// then start from a pool thread, not from outside the pool, where each one would hand its work
/// over and wait to be woken (a cost per loop that small problems feel). Results do not depend
/// on it.
pub fn in_pool<T: Send>(f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    rayon::ThreadPoolBuilder::new()
        .build()
        .context("starting the thread pool")?
        .install(f)
}

/// Runs a validated configuration whose output was checked in this process (the one-rank
/// case of [`crate::driver::drive`]); `warm` lends what an earlier run in this process left and
/// keeps what this one leaves.
pub fn execute(case: &Case, warm: &mut Warm, started: Instant) -> Result<RunOutcome> {
    execute_in_stages(case, warm, started, &mut RunStages::new(None, started))
}

/// [`execute`], recording where the time goes in `stages`.
fn execute_in_stages(
    case: &Case,
    warm: &mut Warm,
    started: Instant,
    stages: &mut RunStages,
) -> Result<RunOutcome> {
    let config = case.config;
    if config.device != config::ComputeDevice::Cpu {
        // the GPU's driver and context start while the mesh and problem are built
        linalg::Device::warm_up_cuda(linalg::Device::thread_gpu());
    }
    let key = problem_key(config)?;
    let problem_started = Instant::now();
    let (mut problem, reused_problem) = take_problem(config, warm, stages)?;
    let problem_s = problem_started.elapsed().as_secs_f64();
    let probes = stages.time(PROBLEM, || {
        crate::probes::Probes::new(config, &problem.mesh)
    });
    let outcome = probes.and_then(|probes| {
        let mut layout = OneProcess {
            warm: &mut *warm,
            probes,
            solver_key: String::new(),
            fallback: None,
            output_mesh: None,
            node_cells: Arc::default(),
            strain_cells: None,
        };
        let comm = &comm::SelfComm;
        crate::driver::drive(comm, case, &mut layout, &mut problem, started, stages)
    });
    warm.problem = Some((key, problem));
    outcome.map(|mut o| {
        o.figures.reused_problem = reused_problem;
        o.figures.problem_s = problem_s;
        o
    })
}

/// One process's [`Layout`]: the whole mesh and its problem, the linear solver shared with the
/// runs before and after it in this process where `warm` allows, the results written directly.
struct OneProcess<'w> {
    warm: &'w mut Warm,
    probes: crate::probes::Probes,
    /// The key of the linear solver chosen (under which `warm` keeps it).
    solver_key: String,
    /// Why `device: auto` stayed on the CPU, if it did.
    fallback: Option<String>,
    /// The output writer's copy of the mesh, once made.
    output_mesh: Option<Arc<HexMesh>>,
    /// The cells around each node of the writer's mesh, made on the writer's thread the
    /// first time a nodal field is written.
    node_cells: Arc<OnceLock<NodeCells>>,
    /// What the output writer computes the strains left to it with, once made (`Some(None)`:
    /// the element loop is not over the writer's mesh).
    strain_cells: Option<Option<Arc<StrainCells>>>,
}

impl OneProcess<'_> {
    /// The output writer's copy of the problem's mesh `mesh`, made once (in parallel).
    fn output_mesh(&mut self, mesh: &HexMesh) -> Arc<HexMesh> {
        Arc::clone(
            self.output_mesh
                .get_or_insert_with(|| Arc::new(parallel_clone(mesh))),
        )
    }

    /// The writer's [`StrainCells`] over its copy of the mesh `mesh`, made once.
    fn strain_cells(&mut self, problem: &Problem, mesh: &Arc<HexMesh>) -> Option<Arc<StrainCells>> {
        self.strain_cells
            .get_or_insert_with(|| StrainCells::of(problem, Arc::clone(mesh)).map(Arc::new))
            .clone()
    }
}

impl Layout for OneProcess<'_> {
    fn restart_displacement(&self, restart: &Restart, problem: &Problem) -> crate::Result<Vector> {
        restart.displacement_of_mesh(&problem.mesh.coords)
    }

    fn solver(
        &mut self,
        config: &Config,
        problem: &Problem,
    ) -> crate::Result<(LinearSolver, Choice, bool)> {
        // the Newton loop runs on the GPU with the solver: `auto` stays on the CPU where the
        // device lacks a feature the problem uses, `cuda` is an error there
        let (params, fallback) = newton_device(config, problem)?;
        self.fallback = fallback;
        // a tangent that is not symmetric (follower pressure) needs GMRES: part of the key
        let symmetric = problem.discrete.tangent_is_symmetric();
        self.solver_key = format!(
            "{}; symmetric tangent {symmetric}; {:?}",
            solver_key(config)?,
            params.device
        );
        match self.warm.solver.take() {
            Some((k, solver, choice)) if self.warm.share_solver && k == self.solver_key => {
                Ok((solver, choice, true))
            }
            _ => {
                let (solver, choice) = crate::locate::located(
                    config,
                    LinearSolver::choose(
                        &params,
                        near_null_space(&problem.mesh.coords)?,
                        OperatorKind::Serial {
                            pattern: &|| problem.discrete.assembler.pattern(),
                        },
                        symmetric,
                    ),
                )?;
                Ok((solver, choice, false))
            }
        }
    }

    fn keep_solver(&mut self, solver: LinearSolver, choice: Choice) {
        self.warm.solver = Some((std::mem::take(&mut self.solver_key), solver, choice));
    }

    fn mesh_info(&self, problem: &Problem) -> MeshInfo {
        mesh_info(&problem.mesh, problem.discrete.constraints.n_constrained())
    }

    fn ranks_info(&self) -> Option<io::RanksInfo> {
        None
    }

    fn placement<'a>(&'a self, solver: &'a LinearSolver) -> Placement<'a> {
        Placement::Process {
            solver,
            fallback: self.fallback.as_deref(),
        }
    }

    fn create_results(
        &mut self,
        config: &Config,
        problem: &Problem,
        case: &Case,
    ) -> crate::Result<StepOutput> {
        // the writer's own copy of the mesh (the problem stays with the solver), with which the
        // writer creates the file and writes the mesh while the first state is prepared here
        let mesh = self.output_mesh(&problem.mesh);
        let (config, dir, name, faults) = (
            config.clone(),
            case.dir.clone(),
            case.name.clone(),
            case.faults.clone(),
        );
        let create = move || create_results(&config, &mesh, &dir, &name, &faults);
        StepOutput::start(Box::new(create))
    }

    fn write_state(
        &mut self,
        config: &Config,
        problem: &Problem,
        u: &Vector,
        reactions: &Vector,
        cells: CellOutputs,
        stamp: StepStamp,
        output: &mut StepOutput,
    ) -> crate::Result<Option<StateFigures>> {
        let mesh = &problem.mesh;
        let output_mesh = self.output_mesh(mesh);
        let mut cells = cells;
        // what is left to the writer is computed there, from the state's displacement, with
        // the element loop's kernels over the writer's mesh; here where that mesh is not the
        // element loop's
        let strain_cells = if cells.fields_later || !cells.later.is_empty() {
            self.strain_cells(problem, &output_mesh)
        } else {
            None
        };
        if strain_cells.is_none() {
            if cells.fields_later {
                cells = CellOutputs::compute(problem, u, config, false)?;
            } else if !cells.later.is_empty() {
                let later = std::mem::take(&mut cells.later);
                let now = crate::fields::cell_strains_of(problem, u, &later, Vec::new())?;
                cells.strains.extend(now);
            }
        }
        // the strain energy of fields computed by the writer: known once the state is written
        let energy_later = cells.fields_later.then(|| Arc::new(OnceLock::new()));
        let strain_energy = cells.total_strain_energy();
        let (displacement, _) = u.host()?.as_chunks::<3>();
        let (reaction, _) = reactions.host()?.as_chunks::<3>();
        let max_displacement = max_length(displacement);
        let probes = self.probes.evaluate(
            mesh,
            &crate::probes::ProbeState {
                displacement,
                reactions: reaction,
                strain_energy,
                max_displacement,
                cells: Some(&cells),
            },
        )?;
        let figures = StateFigures {
            strain_energy,
            max_displacement,
            reactions: set_reactions(&self.probes, mesh, reaction),
            reaction_totals: reaction_totals(config, mesh, u, reactions)?,
            probes,
            strain_energy_later: energy_later.clone(),
        };
        let state = StateSnapshot::of(stamp, u, reactions, cells)?;
        let job = crate::state_write::StateWrite {
            output: config.output.clone(),
            mesh: output_mesh,
            node_cells: Arc::clone(&self.node_cells),
            strain_cells,
            energy_later,
            state,
        };
        output.submit(Box::new(move |results| job.write(results)))?;
        Ok(Some(figures))
    }

    fn check_state(
        &self,
        index: usize,
        u: &Vector,
        cells: &CellOutputs,
        size: f64,
        linear: bool,
    ) -> crate::Result<Vec<String>> {
        check_state(index, u, cells, size, linear)
    }

    fn inverted_cells(&self, _cells: &CellOutputs) -> crate::Result<InvertedScope> {
        Ok(InvertedScope::Own)
    }

    fn defers_strains(&self) -> bool {
        true
    }

    fn first_cells(
        &self,
        problem: &Problem,
        u: &Vector,
        config: &Config,
    ) -> crate::Result<CellOutputs> {
        if self.probes.reads_cells() {
            CellOutputs::compute(problem, u, config, true)
        } else {
            Ok(CellOutputs::fields_later(config))
        }
    }

    fn finish_summary(
        &self,
        _summary: Option<&mut SummaryWriter>,
        _newton_s: f64,
        _output_s: f64,
    ) -> crate::Result<()> {
        Ok(())
    }
}

/// Ends a run's output after its load path: the summary records completion or the first error
/// (where it can: its own failure is added to the message), and the error names how many
/// converged steps the results file holds. The serial run and rank 0 of a run on ranks end here.
pub(crate) fn finish_run(
    outcome: crate::Result<()>,
    mut summary: SummaryWriter,
    results: ResultsWriter,
    probe_log: Option<io::ProbeLog>,
    figures: RunFigures,
    wall: f64,
) -> crate::Result<RunOutcome> {
    // Converged steps: 1, 2, ... after the undeformed step 0.
    let steps = results.last_step().unwrap_or(0);
    match outcome {
        Ok(()) => summary
            .finish(RunStatus::Completed, wall)
            .context("writing the final summary")?,
        Err(e) if e.is::<solve::newton::Interrupted>() => {
            // every converged step is written: the run continues from the last one
            let restart = format!("{}:{steps}", results.h5_path().display());
            summary
                .finish(
                    RunStatus::Interrupted {
                        restart: restart.clone(),
                    },
                    wall,
                )
                .context("writing the final summary")?;
            return Err(crate::Interrupted {
                step: steps,
                restart,
                summary: summary.path().to_owned(),
            }
            .into());
        }
        Err(e) => {
            // The first error is the one reported; the summary records it if it can.
            let first = e.chain_text();
            let mut e = e.context(format!(
                "{steps} converged steps are in {}",
                results.h5_path().display()
            ));
            if let Err(summary_error) = summary.finish(RunStatus::Failed { message: first }, wall) {
                e = crate::Error::failure(format!(
                    "{}\n(the summary could not record the failure: {summary_error})",
                    e.chain_text()
                ));
            }
            return Err(e);
        }
    }
    Ok(RunOutcome {
        h5: results.h5_path().to_owned(),
        xdmf: results.xdmf_path().to_owned(),
        summary: summary.path().to_owned(),
        probes_csv: probe_log.map(|l| l.path().to_owned()),
        steps,
        figures,
    })
}

/// The total reaction on each constrained node and face set of `mesh` (named by a Dirichlet
/// or twist condition; `reaction`: per node).
fn set_reactions(
    probes: &crate::probes::Probes,
    mesh: &HexMesh,
    reaction: &[[f64; 3]],
) -> BTreeMap<String, [f64; 3]> {
    mesh.node_sets
        .keys()
        .chain(mesh.face_sets.keys())
        .filter(|set| probes.reports_reaction(set))
        .filter_map(|set| {
            let nodes = mesh.set_nodes(set).ok()?;
            let mut total = [0.0; 3];
            for n in nodes {
                for d in 0..3 {
                    total[d] += reaction[n][d];
                }
            }
            Some((set.clone(), total))
        })
        .collect()
}

/// The Euclidean length of `d`: the plain `sqrt(x^2 + y^2 + z^2)` where its sum of squares is a
/// normal number (bit for bit what it always was), else computed scaled by the largest
/// component, which neither underflows (|d| ~ 1e-299 is not 0) nor overflows (~ 1e300 is not
/// infinite).
pub fn length(d: &[f64; 3]) -> f64 {
    let squares = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if squares.is_normal() {
        return squares.sqrt();
    }
    if d.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let largest = d[0].abs().max(d[1].abs()).max(d[2].abs());
    if largest == 0.0 || !largest.is_finite() {
        return largest;
    }
    let (x, y, z) = (d[0] / largest, d[1] / largest, d[2] / largest);
    largest * (x * x + y * y + z * z).sqrt()
}

/// The output directory: `-o` if given, else `output.directory`.
pub fn output_dir(config: &Config, option: Option<&Path>) -> PathBuf {
    option.map_or_else(|| config.output.directory.clone(), Path::to_owned)
}

/// Checks that the run's output files can be written (name length, directory writable or
/// creatable); the error names where the output name or directory was set.
pub fn check_output(config: &Config, option: Option<&Path>, dir: &Path, name: &str) -> Result<()> {
    io::preflight(dir, name).map_err(|e| {
        let key = match e {
            io::OutputError::Name(_) => "output.name",
            _ => "output.directory",
        };
        if key == "output.directory" && option.is_some() {
            crate::Error::failure(format!("-o {}: {e}", dir.display()))
        } else {
            crate::Error::Input(config.error_at(key, e.to_string()))
        }
    })
}

/// Refuses a run that would replace what an earlier run left in `dir` under `name` (unless
/// `overwrite`), and always one whose results file is the file it restarts from (`restart`):
/// its earlier steps would be lost. Nothing is written before this check, so a refused run
/// leaves the earlier results as they were.
pub fn keep_earlier_results(
    dir: &Path,
    name: &str,
    overwrite: bool,
    restart: Option<&Path>,
) -> Result<()> {
    let h5 = dir.join(format!("{name}.h5"));
    if let Some(source) = restart {
        let same = match (std::fs::canonicalize(source), std::fs::canonicalize(&h5)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            fail!(
                "--restart {}: the run would write its results over the file it continues \
                 from, losing the steps before the restart; write them elsewhere (-o DIR, or \
                 --set output.name=NAME)",
                source.display()
            );
        }
    }
    let earlier = io::existing_results(dir, name);
    if overwrite || earlier.is_empty() {
        return Ok(());
    }
    let files: Vec<String> = earlier
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    fail!(
        "{} already holds the results of a run named `{name}` ({}); they are kept: pass \
         --overwrite to replace them, or write elsewhere (-o DIR, or --set output.name=NAME)",
        dir.display(),
        files.join(", ")
    )
}

/// The results writer with `mesh` (in serial numbering).
pub(crate) fn create_results(
    config: &Config,
    mesh: &HexMesh,
    dir: &Path,
    name: &str,
    faults: &Faults,
) -> Result<ResultsWriter> {
    let connectivity = vtk_connectivity(mesh);
    let node_sets: Vec<(&str, &[usize])> = mesh
        .node_sets
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    let face_pairs: Vec<(&str, Vec<[usize; 2]>)> = mesh
        .face_sets
        .iter()
        .map(|(k, v)| {
            (
                k.as_str(),
                v.iter().map(|f| [f.cell, f.face as usize]).collect(),
            )
        })
        .collect();
    let face_sets: Vec<(&str, &[[usize; 2]])> =
        face_pairs.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    let cell_sets: Vec<(&str, &[usize])> = mesh
        .cell_sets
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    let material = material_of_cells(config, mesh)?;
    let indicators = crate::fields::set_indicator_nodes(config, mesh)?;
    let indicators: Option<Vec<(&str, &[usize])>> = indicators.as_ref().map(|list| {
        list.iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect()
    });
    let mesh = MeshData {
        nodes_per_cell: mesh.nodes_per_cell(),
        coordinates: &mesh.coords,
        connectivity: &connectivity,
        material: Some(&material),
        node_sets: &node_sets,
        cell_sets: &cell_sets,
        face_sets: &face_sets,
        node_indicators: indicators.as_deref(),
    };
    let mut results = ResultsWriter::create(dir, name, &mesh, faults)?;
    results.set_single_precision_fields(single_precision(config));
    if config.output.vtu {
        results.enable_vtu(dir, name, &mesh)?;
    }
    Ok(results)
}

/// Whether the fields are written as float32 (`output.precision: single`).
pub(crate) fn single_precision(config: &Config) -> bool {
    config.output.precision == config::OutputPrecision::Single
}

/// Index of the `materials` entry that applies to each cell (later entries override earlier
/// ones, as in the problem's set-up).
pub fn material_of_cells(config: &Config, mesh: &HexMesh) -> Result<Vec<usize>> {
    let mut of_cell = vec![0; mesh.n_cells()];
    for (index, entry) in config.materials.iter().enumerate() {
        match &entry.cells {
            config::CellSelection::All => of_cell.fill(index),
            config::CellSelection::Set(name) => {
                for c in mesh.cell_set(name)? {
                    of_cell[c] = index;
                }
            }
        }
    }
    Ok(of_cell)
}

/// The run's name: `output.name`, or the input file's stem.
pub fn output_name(config: &Config, input: &Path) -> String {
    config.output.name.clone().unwrap_or_else(|| {
        input
            .file_stem()
            .map_or("hexfem".into(), |s| s.to_string_lossy().into_owned())
    })
}

/// Cell connectivity in VTK/XDMF node order.
pub fn vtk_connectivity(mesh: &HexMesh) -> Vec<usize> {
    let ordering = match mesh.kind {
        CellKind::Hex8 => NodeOrdering::VtkHex8,
        CellKind::Hex27 => NodeOrdering::VtkHex27,
    };
    let perm = ordering.from_lexicographic();
    (0..mesh.n_cells())
        .flat_map(|c| perm.iter().map(move |&p| mesh.cell_nodes(c)[p]))
        .collect()
}

pub(crate) fn run_info(config: &Config, input: &Path) -> Result<RunInfo> {
    Ok(RunInfo {
        program: format!("hexfem {}", env!("CARGO_PKG_VERSION")),
        input: input.to_owned(),
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        threads: rayon::current_num_threads(),
        config: serde_json::to_value(config)?,
        restart: None,
        formulations: Vec::new(),
    })
}

/// The element formulation each `materials` entry of `problem` runs with, in input order (the
/// summary's `run.formulations`).
pub(crate) fn formulation_names(problem: &Problem) -> Vec<String> {
    let materials = problem.discrete.assembler.materials();
    materials
        .formulations()
        .iter()
        .map(|f| f.name().to_string())
        .collect()
}

/// The summary's mesh figures of `mesh` (the whole mesh) with `constrained_dofs` constrained
/// unknowns.
pub(crate) fn mesh_info(mesh: &HexMesh, constrained_dofs: usize) -> MeshInfo {
    MeshInfo {
        nodes: mesh.n_nodes(),
        cells: mesh.n_cells(),
        nodes_per_cell: mesh.nodes_per_cell(),
        dofs: 3 * mesh.n_nodes(),
        constrained_dofs,
    }
}

/// Which step a state is: its index, load factor and the increment the path tries next.
#[derive(Clone, Copy)]
pub(crate) struct StepStamp {
    pub(crate) index: usize,
    pub(crate) load_factor: f64,
    pub(crate) next_increment: Option<f64>,
    /// Pseudo-time (the load factor where there is no load curve).
    pub(crate) time: Option<f64>,
}

/// The per-cell output quantities of a state, one entry per cell in the order of the cells they
/// were computed on (the serial cells, or a rank's local cells). Where a GPU run's output took
/// [`fem::CellFieldSet::Checks`] (`crate::fields::cell_field_set`: no cell field written or
/// probed) only `jacobian` and `strain_energy` are filled (the other fields of every cell were
/// finite).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CellOutputs {
    /// Cauchy stress, full 3x3 row-major.
    pub(crate) cauchy: Vec<[f64; 9]>,
    pub(crate) von_mises: Vec<f64>,
    pub(crate) jacobian: Vec<f64>,
    pub(crate) energy_density: Vec<f64>,
    /// Each cell's strain energy (the total is their sum in cell order).
    pub(crate) strain_energy: Vec<f64>,
    /// The strain fields written or probed (`crate::fields::strain_fields`), full 3x3
    /// row-major, but those of `later`.
    pub(crate) strains: Vec<(OutputField, Vec<[f64; 9]>)>,
    /// The strain fields left to the output writer (written, not probed; one process): it
    /// computes them from the state's displacement ([`crate::fields::StrainCells`]) and adds
    /// them to `strains` before it writes.
    pub(crate) later: Vec<OutputField>,
    /// Whether the element loop's fields are left to the output writer too (one process, a
    /// first state no probe reads a cell output of): every vector above is then empty and
    /// `later` holds every strain field; the writer computes them all
    /// ([`CellOutputs::add_later`]).
    pub(crate) fields_later: bool,
}

impl CellOutputs {
    /// Values per cell in [`CellOutputs::record`] before the strains.
    pub(crate) const WIDTH: usize = 13;

    /// Values per cell in [`CellOutputs::record`] for the outputs of `config`.
    pub(crate) fn record_width(config: &Config) -> usize {
        Self::WIDTH + 9 * crate::fields::strain_fields(config).len()
    }

    /// The outputs of every cell of `problem`'s element loop at the state `u` (on a rank's
    /// part: owned and ghost cells; `u`'s ghost entries must be current).
    /// With `defer` (one process) the strains no probe reads are left to the output writer
    /// ([`CellOutputs::later`]).
    pub(crate) fn compute(
        problem: &Problem,
        u: &Vector,
        config: &Config,
        defer: bool,
    ) -> Result<Self> {
        Self::on_the_host(problem, u)?.with_strains(problem, u, config, Vec::new(), defer)
    }

    /// The element loop's fields of every cell at `u`, computed on the host (no strains yet).
    fn on_the_host(problem: &Problem, u: &Vector) -> Result<Self> {
        let assembler = &problem.discrete.assembler;
        let cells = assembler.map_cells(u, |c, x, ue, material| {
            assembler.kernel_of(c).cell_fields(x, ue, material)
        })?;
        Ok(Self::from_fields(&cells))
    }

    /// Adds the strain fields of `config`: those of `computed` (the GPU's) as they are, the
    /// others computed on the host from `u`, or, where `defer` and no probe reads them, left to
    /// the output writer ([`CellOutputs::later`]).
    fn with_strains(
        mut self,
        problem: &Problem,
        u: &Vector,
        config: &Config,
        computed: solve::newton::CellStrains,
        defer: bool,
    ) -> Result<Self> {
        let (now, later): (Vec<OutputField>, Vec<OutputField>) =
            crate::fields::strain_fields(config)
                .into_iter()
                .partition(|&f| {
                    !defer
                        || crate::probes::reads_field(config, f)
                        || computed.iter().any(|(m, _)| Some(*m) == f.strain_measure())
                });
        self.strains = crate::fields::cell_strains_of(problem, u, &now, computed)?;
        self.later = later;
        Ok(self)
    }

    /// The outputs of a state whose cell fields and strains (those of `config`) are all left
    /// to the output writer ([`CellOutputs::fields_later`]).
    pub(crate) fn fields_later(config: &Config) -> Self {
        CellOutputs {
            later: crate::fields::strain_fields(config),
            fields_later: true,
            ..CellOutputs::default()
        }
    }

    /// Computes what is left to the writer with `cells` at the displacement `u` (per node):
    /// the element loop's fields where [`CellOutputs::fields_later`]
    /// ([`CellOutputs::add_later_fields`]), then the strains of [`CellOutputs::later`] (the
    /// writer computes each into a field of its own: `crate::state_write`).
    #[cfg(test)]
    pub(crate) fn add_later(
        &mut self,
        cells: &crate::fields::StrainCells,
        u: &[[f64; 3]],
    ) -> Result<()> {
        self.add_later_fields(cells, u)?;
        for field in std::mem::take(&mut self.later) {
            let values = cells.strains(u, field)?;
            self.strains.push((field, values));
        }
        Ok(())
    }

    /// Computes the element loop's fields left to the writer ([`CellOutputs::fields_later`])
    /// with `cells` at the displacement `u` (per node); [`CellOutputs::later`] is kept.
    pub(crate) fn add_later_fields(
        &mut self,
        cells: &crate::fields::StrainCells,
        u: &[[f64; 3]],
    ) -> Result<()> {
        if std::mem::take(&mut self.fields_later) {
            let later = std::mem::take(&mut self.later);
            *self = Self::from_fields(&cells.fields(u)?);
            self.later = later;
        }
        Ok(())
    }

    /// The outputs of a converged step: the fields and strains the GPU computed where the
    /// Newton loop ran there ([`ConvergedStep::cell_fields`], [`ConvergedStep::cell_strains`];
    /// the other strains on the host), else [`CellOutputs::compute`] on the host. With `defer`
    /// (one process) the strains no probe reads and the GPU did not compute are left to the
    /// output writer ([`CellOutputs::later`]).
    pub(crate) fn of_step(
        problem: &Problem,
        step: &ConvergedStep,
        u: &Vector,
        config: &Config,
        defer: bool,
    ) -> Result<Self> {
        match &step.cell_fields {
            Some(cells) => {
                let n = problem.discrete.assembler.n_cells();
                if cells.len() != n {
                    fail!("{} cell fields from the GPU for {n} cells", cells.len());
                }
                let outputs = match cells {
                    fem::StateCellFields::Every(fields) => Self::from_fields(fields),
                    fem::StateCellFields::Checks { j, strain_energy } => CellOutputs {
                        jacobian: j.clone(),
                        strain_energy: strain_energy.clone(),
                        ..CellOutputs::default()
                    },
                };
                outputs.with_strains(problem, u, config, step.cell_strains.clone(), defer)
            }
            None => {
                Self::on_the_host(problem, u)?.with_strains(problem, u, config, Vec::new(), defer)
            }
        }
    }

    /// From each cell's [`fem::CellFields`], in cell order (in parallel: each value is its
    /// cell's).
    fn from_fields(cells: &[fem::CellFields]) -> Self {
        CellOutputs {
            cauchy: cells
                .par_iter()
                .map(|f| {
                    let [xx, yy, zz, xy, yz, xz] = f.cauchy;
                    [xx, xy, xz, xy, yy, yz, xz, yz, zz]
                })
                .collect(),
            von_mises: cells.par_iter().map(|f| f.von_mises).collect(),
            jacobian: cells.par_iter().map(|f| f.j).collect(),
            energy_density: cells.par_iter().map(|f| f.energy_density).collect(),
            strain_energy: cells.par_iter().map(|f| f.strain_energy).collect(),
            strains: Vec::new(),
            later: Vec::new(),
            fields_later: false,
        }
    }

    /// The total strain energy: the cells' energies summed exactly and rounded once, so the
    /// same bits in any order and on any number of ranks (where each rank adds its own cells:
    /// [`owned_strain_energy`]).
    pub(crate) fn total_strain_energy(&self) -> f64 {
        exact_sum_where(&self.strain_energy, |_| true).value()
    }

    /// Cell `c`'s [`CellOutputs::record_width`] values (stress, von Mises, J, energy density,
    /// strain energy, then each strain field's 9): the record a rank sends to rank 0.
    pub(crate) fn record(&self, c: usize, out: &mut [f64]) {
        out[..9].copy_from_slice(&self.cauchy[c]);
        out[9..Self::WIDTH].copy_from_slice(&[
            self.von_mises[c],
            self.jacobian[c],
            self.energy_density[c],
            self.strain_energy[c],
        ]);
        for (k, (_, strain)) in self.strains.iter().enumerate() {
            out[Self::WIDTH + 9 * k..Self::WIDTH + 9 * (k + 1)].copy_from_slice(&strain[c]);
        }
    }
}

/// [`crate::plausibility::check`] of the converged state `u` of step `index` with the outputs
/// `cells` of a body of `size`: an error for a state that is not finite (before it is written),
/// else the warnings of an implausible linear answer.
pub(crate) fn check_state(
    index: usize,
    u: &Vector,
    cells: &CellOutputs,
    size: f64,
    linear: bool,
) -> Result<Vec<String>> {
    with_state_figures(index, u, cells, size, linear, |state| {
        crate::plausibility::check(state)
    })
}

/// `f` of the figures [`crate::plausibility`] checks of the state `u` of step `index` with
/// the outputs `cells` (of this process's cells) of a body of `size`.
pub(crate) fn with_state_figures<T>(
    index: usize,
    u: &Vector,
    cells: &CellOutputs,
    size: f64,
    linear: bool,
    f: impl FnOnce(&crate::plausibility::StateFigures) -> Result<T>,
) -> Result<T> {
    let (displacement, _) = u.host()?.as_chunks::<3>();
    let max_displacement = max_length(displacement);
    f(&crate::plausibility::StateFigures {
        step: index,
        max_displacement,
        strain_energy: cells.total_strain_energy(),
        size,
        linear,
        fields: &[
            ("cauchy_stress", cells.cauchy.as_flattened()),
            ("von_mises", &cells.von_mises),
            ("jacobian", &cells.jacobian),
            ("energy_density", &cells.energy_density),
        ],
        jacobian: &cells.jacobian,
    })
}

/// The largest [`length`] of `displacement` (0 for none), NaN where one is NaN (`f64::max`
/// would drop it); in parallel (the same value whatever the order: the maximum is one of them).
pub(crate) fn max_length(displacement: &[[f64; 3]]) -> f64 {
    let nan_max = |m: f64, l: f64| {
        if m.is_nan() || l.is_nan() {
            f64::NAN
        } else {
            m.max(l)
        }
    };
    displacement
        .par_iter()
        .map(length)
        .fold(|| 0.0, nan_max)
        .reduce(|| 0.0, nan_max)
}

/// A copy of `mesh` whose large arrays (coordinates, connectivity) are copied in parallel.
pub(crate) fn parallel_clone(mesh: &HexMesh) -> HexMesh {
    HexMesh {
        kind: mesh.kind,
        coords: mesh.coords.par_iter().copied().collect(),
        cells: mesh.cells.par_iter().copied().collect(),
        cell_tags: mesh.cell_tags.clone(),
        node_sets: mesh.node_sets.clone(),
        face_sets: mesh.face_sets.clone(),
        cell_sets: mesh.cell_sets.clone(),
        set_ids: mesh.set_ids.clone(),
    }
}

/// A state's output as handed to the output writer ([`crate::writer`]): owned copies of what
/// its files need besides the mesh.
pub(crate) struct StateSnapshot {
    pub(crate) stamp: StepStamp,
    /// Per node.
    pub(crate) displacement: Vec<[f64; 3]>,
    /// Per node.
    pub(crate) reaction: Vec<[f64; 3]>,
    pub(crate) cells: CellOutputs,
}

impl StateSnapshot {
    /// A copy of the state `u` with `reactions` and the outputs `cells`, as step `stamp`
    /// (the nodal values copied in parallel).
    pub(crate) fn of(
        stamp: StepStamp,
        u: &Vector,
        reactions: &Vector,
        cells: CellOutputs,
    ) -> Result<Self> {
        let copy = |v: &Vector| -> Result<Vec<[f64; 3]>> {
            Ok(v.host()?.as_chunks::<3>().0.par_iter().copied().collect())
        };
        Ok(StateSnapshot {
            stamp,
            displacement: copy(u)?,
            reaction: copy(reactions)?,
            cells,
        })
    }
}

/// Each node's mean of the values of the cells around it, in parallel over ranges of nodes:
/// each range scans the cells in order and sums only its own nodes, so that every node's sum
/// runs over its cells in ascending order, whatever the threads (the serial loop's bits).
pub fn nodal_average(mesh: &HexMesh, per_cell: &[[f64; 9]]) -> Vec<[f64; 9]> {
    let n_nodes = mesh.n_nodes();
    let mut sum = vec![[0.0; 9]; n_nodes];
    let mut count = vec![0u32; n_nodes];
    let range = n_nodes
        .div_ceil(rayon::current_num_threads().max(1))
        .max(MIN_NODES_PER_RANGE);
    sum.par_chunks_mut(range)
        .zip(count.par_chunks_mut(range))
        .enumerate()
        .for_each(|(r, (sum, count))| {
            let first = r * range;
            for (c, value) in per_cell.iter().enumerate() {
                for &n in mesh.cell_nodes(c) {
                    let Some(k) = n.checked_sub(first).filter(|&k| k < sum.len()) else {
                        continue;
                    };
                    for (s, v) in sum[k].iter_mut().zip(value) {
                        *s += v;
                    }
                    count[k] += 1;
                }
            }
            for (s, &k) in sum.iter_mut().zip(count.iter()) {
                if k > 0 {
                    s.iter_mut().for_each(|v| *v /= f64::from(k));
                }
            }
        });
    sum
}

/// Fewest nodes a range of [`nodal_average`] takes (each range scans every cell).
const MIN_NODES_PER_RANGE: usize = 1 << 14;

/// Von Mises stress of a full 3x3 stress (row-major): `sqrt(3/2 s:s)`, `s` the deviator.
pub fn von_mises_of(t: &[f64; 9]) -> f64 {
    let mean = (t[0] + t[4] + t[8]) / 3.0;
    let mut ss = 0.0;
    for i in 0..3 {
        for j in 0..3 {
            let s = t[3 * i + j] - if i == j { mean } else { 0.0 };
            ss += s * s;
        }
    }
    (1.5 * ss).sqrt()
}

/// The summary record of a converged step with its strain energy, largest displacement and
/// reaction totals.
pub(crate) fn step_record(
    step: &ConvergedStep,
    strain_energy: f64,
    max_displacement: f64,
    reactions: &BTreeMap<String, ReactionTotal>,
) -> Result<StepRecord> {
    let mut residual_norms: Vec<f64> = step.iterations.iter().map(|it| it.residual_norm).collect();
    residual_norms.push(step.residual_norm);
    Ok(StepRecord {
        step: step.index,
        load_factor: step.load_factor,
        cutbacks: step.cutbacks,
        newton_iterations: step.iterations.len(),
        linear_iterations: step
            .iterations
            .iter()
            .map(|it| it.linear.iterations)
            .collect(),
        residual_norms,
        strain_energy,
        max_displacement,
        wall_s: step.wall_s,
        linear_solver: serde_json::to_value(&step.iterations)?,
        converged_by: serde_json::to_value(step.converged_by)?
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        failed_attempts: serde_json::to_value(&step.failed_attempts)?,
        reactions: serde_json::to_value(reactions)?,
        probes: BTreeMap::new(),
        output_transfer_bytes: step.output_transfer_bytes,
        warnings: Vec::new(),
    })
}

/// Total reaction force and moment of one constrained set.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReactionTotal {
    pub force: [f64; 3],
    /// About the origin, with the forces at the nodes' deformed positions.
    pub moment: [f64; 3],
}

/// The reaction totals of every set named by a Dirichlet or twist condition: the reactions of
/// the components that the set's conditions prescribe (a set fixed in `x` only reports the `x`
/// reaction). A node shared by two sets counts in both.
pub fn reaction_totals(
    config: &Config,
    mesh: &HexMesh,
    u: &Vector,
    reactions: &Vector,
) -> Result<std::collections::BTreeMap<String, ReactionTotal>> {
    let (r, _) = reactions.host()?.as_chunks::<3>();
    let (u, _) = u.host()?.as_chunks::<3>();
    let mut totals = std::collections::BTreeMap::new();
    for (set, mask) in reaction_components(config) {
        let mut sum = crate::probes::SetSum::default();
        for node in mesh.set_nodes(&set)? {
            sum.add(mesh.coords[node], u[node], masked(r[node], mask), [0.0; 3]);
        }
        totals.insert(
            set,
            ReactionTotal {
                force: sum.force,
                moment: sum.moment,
            },
        );
    }
    Ok(totals)
}

/// The sets of [`reaction_totals`], each with the components its conditions prescribe.
pub fn reaction_components(config: &Config) -> BTreeMap<String, [bool; 3]> {
    let b = &config.boundary;
    let mut components = BTreeMap::<String, [bool; 3]>::new();
    for d in &b.dirichlet {
        let c = components.entry(d.set.clone()).or_default();
        for (i, v) in d.components().iter().enumerate() {
            c[i] |= v.is_some();
        }
    }
    for t in &b.twist {
        components.insert(t.set.clone(), [true; 3]);
    }
    components
}

/// `f` with the components `mask` leaves out zeroed.
pub fn masked(f: [f64; 3], mask: [bool; 3]) -> [f64; 3] {
    std::array::from_fn(|d| if mask[d] { f[d] } else { 0.0 })
}

/// The linear solver's parameters of a run, with the device `config` names unless the Newton
/// loop cannot run there: `device: auto` then falls back to the CPU (the reason is returned for
/// the header), `device: cuda` is an error at the `device` key naming what the GPU lacks.
pub(crate) fn newton_device(
    config: &Config,
    problem: &Problem,
) -> Result<(solve::params::LinearSolverParams, Option<String>)> {
    let mut params = config.linear_solver_params();
    let unsupported = match assembly::device::DeviceProblem::supports(&problem.discrete) {
        Ok(()) => return Ok((params, None)),
        Err(e) => e.to_string(),
    };
    match config.device {
        config::ComputeDevice::Cuda => Err(crate::Error::Input(config.error_at(
            "device",
            format!("`cuda` runs the Newton loop on the GPU, which does not support this problem: {unsupported}"),
        ))),
        config::ComputeDevice::Auto => {
            params.device = solve::params::DeviceChoice::Cpu;
            Ok((params, Some(unsupported)))
        }
        config::ComputeDevice::Cpu => Ok((params, None)),
    }
}

/// Collective over `comm`: the total strain energy of the cells `energies` of the ranks' parts,
/// each rank adding its owned cells (`owned`) exactly; [`CellOutputs::total_strain_energy`]'s
/// bits for the whole mesh, for any partition.
pub(crate) fn owned_strain_energy(
    comm: &dyn comm::Comm,
    energies: &[f64],
    owned: &[bool],
) -> Result<f64> {
    let mut sum = [exact_sum_where(energies, |c| owned[c])];
    linalg::exact::ExactSum::allreduce(comm, &mut sum)?;
    Ok(sum[0].value())
}

/// The exact sum of the `terms` whose index `keep` takes, in parallel (the same sum for any
/// split: it is exact).
fn exact_sum_where(terms: &[f64], keep: impl Fn(usize) -> bool + Sync) -> linalg::exact::ExactSum {
    use linalg::exact::ExactSum;
    const TERMS_PER_TASK: usize = 1 << 15;
    terms
        .par_chunks(TERMS_PER_TASK)
        .enumerate()
        .map(|(k, chunk)| {
            let first = k * TERMS_PER_TASK;
            let kept = chunk.iter().enumerate().filter(|&(i, _)| keep(first + i));
            ExactSum::of(kept.map(|(_, &t)| t))
        })
        .reduce(ExactSum::new, |mut a, b| {
            a.merge(&b);
            a
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The length of tiny and huge displacements neither underflows to 0 nor overflows; for
    /// ordinary ones it is the plain formula's, bit for bit.
    #[test]
    fn length_neither_underflows_nor_overflows() {
        let tiny = length(&[3e-299, 4e-299, 0.0]);
        assert!((tiny / 5e-299 - 1.0).abs() < 1e-15, "{tiny:e}");
        let huge = length(&[3e300, 0.0, -4e300]);
        assert!((huge / 5e300 - 1.0).abs() < 1e-15, "{huge:e}");
        let plain: [f64; 3] = [0.1, -0.25, 3.5];
        let expected = (plain[0] * plain[0] + plain[1] * plain[1] + plain[2] * plain[2]).sqrt();
        assert_eq!(length(&plain).to_bits(), expected.to_bits());
        assert_eq!(length(&[0.0; 3]), 0.0);
        assert!(length(&[f64::NAN, 0.0, 0.0]).is_nan());
    }

    /// A write that fails at any of a small run's write positions (the summary, the results
    /// file created and its mesh written on the writer's thread, the first state left to the
    /// writer, the steps) fails the run with that error: no panic, no hang; the runs whose
    /// summary can still be written record the failure there.
    #[test]
    fn a_write_failing_at_any_position_fails_the_run_cleanly() {
        let dir = std::env::temp_dir().join(format!("sim-run-faults-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("block.yaml");
        std::fs::write(
            &input,
            "mesh:\n  box: { cells: [2, 2, 2], lower: [0, 0, 0], upper: [1, 1, 1] }\n\
             materials:\n  - { model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }\n\
             boundary:\n  dirichlet:\n    - { set: zmin, x: 0.0, y: 0.0, z: 0.0 }\n\
             \x20 traction:\n    - { set: zmax, value: [0.0, 0.0, 1.0] }\n\
             loading: { steps: 2 }\n",
        )
        .unwrap();
        let comm: Arc<dyn Comm> = Arc::new(comm::SelfComm);
        let out = dir.join("out");
        let options = |faults| {
            RunOptions::new(&input)
                .with_output_dir(&out)
                .with_overwrite(true)
                .with_faults(faults)
        };
        let counting = Faults::counting();
        run(&comm, &options(counting.clone()), &crate::observer::Quiet).unwrap();
        let positions = counting.writes();
        assert!(positions > 5, "{positions} write positions");
        let mut summaries_failed = 0;
        let mut completed = Vec::new();
        for at in 0..positions {
            let faults = Faults::stop_at(at, false, io::FaultAction::Fail);
            let outcome = run(&comm, &options(faults), &crate::observer::Quiet);
            let Err(error) = outcome else {
                completed.push(at);
                continue;
            };
            let text = format!("{error:#}");
            assert!(
                text.contains("injected fault"),
                "a fault at write {at}: {text}"
            );
            let summary = io::Summary::read(&out.join("block.summary.json"));
            if matches!(summary.map(|s| s.status), Ok(RunStatus::Failed { .. })) {
                summaries_failed += 1;
            }
        }
        assert!(summaries_failed > 0);
        // but the last two writes, at the run's end after the results file is finished (a
        // failure there is not the run's: as before the file moved to the writer's thread)
        assert!(
            completed.iter().all(|&at| at + 2 >= positions),
            "completed despite a fault at {completed:?} of {positions}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn von_mises_of_uniaxial_tension_and_pure_shear() {
        let uniaxial = [2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert!((von_mises_of(&uniaxial) - 2.0).abs() < 1e-15);
        let shear = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert!((von_mises_of(&shear) - 3f64.sqrt()).abs() < 1e-15);
        let pressure = [5.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 5.0];
        assert_eq!(von_mises_of(&pressure), 0.0);
    }

    /// Two cells along x: the four shared nodes get the mean of both cells, the others their
    /// own cell's value.
    #[test]
    fn nodal_average_is_the_mean_of_the_cells_around_each_node() {
        let mesh = mesh::generate_box(&mesh::BoxSpec {
            cells: [2, 1, 1],
            lower: [0.0; 3],
            upper: [2.0, 1.0, 1.0],
            kind: CellKind::Hex8,
            corners: None,
        })
        .unwrap();
        let per_cell = [[1.0; 9], [3.0; 9]];
        let nodal = nodal_average(&mesh, &per_cell);
        for (n, x) in mesh.coords.iter().enumerate() {
            let expected = match x[0] {
                0.0 => 1.0,
                1.0 => 2.0,
                _ => 3.0,
            };
            assert_eq!(nodal[n], [expected; 9], "node {n} at {x:?}");
        }
    }

    /// Over several ranges of nodes (a pool of 4 threads, more nodes than one range takes) the
    /// sums are the serial scatter's, bit for bit.
    #[test]
    fn nodal_average_in_ranges_is_the_serial_scatter_bit_for_bit() {
        let mesh = mesh::generate_box(&mesh::BoxSpec {
            cells: [50, 40, 20],
            lower: [0.0; 3],
            upper: [4.0, 3.0, 2.0],
            kind: CellKind::Hex8,
            corners: None,
        })
        .unwrap();
        assert!(mesh.n_nodes() > 2 * MIN_NODES_PER_RANGE);
        let per_cell: Vec<[f64; 9]> = (0..mesh.n_cells())
            .map(|c| std::array::from_fn(|i| ((c * 9 + i) as f64 * 0.618_033_988_7).sin()))
            .collect();
        let mut serial = vec![[0.0; 9]; mesh.n_nodes()];
        let mut count = vec![0u32; mesh.n_nodes()];
        for (c, value) in per_cell.iter().enumerate() {
            for &n in mesh.cell_nodes(c) {
                for (s, v) in serial[n].iter_mut().zip(value) {
                    *s += v;
                }
                count[n] += 1;
            }
        }
        for (s, &k) in serial.iter_mut().zip(&count) {
            s.iter_mut().for_each(|v| *v /= f64::from(k));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let ranged = pool.install(|| nodal_average(&mesh, &per_cell));
        let bits =
            |v: &[[f64; 9]]| -> Vec<u64> { v.iter().flatten().map(|x| x.to_bits()).collect() };
        assert_eq!(bits(&ranged), bits(&serial));
    }
}
