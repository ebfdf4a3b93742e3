//! Parallel prefix sums and permutation inverses for the host set-up phases that build CSR-like
//! arrays (patterns, plans, views): the serial loops over every row they replace held a rank's
//! set-up at one thread's pace. Every result is the serial loop's, at any thread count.

use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Rows a task of [`row_offsets`] scans (its partial sums, then its offset added).
const ROWS_PER_SCAN_TASK: usize = 1 << 14;

/// The offsets (`n + 1` of them, from 0; the total last) of `n` rows of `len(i)` entries: the
/// lengths and the scan in parallel over groups of rows (each group's running sums, the groups'
/// totals summed in order, each group's offset added).
pub fn row_offsets(n: usize, len: impl Fn(usize) -> usize + Sync) -> Vec<usize> {
    let mut ptr = vec![0usize; n + 1];
    ptr[1..]
        .par_chunks_mut(ROWS_PER_SCAN_TASK)
        .enumerate()
        .for_each(|(task, sums)| {
            let first = task * ROWS_PER_SCAN_TASK;
            let mut sum = 0;
            for (j, s) in sums.iter_mut().enumerate() {
                sum += len(first + j);
                *s = sum;
            }
        });
    let mut before = 0;
    let task_offsets: Vec<usize> = ptr[1..]
        .chunks(ROWS_PER_SCAN_TASK)
        .map(|sums| {
            let offset = before;
            before += sums[sums.len() - 1];
            offset
        })
        .collect();
    ptr[1..]
        .par_chunks_mut(ROWS_PER_SCAN_TASK)
        .zip(task_offsets)
        .filter(|(_, offset)| *offset > 0)
        .for_each(|(sums, offset)| sums.iter_mut().for_each(|s| *s += offset));
    ptr
}

/// `counts`' exclusive prefix sums (`counts.len() + 1` of them, the total last).
pub fn exclusive_sums(counts: &[usize]) -> Vec<usize> {
    row_offsets(counts.len(), |i| counts[i])
}

/// The inverse of the permutation `order` of `0..order.len()`: `inverse[order[i]] == i`.
///
/// # Panics
/// If an entry of `order` is `order.len()` or more. (An entry twice leaves some other's place
/// unwritten: 0.)
pub fn inverse_permutation(order: &[u32]) -> Vec<u32> {
    let inverse: Vec<AtomicU32> = (0..order.len())
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    order
        .par_iter()
        .enumerate()
        .for_each(|(i, &v)| inverse[v as usize].store(i as u32, Ordering::Relaxed));
    inverse.into_par_iter().map(AtomicU32::into_inner).collect()
}

/// The first entry of `p` (in order) that is `p.len()` or more or repeats an earlier one;
/// `None` where `p` is a permutation of `0..p.len()`. Checked in parallel; where it fails the
/// serial walk names the entry.
pub(crate) fn first_not_permutation(p: &[u32]) -> Option<u32> {
    let n = p.len();
    let seen: Vec<AtomicBool> = (0..n)
        .into_par_iter()
        .map(|_| AtomicBool::new(false))
        .collect();
    let fits = p.par_iter().all(|&v| {
        seen.get(v as usize)
            .is_some_and(|s| !s.swap(true, Ordering::Relaxed))
    });
    if fits {
        return None;
    }
    let mut seen = vec![false; n];
    p.iter().copied().find(|&v| match seen.get_mut(v as usize) {
        Some(s) if !*s => {
            *s = true;
            false
        }
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serial_offsets(lens: &[usize]) -> Vec<usize> {
        let mut ptr = vec![0];
        for &l in lens {
            ptr.push(ptr[ptr.len() - 1] + l);
        }
        ptr
    }

    #[test]
    fn offsets_are_the_serial_running_sums_across_task_boundaries_at_any_thread_count() {
        for n in [
            0,
            1,
            ROWS_PER_SCAN_TASK - 1,
            ROWS_PER_SCAN_TASK,
            3 * ROWS_PER_SCAN_TASK + 17,
        ] {
            // lengths with zero runs (a whole task of empty rows among them)
            let lens: Vec<usize> = (0..n)
                .map(|i| match (i / ROWS_PER_SCAN_TASK) % 2 {
                    1 => 0,
                    _ => (i * 7919) % 13,
                })
                .collect();
            let expected = serial_offsets(&lens);
            for threads in [1, 3, 8] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("a pool");
                let ptr = pool.install(|| row_offsets(n, |i| lens[i]));
                assert_eq!(ptr, expected, "n {n}, {threads} threads");
                assert_eq!(pool.install(|| exclusive_sums(&lens)), expected);
            }
        }
    }

    #[test]
    fn the_inverse_permutation_undoes_the_order() {
        let n = 100_003u32;
        let order: Vec<u32> = (0..n)
            .map(|i| (i as u64 * 7919 % n as u64) as u32)
            .collect();
        let inverse = inverse_permutation(&order);
        for (i, &v) in order.iter().enumerate() {
            assert_eq!(inverse[v as usize], i as u32);
        }
        assert!(inverse_permutation(&[]).is_empty());
        assert_eq!(first_not_permutation(&order), None);
        assert_eq!(first_not_permutation(&inverse), None);
    }

    #[test]
    fn the_first_entry_beyond_or_repeated_is_named() {
        assert_eq!(first_not_permutation(&[]), None);
        assert_eq!(first_not_permutation(&[2, 0, 1]), None);
        assert_eq!(first_not_permutation(&[2, 0, 3]), Some(3));
        assert_eq!(first_not_permutation(&[1, 0, 1, 4]), Some(1));
        let mut long: Vec<u32> = (0..50_000).rev().collect();
        long[40_000] = long[10];
        long[45_000] = 50_000;
        assert_eq!(first_not_permutation(&long), Some(long[10]));
    }
}
