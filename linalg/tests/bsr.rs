//! Bsr construction, conversions and SpMV against dense references.

mod common;

use std::sync::Arc;

use common::{assert_close, dense_mul, random_bsr, with_threads, Rng};
use linalg::{BlockPattern, Bsr, LinalgError, Vector};

#[test]
fn spmv_matches_dense_for_random_block_sizes() {
    let mut rng = Rng::new(1);
    for br in 1..=6 {
        for bc in 1..=6 {
            let (nbr, nbc) = (1 + rng.below(40), 1 + rng.below(40));
            let a = random_bsr(&mut rng, nbr, nbc, br, bc, 0.2);
            let x = Vector::from_vec(rng.vec(a.n_cols()));
            let dense = a.to_dense();
            let expected = dense_mul(&dense, x.as_slice(), a.n_rows(), a.n_cols(), 1);
            let mut y = Vector::from_vec(vec![f64::NAN; a.n_rows()]);
            a.spmv(&x, &mut y);
            assert_close(y.as_slice(), &expected, 1e-13);

            // y = 2 A x - 0.5 y0
            let y0 = rng.vec(a.n_rows());
            let mut y = Vector::from_vec(y0.clone());
            a.spmv_add(2.0, &x, -0.5, &mut y);
            let e: Vec<f64> = expected
                .iter()
                .zip(&y0)
                .map(|(ax, y)| 2.0 * ax - 0.5 * y)
                .collect();
            assert_close(y.as_slice(), &e, 1e-13);
        }
    }
}

#[test]
fn spmv_is_bit_identical_across_thread_counts() {
    let mut rng = Rng::new(2);
    for (br, bc) in [(3, 3), (3, 6), (6, 6), (4, 5)] {
        let a = random_bsr(&mut rng, 3000, 2000, br, bc, 0.005);
        let x = Vector::from_vec(rng.vec(a.n_cols()));
        let run = |n| {
            with_threads(n, || {
                let mut y = Vector::zeros(a.n_rows());
                a.spmv(&x, &mut y);
                y.into_vec()
            })
        };
        let (y1, y4) = (run(1), run(4));
        assert!(y1.iter().zip(&y4).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

#[test]
fn dense_round_trip_keeps_nonzero_blocks_only() {
    // 4x6 dense with 2x3 blocks: block (0,1) and (1,0) are zero.
    let mut d = vec![0.0; 24];
    d[0] = 1.0; // block (0,0)
    d[3 * 6 + 5] = 2.0; // row 3, col 5: block (1,1)
    let a = Bsr::from_dense(&d, 4, 6, 2, 3).unwrap();
    assert_eq!(a.pattern().nnz(), 2);
    assert_eq!(a.pattern().row(0), &[0]);
    assert_eq!(a.pattern().row(1), &[1]);
    assert_eq!(a.to_dense(), d);
    assert_eq!(
        Bsr::from_dense(&d, 4, 6, 3, 3),
        Err(LinalgError::NotDivisible {
            n_rows: 4,
            n_cols: 6,
            block_rows: 3,
            block_cols: 3
        })
    );
    assert_eq!(
        Bsr::from_dense(&d, 4, 5, 2, 3),
        Err(LinalgError::LengthMismatch {
            what: "dense matrix",
            expected: 20,
            found: 24
        })
    );
    assert_eq!(
        Bsr::from_dense(&d, 4, 6, 0, 3),
        Err(LinalgError::InvalidBlockSize {
            block_rows: 0,
            block_cols: 3
        })
    );
}

#[test]
fn from_parts_checks_lengths() {
    let p = Arc::new(BlockPattern::new(2, 2, vec![0, 1, 2], vec![0, 1]).unwrap());
    assert_eq!(
        Bsr::from_parts(p.clone(), 2, 3, vec![0.0; 11]),
        Err(LinalgError::LengthMismatch {
            what: "Bsr values",
            expected: 12,
            found: 11
        })
    );
    assert!(Bsr::from_parts(p, 2, 3, vec![0.0; 12]).is_ok());
}

#[test]
fn scalar_blocks_keep_explicit_zeros_and_values() {
    let mut rng = Rng::new(3);
    let mut a = random_bsr(&mut rng, 7, 5, 3, 2, 0.4);
    a.block_mut(0).fill(0.0);
    let s = a.to_scalar_blocks();
    assert_eq!((s.block_rows(), s.block_cols()), (1, 1));
    assert_eq!(s.pattern().nnz(), a.pattern().nnz() * 6);
    assert_eq!(s.to_dense(), a.to_dense());
    let x = Vector::from_vec(rng.vec(a.n_cols()));
    let (mut y1, mut y2) = (Vector::zeros(a.n_rows()), Vector::zeros(a.n_rows()));
    a.spmv(&x, &mut y1);
    s.spmv(&x, &mut y2);
    assert_close(y1.as_slice(), y2.as_slice(), 1e-14);
}

#[test]
fn diagonal_blocks_and_scale() {
    let mut rng = Rng::new(4);
    let p = common::random_pattern(&mut rng, 6, 6, 0.3, true);
    let values = rng.vec(p.nnz() * 9);
    let mut a = Bsr::from_parts(p, 3, 3, values).unwrap();
    let dense = a.to_dense();
    let d = a.diagonal_blocks().unwrap();
    for i in 0..6 {
        for r in 0..3 {
            for c in 0..3 {
                assert_eq!(d[i * 9 + r * 3 + c], dense[(3 * i + r) * 18 + 3 * i + c]);
            }
        }
    }
    a.scale(-2.0);
    assert_close(
        &a.to_dense(),
        &dense.iter().map(|v| -2.0 * v).collect::<Vec<_>>(),
        0.0,
    );

    let rect = random_bsr(&mut rng, 3, 3, 3, 6, 1.0);
    assert_eq!(
        rect.diagonal_blocks(),
        Err(LinalgError::NonSquareBlocks {
            block_rows: 3,
            block_cols: 6
        })
    );
    let p = Arc::new(BlockPattern::new(2, 2, vec![0, 1, 1], vec![0]).unwrap());
    let missing = Bsr::zeros(p, 2, 2);
    assert_eq!(
        missing.diagonal_blocks(),
        Err(LinalgError::MissingDiagonal { row: 1 })
    );
}

/// `rows_mut` hands out every block row once, with its pattern columns and exactly its values.
#[test]
fn rows_mut_covers_each_block_row_with_its_columns_and_values() {
    let mut rng = Rng::new(41);
    for (br, bc) in [(3, 3), (3, 6), (1, 1), (2, 5)] {
        let mut a = random_bsr(&mut rng, 17, 11, br, bc, 0.3);
        let pattern = a.pattern().clone();
        let before = a.values().to_vec();
        let rows = a.rows_mut();
        assert_eq!(rows.len(), pattern.n_block_rows());
        for (i, (cols, values)) in rows.into_iter().enumerate() {
            assert_eq!(cols, pattern.row(i));
            let range = pattern.row_ptr()[i] * br * bc..pattern.row_ptr()[i + 1] * br * bc;
            assert_eq!(&*values, &before[range]);
            values.iter_mut().for_each(|v| *v = i as f64);
        }
        for i in 0..pattern.n_block_rows() {
            let range = pattern.row_ptr()[i] * br * bc..pattern.row_ptr()[i + 1] * br * bc;
            assert!(a.values()[range].iter().all(|&v| v == i as f64));
        }
    }
}
