//! Block transpose `A^T`: a symbolic plan (pattern of `A^T` and the slot permutation) and a numeric
//! step that copies every block transposed. `A^T` has blocks of `A.block_cols() x A.block_rows()`.

use std::sync::{Arc, OnceLock};

use crate::backend::cuda::DeviceBuffer;
use crate::backend::host;
use crate::device::{check_same_device, unsupported, ByPrecision::Double, DeviceMirror, Placed};
use crate::{BlockPattern, Bsr, LinalgError};

/// Plan of `A^T` for one pattern of `A`.
///
/// Invariant: `source_slot[t]` is the slot of `A` whose block `A^T` stores (transposed) in slot `t`;
/// within each row of `A^T` the source rows ascend. A plan made on a GPU
/// ([`TransposePlan::new_on`]) holds the slots there and makes the host's only when a host
/// transpose (or [`TransposePlan::source_slots`]) asks: the same slots.
#[derive(Debug, Clone)]
pub struct TransposePlan {
    source: Arc<BlockPattern>,
    pattern: Arc<BlockPattern>,
    source_slot: OnceLock<Vec<usize>>,
    /// `source_slot` on a GPU (as `u32`), made there or uploaded by the first numeric
    /// transpose there.
    device: DeviceMirror<DeviceBuffer<u32>>,
}

impl TransposePlan {
    /// [`transpose_symbolic`] sharing the caller's pattern (no copy): a plan to keep for later
    /// numeric transposes of matrices on `a`.
    pub fn new(a: &Arc<BlockPattern>) -> Self {
        transpose_symbolic_shared(a.clone())
    }

    /// [`TransposePlan::new`] made where `device` says: on a GPU the transposed pattern and the
    /// slot map are made there (`linalg/cuda/symbolic.cu`, the host's counting sort's pattern
    /// and slots) from `a`'s device copy (uploaded unless there already), and only the pattern
    /// comes down (its host copy, whose device mirror is the one made there); the host's slots
    /// are made only if a host transpose asks for them. On the host: [`TransposePlan::new`].
    pub fn new_on(device: &crate::Device, a: &Arc<BlockPattern>) -> Result<Self, LinalgError> {
        let ctx = match device {
            // an empty pattern (a rank without rows or ghost columns) has nothing to sort
            crate::Device::Cuda(ctx) if a.nnz() > 0 => ctx,
            _ => return Ok(Self::new(a)),
        };
        let da = crate::device::device_pattern(ctx, a)?;
        let (pattern, slots) = crate::backend::cuda::transpose_pattern(ctx, &da)?;
        let pattern = Arc::new(Arc::new(pattern).download_trusted(ctx)?);
        let plan = Self {
            source: a.clone(),
            pattern,
            source_slot: OnceLock::new(),
            device: DeviceMirror::new(),
        };
        plan.device.install(ctx, Arc::new(slots));
        Ok(plan)
    }

    /// Pattern of `A` the plan was built for.
    pub fn source(&self) -> &Arc<BlockPattern> {
        &self.source
    }

    /// Pattern of `A^T`.
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// For each slot of `A^T`, the slot of `A` it comes from (made on the host at the first
    /// call where the plan was made on a GPU).
    pub fn source_slots(&self) -> &[usize] {
        self.source_slot
            .get_or_init(|| transpose_pattern(&self.source, |k| k).1)
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
        source_slot: OnceLock::from(source_slot),
        device: DeviceMirror::new(),
    }
}

/// Blocks of `A` per piece of the parallel transpose ([`transpose_pattern`]); smaller patterns
/// take the serial counting sort.
const TRANSPOSE_BLOCKS_PER_PIECE: usize = 1 << 16;

/// Pattern of `A^T` and, for each of its slots, `slot(k)` of the slot `k` of `A` it comes from: a
/// counting sort by column, `O(nnz + n_block_cols)`; source rows ascend within each row of `A^T`.
/// A large pattern is sorted in pieces, in parallel: consecutive rows of `A` bucket their
/// blocks by ranges of columns, then each range of columns (a consecutive range of `A^T`'s
/// slots) sorts its buckets in row order; the same pattern and slots as the serial sort, for
/// any number of pieces.
pub(crate) fn transpose_pattern<S: Copy + Default + Send + Sync>(
    a: &BlockPattern,
    slot: impl Fn(usize) -> S + Sync,
) -> (BlockPattern, Vec<S>) {
    let (nr, nc, nnz) = (a.n_block_rows(), a.n_block_cols(), a.nnz());
    let pieces = (nnz / TRANSPOSE_BLOCKS_PER_PIECE).min(64);
    if pieces < 2 || nc < pieces {
        return transpose_pattern_serial(a, slot);
    }
    use rayon::prelude::*;
    let (row_ptr, col_idx) = (a.row_ptr(), a.col_idx());
    // piece `t` of rows: rows[t]..rows[t + 1], about nnz / pieces blocks each; columns
    // `b * width..(b + 1) * width` make bucket `b`
    let rows: Vec<usize> = (0..=pieces)
        .map(|t| row_ptr.partition_point(|&p| p < t * nnz / pieces).min(nr))
        .collect();
    let width = nc.div_ceil(pieces);
    let buckets: Vec<Vec<Vec<(u32, u32, usize)>>> = (0..pieces)
        .into_par_iter()
        .map(|t| {
            let mut out = vec![Vec::new(); pieces];
            for i in rows[t]..rows[t + 1] {
                let slots = row_ptr[i]..row_ptr[i + 1];
                for (k, &j) in slots.clone().zip(&col_idx[slots]) {
                    out[j as usize / width].push((j, i as u32, k));
                }
            }
            out
        })
        .collect();
    // bucket `b`'s slots of `A^T` start after the blocks of the columns before it
    let sizes: Vec<usize> = (0..pieces)
        .map(|b| buckets.iter().map(|piece| piece[b].len()).sum())
        .collect();
    let mut col_out = vec![0u32; nnz];
    let mut slot_out = vec![S::default(); nnz];
    let mut counts = vec![0usize; nc];
    let (mut col_rest, mut slot_rest, mut count_rest) =
        (&mut col_out[..], &mut slot_out[..], &mut counts[..]);
    let mut parts = Vec::with_capacity(pieces);
    for (b, &size) in sizes.iter().enumerate() {
        let cols_here = width.min(nc - (b * width).min(nc));
        let (c, cr) = col_rest.split_at_mut(size);
        let (s, sr) = slot_rest.split_at_mut(size);
        let (n, nr_) = count_rest.split_at_mut(cols_here);
        parts.push((b, c, s, n));
        (col_rest, slot_rest, count_rest) = (cr, sr, nr_);
    }
    parts.into_par_iter().for_each(|(b, cols, slots, count)| {
        let first_col = b * width;
        for piece in &buckets {
            for &(j, _, _) in &piece[b] {
                count[j as usize - first_col] += 1;
            }
        }
        let mut next: Vec<usize> = count
            .iter()
            .scan(0, |at, &c| {
                let start = *at;
                *at += c;
                Some(start)
            })
            .collect();
        for piece in &buckets {
            for &(j, i, k) in &piece[b] {
                let pos = &mut next[j as usize - first_col];
                cols[*pos] = i;
                slots[*pos] = slot(k);
                *pos += 1;
            }
        }
    });
    drop(buckets);
    let mut t_ptr = Vec::with_capacity(nc + 1);
    t_ptr.push(0);
    for j in 0..nc {
        t_ptr.push(t_ptr[j] + counts[j]);
    }
    (BlockPattern::new_trusted(nc, nr, t_ptr, col_out), slot_out)
}

/// [`transpose_pattern`]'s serial counting sort.
fn transpose_pattern_serial<S: Copy + Default>(
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

/// Fills `at` (on `plan.pattern()`, blocks `a.block_cols() x a.block_rows()`) with `A^T`, where
/// both live: on the host parallel over fixed groups of slots, on a GPU through the plan's slot
/// map uploaded there once (the same copies: the host's bits).
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
            host::products::transpose_blocks(plan.source_slots(), br, bc, src, out)
        }
        (Placed::Cuda(_, Double(src)), Placed::Cuda(ctx, Double(out))) => {
            let slots = plan.device.get_or_upload(ctx, || {
                let source = plan.source_slots();
                let slots = source
                    .iter()
                    .map(|&k| u32::try_from(k))
                    .collect::<Result<Vec<u32>, _>>()
                    .map_err(|_| LinalgError::DimensionTooLarge {
                        what: "device transpose: number of blocks",
                        value: source.len(),
                    })?;
                ctx.upload(&slots)
            })?;
            crate::backend::cuda::galerkin::gather_transposed_blocks(
                ctx,
                (br, bc),
                &slots,
                src.values(),
                out.values_mut(),
            )?;
        }
        _ => return Err(unsupported("transpose_numeric", &a.device())),
    }
    Ok(())
}

/// `A^T` as a new matrix, where `a` lives (on a GPU only the pattern is made on the host).
pub fn transpose(a: &Bsr) -> Result<Bsr, LinalgError> {
    let plan = transpose_symbolic_shared(a.pattern().clone());
    let mut at = Bsr::zeros_on(
        &a.device(),
        plan.pattern.clone(),
        a.block_cols(),
        a.block_rows(),
    )?;
    transpose_numeric(&plan, a, &mut at)?;
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pattern of `rows x cols` blocks, `per_row` pseudo-random columns a row (some rows
    /// empty, columns skewed towards the first ones when `skewed`).
    fn pattern(rows: usize, cols: usize, per_row: usize, skewed: bool) -> BlockPattern {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let (mut row_ptr, mut col_idx) = (vec![0], Vec::new());
        for i in 0..rows {
            let mut row: Vec<u32> = (0..if i % 7 == 3 { 0 } else { per_row })
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let r = (state >> 33) as usize % cols;
                    (if skewed { r % (cols / 50 + 1) } else { r }) as u32
                })
                .collect();
            row.sort_unstable();
            row.dedup();
            col_idx.extend(row);
            row_ptr.push(col_idx.len());
        }
        BlockPattern::new(rows, cols, row_ptr, col_idx).unwrap()
    }

    /// The transpose sorted in pieces is the serial counting sort's, pattern and slots, for
    /// spread and skewed columns and more pieces than some buckets have columns.
    #[test]
    fn the_pieces_transpose_is_the_serial_one() {
        for (rows, cols, per_row, skewed) in [
            (6000, 4000, 60, false),
            (6000, 4000, 60, true),
            (40_000, 70, 20, false),
            (3000, 200_000, 90, false),
        ] {
            let a = pattern(rows, cols, per_row, skewed);
            assert!(a.nnz() >= 2 * TRANSPOSE_BLOCKS_PER_PIECE, "{}", a.nnz());
            let (pieces, slots) = transpose_pattern(&a, |k| k as u32);
            let (serial, serial_slots) = transpose_pattern_serial(&a, |k| k as u32);
            assert_eq!(pieces, serial);
            assert_eq!(slots, serial_slots);
        }
    }
}
