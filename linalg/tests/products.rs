//! Transpose, SpGEMM and PtAP against dense references, plan reuse, determinism and errors.

mod common;

use std::sync::Arc;

use common::{
    assert_close, dense_mul, dense_transpose, random_bsr, random_pattern, with_threads, Rng,
};
use linalg::{
    ptap, ptap_numeric, ptap_symbolic, spgemm, spgemm_numeric, spgemm_symbolic, transpose,
    transpose_numeric, transpose_symbolic, BlockPattern, Bsr, LinalgError, PtapPlan,
};

fn bits(a: &Bsr) -> Vec<u64> {
    a.host().unwrap().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn transpose_matches_dense() {
    let mut rng = Rng::new(30);
    for br in 1..=6 {
        for bc in [1, 2, 3, 6] {
            let (m, n) = (1 + rng.below(20), 1 + rng.below(20));
            let mut a = random_bsr(&mut rng, m, n, br, bc, 0.3);
            let at = transpose(&a).unwrap();
            assert_eq!((at.block_rows(), at.block_cols()), (bc, br));
            assert_eq!(
                at.to_dense().unwrap(),
                dense_transpose(&a.to_dense().unwrap(), a.n_rows(), a.n_cols())
            );
            // Numeric re-run with new values on the same plan.
            let plan = transpose_symbolic(a.pattern());
            let v = rng.vec(a.host().unwrap().len());
            a.host_mut().unwrap().copy_from_slice(&v);
            let mut at2 = Bsr::zeros(plan.pattern().clone(), bc, br);
            transpose_numeric(&plan, &a, &mut at2).unwrap();
            assert_eq!(
                at2.to_dense().unwrap(),
                dense_transpose(&a.to_dense().unwrap(), a.n_rows(), a.n_cols())
            );
        }
    }
}

#[test]
fn spgemm_matches_dense_for_galerkin_and_random_shapes() {
    let mut rng = Rng::new(31);
    let mut shapes = vec![(3, 3, 6), (6, 6, 6), (6, 3, 6), (3, 3, 3), (1, 1, 1)];
    for _ in 0..8 {
        shapes.push((1 + rng.below(6), 1 + rng.below(6), 1 + rng.below(6)));
    }
    for (br, bk, bc) in shapes {
        let (m, k, n) = (1 + rng.below(25), 1 + rng.below(25), 1 + rng.below(25));
        let a = random_bsr(&mut rng, m, k, br, bk, 0.2);
        let mut b = random_bsr(&mut rng, k, n, bk, bc, 0.2);
        let c = spgemm(&a, &b).unwrap();
        assert_eq!((c.block_rows(), c.block_cols()), (br, bc));
        let expected = dense_mul(
            &a.to_dense().unwrap(),
            &b.to_dense().unwrap(),
            a.n_rows(),
            a.n_cols(),
            b.n_cols(),
        );
        assert_close(&c.to_dense().unwrap(), &expected, 1e-13);

        // Same plan, new values of B.
        let plan = spgemm_symbolic(a.pattern(), b.pattern()).unwrap();
        assert_eq!(plan.pattern(), c.pattern());
        let v = rng.vec(b.host().unwrap().len());
        b.host_mut().unwrap().copy_from_slice(&v);
        let mut c2 = Bsr::zeros(plan.pattern().clone(), br, bc);
        spgemm_numeric(&plan, &a, &b, &mut c2).unwrap();
        let expected = dense_mul(
            &a.to_dense().unwrap(),
            &b.to_dense().unwrap(),
            a.n_rows(),
            a.n_cols(),
            b.n_cols(),
        );
        assert_close(&c2.to_dense().unwrap(), &expected, 1e-13);
    }
}

fn dense_ptap(a: &Bsr, p: &Bsr) -> Vec<f64> {
    let (n, m) = (p.n_rows(), p.n_cols());
    let pd = p.to_dense().unwrap();
    let ap = dense_mul(&a.to_dense().unwrap(), &pd, n, n, m);
    dense_mul(&dense_transpose(&pd, n, m), &ap, m, n, m)
}

#[test]
fn ptap_matches_dense_and_reuses_its_plan() {
    let mut rng = Rng::new(32);
    let mut shapes = vec![(3, 6), (6, 6), (3, 3), (1, 1)];
    for _ in 0..6 {
        shapes.push((1 + rng.below(6), 1 + rng.below(6)));
    }
    for (b, c) in shapes {
        let (n, m) = (10 + rng.below(30), 1 + rng.below(10));
        let pa = random_pattern(&mut rng, n, n, 0.15, true);
        let mut a = Bsr::from_parts(pa.clone(), b, b, rng.vec(pa.nnz() * b * b)).unwrap();
        let p = random_bsr(&mut rng, n, m, b, c, 0.25);
        let ac = ptap(&a, &p).unwrap();
        assert_eq!(
            (ac.block_rows(), ac.block_cols(), ac.n_rows()),
            (c, c, m * c)
        );
        assert_close(&ac.to_dense().unwrap(), &dense_ptap(&a, &p), 1e-12);

        // Newton hot path: same plan, new A values, twice.
        let plan = ptap_symbolic(a.pattern(), p.pattern()).unwrap();
        let mut ac2 = Bsr::zeros(plan.pattern().clone(), c, c);
        let mut ws = plan.workspace();
        for _ in 0..2 {
            let v = rng.vec(a.host().unwrap().len());
            a.host_mut().unwrap().copy_from_slice(&v);
            ptap_numeric(&plan, &a, &p, &mut ac2, &mut ws).unwrap();
            let fresh = ptap(&a, &p).unwrap();
            assert_eq!(bits(&ac2), bits(&fresh));
            assert_close(&ac2.to_dense().unwrap(), &dense_ptap(&a, &p), 1e-12);
        }
    }
}

#[test]
fn products_are_bit_identical_across_thread_counts() {
    let mut rng = Rng::new(33);
    let n = 3000;
    let pa = random_pattern(&mut rng, n, n, 0.004, true);
    let a = Bsr::from_parts(pa.clone(), 3, 3, rng.vec(pa.nnz() * 9)).unwrap();
    let p = random_bsr(&mut rng, n, 300, 3, 6, 0.01);
    let run = |t| {
        with_threads(t, || {
            let plan = PtapPlan::new(a.pattern(), p.pattern()).unwrap();
            let mut ac = Bsr::zeros(plan.pattern().clone(), 6, 6);
            ptap_numeric(&plan, &a, &p, &mut ac, &mut plan.workspace()).unwrap();
            (spgemm(&a, &p).unwrap(), transpose(&p).unwrap(), ac)
        })
    };
    let (ap1, pt1, ac1) = run(1);
    let (ap4, pt4, ac4) = run(4);
    assert_eq!(ap1.pattern(), ap4.pattern());
    assert_eq!(bits(&ap1), bits(&ap4));
    assert_eq!(bits(&pt1), bits(&pt4));
    assert_eq!(ac1.pattern(), ac4.pattern());
    assert_eq!(bits(&ac1), bits(&ac4));
    // Every block of A_c sums in fine-row order, as the two explicit products do (batches of
    // fine rows: the library's tests cross them).
    assert_eq!(bits(&ac1), bits(&spgemm(&pt1, &ap1).unwrap()));
}

/// The plan's `P^T` (pattern and slot map, what a restriction `y = P^T x` needs) is the transpose
/// plan's, and the plan holds nothing per block of `A P`.
#[test]
fn ptap_plan_exposes_the_transpose_of_p() {
    let mut rng = Rng::new(35);
    let pa = random_pattern(&mut rng, 200, 200, 0.05, true);
    let p = random_bsr(&mut rng, 200, 40, 3, 6, 0.05);
    let plan = PtapPlan::new(&pa, p.pattern()).unwrap();
    let t = transpose_symbolic(p.pattern());
    assert_eq!(plan.pt_pattern(), t.pattern());
    let slots: Vec<usize> = plan.pt_slots().iter().map(|&s| s as usize).collect();
    assert_eq!(slots, t.source_slots());
    assert!(Arc::ptr_eq(plan.p_pattern(), p.pattern()));
    // Exactly P^T's pattern (row pointers and fine rows) and slot map.
    assert_eq!(plan.memory_bytes(), 41 * 8 + p.pattern().nnz() * 8);
}

#[test]
fn product_errors() {
    let mut rng = Rng::new(34);
    let a = random_bsr(&mut rng, 4, 5, 3, 3, 0.5);
    let b = random_bsr(&mut rng, 6, 2, 3, 6, 0.5);
    assert_eq!(
        spgemm(&a, &b).unwrap_err(),
        LinalgError::DimensionMismatch {
            what: "spgemm: block rows of B",
            expected: 5,
            found: 6
        }
    );
    let b = random_bsr(&mut rng, 5, 2, 2, 6, 0.5);
    assert_eq!(
        spgemm(&a, &b).unwrap_err(),
        LinalgError::DimensionMismatch {
            what: "spgemm: block rows of B",
            expected: 3,
            found: 2
        }
    );
    let b = random_bsr(&mut rng, 5, 2, 3, 6, 0.5);
    let plan = spgemm_symbolic(a.pattern(), b.pattern()).unwrap();
    let mut wrong = Bsr::zeros(
        Arc::new(linalg::BlockPattern::new(4, 2, vec![0; 5], vec![]).unwrap()),
        3,
        6,
    );
    if plan.pattern().nnz() > 0 {
        assert_eq!(
            spgemm_numeric(&plan, &a, &b, &mut wrong),
            Err(LinalgError::PatternMismatch {
                what: "spgemm_numeric: C"
            })
        );
    }
    let mut c = Bsr::zeros(plan.pattern().clone(), 3, 3);
    assert_eq!(
        spgemm_numeric(&plan, &a, &b, &mut c),
        Err(LinalgError::DimensionMismatch {
            what: "spgemm_numeric: block cols of C",
            expected: 6,
            found: 3
        })
    );

    // PtAP: A must be n x n blocks of P's block size.
    let p = random_bsr(&mut rng, 4, 2, 3, 6, 0.5);
    assert_eq!(
        ptap(&a, &p).unwrap_err(),
        LinalgError::DimensionMismatch {
            what: "ptap: block cols of A",
            expected: 4,
            found: 5
        }
    );
    let sq = random_bsr(&mut rng, 4, 4, 6, 6, 0.5);
    assert_eq!(
        ptap(&sq, &p).unwrap_err(),
        LinalgError::DimensionMismatch {
            what: "ptap_numeric: block rows of A",
            expected: 3,
            found: 6
        }
    );
    let plan = ptap_symbolic(sq.pattern(), p.pattern()).unwrap();
    let other = random_bsr(&mut rng, 4, 2, 3, 6, 0.9);
    let mut ac = Bsr::zeros(plan.pattern().clone(), 6, 6);
    if other.pattern() != p.pattern() {
        assert_eq!(
            ptap_numeric(&plan, &sq, &other, &mut ac, &mut plan.workspace()),
            Err(LinalgError::PatternMismatch {
                what: "ptap_numeric: P"
            })
        );
    }
}

/// A 2D grid problem (9-point `A` on `n x n` nodes, smoothed-aggregation-like `P` on 3x3
/// aggregates): local enough for the default plan to take the fused path.
fn grid_problem(rng: &mut Rng, n: usize) -> (Bsr, Bsr) {
    let na = n.div_ceil(3);
    let near = |i: usize| i.saturating_sub(1)..(i + 2).min(n);
    let mut a_rows = Vec::new();
    let mut p_rows = Vec::new();
    for y in 0..n {
        for x in 0..n {
            let mut a_row = Vec::new();
            let mut p_row = Vec::new();
            for yy in near(y) {
                for xx in near(x) {
                    a_row.push((xx + n * yy) as u32);
                    p_row.push((xx / 3 + na * (yy / 3)) as u32);
                }
            }
            p_row.sort_unstable();
            p_row.dedup();
            a_rows.push(a_row);
            p_rows.push(p_row);
        }
    }
    let build = |rows: Vec<Vec<u32>>, n_cols: usize| {
        let mut row_ptr = vec![0];
        let mut col_idx = Vec::new();
        for r in &rows {
            col_idx.extend_from_slice(r);
            row_ptr.push(col_idx.len());
        }
        Arc::new(BlockPattern::new(rows.len(), n_cols, row_ptr, col_idx).unwrap())
    };
    let (pa, pp) = (build(a_rows, n * n), build(p_rows, na * na));
    let a = Bsr::from_parts(pa.clone(), 3, 3, rng.vec(pa.nnz() * 9)).unwrap();
    let p = Bsr::from_parts(pp.clone(), 3, 6, rng.vec(pp.nnz() * 18)).unwrap();
    (a, p)
}

#[test]
fn ptap_on_a_grid_is_the_two_explicit_products_bit_for_bit() {
    let mut rng = Rng::new(34);
    let (a, p) = grid_problem(&mut rng, 64);
    let reference = spgemm(&transpose(&p).unwrap(), &spgemm(&a, &p).unwrap()).unwrap();
    let run = |t| {
        with_threads(t, || {
            let plan = PtapPlan::new(a.pattern(), p.pattern()).unwrap();
            let mut ac = Bsr::zeros(plan.pattern().clone(), 6, 6);
            ptap_numeric(&plan, &a, &p, &mut ac, &mut plan.workspace()).unwrap();
            ac
        })
    };
    let ac1 = run(1);
    assert_eq!(ac1.pattern(), reference.pattern());
    assert_eq!(bits(&ac1), bits(&reference));
    assert_eq!(bits(&ac1), bits(&run(2)));
    assert_eq!(bits(&ac1), bits(&run(5)));
}
