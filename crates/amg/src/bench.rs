//! The `-two_solves` benchmark sequence on a given operator (the caller builds the problem):
//! cold setup, CG solve, scale the operator, hot update, CG solve again.

use crate::{
    cg, AmgError, AmgParams, CgOutcome, CgParams, Hierarchy, HierarchyReport, NearNullSpace,
    UpdateReport,
};
use linalg::{Bsr, Vector};
use serde::Serialize;
use std::time::Instant;

/// Timings and outcomes of [`two_solves`].
#[derive(Debug, Clone, Serialize)]
pub struct TwoSolvesReport {
    /// Hierarchy after the cold setup (levels, complexities, stage timings).
    pub hierarchy: HierarchyReport,
    /// Wall-clock seconds of `Hierarchy::setup`.
    pub setup_cold_s: f64,
    /// First CG solve.
    pub solve: CgOutcome,
    /// Seconds of the first solve.
    pub solve_s: f64,
    /// What the hot update did (stage timings included).
    pub update: UpdateReport,
    /// Wall-clock seconds of `Hierarchy::update`.
    pub setup_hot_s: f64,
    /// Second CG solve (operator scaled).
    pub solve_hot: CgOutcome,
    /// Seconds of the second solve.
    pub solve_hot_s: f64,
    /// Seconds of one SpMV with the fine operator (mean of 10).
    pub spmv_s: f64,
    /// Rayon threads used.
    pub threads: usize,
}

/// Runs setup, solve, `a.scale(scale)`, update (with `params.reuse`), solve. `a` is left scaled.
/// The right-hand side is `b` for both solves (from a zero initial guess).
pub fn two_solves(
    a: &mut Bsr,
    b: &Vector,
    near_null: &NearNullSpace,
    params: &AmgParams,
    cg_params: &CgParams,
    scale: f64,
) -> Result<TwoSolvesReport, AmgError> {
    let t = Instant::now();
    let mut h = Hierarchy::setup(a, near_null, params)?;
    let setup_cold_s = t.elapsed().as_secs_f64();
    let hierarchy = h.report().clone();
    let mut x = Vector::zeros(a.n_rows());
    let t = Instant::now();
    let solve = cg(a, b, &mut x, &h, cg_params)?;
    let solve_s = t.elapsed().as_secs_f64();
    a.scale(scale);
    let t = Instant::now();
    let update = h.update(a)?;
    let setup_hot_s = t.elapsed().as_secs_f64();
    x.fill(0.0);
    let t = Instant::now();
    let solve_hot = cg(a, b, &mut x, &h, cg_params)?;
    let solve_hot_s = t.elapsed().as_secs_f64();
    let mut y = Vector::zeros(a.n_rows());
    let t = Instant::now();
    for _ in 0..10 {
        a.spmv(&x, &mut y);
    }
    let spmv_s = t.elapsed().as_secs_f64() / 10.0;
    Ok(TwoSolvesReport {
        hierarchy,
        setup_cold_s,
        solve,
        solve_s,
        update,
        setup_hot_s,
        solve_hot,
        solve_hot_s,
        spmv_s,
        threads: rayon::current_num_threads(),
    })
}
