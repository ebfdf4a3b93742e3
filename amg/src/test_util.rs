//! Test helpers: deterministic random numbers and small block operators.

use linalg::{BlockPattern, Bsr};
use std::sync::Arc;

/// splitmix64 step.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` deterministic pseudo-random numbers in `[-1, 1)`.
pub fn rand_vec(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| (splitmix(&mut s) >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        .collect()
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
            let b = a.block_mut(k);
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
            let b = a.block_mut(k);
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
