//! `hexfem check`: validate a configuration and build everything a run needs except the solve,
//! then summarise it.

use std::path::{Path, PathBuf};

use crate::Result;
use linalg::ops;

use config::{self, CellSelection, MaterialModel, MeshSource};
use solve::linear_solver::Choice;

/// What `hexfem check` found of a valid input: what a run of it computes (the command line
/// renders it).
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The input's name.
    pub input: PathBuf,
    /// The results file a run writes.
    pub output: PathBuf,
    /// The files an earlier run of the same name left in the output directory: `run` refuses
    /// to replace them unless given `--overwrite` (empty where there are none).
    pub earlier_results: Vec<PathBuf>,
    pub scope: CheckScope,
}

impl CheckReport {
    /// Why `run` without `--overwrite` would be refused: the output directory already holds
    /// the results of a run of the same name (see [`crate::run::keep_earlier_results`]).
    pub fn overwrite_warning(&self) -> Option<String> {
        if self.earlier_results.is_empty() {
            return None;
        }
        let dir = self.output.parent().unwrap_or(Path::new("."));
        let files: Vec<String> = self
            .earlier_results
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        Some(format!(
            "{} already holds the results of an earlier run ({}): `run` keeps them and refuses to start unless given --overwrite (or -o DIR, or --set output.name=NAME)",
            dir.display(),
            files.join(", ")
        ))
    }
}

/// Where the input was checked, and what was found there.
#[derive(Clone, Debug)]
pub enum CheckScope {
    /// In one process: the whole problem.
    Process(Box<ProblemReport>),
    /// On MPI ranks: the partition of the mesh.
    Ranks(PartitionReport),
}

/// The problem of a valid input, built in one process.
#[derive(Clone, Debug)]
pub struct ProblemReport {
    pub mesh: MeshSource,
    /// 1 (Q1) or 2 (Q2).
    pub order: usize,
    pub cells: usize,
    pub nodes: usize,
    pub unknowns: usize,
    pub node_sets: Vec<String>,
    pub face_sets: Vec<String>,
    pub cell_sets: Vec<String>,
    /// The element formulation (see [`crate::formulation::describe`]), and a warning where it
    /// locks.
    pub formulation: String,
    pub locking_warning: Option<String>,
    /// Each `materials` entry's model and cells.
    pub materials: Vec<(MaterialModel, CellSelection)>,
    /// Constrained unknowns.
    pub constrained: usize,
    /// The total dead load at load factor 1, and the norm of the load vector.
    pub dead_load: [f64; 3],
    pub dead_load_norm: f64,
    /// Load steps.
    pub steps: usize,
    /// The linear solver chosen for the problem (`method: auto` resolved).
    pub solver: Choice,
    /// Follower pressure loads.
    pub follower_pressures: usize,
    /// The probes' columns.
    pub probes: Vec<String>,
    /// Bytes the run needs (estimated) and are available, where known.
    pub memory_needed: f64,
    pub memory_available: Option<f64>,
}

/// The partition of a valid input's mesh over MPI ranks.
#[derive(Clone, Debug)]
pub struct PartitionReport {
    /// 1 (Q1) or 2 (Q2).
    pub order: usize,
    pub cells: u64,
    pub nodes: u64,
    /// Per rank: owned nodes, ghost nodes, owned cells, ghost cells.
    pub ranks: Vec<[u64; 4]>,
}

impl PartitionReport {
    /// The largest of the ranks' counts of `column` (of [`PartitionReport::ranks`]) over their
    /// mean (1 where there are none).
    pub fn imbalance(&self, column: usize) -> f64 {
        let counts = self.ranks.iter().map(|c| c[column]);
        let max = counts.clone().max().unwrap_or(0) as f64;
        let mean = counts.sum::<u64>() as f64 / self.ranks.len().max(1) as f64;
        if mean > 0.0 {
            max / mean
        } else {
            1.0
        }
    }
}

/// Validates `input` (with `overrides`): everything `run` checks before solving (the
/// configuration, the output files in `output_dir` or the configured directory, the mesh,
/// materials, constraints and loads); returns what a run of it computes.
pub fn check(
    input: &Path,
    overrides: &[String],
    output_dir: Option<&Path>,
) -> crate::error::Result<CheckReport> {
    check_source(&crate::Input::File(input), overrides, output_dir)
}

/// [`check`] of an input file or of standard input's text.
pub fn check_source(
    source: &crate::Input,
    overrides: &[String],
    output_dir: Option<&Path>,
) -> Result<CheckReport> {
    let input = source.path();
    let config = source.load(overrides)?;
    let dir = crate::run::output_dir(&config, output_dir);
    let name = crate::run::output_name(&config, input);
    crate::run::check_output(&config, output_dir, &dir, &name)?;
    let memory = crate::memory::guard(&config)?;
    let problem = crate::locate::build_problem(&config)?;
    // the linear solver's device must be there (`cuda`) or is chosen now (`auto`), and must run
    // this problem's Newton loop (`cuda`: an error otherwise); `method: auto` is resolved for
    // this problem
    let (solver_params, _) = crate::run::newton_device(&config, &problem)?;
    let (_, choice) = crate::locate::located(
        &config,
        solve::linear_solver::LinearSolver::choose(
            &solver_params,
            solve::problem::near_null_space(&problem.mesh.coords)?,
            solve::linear_solver::OperatorKind::Serial {
                pattern: &|| problem.discrete.assembler.pattern(),
            },
            problem.discrete.tangent_is_symmetric(),
        ),
    )?;
    let probes = crate::probes::Probes::new(&config, &problem.mesh)?;
    let mesh = &problem.mesh;
    let external = problem.discrete.external.host()?;
    let problem_report = ProblemReport {
        mesh: config.mesh.clone(),
        order: mesh.order(),
        cells: mesh.n_cells(),
        nodes: mesh.n_nodes(),
        unknowns: problem.n_dofs(),
        node_sets: mesh.node_sets.keys().cloned().collect(),
        face_sets: mesh.face_sets.keys().cloned().collect(),
        cell_sets: mesh.cell_sets.keys().cloned().collect(),
        formulation: crate::formulation::describe(&config, mesh.order()),
        locking_warning: crate::formulation::locking_warning(&config, mesh.order()),
        materials: config
            .materials
            .iter()
            .map(|m| (m.model, m.cells.clone()))
            .collect(),
        constrained: problem.discrete.constraints.n_constrained(),
        dead_load: std::array::from_fn(|d| external.iter().skip(d).step_by(3).sum()),
        dead_load_norm: ops::norm2(&problem.discrete.external)?,
        steps: config.loading.steps,
        solver: choice,
        follower_pressures: problem.discrete.follower.len(),
        probes: probes.columns().to_vec(),
        memory_needed: memory.total,
        memory_available: crate::memory::available(),
    };
    Ok(CheckReport {
        input: input.to_owned(),
        output: dir.join(format!("{name}.h5")),
        earlier_results: io::existing_results(&dir, &name),
        scope: CheckScope::Process(Box::new(problem_report)),
    })
}
