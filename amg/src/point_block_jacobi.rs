//! Point-block Jacobi: `M = D`, the block diagonal of `A` (one `bs x bs` block per node).
//!
//! Calling order: [`PointBlockJacobi::new`] once (inverts every diagonal block), then
//! [`PointBlockJacobi::update`] for new values of the same operator. The blocks are a
//! [`linalg::BlockDiagonal`]: extraction, inversion and application are `linalg` operations,
//! parallel over block rows and deterministic.

use crate::{AmgError, Preconditioner};
use linalg::{BlockDiagonal, Bsr, LinalgError, Vector};

/// Inverses of the diagonal blocks of a square-block operator.
#[derive(Debug, Clone)]
pub struct PointBlockJacobi {
    /// `D^{-1}`: one `bs x bs` inverse per block row, on the operator's device.
    inv: BlockDiagonal,
}

impl PointBlockJacobi {
    /// Inverts every diagonal block of `a` (LU with partial pivoting). A structurally missing or
    /// singular diagonal block is an error naming the block row (reported as level 0; the hierarchy
    /// substitutes its own level).
    pub fn new(a: &Bsr) -> Result<Self, AmgError> {
        Self::with_block_size(a, a.block_rows())
    }

    /// Inverts the `bs x bs` node blocks on the diagonal of `a`, whose stored blocks are either
    /// `bs x bs` or `1 x 1` (scalar storage of an operator with `bs` unknowns per node).
    pub fn with_block_size(a: &Bsr, bs: usize) -> Result<Self, AmgError> {
        Ok(Self {
            inv: inverted_diagonal(a, bs)?,
        })
    }

    /// Recomputes the inverses from the values of `a` (any square-block operator; the block count may
    /// change). On error `self` is left unchanged.
    pub fn update(&mut self, a: &Bsr) -> Result<(), AmgError> {
        self.update_with_block_size(a, a.block_rows())
    }

    /// [`Self::update`] for node blocks of size `bs`, stored as `bs x bs` or as `1 x 1` blocks.
    pub fn update_with_block_size(&mut self, a: &Bsr, bs: usize) -> Result<(), AmgError> {
        if bs != self.inv.block_size() {
            self.inv = BlockDiagonal::inverse_of_diagonal_in(a, bs, self.inv.precision())
                .map_err(singular_block)?;
            return Ok(());
        }
        check_node_blocks(a, bs)?;
        self.inv.refresh_inverse(a).map_err(singular_block)
    }

    /// Stores the inverses in `precision` (fp32 for mixed-precision AMG; later updates keep it).
    pub fn set_precision(&mut self, precision: linalg::Precision) -> Result<(), AmgError> {
        if self.inv.precision() != precision {
            self.inv = self.inv.to_precision(precision)?;
        }
        Ok(())
    }

    /// Block size `bs`.
    pub fn block_size(&self) -> usize {
        self.inv.block_size()
    }

    /// Number of diagonal blocks.
    pub fn n_blocks(&self) -> usize {
        self.inv.n_blocks()
    }

    /// The inverse blocks `D^{-1}`.
    pub fn inverse(&self) -> &BlockDiagonal {
        &self.inv
    }

    /// `x = omega D^{-1} r + beta x` (with `beta == 0` the old `x` is not read). Errors if a
    /// length differs from `n_blocks * bs`.
    pub fn apply_scaled(
        &self,
        omega: f64,
        r: &Vector,
        beta: f64,
        x: &mut Vector,
    ) -> Result<(), AmgError> {
        Ok(self.inv.apply(omega, r, beta, x)?)
    }
}

impl Preconditioner for PointBlockJacobi {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        self.apply_scaled(1.0, r, 0.0, z)
    }
}

/// The inverses of `a`'s `bs x bs` node blocks (stored as `bs x bs` or `1 x 1` blocks).
/// The inverses of `a`'s `bs x bs` node blocks (stored as `bs x bs` or `1 x 1` blocks), on
/// `a`'s device.
fn inverted_diagonal(a: &Bsr, bs: usize) -> Result<BlockDiagonal, AmgError> {
    check_node_blocks(a, bs)?;
    BlockDiagonal::inverse_of_diagonal(a, bs).map_err(singular_block)
}

fn check_node_blocks(a: &Bsr, bs: usize) -> Result<(), AmgError> {
    let stored = a.block_rows();
    if a.block_cols() != stored || (stored != bs && stored != 1) || bs == 0 {
        return Err(AmgError::NonSquareBlocks {
            what: "point-block Jacobi (stored blocks must be bs x bs or 1 x 1)",
            block_rows: stored,
            block_cols: a.block_cols(),
        });
    }
    Ok(())
}

/// A singular block as the AMG error (reported as level 0; the hierarchy substitutes its own).
fn singular_block(e: LinalgError) -> AmgError {
    match e {
        LinalgError::SingularBlock {
            block,
            column,
            pivot,
        } => AmgError::SingularDiagonalBlock {
            level: 0,
            row: block,
            column,
            pivot,
        },
        e => e.into(),
    }
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
            pbj.apply(&r, &mut z).unwrap();
            // D z must equal r block by block.
            let diagonal = BlockDiagonal::from_diagonal(&a, bs).unwrap();
            let d = diagonal.host().unwrap();
            for blk in 0..30 {
                for i in 0..bs {
                    let dz: f64 = (0..bs)
                        .map(|j| d[blk * bs * bs + i * bs + j] * z.host().unwrap()[blk * bs + j])
                        .sum();
                    assert!(
                        (dz - r.host().unwrap()[blk * bs + i]).abs() < 1e-12,
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
        a.host_block_mut(k).unwrap().fill(0.0);
        match PointBlockJacobi::new(&a) {
            Err(AmgError::SingularDiagonalBlock { row, .. }) => assert_eq!(row, 4),
            other => panic!("expected a singular block error, got {other:?}"),
        }
    }

    #[test]
    fn update_tracks_new_values_and_pcg_converges() {
        let mut a = random_spd_block_tridiagonal(50, 3, 9);
        let mut pbj = PointBlockJacobi::new(&a).unwrap();
        a.scale(4.0).unwrap();
        pbj.update(&a).unwrap();
        let r = Vector::from_vec(rand_vec(8, a.n_rows()));
        let mut z = Vector::zeros(a.n_rows());
        pbj.apply(&r, &mut z).unwrap();
        let mut z_fresh = Vector::zeros(a.n_rows());
        PointBlockJacobi::new(&a)
            .unwrap()
            .apply(&r, &mut z_fresh)
            .unwrap();
        assert_eq!(z, z_fresh);
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
        a.spmv_add(-1.0, &x, 1.0, &mut res).unwrap();
        assert!(ops::norm2(&res).unwrap() <= 1e-9 * ops::norm2(&r).unwrap());
    }

    #[test]
    fn node_blocks_of_the_scalar_expansion_give_the_same_inverses() {
        for bs in [2, 3, 6] {
            let a = random_spd_block_tridiagonal(20, bs, 3);
            let blocked = PointBlockJacobi::new(&a).unwrap();
            let scalar =
                PointBlockJacobi::with_block_size(&a.to_scalar_blocks().unwrap(), bs).unwrap();
            assert_eq!(scalar.block_size(), bs);
            assert_eq!(scalar.inverse(), blocked.inverse());
        }
        let a = random_spd_block_tridiagonal(5, 3, 1);
        assert!(PointBlockJacobi::with_block_size(&a, 2).is_err());
        assert!(PointBlockJacobi::with_block_size(&a.to_scalar_blocks().unwrap(), 4).is_err());
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
