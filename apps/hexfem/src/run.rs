//! `hexfem run`: configuration -> problem -> load path, writing HDF5 + XDMF and the JSON summary
//! after every converged step.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use linalg::Vector;
use mesh::{CellKind, HexMesh, NodeOrdering};

use config::{self, Config, OutputField};
use solve::linear_solver::LinearSolver;
use solve::newton::{ConvergedStep, LoadPath};
use io::{
    CellTensor, MeshData, MeshInfo, ResultsWriter, RunInfo, RunStatus, StepData, StepRecord,
    SummaryWriter,
};
use solve::problem::{near_null_space, Problem};

/// Options of one run.
pub struct RunOptions {
    pub input: PathBuf,
    /// `key.path=value` overrides (`--set`).
    pub overrides: Vec<String>,
    /// Replaces `output.directory` (`-o`).
    pub output_dir: Option<PathBuf>,
    /// Progress lines on standard error.
    pub progress: Progress,
}

/// Whether to print per-iteration progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    Quiet,
    Verbose,
}

impl Progress {
    /// Verbose on an interactive terminal, quiet in CI (`CI` set) or when piped.
    pub fn auto() -> Self {
        if std::env::var_os("CI").is_none() && std::io::stderr().is_terminal() {
            Progress::Verbose
        } else {
            Progress::Quiet
        }
    }
}

/// Where the results went.
#[derive(Debug)]
pub struct RunOutcome {
    pub h5: PathBuf,
    pub xdmf: PathBuf,
    pub summary: PathBuf,
    pub steps: usize,
}

/// Runs the simulation of `options.input`. On a failed load path the files written so far are
/// kept (every converged step) and the summary records the failure.
pub fn run(options: &RunOptions) -> Result<RunOutcome> {
    let started = Instant::now();
    let config = config::load_with_overrides(&options.input, &options.overrides)?;
    let mut problem = Problem::from_config(&config)?;
    let dir = options
        .output_dir
        .clone()
        .unwrap_or_else(|| config.output.directory.clone());
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating output directory {}", dir.display()))?;
    let name = output_name(&config, &options.input);
    let connectivity = vtk_connectivity(&problem.mesh);
    let node_sets: Vec<(&str, &[usize])> = problem
        .mesh
        .node_sets
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    let face_pairs: Vec<(&str, Vec<[usize; 2]>)> = problem
        .mesh
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
    let cell_sets: Vec<(&str, &[usize])> = problem
        .mesh
        .cell_sets
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    let mut results = ResultsWriter::create(
        &dir,
        &name,
        &MeshData {
            nodes_per_cell: problem.mesh.nodes_per_cell(),
            coordinates: &problem.mesh.coords,
            connectivity: &connectivity,
            node_sets: &node_sets,
            cell_sets: &cell_sets,
            face_sets: &face_sets,
        },
    )?;
    let mut summary = SummaryWriter::create(
        &dir,
        &name,
        run_info(&config, &options.input)?,
        mesh_info(&problem),
    )?;
    let mut solver = LinearSolver::new(
        &config.linear_solver,
        near_null_space(&problem.mesh.coords)?,
    );
    let mut u = Vector::zeros(problem.n_dofs());
    let path = LoadPath {
        loading: &config.loading,
        newton: &config.newton,
        verbose: options.progress == Progress::Verbose,
    };
    let progress = options.progress;
    let outcome = path.run(&mut problem, &mut solver, &mut u, |step, u, problem, solver| {
        let record = write_step(&config, problem, step, u, &mut results)?;
        if let Some(report) = solver.hierarchy_report() {
            summary.set_preconditioner(serde_json::to_value(report)?);
        }
        if progress == Progress::Verbose {
            eprintln!(
                "step {:>3}  load {:.4}  newton {:>2}  linear {:>5}  |r| {:.3e}  energy {:.6e}  ({:.2} s)",
                step.index,
                step.load_factor,
                record.newton_iterations,
                record.linear_iterations.iter().sum::<usize>(),
                step.residual_norm,
                record.strain_energy,
                step.wall_s
            );
        }
        summary.record_step(record, started.elapsed().as_secs_f64())?;
        Ok(())
    });
    let steps = results.steps_written();
    match outcome {
        Ok(()) => summary.finish(RunStatus::Completed, started.elapsed().as_secs_f64())?,
        Err(e) => {
            summary.finish(
                RunStatus::Failed {
                    message: format!("{e:#}"),
                },
                started.elapsed().as_secs_f64(),
            )?;
            return Err(e.context(format!(
                "{steps} converged steps are in {}",
                results.h5_path().display()
            )));
        }
    }
    Ok(RunOutcome {
        h5: results.h5_path().to_owned(),
        xdmf: results.xdmf_path().to_owned(),
        summary: summary.path().to_owned(),
        steps,
    })
}

fn output_name(config: &Config, input: &Path) -> String {
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

fn run_info(config: &Config, input: &Path) -> Result<RunInfo> {
    Ok(RunInfo {
        program: format!("hexfem {}", env!("CARGO_PKG_VERSION")),
        input: input.to_owned(),
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        threads: rayon::current_num_threads(),
        config: serde_json::to_value(config)?,
    })
}

fn mesh_info(problem: &Problem) -> MeshInfo {
    MeshInfo {
        nodes: problem.mesh.n_nodes(),
        cells: problem.mesh.n_cells(),
        nodes_per_cell: problem.mesh.nodes_per_cell(),
        dofs: problem.n_dofs(),
        constrained_dofs: problem.constraints.n_constrained(),
    }
}

/// Post-processes a converged step and writes it; returns its summary record.
fn write_step(
    config: &Config,
    problem: &mut Problem,
    step: &ConvergedStep,
    u: &Vector,
    results: &mut ResultsWriter,
) -> Result<StepRecord> {
    let kernel = problem.assembler.kernel();
    let cells = problem
        .assembler
        .map_cells(u, |_, x, ue, material| kernel.cell_fields(x, ue, material))?;
    let cauchy: Vec<[f64; 9]> = cells
        .iter()
        .map(|f| {
            let [xx, yy, zz, xy, yz, xz] = f.cauchy;
            [xx, xy, xz, xy, yy, yz, xz, yz, zz]
        })
        .collect();
    let von_mises: Vec<f64> = cells.iter().map(|f| f.von_mises).collect();
    let jacobian: Vec<f64> = cells.iter().map(|f| f.j).collect();
    let energy_density: Vec<f64> = cells.iter().map(|f| f.energy_density).collect();
    let strain_energy: f64 = cells.iter().map(|f| f.strain_energy).sum();
    let (displacement, _) = u.as_slice().as_chunks::<3>();
    let (reaction, _) = step.reactions.as_slice().as_chunks::<3>();
    let wants = |f| config.output.wants(f);
    results.write_step(&StepData {
        step: step.index,
        load_factor: step.load_factor,
        displacement: wants(OutputField::Displacement).then_some(displacement),
        reaction: wants(OutputField::Reaction).then_some(reaction),
        cauchy_stress: wants(OutputField::CauchyStress).then_some(CellTensor::Full(&cauchy)),
        von_mises: wants(OutputField::VonMises).then_some(&von_mises),
        jacobian: wants(OutputField::Jacobian).then_some(&jacobian),
        energy_density: wants(OutputField::EnergyDensity).then_some(&energy_density),
    })?;
    let max_displacement = displacement
        .iter()
        .map(|d| (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt())
        .fold(0.0, f64::max);
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
    })
}
