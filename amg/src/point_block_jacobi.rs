//! Point-block Jacobi: `M = D`, the block diagonal of `A` (one `bs x bs` block per node).
//!
//! Calling order: [`PointBlockJacobi::new`] once (inverts every diagonal block), then
//! [`PointBlockJacobi::update`] for new values of the same operator. Both are parallel over block rows;
//! application is parallel and elementwise per block row, hence deterministic.

use crate::{dense, AmgError, Preconditioner};
use linalg::{Bsr, Vector};
use rayon::prelude::*;

/// Block rows per parallel task of the apply kernels.
const ROWS_PER_TASK: usize = 1024;

/// Inverses of the diagonal blocks of a square-block operator.
#[derive(Debug, Clone)]
pub struct PointBlockJacobi {
    bs: usize,
    /// `n_block_rows` inverses, each `bs x bs` row-major.
    inv: Vec<f64>,
}

impl PointBlockJacobi {
    /// Inverts every diagonal block of `a` (LU with partial pivoting). A structurally missing or
    /// singular diagonal block is an error naming the block row (reported as level 0; the hierarchy
    /// substitutes its own level).
    pub fn new(a: &Bsr) -> Result<Self, AmgError> {
        let mut pbj = Self {
            bs: 0,
            inv: Vec::new(),
        };
        pbj.update(a)?;
        Ok(pbj)
    }

    /// Inverts the `bs x bs` node blocks on the diagonal of `a`, whose stored blocks are either
    /// `bs x bs` or `1 x 1` (scalar storage of an operator with `bs` unknowns per node).
    pub fn with_block_size(a: &Bsr, bs: usize) -> Result<Self, AmgError> {
        let mut pbj = Self {
            bs: 0,
            inv: Vec::new(),
        };
        pbj.update_with_block_size(a, bs)?;
        Ok(pbj)
    }

    /// Recomputes the inverses from the values of `a` (any square-block operator; the block count may
    /// change). On error `self` is left unchanged.
    pub fn update(&mut self, a: &Bsr) -> Result<(), AmgError> {
        self.update_with_block_size(a, a.block_rows())
    }

    /// [`Self::update`] for node blocks of size `bs`, stored as `bs x bs` or as `1 x 1` blocks.
    pub fn update_with_block_size(&mut self, a: &Bsr, bs: usize) -> Result<(), AmgError> {
        let stored = a.block_rows();
        if a.block_cols() != stored || (stored != bs && stored != 1) || bs == 0 {
            return Err(AmgError::NonSquareBlocks {
                what: "point-block Jacobi (stored blocks must be bs x bs or 1 x 1)",
                block_rows: stored,
                block_cols: a.block_cols(),
            });
        }
        let mut inv = if stored == bs {
            a.diagonal_blocks()?
        } else {
            scalar_node_diagonal(a, bs)?
        };
        let bl = bs * bs;
        let failure = inv
            .par_chunks_mut(bl)
            .enumerate()
            .filter_map(|(row, block)| {
                let mut perm = [0usize; 16];
                let mut perm_vec;
                let perm: &mut [usize] = if bs <= 16 {
                    &mut perm[..bs]
                } else {
                    perm_vec = vec![0usize; bs];
                    &mut perm_vec
                };
                dense::invert_in_place(block, bs, perm)
                    .err()
                    .map(|z| (row, z))
            })
            .min_by_key(|(row, _)| *row);
        if let Some((row, z)) = failure {
            return Err(AmgError::SingularDiagonalBlock {
                level: 0,
                row,
                column: z.column,
                pivot: z.pivot,
            });
        }
        self.bs = bs;
        self.inv = inv;
        Ok(())
    }

    /// Block size `bs`.
    pub fn block_size(&self) -> usize {
        self.bs
    }

    /// Number of diagonal blocks.
    pub fn n_blocks(&self) -> usize {
        if self.bs == 0 {
            0
        } else {
            self.inv.len() / (self.bs * self.bs)
        }
    }

    /// The inverse blocks, `bs x bs` row-major, one per block row.
    pub fn inverse_blocks(&self) -> &[f64] {
        &self.inv
    }

    /// `x = omega D^{-1} r + beta x` (with `beta == 0` the old `x` is not read).
    /// Panics if the lengths differ from `n_blocks * bs` (a programming error).
    pub fn apply_axpby(&self, omega: f64, r: &[f64], beta: f64, x: &mut [f64]) {
        let n = self.inv.len() / self.bs.max(1);
        assert!(
            r.len() == n && x.len() == n,
            "point-block Jacobi: vector length differs from the operator's"
        );
        match self.bs {
            1 => apply_kernel::<1>(&self.inv, omega, r, beta, x),
            2 => apply_kernel::<2>(&self.inv, omega, r, beta, x),
            3 => apply_kernel::<3>(&self.inv, omega, r, beta, x),
            6 => apply_kernel::<6>(&self.inv, omega, r, beta, x),
            bs => apply_kernel_dyn(bs, &self.inv, omega, r, beta, x),
        }
    }
}

impl Preconditioner for PointBlockJacobi {
    fn apply(&self, r: &Vector, z: &mut Vector) {
        self.apply_axpby(1.0, r.as_slice(), 0.0, z.as_mut_slice());
    }
}

/// The `bs x bs` diagonal node blocks of a scalar (1x1-block) operator, concatenated; entries absent
/// from the pattern are zero.
fn scalar_node_diagonal(a: &Bsr, bs: usize) -> Result<Vec<f64>, AmgError> {
    let pattern = a.pattern();
    if (a.n_rows() / bs) * bs != a.n_rows() || pattern.n_block_cols() != pattern.n_block_rows() {
        return Err(AmgError::DimensionMismatch {
            what: "point-block Jacobi: scalar operator rows (a multiple of the node block size)",
            expected: a.n_rows().next_multiple_of(bs),
            found: a.n_rows(),
        });
    }
    let (row_ptr, values) = (pattern.row_ptr(), a.values());
    let mut d = vec![0.0; a.n_rows() * bs];
    d.par_chunks_mut(bs * bs)
        .enumerate()
        .for_each(|(node, blk)| {
            let first = node * bs;
            for r in 0..bs {
                let cols = pattern.row(first + r);
                let lo = cols.partition_point(|&c| (c as usize) < first);
                for (t, &c) in cols[lo..].iter().enumerate() {
                    let c = c as usize - first;
                    if c >= bs {
                        break;
                    }
                    blk[r * bs + c] = values[row_ptr[first + r] + lo + t];
                }
            }
        });
    Ok(d)
}

/// `x_i = omega D_i^{-1} r_i + beta x_i` for `B x B` blocks, monomorphised.
fn apply_kernel<const B: usize>(inv: &[f64], omega: f64, r: &[f64], beta: f64, x: &mut [f64]) {
    x.par_chunks_mut(ROWS_PER_TASK * B)
        .zip(r.par_chunks(ROWS_PER_TASK * B))
        .zip(inv.par_chunks(ROWS_PER_TASK * B * B))
        .for_each(|((xc, rc), ic)| {
            for ((xb, rb), ib) in xc
                .chunks_exact_mut(B)
                .zip(rc.chunks_exact(B))
                .zip(ic.chunks_exact(B * B))
            {
                for i in 0..B {
                    let mut s = 0.0;
                    for j in 0..B {
                        s += ib[i * B + j] * rb[j];
                    }
                    xb[i] = if beta == 0.0 {
                        omega * s
                    } else {
                        omega * s + beta * xb[i]
                    };
                }
            }
        });
}

/// Same as [`apply_kernel`] for a block size known only at run time.
fn apply_kernel_dyn(bs: usize, inv: &[f64], omega: f64, r: &[f64], beta: f64, x: &mut [f64]) {
    x.par_chunks_mut(ROWS_PER_TASK * bs)
        .zip(r.par_chunks(ROWS_PER_TASK * bs))
        .zip(inv.par_chunks(ROWS_PER_TASK * bs * bs))
        .for_each(|((xc, rc), ic)| {
            for ((xb, rb), ib) in xc
                .chunks_exact_mut(bs)
                .zip(rc.chunks_exact(bs))
                .zip(ic.chunks_exact(bs * bs))
            {
                for i in 0..bs {
                    let s: f64 = ib[i * bs..(i + 1) * bs]
                        .iter()
                        .zip(rb)
                        .map(|(a, b)| a * b)
                        .sum();
                    xb[i] = if beta == 0.0 {
                        omega * s
                    } else {
                        omega * s + beta * xb[i]
                    };
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{laplace_1d_blocks, rand_vec, random_spd_block_tridiagonal};
    use crate::{cg, CgParams};
    use linalg::ops;

    #[test]
    fn apply_equals_dense_block_inverse() {
        for bs in [1, 3, 5, 6] {
            let a = random_spd_block_tridiagonal(30, bs, 17);
            let pbj = PointBlockJacobi::new(&a).unwrap();
            let r = Vector::from_vec(rand_vec(4, a.n_rows()));
            let mut z = Vector::zeros(a.n_rows());
            pbj.apply(&r, &mut z);
            // D z must equal r block by block.
            let d = a.diagonal_blocks().unwrap();
            for blk in 0..30 {
                for i in 0..bs {
                    let dz: f64 = (0..bs)
                        .map(|j| d[blk * bs * bs + i * bs + j] * z.as_slice()[blk * bs + j])
                        .sum();
                    assert!(
                        (dz - r.as_slice()[blk * bs + i]).abs() < 1e-12,
                        "bs {bs} block {blk}"
                    );
                }
            }
        }
    }

    #[test]
    fn singular_block_is_reported_with_its_row() {
        let mut a = laplace_1d_blocks(6, 3);
        let k = a.pattern().find(4, 4).unwrap();
        a.block_mut(k).fill(0.0);
        match PointBlockJacobi::new(&a) {
            Err(AmgError::SingularDiagonalBlock { row, .. }) => assert_eq!(row, 4),
            other => panic!("expected a singular block error, got {other:?}"),
        }
    }

    #[test]
    fn update_tracks_new_values_and_pcg_converges() {
        let mut a = random_spd_block_tridiagonal(50, 3, 9);
        let mut pbj = PointBlockJacobi::new(&a).unwrap();
        a.scale(4.0);
        pbj.update(&a).unwrap();
        let r = Vector::from_vec(rand_vec(8, a.n_rows()));
        let mut z = Vector::zeros(a.n_rows());
        pbj.apply(&r, &mut z);
        let mut z_fresh = Vector::zeros(a.n_rows());
        PointBlockJacobi::new(&a).unwrap().apply(&r, &mut z_fresh);
        assert_eq!(z.as_slice(), z_fresh.as_slice());
        let mut x = Vector::zeros(a.n_rows());
        let out = cg(
            &a,
            &r,
            &mut x,
            &pbj,
            &CgParams {
                rtol: 1e-10,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(out.converged);
        let mut res = r.clone();
        a.spmv_add(-1.0, &x, 1.0, &mut res);
        assert!(ops::norm2(&res) <= 1e-9 * ops::norm2(&r));
    }

    #[test]
    fn node_blocks_of_the_scalar_expansion_give_the_same_inverses() {
        for bs in [2, 3, 6] {
            let a = random_spd_block_tridiagonal(20, bs, 3);
            let blocked = PointBlockJacobi::new(&a).unwrap();
            let scalar = PointBlockJacobi::with_block_size(&a.to_scalar_blocks(), bs).unwrap();
            assert_eq!(scalar.block_size(), bs);
            assert_eq!(scalar.inverse_blocks(), blocked.inverse_blocks());
        }
        let a = random_spd_block_tridiagonal(5, 3, 1);
        assert!(PointBlockJacobi::with_block_size(&a, 2).is_err());
        assert!(PointBlockJacobi::with_block_size(&a.to_scalar_blocks(), 4).is_err());
    }

    #[test]
    fn rectangular_blocks_are_rejected() {
        let p = std::sync::Arc::new(linalg::BlockPattern::new(1, 1, vec![0, 1], vec![0]).unwrap());
        let a = Bsr::zeros(p, 3, 6);
        assert!(matches!(
            PointBlockJacobi::new(&a),
            Err(AmgError::NonSquareBlocks { .. })
        ));
    }
}
