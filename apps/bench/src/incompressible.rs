//! `hexfem bench incompressible`: the AMG's CG iterations as Poisson's ratio nears 1/2 (issue
//! 25, item 5), on an ex56-like cube (unit cube clamped at z = 0, shear and compression traction
//! on z = 1) and Cook's membrane (the tapered panel in plane strain, shear on x = 48), each with
//! Q1 cells in the displacement and the projected formulation and Q2 cells in both (on the same
//! nodes: half the cells per direction), for AMG variants given as `linear_solver.amg` overrides.
//!
//! Every case is a whole `hexfem run` of the linear material (one Newton iteration) with
//! `cg_amg` to `rtol` 1e-8 (`newton.forcing: fixed`) on the CPU: the figure is the CG
//! iterations of that solve, whatever the set-up. PyAMG's smoothed aggregation on the same cube
//! (Q1 displacement): `scripts/incompressible_pyamg.py`.

use std::fmt;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use sim::RunOptions;

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
}

/// The AMG variants `--variants all` runs: the defaults, then one knob changed at a time.
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
    pub wall_s: f64,
}

/// Every case, in sweep order.
#[derive(Clone, Debug, Serialize)]
pub struct IncompressibleBenchResult {
    pub cells: usize,
    pub threads: usize,
    pub cases: Vec<Case>,
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
    let result = sweep(bench, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn sweep(bench: &IncompressibleBench, dir: &std::path::Path) -> Result<IncompressibleBenchResult> {
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
            for (variant, amg) in &bench.variants {
                for nu in POISSON_RATIOS {
                    let mut overrides = vec![
                        format!("materials[0].poisson_ratio={nu}"),
                        format!("formulation={formulation}"),
                        "device=cpu".to_string(),
                        "linear_solver.method=cg_amg".to_string(),
                        "linear_solver.rtol=1e-8".to_string(),
                        "newton.forcing=fixed".to_string(),
                        "output.fields=[displacement]".to_string(),
                    ];
                    overrides.extend(amg.iter().map(|o| format!("linear_solver.amg.{o}")));
                    let started = std::time::Instant::now();
                    let options = RunOptions::new(&input)
                        .with_overrides(overrides.iter().cloned())
                        .with_output_dir(dir.to_path_buf())
                        .with_overwrite(true);
                    let outcome = sim::run(&comm::SelfComm::shared(), &options, &sim::Quiet)
                        .with_context(|| {
                            format!("{problem} Q{order} {formulation} {overrides:?}")
                        })?;
                    let summary = io::Summary::read(&outcome.summary)?;
                    cases.push(Case {
                        problem,
                        element: format!("q{order}_{formulation}"),
                        variant: variant.clone(),
                        poisson_ratio: nu,
                        unknowns: summary.mesh.dofs,
                        newton_iterations: outcome.figures.newton_iterations,
                        cg_iterations: outcome.figures.linear_iterations,
                        wall_s: started.elapsed().as_secs_f64(),
                    });
                }
            }
        }
    }
    Ok(IncompressibleBenchResult {
        cells: n,
        threads: rayon::current_num_threads(),
        cases,
    })
}

impl fmt::Display for IncompressibleBenchResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "CG + AMG iterations to rtol 1e-8 (linear material, one Newton iteration; {} Q1 cells per direction, Q2 half; {} threads)",
            self.cells, self.threads
        )?;
        write!(
            f,
            "{:<6} {:<17} {:<24} {:>8}",
            "", "element", "AMG variant", "unknowns"
        )?;
        for nu in POISSON_RATIOS {
            write!(f, " {:>8}", format!("nu {nu}"))?;
        }
        writeln!(f)?;
        for row in self.cases.chunks(POISSON_RATIOS.len()) {
            let first = &row[0];
            write!(
                f,
                "{:<6} {:<17} {:<24} {:>8}",
                first.problem, first.element, first.variant, first.unknowns
            )?;
            for case in row {
                write!(f, " {:>8}", case.cg_iterations)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
