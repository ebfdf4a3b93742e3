//! The ex56-like two-solve benchmark on this crate's own Q1 elasticity operator:
//! `cargo run --release -p amg --example ex56_two_solves -- 33 [--scalar]`.

#[path = "../tests/common/mod.rs"]
mod common;

use amg::{peak_rss_mb, two_solves, AmgParams, CgParams, Storage};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scalar = args.iter().any(|a| a == "--scalar");
    let m: usize = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(33);
    let params = AmgParams {
        storage: if scalar {
            Storage::Scalar
        } else {
            Storage::Blocked
        },
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let mut p = common::elasticity(m, 1e-3);
    eprintln!(
        "assembled {m}^3 nodes ({} unknowns) in {:.3} s, storage {:?}",
        p.a.n_rows(),
        t.elapsed().as_secs_f64(),
        params.storage
    );
    let report = two_solves(
        &mut p.a,
        &p.b,
        &p.near_null,
        &params,
        &CgParams::default(),
        2.0,
    )?;
    let h = &report.hierarchy;
    for (l, lev) in h.levels.iter().enumerate() {
        eprintln!(
            "level {l}: rows {:>8} bs {} block nnz {:>9} nnz/row {:>6.1} emax {:?}",
            lev.rows, lev.block_size, lev.block_nnz, lev.nnz_per_row, lev.emax
        );
    }
    eprintln!(
        "operator complexity {:.3}, grid complexity {:.3}",
        h.operator_complexity, h.grid_complexity
    );
    eprintln!("cold setup {:.3} s  {:?}", report.setup_cold_s, h.setup);
    eprintln!(
        "solve {:.3} s, {} iterations ({:?})",
        report.solve_s, report.solve.iterations, report.solve.reason
    );
    eprintln!(
        "hot setup {:.3} s  {:?}",
        report.setup_hot_s, report.update.timings
    );
    eprintln!(
        "hot solve {:.3} s, {} iterations ({:?}); spmv {:.4} s; hot galerkin numeric {:.3} s; threads {}",
        report.solve_hot_s,
        report.solve_hot.iterations,
        report.solve_hot.reason,
        report.spmv_s,
        report.galerkin_numeric_s,
        report.threads
    );
    eprintln!("peak rss {:.0} MB", peak_rss_mb().unwrap_or(f64::NAN));
    Ok(())
}
