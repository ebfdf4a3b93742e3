//! Test helpers: deterministic random numbers and small block operators.

use linalg::hash::SplitMix64;
use linalg::{BlockPattern, Bsr};
use std::sync::Arc;

/// `n` deterministic pseudo-random numbers in `[-1, 1)` (the shared SplitMix64 of `linalg`).
pub fn rand_vec(seed: u64, n: usize) -> Vec<f64> {
    let mut g = SplitMix64(seed);
    (0..n).map(|_| g.next_signed_unit()).collect()
}

/// Block tridiagonal pattern with `n` block rows.
fn tridiagonal_pattern(n: usize) -> Arc<BlockPattern> {
    let mut row_ptr = vec![0usize];
    let mut cols = Vec::new();
    for i in 0..n {
        for j in i.saturating_sub(1)..(i + 2).min(n) {
            cols.push(j as u32);
        }
        row_ptr.push(cols.len());
    }
    Arc::new(BlockPattern::new(n, n, row_ptr, cols).unwrap())
}

/// 1D Laplacian `tridiag(-1, 2, -1)` tensored with `I_bs`: blocks `2 I` and `-I`.
pub fn laplace_1d_blocks(n: usize, bs: usize) -> Bsr {
    let pattern = tridiagonal_pattern(n);
    let mut a = Bsr::zeros(pattern.clone(), bs, bs);
    for i in 0..n {
        for k in pattern.row_ptr()[i]..pattern.row_ptr()[i + 1] {
            let d = if pattern.col_idx()[k] as usize == i {
                2.0
            } else {
                -1.0
            };
            let b = a.host_block_mut(k).unwrap();
            for c in 0..bs {
                b[c * bs + c] = d;
            }
        }
    }
    a
}

/// A random symmetric, block diagonally dominant (hence SPD) block tridiagonal matrix.
pub fn random_spd_block_tridiagonal(n: usize, bs: usize, seed: u64) -> Bsr {
    let pattern = tridiagonal_pattern(n);
    let mut a = Bsr::zeros(pattern.clone(), bs, bs);
    let off = rand_vec(seed, n * bs * bs); // block (i, i+1) = off_i, block (i+1, i) = off_i^T
    for i in 0..n {
        for k in pattern.row_ptr()[i]..pattern.row_ptr()[i + 1] {
            let j = pattern.col_idx()[k] as usize;
            let b = a.host_block_mut(k).unwrap();
            for r in 0..bs {
                for c in 0..bs {
                    b[r * bs + c] = if j == i + 1 {
                        off[i * bs * bs + r * bs + c]
                    } else if j + 1 == i {
                        off[j * bs * bs + c * bs + r]
                    } else {
                        let s = rand_vec(
                            seed ^ ((i * bs * bs + r.min(c) * bs + r.max(c)) as u64 + 1),
                            1,
                        )[0];
                        if r == c {
                            2.0 * bs as f64 + 1.0 + s
                        } else {
                            0.5 * s
                        }
                    };
                }
            }
        }
    }
    a
}
