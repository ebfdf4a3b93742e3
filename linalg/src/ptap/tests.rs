//! The host product on small problems (small batches so that batch boundaries are crossed),
//! against dense references and the two explicit products.

use std::sync::Arc;

use super::{ptap_numeric, PtapPlan};
use crate::hash::SplitMix64;
use crate::{spgemm, transpose, BlockPattern, Bsr, LinalgError};

/// Reproducible pseudo-random numbers (SplitMix64).
struct Rng(SplitMix64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(SplitMix64(seed))
    }

    /// `n` numbers, uniform in [-1, 1).
    fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.0.next_signed_unit()).collect()
    }
}

fn pattern(n_rows: usize, n_cols: usize, rows: impl Fn(usize) -> Vec<u32>) -> Arc<BlockPattern> {
    let (mut row_ptr, mut col_idx) = (vec![0], Vec::new());
    for i in 0..n_rows {
        let mut r = rows(i);
        r.sort_unstable();
        r.dedup();
        col_idx.extend(r);
        row_ptr.push(col_idx.len());
    }
    Arc::new(BlockPattern::new(n_rows, n_cols, row_ptr, col_idx).unwrap())
}

/// A 1D chain problem with locality: `A` couples rows within distance 2, `P` (smoothed-aggregation
/// like) maps row `i` to the aggregates `(i - 1) / 3 ..= (i + 1) / 3`.
fn chain(rng: &mut Rng, n: usize, b: usize, c: usize) -> (Bsr, Bsr) {
    let m = n.div_ceil(3);
    let pa = pattern(n, n, |i| {
        (i.saturating_sub(2)..(i + 3).min(n))
            .map(|j| j as u32)
            .collect()
    });
    let pp = pattern(n, m, |i| {
        (i.saturating_sub(1) / 3..=((i + 1) / 3).min(m - 1))
            .map(|j| j as u32)
            .collect()
    });
    let a = Bsr::from_parts(pa.clone(), b, b, rng.vec(pa.nnz() * b * b)).unwrap();
    let p = Bsr::from_parts(pp.clone(), b, c, rng.vec(pp.nnz() * b * c)).unwrap();
    (a, p)
}

fn dense_ptap(a: &Bsr, p: &Bsr) -> Vec<f64> {
    let (n, m) = (p.n_rows(), p.n_cols());
    let (ad, pd) = (a.to_dense().unwrap(), p.to_dense().unwrap());
    let mut ap = vec![0.0; n * m];
    for i in 0..n {
        for k in 0..n {
            for j in 0..m {
                ap[i * m + j] += ad[i * n + k] * pd[k * m + j];
            }
        }
    }
    let mut ac = vec![0.0; m * m];
    for k in 0..n {
        for i in 0..m {
            for j in 0..m {
                ac[i * m + j] += pd[k * m + i] * ap[k * m + j];
            }
        }
    }
    ac
}

fn assert_close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "entry {k}: {x} vs {y}"
        );
    }
}

fn numeric(plan: &PtapPlan, a: &Bsr, p: &Bsr) -> Bsr {
    let c = p.block_cols();
    let mut ac = Bsr::zeros(plan.pattern().clone(), c, c);
    ac.host_mut().unwrap().fill(f64::NAN); // every value must be overwritten
    ptap_numeric(plan, a, p, &mut ac, &mut plan.workspace()).unwrap();
    ac
}

fn streamed_plan(a: &Bsr, p: &Bsr, rows_per_batch: usize) -> PtapPlan {
    PtapPlan::with_rows_per_batch(a.pattern(), p.pattern(), rows_per_batch).unwrap()
}

fn bits(m: &Bsr) -> Vec<u64> {
    m.host().unwrap().iter().map(|v| v.to_bits()).collect()
}

fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn the_product_matches_dense() {
    let mut rng = Rng::new(40);
    for (b, c) in [(3, 6), (6, 6), (3, 3), (1, 1), (2, 5)] {
        let (a, p) = chain(&mut rng, 61, b, c);
        let reference = dense_ptap(&a, &p);
        for plan in [
            PtapPlan::new(a.pattern(), p.pattern()).unwrap(),
            streamed_plan(&a, &p, 5),
        ] {
            assert_close(
                &numeric(&plan, &a, &p).to_dense().unwrap(),
                &reference,
                1e-12,
            );
        }
    }
}

/// The product sums every block in ascending fine-row order, as `P^T (A P)` by two explicit
/// products does (and the device product, tested in `backend::cuda`): the same bits, whatever
/// the batch size (1, uneven, one batch for all) and the thread count.
#[test]
fn the_product_equals_two_explicit_products_bit_for_bit() {
    let mut rng = Rng::new(43);
    for (b, c) in [(3, 6), (6, 6), (2, 5)] {
        let (a, p) = chain(&mut rng, 97, b, c);
        let reference = spgemm(&transpose(&p).unwrap(), &spgemm(&a, &p).unwrap()).unwrap();
        for (rows_per_batch, threads) in [(1, 1), (7, 3), (16, 2), (97, 4), (1000, 1)] {
            let ac = with_threads(threads, || {
                numeric(&streamed_plan(&a, &p, rows_per_batch), &a, &p)
            });
            assert_eq!(ac.pattern(), reference.pattern());
            assert_eq!(
                bits(&ac),
                bits(&reference),
                "blocks {b}x{c}, batch {rows_per_batch}, {threads} threads"
            );
        }
    }
}

#[test]
fn the_product_is_bit_identical_across_thread_counts_and_calls() {
    let mut rng = Rng::new(41);
    let (a, p) = chain(&mut rng, 400, 3, 6);
    let run = |threads: usize| {
        with_threads(threads, || {
            let plan = PtapPlan::new(a.pattern(), p.pattern()).unwrap();
            let first = numeric(&plan, &a, &p);
            // Again, twice in one reused workspace.
            let mut again = first.zeros_like().unwrap();
            let mut ws = plan.workspace();
            for _ in 0..2 {
                ptap_numeric(&plan, &a, &p, &mut again, &mut ws).unwrap();
                assert_eq!(bits(&first), bits(&again));
            }
            first
        })
    };
    let one = bits(&run(1));
    assert_eq!(one, bits(&run(3)));
    assert_eq!(one, bits(&run(8)));
}

/// A prolongator without locality (every fine row in every aggregate) is computed as well.
#[test]
fn a_prolongator_without_locality() {
    let mut rng = Rng::new(42);
    let dense = pattern(40, 4, |_| (0..4).collect());
    let a = Bsr::from_parts(pattern(40, 40, |i| vec![i as u32]), 2, 2, rng.vec(40 * 4)).unwrap();
    let p = Bsr::from_parts(dense.clone(), 2, 3, rng.vec(dense.nnz() * 6)).unwrap();
    let plan = PtapPlan::new(a.pattern(), p.pattern()).unwrap();
    assert_close(
        &numeric(&plan, &a, &p).to_dense().unwrap(),
        &dense_ptap(&a, &p),
        1e-12,
    );
}

/// The plan's `P^T` pattern and slot map agree with the transpose plan, and its memory is what
/// they hold (no `A P` pattern, nothing per block of `A P`).
#[test]
fn transpose_slots_and_memory() {
    let mut rng = Rng::new(45);
    let (a, p) = chain(&mut rng, 400, 3, 6);
    let plan = PtapPlan::new(a.pattern(), p.pattern()).unwrap();
    let t = crate::transpose_symbolic(p.pattern());
    assert_eq!(plan.pt_pattern(), t.pattern());
    let slots: Vec<usize> = plan.pt_slots().iter().map(|&s| s as usize).collect();
    assert_eq!(slots, t.source_slots());
    assert!(Arc::ptr_eq(plan.p_pattern(), p.pattern()));
    let pt_bytes = (p.pattern().n_block_cols() + 1) * 8 + p.pattern().nnz() * 8;
    assert_eq!(plan.memory_bytes(), pt_bytes);
}

/// A workspace belongs to the plan that sized it: one of a plan with other coarse rows, or with
/// other batches, is refused; the plan's own works again and again.
#[test]
fn workspaces_are_checked_against_their_plan() {
    let mut rng = Rng::new(46);
    let (a, p) = chain(&mut rng, 61, 3, 6);
    let (a2, p2) = chain(&mut rng, 91, 3, 6);
    let plan = PtapPlan::new(a.pattern(), p.pattern()).unwrap();
    let mut ac = Bsr::zeros(plan.pattern().clone(), 6, 6);
    let mismatch = Err(LinalgError::PatternMismatch {
        what: "ptap_numeric: workspace made for another plan",
    });
    let other = PtapPlan::new(a2.pattern(), p2.pattern()).unwrap();
    assert_eq!(
        ptap_numeric(&plan, &a, &p, &mut ac, &mut other.workspace()),
        mismatch
    );
    let streamed = streamed_plan(&a, &p, 5);
    assert_eq!(
        ptap_numeric(&plan, &a, &p, &mut ac, &mut streamed.workspace()),
        mismatch
    );
    let mut ws = streamed.workspace();
    for _ in 0..2 {
        ptap_numeric(&streamed, &a, &p, &mut ac, &mut ws).unwrap();
        assert_eq!(bits(&ac), bits(&numeric(&streamed, &a, &p)));
    }
    // Sized in a one-thread pool, used in a larger one: threads share its scratch, in turn.
    for plan in [&plan, &streamed] {
        let mut ws = with_threads(1, || plan.workspace());
        with_threads(4, || ptap_numeric(plan, &a, &p, &mut ac, &mut ws)).unwrap();
        assert_eq!(bits(&ac), bits(&numeric(plan, &a, &p)));
    }
}
