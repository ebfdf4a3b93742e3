//! Resident memory of the AMG setup on ex56 (Q1; the tests' operator, `tests/common`), net of the
//! problem: `cargo run --release -p hexfem-amg --example setup_memory -- 66 [--reuse none|interpolation|full]`.
//!
//! Builds the problem, then resets the process's peak resident set (`VmHWM`, through
//! `/proc/self/clear_refs`) so that each phase's peak is measured from the memory held before it:
//! cold setup (`setup_external`, the caller keeps `A_0`), one CG solve, the hot update. Prints MB.

#[path = "../tests/common/mod.rs"]
mod common;

use amg::{cg, AmgParams, CgParams, Hierarchy, Reuse};
use linalg::Vector;

/// A memory figure of `/proc/self/status` in MB (`VmRSS`: resident now, `VmHWM`: peak); NaN where
/// unavailable.
fn status_mb(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| {
            l.strip_prefix(key)
                .is_some_and(|rest| rest.starts_with(':'))
        })
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Current resident set in MB.
fn rss_mb() -> f64 {
    status_mb("VmRSS")
}

/// Peak resident set in MB (since the last [`reset_peak`]).
fn peak_rss_mb() -> f64 {
    status_mb("VmHWM")
}

/// Resets `VmHWM` to the current resident set (Linux >= 4.0); false where that is unavailable.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Prints the phase's peak over the memory held at its start, and what it leaves resident.
fn phase(name: &str, start: f64) {
    let (peak, now) = (peak_rss_mb(), rss_mb());
    println!(
        "{name:<12} start {start:7.1} MB  peak {peak:7.1} MB (+{:6.1})  after {now:7.1} MB (+{:6.1})",
        peak - start,
        now - start
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let m: usize = args
        .iter()
        .find(|a| !a.starts_with("--") && a.parse::<usize>().is_ok())
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(33);
    let reuse = match args.iter().position(|a| a == "--reuse") {
        Some(i) => match args.get(i + 1).map(String::as_str) {
            Some("none") => Reuse::None,
            Some("full") => Reuse::Full,
            Some("interpolation") => Reuse::Interpolation,
            other => return Err(format!("--reuse none|interpolation|full, not {other:?}").into()),
        },
        None => Reuse::Interpolation,
    };
    let params = AmgParams {
        reuse,
        ..Default::default()
    };
    let mut p = common::elasticity(m, 1e-3);
    let a_mb = (p.a.n_values() * 8 + p.a.pattern().nnz() * 4) as f64 / 1048576.0;
    println!(
        "{m}^3 nodes, {} unknowns, A_0 {a_mb:.1} MB, near-null space {:.1} MB; problem built: rss {:.1} MB, peak {:.1} MB",
        p.a.n_rows(),
        (p.near_null.values().len() * 8) as f64 / 1048576.0,
        rss_mb(),
        peak_rss_mb()
    );
    if !reset_peak() {
        return Err("cannot reset VmHWM (/proc/self/clear_refs)".into());
    }
    let start = rss_mb();
    let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &params)?;
    phase("cold setup", start);
    println!("  timings {:?}", h.report().setup);

    reset_peak();
    let start = rss_mb();
    let mut x = Vector::zeros(p.a.n_rows());
    let outcome = cg(
        &p.a,
        &p.b,
        &mut x,
        &h.with_operator(&p.a)?,
        &CgParams::default(),
    )?;
    phase("solve", start);
    println!("  {} iterations ({:?})", outcome.iterations, outcome.reason);

    p.a.scale(2.0).unwrap();
    reset_peak();
    let start = rss_mb();
    let update = h.update(&p.a)?;
    phase("update", start);
    println!(
        "  {:?}: total {:.3} s",
        update.reuse, update.timings.total_s
    );
    Ok(())
}
