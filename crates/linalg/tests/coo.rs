//! COO assembly plans against dense accumulation.

mod common;

use common::{assert_close, with_threads, Rng};
use linalg::{Bsr, CooPlan, LinalgError};

/// Random contributions with duplicates, in random order, leaving some rows empty.
fn contributions(rng: &mut Rng, nbr: usize, nbc: usize, n: usize) -> (Vec<u32>, Vec<u32>) {
    let mut rows = Vec::with_capacity(n);
    let mut cols = Vec::with_capacity(n);
    for _ in 0..n {
        // Odd rows stay empty; few distinct columns force duplicates.
        rows.push((2 * rng.below(nbr.div_ceil(2))) as u32);
        cols.push(rng.below(nbc.min(5)) as u32 * (nbc as u32 / 5).max(1));
    }
    (rows, cols)
}

fn dense_accumulate(
    rows: &[u32],
    cols: &[u32],
    values: &[f64],
    nbr: usize,
    nbc: usize,
    br: usize,
    bc: usize,
) -> Vec<f64> {
    let n_cols = nbc * bc;
    let mut d = vec![0.0; nbr * br * n_cols];
    for (c, (&i, &j)) in rows.iter().zip(cols).enumerate() {
        for r in 0..br {
            for s in 0..bc {
                d[(i as usize * br + r) * n_cols + j as usize * bc + s] +=
                    values[c * br * bc + r * bc + s];
            }
        }
    }
    d
}

#[test]
fn assemble_matches_dense_accumulation() {
    let mut rng = Rng::new(20);
    for (br, bc) in [(3, 3), (1, 1), (3, 6), (2, 5), (6, 6)] {
        let (nbr, nbc) = (31, 17);
        let (rows, cols) = contributions(&mut rng, nbr, nbc, 600);
        let plan = CooPlan::new(nbr, nbc, &rows, &cols).unwrap();
        assert_eq!(plan.n_contributions(), 600);
        assert!(plan.pattern().row(1).is_empty());
        // Pattern = sorted unique blocks of each row.
        for i in 0..nbr {
            let mut expect: Vec<u32> = rows
                .iter()
                .zip(&cols)
                .filter(|(r, _)| **r as usize == i)
                .map(|(_, c)| *c)
                .collect();
            expect.sort_unstable();
            expect.dedup();
            assert_eq!(plan.pattern().row(i), expect.as_slice());
        }
        let values = rng.vec(600 * br * bc);
        let mut a = Bsr::zeros(plan.pattern().clone(), br, bc);
        a.values_mut().fill(f64::NAN); // assemble overwrites
        plan.assemble(&values, &mut a).unwrap();
        assert_close(
            &a.to_dense(),
            &dense_accumulate(&rows, &cols, &values, nbr, nbc, br, bc),
            1e-14,
        );
    }
}

#[test]
fn slots_list_contributions_in_ascending_order() {
    let mut rng = Rng::new(21);
    let (rows, cols) = contributions(&mut rng, 50, 50, 5000);
    let plan = CooPlan::new(50, 50, &rows, &cols).unwrap();
    let (ptr, list) = (plan.slot_ptr(), plan.slot_contributions());
    let mut seen = vec![false; rows.len()];
    for i in 0..50 {
        for k in plan.pattern().row_ptr()[i]..plan.pattern().row_ptr()[i + 1] {
            let slot = &list[ptr[k]..ptr[k + 1]];
            assert!(!slot.is_empty());
            assert!(slot.windows(2).all(|w| w[0] < w[1]));
            for &c in slot {
                assert_eq!(
                    (rows[c as usize] as usize, cols[c as usize]),
                    (i, plan.pattern().col_idx()[k])
                );
                seen[c as usize] = true;
            }
        }
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn plan_and_assembly_are_identical_across_thread_counts() {
    let mut rng = Rng::new(22);
    let n = 300_000;
    let rows: Vec<u32> = (0..n).map(|_| rng.below(5000) as u32).collect();
    let cols: Vec<u32> = (0..n).map(|_| rng.below(4000) as u32).collect();
    let values = rng.vec(n * 9);
    let run = |t| {
        with_threads(t, || {
            let plan = CooPlan::new(5000, 4000, &rows, &cols).unwrap();
            let mut a = Bsr::zeros(plan.pattern().clone(), 3, 3);
            plan.assemble(&values, &mut a).unwrap();
            (
                plan.slot_ptr().to_vec(),
                plan.slot_contributions().to_vec(),
                a,
            )
        })
    };
    let (p1, c1, a1) = run(1);
    let (p4, c4, a4) = run(4);
    assert_eq!((p1, c1), (p4, c4));
    assert_eq!(a1.pattern(), a4.pattern());
    assert!(a1
        .values()
        .iter()
        .zip(a4.values())
        .all(|(x, y)| x.to_bits() == y.to_bits()));
}

#[test]
fn assemble_slots_builds_vectors() {
    // Vector assembly: one block column, 3 values per contribution.
    let rows = [2u32, 0, 2, 2];
    let cols = [0u32; 4];
    let plan = CooPlan::new(4, 1, &rows, &cols).unwrap();
    let values: Vec<f64> = (0..12).map(f64::from).collect();
    let mut out = vec![0.0; plan.pattern().nnz() * 3];
    plan.assemble_slots(&values, 3, &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            3.0,
            4.0,
            5.0,
            0.0 + 6.0 + 9.0,
            1.0 + 7.0 + 10.0,
            2.0 + 8.0 + 11.0
        ]
    );
}

#[test]
fn errors_are_reported() {
    assert_eq!(
        CooPlan::new(2, 2, &[0, 1], &[0]).unwrap_err(),
        LinalgError::LengthMismatch {
            what: "CooPlan cols",
            expected: 2,
            found: 1
        }
    );
    assert_eq!(
        CooPlan::new(2, 2, &[0, 1, 1], &[0, 0, 2]).unwrap_err(),
        LinalgError::ContributionOutOfRange {
            index: 2,
            row: 1,
            col: 2,
            n_block_rows: 2,
            n_block_cols: 2
        }
    );
    let plan = CooPlan::new(2, 2, &[0, 1], &[0, 1]).unwrap();
    let mut wrong = Bsr::from_dense(&[1.0, 1.0, 0.0, 1.0], 2, 2, 1, 1).unwrap();
    assert_eq!(
        plan.assemble(&[1.0, 2.0], &mut wrong),
        Err(LinalgError::PatternMismatch {
            what: "CooPlan::assemble"
        })
    );
    let mut a = Bsr::zeros(plan.pattern().clone(), 1, 1);
    assert_eq!(
        plan.assemble(&[1.0], &mut a),
        Err(LinalgError::LengthMismatch {
            what: "CooPlan values",
            expected: 2,
            found: 1
        })
    );
    let mut out = [0.0; 3];
    assert_eq!(
        plan.assemble_slots(&[1.0, 2.0], 1, &mut out),
        Err(LinalgError::LengthMismatch {
            what: "CooPlan output",
            expected: 2,
            found: 3
        })
    );
    // An equal (not shared) pattern is accepted.
    let mut b = Bsr::from_dense(&[1.0, 0.0, 0.0, 1.0], 2, 2, 1, 1).unwrap();
    plan.assemble(&[5.0, 6.0], &mut b).unwrap();
    assert_eq!(b.to_dense(), vec![5.0, 0.0, 0.0, 6.0]);
    // No contributions: empty pattern.
    let empty = CooPlan::new(3, 3, &[], &[]).unwrap();
    assert_eq!(empty.pattern().nnz(), 0);
}
