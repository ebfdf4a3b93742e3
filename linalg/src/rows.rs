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

/// Rows of at most this many are built by one task of [`collect_rows`] and [`fill_rows`].
const ROWS_PER_COLLECT_TASK: usize = 256;

/// Fills rows of known lengths in place: `fill(i, row)` writes row `i`'s entries,
/// `entries[row_ptr[i]..row_ptr[i + 1]]`. Groups of rows run in parallel; the result does not
/// depend on the thread count. What [`collect_rows`] does where the lengths are known first,
/// without building the rows apart and copying them together.
///
/// # Panics
/// If `entries` holds fewer than `row_ptr[n_rows]` entries.
pub fn fill_rows<T: Send>(
    row_ptr: &[usize],
    entries: &mut [T],
    fill: impl Fn(usize, &mut [T]) + Sync,
) {
    use rayon::prelude::*;
    let base = row_ptr[0];
    split_rows(
        row_ptr,
        1,
        ROWS_PER_COLLECT_TASK,
        &mut entries[..row_ptr[row_ptr.len() - 1] - base],
    )
    .into_par_iter()
    .for_each(|(rows, group)| {
        let first = row_ptr[rows.start];
        for i in rows {
            fill(i, &mut group[row_ptr[i] - first..row_ptr[i + 1] - first]);
        }
    });
}

/// Builds `n_rows` rows independently and concatenates them in row order: `row(i, out)`
/// appends row `i`'s entries to `out` (empty on entry). Returns the row pointers
/// (`n_rows + 1`, from 0) and the entries. Groups of rows run in parallel; the result does
/// not depend on the thread count.
pub fn collect_rows<T: Send>(
    n_rows: usize,
    row: impl Fn(usize, &mut Vec<T>) + Sync,
) -> (Vec<usize>, Vec<T>) {
    use rayon::prelude::*;
    let groups: Vec<(Vec<usize>, Vec<T>)> = (0..n_rows.div_ceil(ROWS_PER_COLLECT_TASK))
        .into_par_iter()
        .map(|g| {
            let rows = g * ROWS_PER_COLLECT_TASK..((g + 1) * ROWS_PER_COLLECT_TASK).min(n_rows);
            let (mut ends, mut entries) = (Vec::with_capacity(rows.len()), Vec::new());
            let mut one = Vec::new();
            for i in rows {
                row(i, &mut one);
                entries.append(&mut one);
                ends.push(entries.len());
            }
            (ends, entries)
        })
        .collect();
    let mut row_ptr = Vec::with_capacity(n_rows + 1);
    row_ptr.push(0);
    let mut entries = Vec::with_capacity(groups.iter().map(|(_, e)| e.len()).sum());
    for (ends, group) in groups {
        let base = entries.len();
        row_ptr.extend(ends.iter().map(|&e| base + e));
        entries.extend(group);
    }
    (row_ptr, entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows filled in place are the rows collected, whatever the grouping.
    #[test]
    fn filled_rows_are_the_collected_rows() {
        let n = 3 * ROWS_PER_COLLECT_TASK + 17;
        let row = |i: usize, out: &mut Vec<(usize, usize)>| out.extend((0..i % 5).map(|j| (i, j)));
        let (ptr, collected) = collect_rows(n, row);
        let mut filled = vec![(0, 0); ptr[n]];
        fill_rows(&ptr, &mut filled, |i, r| {
            assert_eq!(r.len(), i % 5);
            r.iter_mut().enumerate().for_each(|(j, e)| *e = (i, j));
        });
        assert_eq!(filled, collected);
    }

    /// Rows of varying length (some empty) come back in order, whatever the grouping.
    #[test]
    fn collected_rows_are_the_rows_in_order() {
        let n = 3 * ROWS_PER_COLLECT_TASK + 17;
        let (ptr, entries) = collect_rows(n, |i, out: &mut Vec<(usize, usize)>| {
            out.extend((0..i % 5).map(|j| (i, j)));
        });
        let expected: Vec<(usize, usize)> = (0..n)
            .flat_map(|i| (0..i % 5).map(move |j| (i, j)))
            .collect();
        assert_eq!(entries, expected);
        assert_eq!(ptr.len(), n + 1);
        for i in 0..n {
            assert_eq!(ptr[i + 1] - ptr[i], i % 5);
            assert!(entries[ptr[i]..ptr[i + 1]].iter().all(|&(r, _)| r == i));
        }
        assert_eq!(collect_rows(0, |_, _: &mut Vec<u8>| {}), (vec![0], vec![]));
    }
}
