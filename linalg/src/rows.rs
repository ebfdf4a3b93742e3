//! Splitting per-slot storage into fixed groups of rows, for parallel row-wise phases (the host
//! kernels of this crate, and the host set-up stages of its users that fill CSR-like arrays).

use std::ops::Range;

/// Splits `values` (`block_len` entries per slot, slots ordered by `row_ptr`) into consecutive groups
/// of `rows_per_task` rows (>= 1). Each item is the group's row range and its values. The split
/// depends only on the sizes, never on the thread count.
///
/// # Panics
/// If `values` holds fewer than `row_ptr[n_rows] * block_len` entries.
pub fn split_rows<'a, T>(
    row_ptr: &[usize],
    block_len: usize,
    rows_per_task: usize,
    mut values: &'a mut [T],
) -> Vec<(Range<usize>, &'a mut [T])> {
    let n_rows = row_ptr.len() - 1;
    let mut tasks = Vec::with_capacity(n_rows.div_ceil(rows_per_task));
    for first in (0..n_rows).step_by(rows_per_task) {
        let last = (first + rows_per_task).min(n_rows);
        let (head, tail) = values.split_at_mut((row_ptr[last] - row_ptr[first]) * block_len);
        tasks.push((first..last, head));
        values = tail;
    }
    tasks
}
