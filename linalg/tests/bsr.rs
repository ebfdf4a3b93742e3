//! Bsr construction, conversions and SpMV against dense references.

mod common;

use std::sync::Arc;

use common::{assert_close, dense_mul, random_bsr, with_threads, Rng};
use linalg::{BlockDiagonal, BlockPattern, Bsr, LinalgError, Vector};

#[test]
fn spmv_matches_dense_for_random_block_sizes() {
    let mut rng = Rng::new(1);
    for br in 1..=6 {
        for bc in 1..=6 {
            let (nbr, nbc) = (1 + rng.below(40), 1 + rng.below(40));
            let a = random_bsr(&mut rng, nbr, nbc, br, bc, 0.2);
            let x = Vector::from_vec(rng.vec(a.n_cols()));
            let dense = a.to_dense().unwrap();
            let expected = dense_mul(&dense, x.host().unwrap(), a.n_rows(), a.n_cols(), 1);
            let mut y = Vector::from_vec(vec![f64::NAN; a.n_rows()]);
            a.spmv(&x, &mut y).unwrap();
            assert_close(y.host().unwrap(), &expected, 1e-13);

            // y = 2 A x - 0.5 y0
            let y0 = rng.vec(a.n_rows());
            let mut y = Vector::from_vec(y0.clone());
            a.spmv_add(2.0, &x, -0.5, &mut y).unwrap();
            let e: Vec<f64> = expected
                .iter()
                .zip(&y0)
                .map(|(ax, y)| 2.0 * ax - 0.5 * y)
                .collect();
            assert_close(y.host().unwrap(), &e, 1e-13);
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
                a.spmv(&x, &mut y).unwrap();
                y.to_host_vec().unwrap()
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
    assert_eq!(a.to_dense().unwrap(), d);
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
    a.host_block_mut(0).unwrap().fill(0.0);
    let s = a.to_scalar_blocks().unwrap();
    assert_eq!((s.block_rows(), s.block_cols()), (1, 1));
    assert_eq!(s.pattern().nnz(), a.pattern().nnz() * 6);
    assert_eq!(s.to_dense().unwrap(), a.to_dense().unwrap());
    let x = Vector::from_vec(rng.vec(a.n_cols()));
    let (mut y1, mut y2) = (Vector::zeros(a.n_rows()), Vector::zeros(a.n_rows()));
    a.spmv(&x, &mut y1).unwrap();
    s.spmv(&x, &mut y2).unwrap();
    assert_close(y1.host().unwrap(), y2.host().unwrap(), 1e-14);
}

#[test]
fn block_diagonal_and_scale() {
    let mut rng = Rng::new(4);
    let p = common::random_pattern(&mut rng, 6, 6, 0.3, true);
    let values = rng.vec(p.nnz() * 9);
    let mut a = Bsr::from_parts(p, 3, 3, values).unwrap();
    let dense = a.to_dense().unwrap();
    let diagonal = BlockDiagonal::from_diagonal(&a, 3).unwrap();
    let d = diagonal.host().unwrap();
    for i in 0..6 {
        for r in 0..3 {
            for c in 0..3 {
                assert_eq!(d[i * 9 + r * 3 + c], dense[(3 * i + r) * 18 + 3 * i + c]);
            }
        }
    }
    a.scale(-2.0).unwrap();
    assert_close(
        &a.to_dense().unwrap(),
        &dense.iter().map(|v| -2.0 * v).collect::<Vec<_>>(),
        0.0,
    );

    let rect = random_bsr(&mut rng, 3, 3, 3, 6, 1.0);
    assert_eq!(
        BlockDiagonal::from_diagonal(&rect, 3),
        Err(LinalgError::NonSquareBlocks {
            block_rows: 3,
            block_cols: 6
        })
    );
    let p = Arc::new(BlockPattern::new(2, 2, vec![0, 1, 1], vec![0]).unwrap());
    let missing = Bsr::zeros(p, 2, 2);
    assert_eq!(
        BlockDiagonal::from_diagonal(&missing, 2),
        Err(LinalgError::MissingDiagonal { row: 1 })
    );
}

/// New values of a block matrix land in its scalar expansion where `to_scalar_blocks` puts them,
/// without rebuilding the pattern; an expansion of another matrix is refused.
#[test]
fn scalar_expansion_values_are_refreshed_in_place() {
    let mut rng = Rng::new(42);
    for (br, bc) in [(3, 3), (3, 6), (2, 5)] {
        let mut a = random_bsr(&mut rng, 9, 7, br, bc, 0.4);
        let mut s = a.to_scalar_blocks().unwrap();
        let fresh = rng.vec(a.n_values());
        a.host_mut().unwrap().copy_from_slice(&fresh);
        s.copy_scalar_blocks_from(&a).unwrap();
        assert_eq!(s, a.to_scalar_blocks().unwrap());
        assert_eq!(s.to_dense().unwrap(), a.to_dense().unwrap());
        let other = random_bsr(&mut rng, 8, 7, br, bc, 0.4);
        let mut wrong = other.to_scalar_blocks().unwrap();
        if wrong.n_values() != a.n_values() || wrong.n_rows() != a.n_rows() {
            assert!(wrong.copy_scalar_blocks_from(&a).is_err());
        }
    }
}

/// Value copies need the same pattern and block sizes; block norms are Frobenius norms per slot.
#[test]
fn value_copies_and_block_norms() {
    let mut rng = Rng::new(43);
    let a = random_bsr(&mut rng, 6, 6, 3, 3, 0.5);
    let mut b = Bsr::zeros(Arc::new(a.pattern().as_ref().clone()), 3, 3);
    b.copy_values_from(&a).unwrap();
    assert_eq!(b.host().unwrap(), a.host().unwrap());
    let other = random_bsr(&mut rng, 6, 6, 3, 3, 0.9);
    let mut c = other.zeros_like().unwrap();
    if other.pattern() != a.pattern() {
        assert!(c.copy_values_from(&a).is_err());
    }
    let norms = a.block_norms().unwrap();
    let norms = norms.host().unwrap();
    assert_eq!(norms.len(), a.pattern().nnz());
    for (k, n) in norms.iter().enumerate() {
        let block = a.host_block(k).unwrap();
        let expected = block.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert_eq!(*n, expected);
    }
    assert!(a.host_block(a.pattern().nnz()).is_err());
}

/// The block diagonal of a blocked matrix and of its scalar expansion agree; the inverse applied
/// to `D r` gives back `r`; a singular block is an error naming it.
#[test]
fn block_diagonal_inverse_and_application() {
    let mut rng = Rng::new(44);
    for bs in [1, 2, 3, 6, 4] {
        let p = common::random_pattern(&mut rng, 7, 7, 0.3, true);
        let mut values = rng.vec(p.nnz() * bs * bs);
        for i in 0..7 {
            let d = p.find(i, i).unwrap();
            for c in 0..bs {
                values[d * bs * bs + c * bs + c] += 2.0 * bs as f64;
            }
        }
        let a = Bsr::from_parts(p, bs, bs, values).unwrap();
        let d = BlockDiagonal::from_diagonal(&a, bs).unwrap();
        let scalar = BlockDiagonal::from_diagonal(&a.to_scalar_blocks().unwrap(), bs).unwrap();
        assert_eq!(d, scalar);
        let mut inv = d.clone();
        inv.invert().unwrap();
        let r = Vector::from_vec(rng.vec(7 * bs));
        let (mut dr, mut back) = (
            Vector::zeros(7 * bs),
            Vector::from_vec(vec![f64::NAN; 7 * bs]),
        );
        d.apply(1.0, &r, 0.0, &mut dr).unwrap();
        inv.apply(1.0, &dr, 0.0, &mut back).unwrap();
        assert_close(back.host().unwrap(), r.host().unwrap(), 1e-12);
        // x = 2 D^-1 r + 3 x
        let mut x = r.clone();
        inv.apply(2.0, &dr, 3.0, &mut x).unwrap();
        let expected: Vec<f64> = r.host().unwrap().iter().map(|v| 5.0 * v).collect();
        assert_close(x.host().unwrap(), &expected, 1e-12);
        assert!(inv.apply(1.0, &Vector::zeros(3), 0.0, &mut x).is_err());
    }
    let mut singular = BlockDiagonal::from_vec(
        3,
        2,
        vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 1.0, 4.0, 2.0],
    )
    .unwrap();
    assert!(matches!(
        singular.invert(),
        Err(LinalgError::SingularBlock { block: 1, .. })
    ));
}
