//! `hexfem bench ...`: benchmarks that print a table, or one JSON object with `--json`.
//! Performance is measured here, never asserted in tests.

pub mod assembly;
pub mod gamg;

/// The better of `repeats` timed runs of `f` after one warm-up run, in seconds.
pub(crate) fn best_of(repeats: usize, mut f: impl FnMut() -> anyhow::Result<f64>) -> anyhow::Result<f64> {
    f()?;
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        best = best.min(f()?);
    }
    Ok(best)
}

/// Resident-set high-water mark of this process in MiB (Linux `VmHWM`), if readable.
pub(crate) fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
