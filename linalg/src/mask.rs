//! [`DofMask`]: the constrained unknowns of a blocked system (Dirichlet conditions), built once,
//! with the kernels that act on them: zeroing and copying the constrained entries of vectors
//! (residuals, corrections, the lifted Dirichlet increment) and their symmetric elimination from
//! a square block matrix through an [`EliminationPlan`] (the blocks they touch, per pattern).

use std::sync::Arc;

use crate::backend::host;
use crate::device::{check_same_device, unsupported, ByPrecision::Double, Placed};
use crate::vector::check_len;
use crate::{BlockPattern, Bsr, LinalgError, Vector};

/// Largest block size a mask covers (one bit per unknown of a block).
pub const MAX_MASK_BLOCK: usize = 8;

/// Which unknowns of each block are constrained: bit `c` of `bits[i]` marks unknown `c` of block
/// `i` (scalar index `bs * i + c`).
///
/// Invariant: `1 <= bs <= MAX_MASK_BLOCK` and no bit at or above `bs` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DofMask {
    bs: usize,
    bits: Vec<u8>,
}

/// The fraction of its diagonal entry's magnitude that a constrained unknown keeps in
/// [`DofMask::eliminate`].
pub const ELIMINATED_DIAGONAL_FRACTION: f64 = 1e-3;

/// The diagonal entry a constrained unknown keeps in [`DofMask::eliminate`], from its value
/// before: [`ELIMINATED_DIAGONAL_FRACTION`] of its magnitude, one where that is zero or not
/// finite (no scale to keep). The operator's own scale, so that a matrix in other units is the
/// same matrix times the units' factor, eliminated rows included (a diagonal of one weighed a
/// length against a stiffness: CG with the AMG took other iterations in other units); a small
/// fraction of it, so that the constrained unknowns add nothing noticeable to the AMG's coarse
/// operators `P^T A P` (as if left out of them, as ML and MueLu leave Dirichlet rows out of
/// their aggregates: with the whole diagonal, Newton on indefinite tangents took more
/// iterations). The device twin is `assembly/cuda/constraints.cu`'s.
pub(crate) fn eliminated_diagonal(before: f64) -> f64 {
    if before != 0.0 && before.is_finite() {
        ELIMINATED_DIAGONAL_FRACTION * before.abs()
    } else {
        1.0
    }
}

/// A block of a matrix that a mask touches: its slot and the masked rows and columns in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MaskedBlock {
    pub slot: u32,
    pub row_bits: u8,
    pub col_bits: u8,
    pub diagonal: bool,
}

/// The blocks of one pattern a [`DofMask`] touches (those in a masked block row or column), in
/// slot order: the symbolic part of [`DofMask::eliminate`], built once per pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EliminationPlan {
    pattern: Arc<BlockPattern>,
    touched: Vec<MaskedBlock>,
}

impl EliminationPlan {
    /// The pattern the plan was built for.
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Number of blocks the elimination writes.
    pub fn n_touched(&self) -> usize {
        self.touched.len()
    }
}

impl DofMask {
    /// A mask of blocks of `bs` unknowns from one bit set per block. Errors if `bs` is not in
    /// `1..=MAX_MASK_BLOCK` or a bit names an unknown beyond the block.
    pub fn new(bs: usize, bits: Vec<u8>) -> Result<Self, LinalgError> {
        if !(1..=MAX_MASK_BLOCK).contains(&bs) {
            return Err(LinalgError::InvalidBlockSize {
                block_rows: bs,
                block_cols: bs,
            });
        }
        if let Some((block, &b)) = bits
            .iter()
            .enumerate()
            .find(|(_, &b)| bs < MAX_MASK_BLOCK && b >> bs != 0)
        {
            return Err(LinalgError::InvalidMask {
                block,
                bits: b,
                block_size: bs,
            });
        }
        Ok(Self { bs, bits })
    }

    /// Unknowns per block.
    pub fn block_size(&self) -> usize {
        self.bs
    }

    /// Number of blocks.
    pub fn n_blocks(&self) -> usize {
        self.bits.len()
    }

    /// The mask of block `i` (bit `c`: unknown `c` constrained).
    pub fn bits(&self, i: usize) -> u8 {
        self.bits[i]
    }

    /// Number of constrained unknowns.
    pub fn n_constrained(&self) -> usize {
        self.bits.iter().map(|m| m.count_ones() as usize).sum()
    }

    /// Sets the constrained entries of `v` to zero.
    pub fn zero(&self, v: &mut Vector) -> Result<(), LinalgError> {
        check_len("DofMask::zero", v, self.bs * self.bits.len())?;
        match v.storage_mut() {
            Placed::Host(v) => host::mask::zero(self.bs, &self.bits, v),
            Placed::Cuda(..) => return Err(unsupported("DofMask::zero", &v.device())),
        }
        Ok(())
    }

    /// Copies the constrained entries of `from` into `to` (the other entries of `to` stay).
    pub fn copy(&self, from: &Vector, to: &mut Vector) -> Result<(), LinalgError> {
        let n = self.bs * self.bits.len();
        check_len("DofMask::copy: from", from, n)?;
        check_len("DofMask::copy: to", to, n)?;
        check_same_device("DofMask::copy", &to.device(), &from.device())?;
        match (from.storage(), to.storage_mut()) {
            (Placed::Host(f), Placed::Host(t)) => host::mask::copy(self.bs, &self.bits, f, t),
            _ => return Err(unsupported("DofMask::copy", &from.device())),
        }
        Ok(())
    }

    /// The blocks of `pattern` (square, one block row per mask block) that [`Self::eliminate`]
    /// writes.
    pub fn elimination_plan(
        &self,
        pattern: &Arc<BlockPattern>,
    ) -> Result<EliminationPlan, LinalgError> {
        let n = self.bits.len();
        for (what, found) in [
            (
                "DofMask::elimination_plan: block rows",
                pattern.n_block_rows(),
            ),
            (
                "DofMask::elimination_plan: block cols",
                pattern.n_block_cols(),
            ),
        ] {
            if found != n {
                return Err(LinalgError::DimensionMismatch {
                    what,
                    expected: n,
                    found,
                });
            }
        }
        if u32::try_from(pattern.nnz()).is_err() {
            return Err(LinalgError::DimensionTooLarge {
                what: "DofMask::elimination_plan: blocks",
                value: pattern.nnz(),
            });
        }
        let mut touched = Vec::new();
        for i in 0..n {
            let first = pattern.row_ptr()[i];
            for (t, &j) in pattern.row(i).iter().enumerate() {
                let (row_bits, col_bits) = (self.bits[i], self.bits[j as usize]);
                if row_bits != 0 || col_bits != 0 {
                    touched.push(MaskedBlock {
                        slot: (first + t) as u32,
                        row_bits,
                        col_bits,
                        diagonal: j as usize == i,
                    });
                }
            }
        }
        Ok(EliminationPlan {
            pattern: pattern.clone(),
            touched,
        })
    }

    /// Symmetric elimination in `k` (square, `bs x bs` blocks, on the plan's pattern): every
    /// constrained row and column becomes zero but its diagonal entry, which keeps
    /// [`ELIMINATED_DIAGONAL_FRACTION`] of its magnitude (one where it was zero). The pattern is
    /// unchanged.
    pub fn eliminate(&self, plan: &EliminationPlan, k: &mut Bsr) -> Result<(), LinalgError> {
        if !BlockPattern::same(&plan.pattern, k.pattern()) {
            return Err(LinalgError::PatternMismatch {
                what: "DofMask::eliminate",
            });
        }
        if k.block_rows() != self.bs || k.block_cols() != self.bs {
            return Err(LinalgError::DimensionMismatch {
                what: "DofMask::eliminate: block size",
                expected: self.bs,
                found: k.block_rows(),
            });
        }
        let pattern = k.pattern().clone();
        match k.storage_mut() {
            Placed::Host(Double(values)) => {
                host::mask::eliminate(&pattern, self.bs, &plan.touched, values)
            }
            _ => return Err(unsupported("DofMask::eliminate", &k.device())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_kernels_touch_only_masked_entries() {
        let mask = DofMask::new(3, vec![0b010, 0, 0b101]).unwrap();
        assert_eq!(mask.n_constrained(), 3);
        let mut v = Vector::from_vec((1..=9).map(f64::from).collect());
        mask.zero(&mut v).unwrap();
        assert_eq!(
            v.host().unwrap(),
            &[1.0, 0.0, 3.0, 4.0, 5.0, 6.0, 0.0, 8.0, 0.0]
        );
        let from = Vector::from_vec(vec![-1.0; 9]);
        mask.copy(&from, &mut v).unwrap();
        assert_eq!(
            v.host().unwrap(),
            &[1.0, -1.0, 3.0, 4.0, 5.0, 6.0, -1.0, 8.0, -1.0]
        );
        assert!(mask.zero(&mut Vector::zeros(8)).is_err());
        assert!(DofMask::new(2, vec![0b100]).is_err());
        assert!(DofMask::new(0, vec![]).is_err());
    }

    #[test]
    fn elimination_is_symmetric_and_keeps_the_pattern() {
        // Two nodes, full 6x6 coupling; component y of node 1 constrained.
        let dense: Vec<f64> = (0..36).map(|e| 1.0 + (e / 6 + e % 6) as f64).collect();
        let mut k = Bsr::from_dense(&dense, 6, 6, 3, 3).unwrap();
        let mask = DofMask::new(3, vec![0, 0b010]).unwrap();
        let plan = mask.elimination_plan(k.pattern()).unwrap();
        assert_eq!(plan.n_touched(), 3);
        mask.eliminate(&plan, &mut k).unwrap();
        let out = k.to_dense().unwrap();
        let fixed = 4;
        for i in 0..6 {
            for j in 0..6 {
                let want = if i == fixed || j == fixed {
                    if i == j {
                        ELIMINATED_DIAGONAL_FRACTION * dense[6 * i + j] // the operator's scale
                    } else {
                        0.0
                    }
                } else {
                    dense[6 * i + j]
                };
                assert_eq!(out[6 * i + j], want, "entry ({i},{j})");
            }
        }
        // a diagonal that gives no scale becomes one; a negative one gives its magnitude
        assert_eq!(
            [0.0, f64::NAN, f64::INFINITY, -2.5, 1e-300].map(eliminated_diagonal),
            [
                1.0,
                1.0,
                1.0,
                ELIMINATED_DIAGONAL_FRACTION * 2.5,
                ELIMINATED_DIAGONAL_FRACTION * 1e-300
            ]
        );
        let diagonal = BlockPattern::new(2, 2, vec![0, 1, 2], vec![0, 1]).unwrap();
        let mut other = Bsr::zeros(Arc::new(diagonal), 3, 3);
        assert!(mask.eliminate(&plan, &mut other).is_err());
    }
}
