//! Scalar storage of block matrices ([`crate::Storage::Scalar`]): new values of a block matrix copied
//! into its existing 1x1-block expansion (the layout of `Bsr::to_scalar_blocks`), without rebuilding
//! the pattern.

use crate::strength::split_rows;
use crate::AmgError;
use linalg::Bsr;
use rayon::prelude::*;

/// Writes the values of `src` into `dst`, which must carry the pattern of `src.to_scalar_blocks()`
/// (scalar row `br * i + r` holds row `r` of block row `i`'s blocks, in slot order). Parallel over
/// block rows; a pure copy.
pub(crate) fn expand_values(src: &Bsr, dst: &mut Bsr) -> Result<(), AmgError> {
    let (bc, bl) = (src.block_cols(), src.block_len());
    if dst.block_len() != 1
        || dst.n_rows() != src.n_rows()
        || dst.pattern().nnz() != src.values().len()
    {
        return Err(AmgError::DimensionMismatch {
            what: "scalar expansion: stored entries",
            expected: src.values().len(),
            found: dst.pattern().nnz() * dst.block_len(),
        });
    }
    let p = src.pattern();
    let lengths: Vec<usize> = p.row_ptr().windows(2).map(|w| (w[1] - w[0]) * bl).collect();
    split_rows(dst.values_mut(), &lengths)
        .into_par_iter()
        .enumerate()
        .for_each(|(i, out)| {
            let (lo, hi) = (p.row_ptr()[i], p.row_ptr()[i + 1]);
            let blocks = &src.values()[lo * bl..hi * bl];
            for (r, out_row) in out.chunks_exact_mut((hi - lo) * bc).enumerate() {
                for (o, blk) in out_row.chunks_exact_mut(bc).zip(blocks.chunks_exact(bl)) {
                    o.copy_from_slice(&blk[r * bc..(r + 1) * bc]);
                }
            }
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{rand_vec, random_spd_block_tridiagonal};

    #[test]
    fn new_values_land_where_to_scalar_blocks_puts_them() {
        let mut a = random_spd_block_tridiagonal(9, 3, 2);
        let mut s = a.to_scalar_blocks();
        let fresh = rand_vec(5, a.values().len());
        a.values_mut().copy_from_slice(&fresh);
        expand_values(&a, &mut s).unwrap();
        assert_eq!(s.values(), a.to_scalar_blocks().values());
        assert_eq!(s.to_dense(), a.to_dense());
        let mut wrong = random_spd_block_tridiagonal(8, 3, 2).to_scalar_blocks();
        assert!(expand_values(&a, &mut wrong).is_err());
    }
}
