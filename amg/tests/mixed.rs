//! Mixed precision (`precision: mixed`) against double on the ex56 Q1 operator (see `common`):
//! prolongators, coarse operators and smoother inverses stored in fp32 reach the same relative
//! tolerance with at most two more CG iterations, in a cold setup and after hot updates.

mod common;

use amg::{cg, AmgParams, CgParams, Hierarchy, Precision};
use linalg::{ops, Bsr, Vector};

fn params(precision: Precision) -> AmgParams {
    AmgParams {
        precision,
        // several levels even on the small meshes
        coarse_eq_limit: 50,
        ..Default::default()
    }
}

/// CG to rtol 1e-8 from zero; the true residual is checked independently of CG's recursion.
fn solve(a: &Bsr, b: &Vector, h: &Hierarchy) -> (usize, Vec<f64>) {
    let mut x = Vector::zeros(a.n_rows());
    let out = cg(
        a,
        b,
        &mut x,
        &h.with_operator(a).unwrap(),
        &CgParams::default(),
    )
    .unwrap();
    assert!(out.converged);
    let mut r = b.clone();
    a.spmv_add(-1.0, &x, 1.0, &mut r).unwrap();
    let rel = ops::norm2(&r).unwrap() / ops::norm2(b).unwrap();
    assert!(rel <= 1.01e-8, "true relative residual {rel}");
    (out.iterations, x.to_host_vec().unwrap())
}

fn rel_diff(x: &[f64], y: &[f64]) -> f64 {
    let d: f64 = x.iter().zip(y).map(|(a, b)| (a - b).powi(2)).sum();
    let n: f64 = y.iter().map(|b| b * b).sum();
    (d / n).sqrt()
}

/// Adds `s` times the identity to every diagonal block (a new operator of the same pattern).
fn shift_diagonal(a: &mut Bsr, s: f64) {
    let bs = a.block_rows();
    for k in a.pattern().diagonal_positions().unwrap() {
        let blk = a.host_block_mut(k).unwrap();
        for c in 0..bs {
            blk[(bs + 1) * c] += s;
        }
    }
}

fn check_stored_precisions(h: &Hierarchy, a: &Bsr) {
    let single = linalg::Precision::Single;
    assert!(h.n_levels() >= 3, "{} levels", h.n_levels());
    assert_eq!(a.precision(), linalg::Precision::Double);
    for l in 1..h.n_levels() {
        assert_eq!(h.operator(l).unwrap().precision(), single, "A_{l}");
    }
    for l in 0..h.n_levels() - 1 {
        assert_eq!(h.prolongator(l).unwrap().precision(), single, "P_{l}");
        assert_eq!(
            h.smoother(l).unwrap().pbj.inverse().precision(),
            single,
            "D^-1 of level {l}"
        );
    }
}

#[test]
fn mixed_reaches_the_rtol_within_two_more_iterations_cold_and_hot() {
    for m in [9, 13, 17] {
        let mut p = common::elasticity(m, 1e-3);
        let mut hd =
            Hierarchy::setup_external(&p.a, &p.near_null, &params(Precision::Double)).unwrap();
        let mut hm =
            Hierarchy::setup_external(&p.a, &p.near_null, &params(Precision::Mixed)).unwrap();
        assert_eq!(hd.n_levels(), hm.n_levels());
        for round in 0..3 {
            check_stored_precisions(&hm, &p.a);
            let (it_d, x_d) = solve(&p.a, &p.b, &hd);
            let (it_m, x_m) = solve(&p.a, &p.b, &hm);
            println!("m {m} round {round}: double {it_d}, mixed {it_m} iterations");
            assert!(it_m <= it_d + 2, "m {m} round {round}: {it_m} vs {it_d}");
            // both within rtol 1e-8 of the same system: their difference is at the rtol's scale
            let d = rel_diff(&x_m, &x_d);
            assert!(d < 1e-6, "m {m} round {round}: solutions differ by {d}");
            // hot update (reuse: interpolation) on a changed operator: written in fp32 in place
            shift_diagonal(&mut p.a, 0.02 * (round + 1) as f64);
            hd.update(&p.a).unwrap();
            let rep = hm.update(&p.a).unwrap();
            assert_eq!(rep.galerkin_plans_rebuilt, 0);
        }
    }
}

#[test]
fn mixed_coarse_operators_are_the_rounded_double_ones() {
    let p = common::elasticity(11, 1e-3);
    let hd = Hierarchy::setup(&p.a, &p.near_null, &params(Precision::Double)).unwrap();
    let hm = Hierarchy::setup(&p.a, &p.near_null, &params(Precision::Mixed)).unwrap();
    // the cold setup builds in fp64 and then rounds: P and A_1 are the double ones rounded
    let (pd, pm) = (hd.prolongator(0).unwrap(), hm.prolongator(0).unwrap());
    let rounded: Vec<f64> = pd
        .to_dense()
        .unwrap()
        .iter()
        .map(|&v| v as f32 as f64)
        .collect();
    assert_eq!(pm.to_dense().unwrap(), rounded);
    let (ad, am) = (hd.operator(1).unwrap(), hm.operator(1).unwrap());
    let (ad, am) = (ad.to_dense().unwrap(), am.to_dense().unwrap());
    for (x, y) in am.iter().zip(&ad) {
        assert!((x - y).abs() <= 1e-6 * y.abs() + 1e-12, "{x} vs {y}");
    }
    assert_eq!(
        hm.operator(0).unwrap().precision(),
        linalg::Precision::Double
    );
}
