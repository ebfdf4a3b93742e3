//! `hexfem bench incompressible`: the AMG's CG iterations as Poisson's ratio nears 1/2 (issue
//! 25, item 5), on an ex56-like cube (unit cube clamped at z = 0, shear and compression traction
//! on z = 1) and Cook's membrane (the tapered panel in plane strain, shear on x = 48), each with
//! Q1 cells in the displacement and the projected formulation and Q2 cells in both (on the same
//! nodes: half the cells per direction), for AMG variants given as `linear_solver.amg` overrides.
//!
//! Every case is a whole `hexfem run` of the linear material (one Newton iteration) with
//! `cg_amg` to `rtol` 1e-8 (`newton.forcing: fixed`) on the CPU: the figure is the CG
//! iterations of that solve, whatever the set-up.
//!
//! The peers run on the same matrices: each case's linear system (of the first variant) is
//! exported as hexfem's solver sees it and solved by PyAMG's smoothed aggregation and PETSc's
//! GAMG (and hypre's BoomerAMG where PETSc has it) to the same tolerance from the same initial
//! guess (`incompressible_peers.rs`); their rows stand beside ours in the table. A peer that
//! cannot run is skipped with a note. PyAMG alone on its own assembly of the cube (Q1
//! displacement, independent of hexfem's code): `scripts/incompressible_pyamg.py`.

use std::fmt;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use sim::RunOptions;

use crate::incompressible_peers::{
    self as peers, ExportedSystem, Manifest, PeerOutput, SystemCapture,
};

/// Poisson's ratios of the sweep.
pub const POISSON_RATIOS: [f64; 5] = [0.3, 0.45, 0.49, 0.499, 0.4999];

/// The benchmark's parameters.
#[derive(Clone, Debug)]
pub struct IncompressibleBench {
    /// Q1 cells per direction of the cube (Q2: half as many); Cook's membrane has this many
    /// Q1 cells per side of the panel, one through the thickness.
    pub cells: usize,
    /// AMG variants: a name and `linear_solver.amg` overrides (`key=value`).
    pub variants: Vec<(String, Vec<String>)>,
    /// Where the systems are exported and kept (`None`: a temporary directory, where peers run).
    pub export: Option<PathBuf>,
    /// Whether the peer scripts run on the exported systems.
    pub peers: bool,
}

/// The relative tolerance of every solve (ours and the peers').
pub const RTOL: f64 = 1e-8;

/// The AMG variants `--variants all` runs: the defaults, then one knob changed at a time, then
/// the two that cut iterations most together.
pub fn all_variants() -> Vec<(String, Vec<String>)> {
    let v = |name: &str, overrides: &[&str]| {
        (
            name.to_string(),
            overrides.iter().map(|s| s.to_string()).collect(),
        )
    };
    vec![
        v("default", &[]),
        v("chebyshev_degree=4", &["chebyshev_degree=4"]),
        v("jacobi", &["smoother=jacobi"]),
        v("strength_threshold=0.05", &["strength_threshold=0.05"]),
        v("mis2_levels=0", &["mis2_levels=0"]),
        v("unsmoothed", &["smooth_prolongator=false"]),
        // the two knobs that cut iterations, together (opt-in for nearly incompressible solids)
        v(
            "chebyshev_degree=4,mis2_levels=0",
            &["chebyshev_degree=4", "mis2_levels=0"],
        ),
    ]
}

/// One problem, formulation, variant and Poisson's ratio.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub problem: &'static str,
    /// `q1_displacement`, `q1_projected`, `q2_displacement`, `q2_projected`.
    pub element: String,
    pub variant: String,
    pub poisson_ratio: f64,
    pub unknowns: usize,
    pub newton_iterations: usize,
    /// CG iterations of all Newton iterations (one for the linear material).
    pub cg_iterations: usize,
    /// The linear solves' AMG set-up and CG seconds.
    pub setup_s: f64,
    pub solve_s: f64,
    pub wall_s: f64,
}

/// Every case, in sweep order.
#[derive(Clone, Debug, Serialize)]
pub struct IncompressibleBenchResult {
    pub cells: usize,
    pub threads: usize,
    pub cases: Vec<Case>,
    /// What each peer that ran printed: its solvers' options and results by system.
    pub peers: Vec<PeerOutput>,
    /// Why a peer did not run, or that peers were not asked for.
    pub peer_notes: Vec<String>,
}

/// The input text of a problem with `n` cells of `order` per direction.
type InputText = fn(usize, usize) -> String;

/// Cube of `n` cells of `order` per direction: clamped at z = 0, traction on z = 1.
fn cube(n: usize, order: usize) -> String {
    format!(
        "mesh:
  box: {{ cells: [{n}, {n}, {n}], order: {order} }}
materials:
  - {{ model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }}
boundary:
  dirichlet: [{{ set: zmin, x: 0.0, y: 0.0, z: 0.0 }}]
  traction: [{{ set: zmax, value: [0.01, 0.0, -0.01] }}]
"
    )
}

/// Cook's membrane of `n x n x 1` cells of `order` (plane strain).
fn cook(n: usize, order: usize) -> String {
    format!(
        "mesh:
  box:
    cells: [{n}, {n}, 1]
    order: {order}
    corners: [[0, 0, 0], [48, 44, 0], [0, 44, 0], [48, 60, 0],
              [0, 0, 1], [48, 44, 1], [0, 44, 1], [48, 60, 1]]
materials:
  - {{ model: linear, young_modulus: 250.0, poisson_ratio: 0.3 }}
boundary:
  dirichlet:
    - {{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }}
    - {{ set: zmin, z: 0.0 }}
    - {{ set: zmax, z: 0.0 }}
  traction: [{{ set: xmax, value: [0.0, 6.25, 0.0] }}]
"
    )
}

/// Runs the sweep.
pub fn run_bench(bench: &IncompressibleBench) -> Result<IncompressibleBenchResult> {
    let dir = std::env::temp_dir().join(format!(
        "hexfem-bench-incompressible-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let export = match (&bench.export, bench.peers) {
        (Some(export), _) => Some(export.clone()),
        (None, true) => Some(dir.join("systems")),
        (None, false) => None,
    };
    let result = sweep(bench, &dir, export.as_deref()).map(|mut result| {
        match (&export, bench.peers) {
            (Some(export), true) => {
                (result.peers, result.peer_notes) = peers::run_peers(export);
            }
            _ => result
                .peer_notes
                .push("peers not run (--no-peers)".to_string()),
        }
        result
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The name of a case's system: the key of the peers' results.
fn system_name(problem: &str, element: &str, nu: f64) -> String {
    format!("{problem}_{element}_nu{nu}")
}

fn sweep(
    bench: &IncompressibleBench,
    dir: &std::path::Path,
    export: Option<&std::path::Path>,
) -> Result<IncompressibleBenchResult> {
    let mut systems = Vec::new();
    let n = bench.cells.max(2) & !1;
    let mut cases = Vec::new();
    let problems: [(&'static str, InputText); 2] = [("cube", cube), ("cook", cook)];
    for (problem, text) in problems {
        for (order, formulation) in [
            (1, "displacement"),
            (1, "projected"),
            (2, "displacement"),
            (2, "projected"),
        ] {
            let input: PathBuf = dir.join(format!("{problem}_q{order}.yaml"));
            std::fs::write(&input, text(if order == 1 { n } else { n / 2 }, order))?;
            for (v, (variant, amg)) in bench.variants.iter().enumerate() {
                for nu in POISSON_RATIOS {
                    let element = format!("q{order}_{formulation}");
                    let name = system_name(problem, &element, nu);
                    // the systems do not depend on the AMG variant: the first one's are exported
                    let case_export = export.filter(|_| v == 0).map(|e| e.join(&name));
                    let mut overrides = vec![
                        format!("materials[0].poisson_ratio={nu}"),
                        format!("formulation={formulation}"),
                        "device=cpu".to_string(),
                        "linear_solver.method=cg_amg".to_string(),
                        format!("linear_solver.rtol={RTOL:e}"),
                        "newton.forcing=fixed".to_string(),
                        "output.fields=[displacement]".to_string(),
                    ];
                    overrides.extend(amg.iter().map(|o| format!("linear_solver.amg.{o}")));
                    let started = std::time::Instant::now();
                    let options = RunOptions::new(&input)
                        .with_overrides(overrides.iter().cloned())
                        .with_output_dir(dir.to_path_buf())
                        .with_overwrite(true);
                    let capture = SystemCapture::new(case_export);
                    let context = || format!("{problem} Q{order} {formulation} {overrides:?}");
                    let outcome = sim::run(&comm::SelfComm::shared(), &options, &capture)
                        .with_context(context)?;
                    let (setup_s, solve_s) = capture.finish().with_context(context)?;
                    let summary = io::Summary::read(&outcome.summary)?;
                    let case = Case {
                        problem,
                        element,
                        variant: variant.clone(),
                        poisson_ratio: nu,
                        unknowns: summary.mesh.dofs,
                        newton_iterations: outcome.figures.newton_iterations,
                        cg_iterations: outcome.figures.linear_iterations,
                        setup_s,
                        solve_s,
                        wall_s: started.elapsed().as_secs_f64(),
                    };
                    if export.is_some() && v == 0 {
                        systems.push(ExportedSystem {
                            dir: name.clone(),
                            name,
                            problem: problem.to_string(),
                            element: case.element.clone(),
                            poisson_ratio: nu,
                            unknowns: case.unknowns,
                            cg_iterations: case.cg_iterations,
                        });
                    }
                    cases.push(case);
                }
            }
        }
    }
    if let Some(export) = export {
        let manifest = Manifest {
            rtol: RTOL,
            block_size: 3,
            systems,
        };
        let path = export.join(peers::MANIFEST);
        std::fs::write(&path, serde_json::to_string_pretty(&manifest)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(IncompressibleBenchResult {
        cells: n,
        threads: rayon::current_num_threads(),
        cases,
        peers: Vec::new(),
        peer_notes: Vec::new(),
    })
}

impl IncompressibleBenchResult {
    /// The peers' rows of a problem and element: solver name and the results at each ratio
    /// (`None` where a system has none), in the peers' order.
    fn peer_rows(
        &self,
        problem: &str,
        element: &str,
    ) -> Vec<(String, Vec<Option<&peers::PeerResult>>)> {
        let mut rows = Vec::new();
        for output in &self.peers {
            for solver in &output.solvers {
                let results: Vec<_> = POISSON_RATIOS
                    .iter()
                    .map(|&nu| {
                        let name = system_name(problem, element, nu);
                        output
                            .results
                            .iter()
                            .find(|r| r.system == name && r.solver == solver.name)
                    })
                    .collect();
                if results.iter().any(Option::is_some) {
                    rows.push((solver.name.clone(), results));
                }
            }
        }
        rows
    }
}

impl fmt::Display for IncompressibleBenchResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "CG + AMG iterations to rtol {RTOL:e} (linear material, one Newton iteration; {} Q1 cells per direction, Q2 half; {} threads); peers on the same systems (* not converged)",
            self.cells, self.threads
        )?;
        let header = |f: &mut fmt::Formatter<'_>, what: &str| -> fmt::Result {
            write!(
                f,
                "{:<6} {:<17} {:<24} {:>8}",
                "", "element", what, "unknowns"
            )?;
            for nu in POISSON_RATIOS {
                write!(f, " {:>13}", format!("nu {nu}"))?;
            }
            writeln!(f)
        };
        header(f, "AMG variant / peer")?;
        let rows: Vec<&[Case]> = self.cases.chunks(POISSON_RATIOS.len()).collect();
        for (i, row) in rows.iter().enumerate() {
            let first = &row[0];
            write!(
                f,
                "{:<6} {:<17} {:<24} {:>8}",
                first.problem, first.element, first.variant, first.unknowns
            )?;
            for case in row.iter() {
                write!(f, " {:>13}", case.cg_iterations)?;
            }
            writeln!(f)?;
            let last_of_element = rows.get(i + 1).is_none_or(|next| {
                next[0].problem != first.problem || next[0].element != first.element
            });
            if last_of_element {
                for (solver, results) in self.peer_rows(first.problem, &first.element) {
                    write!(f, "{:<6} {:<17} {:<24} {:>8}", "", "", solver, "")?;
                    for r in results {
                        let cell = r.map_or("-".to_string(), |r| {
                            format!("{}{}", r.iterations, if r.converged { "" } else { "*" })
                        });
                        write!(f, " {cell:>13}")?;
                    }
                    writeln!(f)?;
                }
            }
        }
        if !self.peers.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "set-up + solve seconds (ours: the first variant, {} threads; peers: one process)",
                self.threads
            )?;
            header(f, "solver")?;
            let mut firsts = rows.iter().map(|r| &r[0]).collect::<Vec<_>>();
            firsts.dedup_by(|a, b| a.problem == b.problem && a.element == b.element);
            let seconds = |setup: f64, solve: f64| format!("{setup:.3}+{solve:.3}");
            for first in firsts {
                let ours = rows
                    .iter()
                    .find(|r| r[0].problem == first.problem && r[0].element == first.element);
                if let Some(ours) = ours {
                    write!(
                        f,
                        "{:<6} {:<17} {:<24} {:>8}",
                        first.problem, first.element, "hexfem", first.unknowns
                    )?;
                    for case in ours.iter() {
                        write!(f, " {:>13}", seconds(case.setup_s, case.solve_s))?;
                    }
                    writeln!(f)?;
                }
                for (solver, results) in self.peer_rows(first.problem, &first.element) {
                    write!(f, "{:<6} {:<17} {:<24} {:>8}", "", "", solver, "")?;
                    for r in results {
                        let cell = r.map_or("-".to_string(), |r| seconds(r.setup_s, r.solve_s));
                        write!(f, " {cell:>13}")?;
                    }
                    writeln!(f)?;
                }
            }
            writeln!(f)?;
            for output in &self.peers {
                writeln!(
                    f,
                    "{} {} ({}):",
                    output.peer, output.version, output.interpreter
                )?;
                for solver in &output.solvers {
                    writeln!(f, "  {}: {}", solver.name, solver.options)?;
                }
            }
        }
        for note in &self.peer_notes {
            writeln!(f, "{note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::petsc_binary::{read_matrix, read_vector};
    use linalg::dense::DenseFactor;
    use linalg::{Bsr, Vector};

    /// The exported system of a nearly incompressible Q2 cube (projected formulation) is the one
    /// the run solved: read back from PETSc's format, solved directly, it gives the displacement
    /// the run wrote; it is symmetric (to round-off), its constrained rows and columns are zero but a positive diagonal, and
    /// its coordinates are the mesh's.
    #[test]
    fn an_exported_system_is_the_one_the_run_solved() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("hexfem-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let input = dir.join("cube.yaml");
        std::fs::write(&input, cube(2, 2))?;
        let options = RunOptions::new(&input)
            .with_overrides([
                "materials[0].poisson_ratio=0.499".to_string(),
                "formulation=projected".to_string(),
                "device=cpu".to_string(),
                "linear_solver.method=direct".to_string(),
                "output.fields=[displacement]".to_string(),
            ])
            .with_output_dir(dir.clone())
            .with_overwrite(true);
        let capture = SystemCapture::new(Some(dir.join("system")));
        let outcome = sim::run(&comm::SelfComm::shared(), &options, &capture)?;
        capture.finish()?;
        let results = io::ResultsReader::open(&outcome.h5)?;
        let (_, u) = results.read_f64(&format!("steps/{:06}/displacement", outcome.steps))?;

        let a = read_matrix(&dir.join("system/A.petsc"))?;
        let b = read_vector(&dir.join("system/b.petsc"))?;
        let x = read_vector(&dir.join("system/coordinates.petsc"))?;
        let constrained = read_vector(&dir.join("system/constrained.petsc"))?;
        let n = a.n_rows;
        assert_eq!(
            (n, a.n_cols, b.len(), constrained.len()),
            (u.len(), n, n, n)
        );
        // 5^3 nodes of the Q2 cube on [0, 1]^3: the last node at (1, 1, 1)
        assert_eq!(x.len(), n);
        assert_eq!(&x[n - 3..], &[1.0, 1.0, 1.0]);
        let mut dense = vec![0.0; n * n];
        for i in 0..n {
            for s in a.row_ptr[i]..a.row_ptr[i + 1] {
                dense[i * n + a.col_idx[s]] = a.values[s];
            }
        }
        // symmetric to round-off (the element loop sums in its own order)
        let largest = dense.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        for i in 0..n {
            for j in 0..n {
                let (aij, aji) = (dense[i * n + j], dense[j * n + i]);
                assert!(
                    (aij - aji).abs() <= 1e-14 * largest,
                    "({i}, {j}): {aij} {aji}"
                );
            }
            if constrained[i] == 1.0 {
                assert_eq!(x[i - i % 3 + 2], 0.0, "constrained at z = 0 only");
                assert_eq!(b[i], 0.0);
                for j in 0..n {
                    // the eliminated row keeps a fraction of the tangent's diagonal, zero elsewhere
                    let (aij, kept) = (dense[i * n + j], i == j);
                    assert!(
                        if kept { aij > 0.0 } else { aij == 0.0 },
                        "({i}, {j}): {aij}"
                    );
                }
            }
        }
        assert_eq!(constrained.iter().sum::<f64>(), 3.0 * 25.0);
        let factor = DenseFactor::factor(&Bsr::from_dense(&dense, n, n, 3, 3)?)?;
        let mut solved = Vector::from_vec(vec![0.0; n]);
        factor.solve(&Vector::from_vec(b), &mut solved)?;
        let solved = solved.host()?;
        let scale = u.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        assert!(scale > 1e-4, "{scale}");
        for (s, u) in solved.iter().zip(&u) {
            assert!((s - u).abs() <= 1e-9 * scale, "{s} vs {u}");
        }
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
