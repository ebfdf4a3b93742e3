//! `hexfem run`: configuration -> problem -> load path, writing HDF5 + XDMF and the JSON summary
//! after every converged step.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use linalg::Vector;
use mesh::{CellKind, HexMesh, NodeOrdering};

use config::{self, Config, OutputField};
use io::{
    CellTensor, Faults, MeshData, MeshInfo, ResultsWriter, RunInfo, RunStatus, StepData,
    StepRecord, SummaryWriter,
};
use solve::linear_solver::LinearSolver;
use solve::newton::{ConvergedStep, LoadPath};
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
    /// Fault injection for crash tests (test-only; [`Faults::none`] otherwise).
    pub faults: Faults,
    /// Test-only: abort the process right after step N is completely written.
    pub abort_after_step: Option<usize>,
}

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
    let dir = output_dir(&config, options.output_dir.as_deref());
    let name = output_name(&config, &options.input);
    check_output(&config, options.output_dir.as_deref(), &dir, &name)?;
    crate::memory::guard(&config)?;
    let mut problem = crate::locate::build_problem(&config)?;
    // before any file is written: `linear_solver.device: cuda` needs its GPU
    let (mut solver, solver_text) = crate::locate::located(
        &config,
        LinearSolver::choose(
            &(&config.linear_solver).into(),
            near_null_space(&problem.mesh.coords)?,
            problem.discrete.assembler.pattern(),
        ),
    )?;
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating output directory {}", dir.display()))?;
    let mut summary = SummaryWriter::create(
        &dir,
        &name,
        run_info(&config, &options.input)?,
        mesh_info(&problem),
        &options.faults,
    )?;
    let mut results = match create_results(&config, &problem, &dir, &name, &options.faults) {
        Ok(results) => results,
        Err(e) => {
            let first = format!("{e:#}");
            let _ = summary.finish(
                RunStatus::Failed { message: first },
                started.elapsed().as_secs_f64(),
            );
            return Err(e);
        }
    };
    let mut u = Vector::zeros(problem.n_dofs());
    // Step 0: the undeformed state (load factor 0, no reactions).
    if let Err(e) = write_fields(&config, &mut problem, 0, 0.0, &u, &u, &mut results) {
        let first = format!("{e:#}");
        let _ = summary.finish(
            RunStatus::Failed { message: first },
            started.elapsed().as_secs_f64(),
        );
        return Err(e);
    }
    let newton: solve::params::NewtonParams = (&config.newton).into();
    let progress = options.progress;
    if progress != Progress::Quiet {
        let _ = write!(
            std::io::stderr().lock(),
            "{}",
            header(
                &config,
                &problem,
                &solver_text,
                &newton,
                &problem_text(&problem)
            )
        );
    }
    let path = LoadPath {
        loading: &(&config.loading).into(),
        newton: &newton,
        verbose: progress == Progress::Iterations,
        report_cutbacks: progress != Progress::Quiet,
    };
    let abort_after = options.abort_after_step;
    let outcome = path.run(&mut problem, &mut solver, &mut u, |step, u, problem, solver| {
        let record = write_step(&config, problem, step, u, &mut results)?;
        if let Some(report) = solver.hierarchy_report() {
            summary.set_preconditioner(serde_json::to_value(report)?);
        }
        if progress != Progress::Quiet {
            // Progress is best effort: a closed standard error must not end the run.
            let _ = writeln!(
                std::io::stderr().lock(),
                "step {:>3}  load {:.4}  newton {:>2}  linear {:>5}  |r| {:.3e}  energy {:.6e}  max |u| {:.4e}  ({:.2} s{})",
                step.index,
                step.load_factor,
                record.newton_iterations,
                record.linear_iterations.iter().sum::<usize>(),
                step.residual_norm,
                record.strain_energy,
                record.max_displacement,
                step.wall_s,
                match step.cutbacks {
                    0 => String::new(),
                    n => format!(", after {n} cut back attempts"),
                }
            );
        }
        if progress != Progress::Quiet {
            if let Some(sets) = record.reactions.as_object() {
                for (set, total) in sets {
                    let v = |key: &str| -> Vec<String> {
                        total[key]
                            .as_array()
                            .map(|a| a.iter().map(|x| format!("{:.4e}", x.as_f64().unwrap_or(f64::NAN))).collect())
                            .unwrap_or_default()
                    };
                    let _ = writeln!(
                        std::io::stderr().lock(),
                        "           reaction on {set}: force [{}]  moment [{}]",
                        v("force").join(", "),
                        v("moment").join(", ")
                    );
                }
            }
        }
        summary.record_step(record, started.elapsed().as_secs_f64())?;
        if abort_after == Some(step.index) {
            std::process::abort();
        }
        Ok(())
    });
    // Converged steps: 1, 2, ... after the undeformed step 0.
    let steps = results.last_step().unwrap_or(0);
    let wall = started.elapsed().as_secs_f64();
    match outcome {
        Ok(()) => summary
            .finish(RunStatus::Completed, wall)
            .context("writing the final summary")?,
        Err(e) => {
            // The first error is the one reported; the summary records it if it can.
            let first = format!("{e:#}");
            let mut e = e.context(format!(
                "{steps} converged steps are in {}",
                results.h5_path().display()
            ));
            if let Err(summary_error) = summary.finish(RunStatus::Failed { message: first }, wall) {
                e = anyhow::anyhow!(
                    "{e:#}\n(the summary could not record the failure: {summary_error})"
                );
            }
            return Err(e);
        }
    }
    Ok(RunOutcome {
        h5: results.h5_path().to_owned(),
        xdmf: results.xdmf_path().to_owned(),
        summary: summary.path().to_owned(),
        steps,
    })
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
            anyhow::anyhow!("-o {}: {e}", dir.display())
        } else {
            anyhow::Error::new(config.error_at(key, e.to_string()))
        }
    })
}

/// The results writer with the problem's mesh.
fn create_results(
    config: &Config,
    problem: &Problem,
    dir: &Path,
    name: &str,
    faults: &Faults,
) -> Result<ResultsWriter> {
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
    let material = material_of_cells(config, &problem.mesh)?;
    let mesh = MeshData {
        nodes_per_cell: problem.mesh.nodes_per_cell(),
        coordinates: &problem.mesh.coords,
        connectivity: &connectivity,
        material: Some(&material),
        node_sets: &node_sets,
        cell_sets: &cell_sets,
        face_sets: &face_sets,
    };
    let mut results = ResultsWriter::create(dir, name, &mesh, faults)?;
    if config.output.vtu {
        results.enable_vtu(dir, name, &mesh)?;
    }
    Ok(results)
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
        constrained_dofs: problem.discrete.constraints.n_constrained(),
    }
}

/// Post-processes the state `u` (with `reactions`) and writes it as step `index`; returns the
/// total strain energy.
fn write_fields(
    config: &Config,
    problem: &mut Problem,
    index: usize,
    load_factor: f64,
    u: &Vector,
    reactions: &Vector,
    results: &mut ResultsWriter,
) -> Result<f64> {
    let assembler = &problem.discrete.assembler;
    let kernel = assembler.kernel();
    let cells = assembler.map_cells(u, |_, x, ue, material| kernel.cell_fields(x, ue, material))?;
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
    let nodal = nodal_average(&problem.mesh, &cauchy);
    let nodal_vm: Vec<f64> = nodal.iter().map(von_mises_of).collect();
    let (displacement, _) = u.host()?.as_chunks::<3>();
    let (reaction, _) = reactions.host()?.as_chunks::<3>();
    let wants = |f| config.output.wants(f);
    results.write_step(&StepData {
        step: index,
        load_factor,
        displacement: wants(OutputField::Displacement).then_some(displacement),
        reaction: wants(OutputField::Reaction).then_some(reaction),
        cauchy_stress: wants(OutputField::CauchyStress).then_some(CellTensor::Full(&cauchy)),
        von_mises: wants(OutputField::VonMises).then_some(&von_mises),
        jacobian: wants(OutputField::Jacobian).then_some(&jacobian),
        energy_density: wants(OutputField::EnergyDensity).then_some(&energy_density),
        nodal_cauchy_stress: wants(OutputField::NodalCauchyStress).then_some(&nodal),
        nodal_von_mises: wants(OutputField::NodalVonMises).then_some(&nodal_vm),
    })?;
    Ok(strain_energy)
}

/// Each node's mean of the values of the cells around it.
pub fn nodal_average(mesh: &HexMesh, per_cell: &[[f64; 9]]) -> Vec<[f64; 9]> {
    let mut sum = vec![[0.0; 9]; mesh.n_nodes()];
    let mut count = vec![0u32; mesh.n_nodes()];
    for (c, value) in per_cell.iter().enumerate() {
        for &n in mesh.cell_nodes(c) {
            for (s, v) in sum[n].iter_mut().zip(value) {
                *s += v;
            }
            count[n] += 1;
        }
    }
    for (s, &k) in sum.iter_mut().zip(&count) {
        if k > 0 {
            s.iter_mut().for_each(|v| *v /= f64::from(k));
        }
    }
    sum
}

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

/// Post-processes a converged step and writes it; returns its summary record.
fn write_step(
    config: &Config,
    problem: &mut Problem,
    step: &ConvergedStep,
    u: &Vector,
    results: &mut ResultsWriter,
) -> Result<StepRecord> {
    let strain_energy = write_fields(
        config,
        problem,
        step.index,
        step.load_factor,
        u,
        &step.reactions,
        results,
    )?;
    let (displacement, _) = u.host()?.as_chunks::<3>();
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
        converged_by: serde_json::to_value(step.converged_by)?
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        failed_attempts: serde_json::to_value(&step.failed_attempts)?,
        reactions: serde_json::to_value(reaction_totals(config, problem, u, &step.reactions)?)?,
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
    problem: &Problem,
    u: &Vector,
    reactions: &Vector,
) -> Result<std::collections::BTreeMap<String, ReactionTotal>> {
    let b = &config.boundary;
    let mut components = std::collections::BTreeMap::<&String, [bool; 3]>::new();
    for d in &b.dirichlet {
        let c = components.entry(&d.set).or_default();
        for (i, v) in d.components().iter().enumerate() {
            c[i] |= v.is_some();
        }
    }
    for t in &b.twist {
        components.insert(&t.set, [true; 3]);
    }
    let (r, _) = reactions.host()?.as_chunks::<3>();
    let (u, _) = u.host()?.as_chunks::<3>();
    let mut totals = std::collections::BTreeMap::new();
    for (set, mask) in components {
        let mut total = ReactionTotal {
            force: [0.0; 3],
            moment: [0.0; 3],
        };
        for node in problem.mesh.set_nodes(set)? {
            let x = problem.mesh.coords[node];
            let x = [x[0] + u[node][0], x[1] + u[node][1], x[2] + u[node][2]];
            let f: [f64; 3] = std::array::from_fn(|d| if mask[d] { r[node][d] } else { 0.0 });
            for (t, fd) in total.force.iter_mut().zip(f) {
                *t += fd;
            }
            total.moment[0] += x[1] * f[2] - x[2] * f[1];
            total.moment[1] += x[2] * f[0] - x[0] * f[2];
            total.moment[2] += x[0] * f[1] - x[1] * f[0];
        }
        totals.insert(set.clone(), total);
    }
    Ok(totals)
}

/// The problem in one line: unknowns, cells, nodes.
fn problem_text(problem: &Problem) -> String {
    format!(
        "{} unknowns ({} constrained), {} {} cells, {} nodes",
        problem.n_dofs(),
        problem.discrete.constraints.n_constrained(),
        problem.mesh.n_cells(),
        match problem.mesh.kind {
            CellKind::Hex8 => "Q1",
            CellKind::Hex27 => "Q2",
        },
        problem.mesh.n_nodes()
    )
}

/// The lines printed at the start of a run: problem size, device and threads, solvers.
fn header(
    config: &Config,
    problem: &Problem,
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
    format!(
        "hexfem {}: {size}
  device       host CPU, {} threads
  linear solver {solver}
  newton       line search {line_search}, forcing {}, rtol {:.1e}, at most {} iterations
  loading      {} steps
",
        env!("CARGO_PKG_VERSION"),
        rayon::current_num_threads(),
        newton.forcing.name(),
        newton.rtol,
        newton.max_iterations,
        config.loading.steps,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
