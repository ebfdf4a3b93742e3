//! `hexfem bench ...`: benchmarks that print a table, or one JSON object with `--json`.
//! Performance is measured here, never asserted in tests. This is hexfem's one benchmark harness
//! (the AMG crate has none of its own), with one statistic:
//!
//! - a timing that is repeated (an assembly, the fine-level SpMV) is the **best of `repeats` runs
//!   after one warm-up run** ([`best_of`]): on a shared machine noise only ever adds time, so the
//!   minimum is the most reproducible figure of what the code does;
//! - a phase that changes state (AMG set-up, hot update, a CG solve) runs once in its sequence and
//!   is reported as that single wall time.

pub mod assembly;
pub mod assembly_device;
pub mod campaign;
pub mod cli;
pub mod dist_gamg;
pub mod distributed;
pub mod eigen;
pub mod galerkin_traffic;
pub mod gamg;
pub mod incompressible;
pub mod incompressible_peers;
pub mod newton;
pub mod output;
pub mod petsc_binary;
pub mod spmv;
pub mod writer;

/// The best of `repeats` timed runs of `f` (seconds, as `f` returns them) after one warm-up run.
pub(crate) fn best_of(
    repeats: usize,
    mut f: impl FnMut() -> anyhow::Result<f64>,
) -> anyhow::Result<f64> {
    f()?;
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        best = best.min(f()?);
    }
    Ok(best)
}

/// Peak resident memory of this process in MiB (`VmHWM` of `/proc/self/status`); `None` where that
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
        // MiB, not kB or bytes: at least the 64 MiB just touched, far below 64 GiB.
        assert!(
            after >= before && (64.0..65536.0).contains(&after),
            "{before} -> {after}"
        );
    }

    #[test]
    fn best_of_warms_up_then_keeps_the_minimum() {
        let times = [9.0, 3.0, 2.0, 4.0];
        let mut calls = 0;
        let best = best_of(3, || {
            calls += 1;
            Ok(times[calls - 1])
        })
        .unwrap();
        // the warm-up's 9.0 is not counted; the minimum of the timed runs is
        assert_eq!((best, calls), (2.0, 4));
    }
}
