//! `hexfem bench ...`: benchmarks that print a table, or one JSON object with `--json`.
//! Performance is measured here, never asserted in tests.

pub mod assembly;
pub mod gamg;
pub mod output;

/// The better of `repeats` timed runs of `f` after one warm-up run, in seconds.
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
