//! Block transpose `A^T`: a symbolic plan (pattern of `A^T` and the slot permutation) and a numeric
//! step that copies every block transposed. `A^T` has blocks of `A.block_cols() x A.block_rows()`.

use std::sync::Arc;

use crate::backend::host;
use crate::device::{check_same_device, unsupported, ByPrecision::Double, Placed};
use crate::{BlockPattern, Bsr, LinalgError};

/// Plan of `A^T` for one pattern of `A`.
///
/// Invariant: `source_slot[t]` is the slot of `A` whose block `A^T` stores (transposed) in slot `t`;
/// within each row of `A^T` the source rows ascend.
#[derive(Debug, Clone)]
pub struct TransposePlan {
    source: Arc<BlockPattern>,
    pattern: Arc<BlockPattern>,
    source_slot: Vec<usize>,
}

impl TransposePlan {
    /// Pattern of `A` the plan was built for.
    pub fn source(&self) -> &Arc<BlockPattern> {
        &self.source
    }

    /// Pattern of `A^T`.
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// For each slot of `A^T`, the slot of `A` it comes from.
    pub fn source_slots(&self) -> &[usize] {
        &self.source_slot
    }
}

/// Symbolic transpose of `a` (a counting sort by column, `O(nnz + n_block_cols)`). The plan keeps a
/// copy of `a` to check the matrices given to [`transpose_numeric`].
pub fn transpose_symbolic(a: &BlockPattern) -> TransposePlan {
    transpose_symbolic_shared(Arc::new(a.clone()))
}

/// [`transpose_symbolic`] sharing the caller's pattern instead of copying it.
fn transpose_symbolic_shared(a: Arc<BlockPattern>) -> TransposePlan {
    let (pattern, source_slot) = transpose_pattern(&a, |k| k);
    TransposePlan {
        source: a,
        pattern: Arc::new(pattern),
        source_slot,
    }
}

/// Pattern of `A^T` and, for each of its slots, `slot(k)` of the slot `k` of `A` it comes from: a
/// counting sort by column, `O(nnz + n_block_cols)`; source rows ascend within each row of `A^T`.
pub(crate) fn transpose_pattern<S: Copy + Default>(
    a: &BlockPattern,
    slot: impl Fn(usize) -> S,
) -> (BlockPattern, Vec<S>) {
    let (nr, nc) = (a.n_block_rows(), a.n_block_cols());
    let mut row_ptr = vec![0usize; nc + 1];
    for &j in a.col_idx() {
        row_ptr[j as usize + 1] += 1;
    }
    for j in 0..nc {
        row_ptr[j + 1] += row_ptr[j];
    }
    let mut next = row_ptr[..nc].to_vec();
    let mut col_idx = vec![0u32; a.nnz()];
    let mut source_slot = vec![S::default(); a.nnz()];
    for i in 0..nr {
        for k in a.row_ptr()[i]..a.row_ptr()[i + 1] {
            let pos = &mut next[a.col_idx()[k] as usize];
            col_idx[*pos] = i as u32;
            source_slot[*pos] = slot(k);
            *pos += 1;
        }
    }
    (
        BlockPattern::new_trusted(nc, nr, row_ptr, col_idx),
        source_slot,
    )
}

/// Fills `at` (on `plan.pattern()`, blocks `a.block_cols() x a.block_rows()`) with `A^T`; parallel
/// over fixed groups of slots.
pub fn transpose_numeric(plan: &TransposePlan, a: &Bsr, at: &mut Bsr) -> Result<(), LinalgError> {
    if !BlockPattern::same(a.pattern(), &plan.source) {
        return Err(LinalgError::PatternMismatch {
            what: "transpose_numeric: A",
        });
    }
    if !BlockPattern::same(at.pattern(), &plan.pattern) {
        return Err(LinalgError::PatternMismatch {
            what: "transpose_numeric: A^T",
        });
    }
    let (br, bc) = (a.block_rows(), a.block_cols());
    if at.block_rows() != bc {
        return Err(LinalgError::DimensionMismatch {
            what: "transpose_numeric: A^T block rows",
            expected: bc,
            found: at.block_rows(),
        });
    }
    if at.block_cols() != br {
        return Err(LinalgError::DimensionMismatch {
            what: "transpose_numeric: A^T block cols",
            expected: br,
            found: at.block_cols(),
        });
    }
    check_same_device("transpose_numeric: A^T", &a.device(), &at.device())?;
    match (a.storage(), at.storage_mut()) {
        (Placed::Host(Double(src)), Placed::Host(Double(out))) => {
            host::products::transpose_blocks(&plan.source_slot, br, bc, src, out)
        }
        _ => return Err(unsupported("transpose_numeric", &a.device())),
    }
    Ok(())
}

/// `A^T` as a new matrix.
pub fn transpose(a: &Bsr) -> Result<Bsr, LinalgError> {
    let plan = transpose_symbolic_shared(a.pattern().clone());
    let mut at = Bsr::zeros(plan.pattern.clone(), a.block_cols(), a.block_rows());
    transpose_numeric(&plan, a, &mut at)?;
    Ok(at)
}
