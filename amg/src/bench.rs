//! The `-two_solves` benchmark sequence on a given operator (the caller builds the problem):
//! cold setup, CG solve, scale the operator, hot update, CG solve again, then a timed SpMV.

use crate::{
    cg, AmgError, AmgParams, CgOutcome, CgParams, Hierarchy, HierarchyReport, NearNullSpace,
    Storage, UpdateReport,
};
use linalg::{Bsr, Vector};
use serde::Serialize;
use std::time::Instant;

/// Fine-level SpMVs timed for [`TwoSolvesReport::spmv_s`] (the median is reported).
const SPMV_REPEATS: usize = 11;

/// Timings and outcomes of [`two_solves`].
#[derive(Debug, Clone, Serialize)]
pub struct TwoSolvesReport {
    /// Storage of the hierarchy (`params.storage`).
    pub storage: Storage,
    /// Hierarchy after the cold setup (levels, complexities, stage timings).
    pub hierarchy: HierarchyReport,
    /// Wall-clock seconds of the cold setup.
    pub setup_cold_s: f64,
    /// First CG solve.
    pub solve: CgOutcome,
    /// Seconds of the first solve.
    pub solve_s: f64,
    /// What the hot update did (stage timings included).
    pub update: UpdateReport,
    /// Wall-clock seconds of `Hierarchy::update`.
    pub setup_hot_s: f64,
    /// Seconds of the numeric Galerkin products of the hot update, summed over levels.
    pub galerkin_numeric_s: f64,
    /// Second CG solve (operator scaled).
    pub solve_hot: CgOutcome,
    /// Seconds of the second solve.
    pub solve_hot_s: f64,
    /// Seconds of one SpMV with the fine operator in the hierarchy's storage (median of 11).
    pub spmv_s: f64,
    /// Rayon threads used.
    pub threads: usize,
}

/// Runs setup, solve, `a.scale(scale)`, update (with `params.reuse`), solve. `a` is left scaled.
/// The right-hand side is `b` for both solves (from a zero initial guess).
///
/// The hierarchy keeps no copy of `a` ([`Hierarchy::setup_external`]); with scalar storage CG and
/// the timed SpMV use the hierarchy's 1x1-block expansion of `a`, so that every product of the
/// solve runs on scalar storage.
pub fn two_solves(
    a: &mut Bsr,
    b: &Vector,
    near_null: &NearNullSpace,
    params: &AmgParams,
    cg_params: &CgParams,
    scale: f64,
) -> Result<TwoSolvesReport, AmgError> {
    let t = Instant::now();
    let mut h = Hierarchy::setup_external(a, near_null, params)?;
    let setup_cold_s = t.elapsed().as_secs_f64();
    let hierarchy = h.report().clone();
    let mut x = Vector::zeros(a.n_rows());
    let (solve, solve_s) = timed_solve(&h, a, b, &mut x, cg_params)?;
    a.scale(scale)?;
    let t = Instant::now();
    let update = h.update(a)?;
    let setup_hot_s = t.elapsed().as_secs_f64();
    x.fill(0.0)?;
    let (solve_hot, solve_hot_s) = timed_solve(&h, a, b, &mut x, cg_params)?;
    let spmv_s = median_spmv_s(h.operator(0).unwrap_or(a), &x)?;
    Ok(TwoSolvesReport {
        storage: params.storage,
        hierarchy,
        setup_cold_s,
        solve,
        solve_s,
        galerkin_numeric_s: update.timings.galerkin_numeric_s,
        update,
        setup_hot_s,
        solve_hot,
        solve_hot_s,
        spmv_s,
        threads: rayon::current_num_threads(),
    })
}

/// CG on the hierarchy's fine operator (its own storage if it has one, else `a`).
fn timed_solve(
    h: &Hierarchy,
    a: &Bsr,
    b: &Vector,
    x: &mut Vector,
    cg_params: &CgParams,
) -> Result<(CgOutcome, f64), AmgError> {
    let pc = h.with_operator(a)?;
    let op = h.operator(0).unwrap_or(a);
    let t = Instant::now();
    let outcome = cg(op, b, x, &pc, cg_params)?;
    Ok((outcome, t.elapsed().as_secs_f64()))
}

/// Median seconds of `y = A x` over [`SPMV_REPEATS`] runs.
fn median_spmv_s(a: &Bsr, x: &Vector) -> Result<f64, AmgError> {
    let mut y = Vector::zeros(a.n_rows());
    let mut times: Vec<f64> = (0..SPMV_REPEATS)
        .map(|_| {
            let t = Instant::now();
            a.spmv(x, &mut y)?;
            Ok(t.elapsed().as_secs_f64())
        })
        .collect::<Result<_, AmgError>>()?;
    times.sort_by(f64::total_cmp);
    Ok(times[SPMV_REPEATS / 2])
}

/// Peak resident memory of this process in MB (`VmHWM` of `/proc/self/status`); `None` where that
/// file is unavailable (not Linux).
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_rss_grows_with_a_touched_allocation() {
        let before = peak_rss_mb().expect("Linux /proc/self/status");
        let big = vec![1u8; 64 << 20];
        let after = peak_rss_mb().unwrap();
        assert!(big.iter().map(|&b| b as usize).sum::<usize>() == 64 << 20);
        // MB, not kB or bytes: at least the 64 MB just touched, far below 64 GB.
        assert!(
            after >= before && (64.0..65536.0).contains(&after),
            "{before} -> {after}"
        );
    }
}
