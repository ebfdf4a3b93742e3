//! `hexfem bench gamg --problem ex56`: PETSc's `-two_solves` sequence on ex56 - cold AMG set-up and
//! CG solve, then (per further solve) the operator scaled, a hot set-up that reuses the
//! interpolation, and a CG solve again.

use std::time::Instant;

use amg::{cg, AmgParams, CgOutcome, CgParams, Hierarchy, HierarchyReport, Storage, UpdateReport};
use anyhow::{ensure, Result};
use linalg::Bsr;
use linalg::Vector;
use serde::Serialize;

use solve::ex56::Ex56;
use amg::peak_rss_mb;

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct GamgBench {
    /// Nodes per side.
    pub m: usize,
    pub order: usize,
    /// Total solves: the first after a cold set-up, each further one after scaling the operator by 2
    /// and a hot set-up. At least 2.
    pub solves: usize,
    /// Run the same algorithm with every operator and prolongator stored as 1x1 blocks (the
    /// coarsening itself stays blocked), to measure what the blocks buy.
    pub scalar: bool,
    pub amg: AmgParams,
}

/// What `hexfem bench gamg --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct GamgBenchResult {
    pub problem: &'static str,
    pub nodes_per_side: usize,
    pub order: usize,
    pub unknowns: usize,
    /// Operators stored as 1x1 blocks (`--scalar`).
    pub scalar: bool,
    pub levels: usize,
    pub rows_per_level: Vec<usize>,
    pub block_size_per_level: Vec<usize>,
    pub operator_complexity: f64,
    pub grid_complexity: f64,
    /// CG iterations of each solve (rtol 1e-8 on the unpreconditioned residual).
    pub iterations: Vec<usize>,
    pub converged: bool,
    pub assembly_s: f64,
    pub setup_cold_s: f64,
    /// Hot set-up of the first re-solve; `setup_hot_all_s` lists each.
    pub setup_hot_s: f64,
    pub setup_hot_all_s: Vec<f64>,
    pub solve_s: f64,
    /// Solve after the first hot set-up.
    pub solve_hot_s: f64,
    /// One SpMV with the fine operator (best of 10).
    pub spmv_s: f64,
    /// Numeric Galerkin products of the first hot set-up, all levels.
    pub galerkin_numeric_s: f64,
    pub peak_rss_mb: Option<f64>,
    pub threads: usize,
    pub hierarchy: HierarchyReport,
    pub hot_update: UpdateReport,
}

/// Runs the benchmark.
pub fn run(bench: &GamgBench) -> Result<GamgBenchResult> {
    ensure!(
        bench.solves >= 2,
        "--solves must be at least 2 (one cold, one hot)"
    );
    let start = Instant::now();
    let problem = Ex56::new(bench.m, bench.order)?;
    let Ex56 {
        mut a,
        b,
        near_null,
        ..
    } = problem;
    let assembly_s = start.elapsed().as_secs_f64();
    let cg_params = CgParams {
        rtol: 1e-8,
        ..CgParams::default()
    };
    let mut x = Vector::zeros(b.len());
    let amg_params = AmgParams {
        storage: if bench.scalar {
            Storage::Scalar
        } else {
            Storage::Blocked
        },
        ..bench.amg.clone()
    };

    let start = Instant::now();
    let mut hierarchy = Hierarchy::setup_external(&a, &near_null, &amg_params)?;
    let setup_cold_s = start.elapsed().as_secs_f64();
    let (first, solve_s) = solve(&hierarchy, &a, &b, &mut x, &cg_params)?;

    let mut iterations = vec![first.iterations];
    let mut converged = first.converged;
    let mut setup_hot_all_s = Vec::new();
    let mut solve_hot_s = 0.0;
    let mut hot_update = None;
    for solve_index in 1..bench.solves {
        a.scale(2.0);
        let start = Instant::now();
        let update = hierarchy.update(&a)?;
        setup_hot_all_s.push(start.elapsed().as_secs_f64());
        x.fill(0.0);
        let (outcome, seconds) = solve(&hierarchy, &a, &b, &mut x, &cg_params)?;
        if solve_index == 1 {
            solve_hot_s = seconds;
            hot_update = Some(update);
        }
        iterations.push(outcome.iterations);
        converged &= outcome.converged;
    }
    // the fine operator in the storage the solve used
    let fine = hierarchy.operator(0).unwrap_or(&a);
    let mut y = Vector::zeros(b.len());
    let spmv_s = super::best_of(10, || {
        let start = Instant::now();
        fine.spmv(&x, &mut y);
        Ok(start.elapsed().as_secs_f64())
    })?;
    let hot_update = hot_update.ok_or_else(|| anyhow::anyhow!("no hot update ran"))?;
    let report = hierarchy.report().clone();
    Ok(GamgBenchResult {
        problem: "ex56",
        nodes_per_side: bench.m,
        order: bench.order,
        unknowns: b.len(),
        scalar: bench.scalar,
        levels: report.levels.len(),
        rows_per_level: report.levels.iter().map(|l| l.rows).collect(),
        block_size_per_level: report.levels.iter().map(|l| l.block_size).collect(),
        operator_complexity: report.operator_complexity,
        grid_complexity: report.grid_complexity,
        iterations,
        converged,
        assembly_s,
        setup_cold_s,
        setup_hot_s: setup_hot_all_s[0],
        setup_hot_all_s,
        solve_s,
        solve_hot_s,
        spmv_s,
        galerkin_numeric_s: hot_update.timings.galerkin_numeric_s,
        peak_rss_mb: peak_rss_mb(),
        threads: rayon::current_num_threads(),
        hierarchy: report,
        hot_update,
    })
}

impl std::fmt::Display for GamgBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let storage = if self.scalar {
            "scalar storage (1x1 blocks)"
        } else {
            "blocked"
        };
        writeln!(
            f,
            "gamg benchmark: ex56, {}^3 nodes, Q{}, {} unknowns, {storage}, {} threads",
            self.nodes_per_side, self.order, self.unknowns, self.threads
        )?;
        writeln!(
            f,
            "  levels {}: rows {:?}, block sizes {:?}",
            self.levels, self.rows_per_level, self.block_size_per_level
        )?;
        writeln!(
            f,
            "  operator complexity {:.3}, grid complexity {:.3}",
            self.operator_complexity, self.grid_complexity
        )?;
        writeln!(
            f,
            "  CG iterations per solve {:?}{}",
            self.iterations,
            if self.converged {
                ""
            } else {
                "  (NOT CONVERGED)"
            }
        )?;
        writeln!(f, "  problem assembly   {:8.3} s", self.assembly_s)?;
        writeln!(f, "  cold set-up        {:8.3} s", self.setup_cold_s)?;
        writeln!(f, "  solve              {:8.3} s", self.solve_s)?;
        writeln!(
            f,
            "  hot set-up         {:8.3} s  (Galerkin numeric {:.3} s)",
            self.setup_hot_s, self.galerkin_numeric_s
        )?;
        writeln!(f, "  solve after hot    {:8.3} s", self.solve_hot_s)?;
        writeln!(f, "  fine SpMV          {:8.5} s", self.spmv_s)?;
        if let Some(mb) = self.peak_rss_mb {
            writeln!(f, "  peak resident memory {:6.0} MiB", mb)?;
        }
        Ok(())
    }
}

/// One timed CG solve preconditioned by the hierarchy's V-cycle on the operator in the hierarchy's
/// storage (its own scalar expansion, or the caller's blocked `a`).
fn solve(
    hierarchy: &Hierarchy,
    a: &Bsr,
    b: &Vector,
    x: &mut Vector,
    cg_params: &CgParams,
) -> Result<(CgOutcome, f64)> {
    let vcycle = hierarchy.with_operator(a)?;
    let operator = hierarchy.operator(0).unwrap_or(a);
    let start = Instant::now();
    let outcome = cg(operator, b, x, &vcycle, cg_params)?;
    Ok((outcome, start.elapsed().as_secs_f64()))
}
