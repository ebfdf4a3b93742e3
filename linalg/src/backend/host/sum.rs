//! Slot sums of COO assembly: a *run* is the contributions one segment adds to one output block
//! ([`crate::CooPlan`]); the kernels add each run, in list order, onto its block.
//!
//! The contributions of a run lie scattered over the segment's values (one per element sharing the
//! block's two nodes), and a segment's output blocks skip through the matrix, so the sums are
//! latency-bound; the fixed-size kernel prefetches the contributions [`PREFETCH_AHEAD`] places and
//! the output blocks [`OUTPUT_AHEAD`] runs further down the lists. A run that opens its block only
//! writes it: reading it would stall on a cache miss for nothing.

/// Contributions (in list order) between a prefetch and its use.
const PREFETCH_AHEAD: usize = 24;
/// Runs between the prefetch of a run's output block and its use.
const OUTPUT_AHEAD: usize = 8;

/// Hints the CPU to bring the cache line holding `p` into cache; a no-op off x86-64. Never
/// dereferences `p`, which may be any address.
#[inline(always)]
fn prefetch(p: *const f64) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)]
    // SAFETY: a prefetch has no architectural effect and never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Runs to add onto output blocks: the `k`-th run targets slot `slots[k]` and holds the
/// contributions `contributions[run_ptr[k]..run_ptr[k + 1]]` (`run_ptr` has `slots.len() + 1`
/// absolute offsets). Its block starts from zero if it *opens* the slot (bit `first_run + k` of
/// the bitset `opens`), else from its current value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunList<'a> {
    pub first_run: usize,
    pub slots: &'a [u32],
    pub opens: &'a [u64],
    pub run_ptr: &'a [u32],
    pub contributions: &'a [u32],
}

impl RunList<'_> {
    /// Whether the `k`-th run opens its slot.
    #[inline(always)]
    fn opens(&self, k: usize) -> bool {
        let bit = self.first_run + k;
        self.opens[bit / 64] >> (bit % 64) & 1 == 1
    }
}

/// Adds every run of `runs` onto block `slot - first_slot` of `out`: the block becomes its start
/// value plus the run's contributions, added one after the other in list order. `values` is
/// contribution-major with `BL` values per contribution.
#[inline(never)]
pub(crate) fn add_runs<const BL: usize>(
    runs: RunList<'_>,
    values: &[f64],
    first_slot: usize,
    out: &mut [f64],
) {
    let contributions = runs.contributions;
    for (k, (&slot, w)) in runs.slots.iter().zip(runs.run_ptr.windows(2)).enumerate() {
        if let Some(&ahead) = runs.slots.get(k + OUTPUT_AHEAD) {
            let block = out
                .as_ptr()
                .wrapping_add((ahead as usize - first_slot) * BL);
            prefetch(block);
            prefetch(block.wrapping_add(BL - 1));
        }
        let o = &mut out[(slot as usize - first_slot) * BL..][..BL];
        let mut acc = [0.0f64; BL];
        if !runs.opens(k) {
            acc.copy_from_slice(o);
        }
        let (start, end) = (w[0] as usize, w[1] as usize);
        for (pos, &c) in (start..end).zip(&contributions[start..end]) {
            if let Some(&next) = contributions.get(pos + PREFETCH_AHEAD) {
                let first = values.as_ptr().wrapping_add(next as usize * BL);
                prefetch(first);
                prefetch(first.wrapping_add(BL - 1));
            }
            let c = c as usize * BL;
            let v = &values[c..c + BL];
            for k in 0..BL {
                acc[k] += v[k];
            }
        }
        o.copy_from_slice(&acc);
    }
}

/// Runtime-size fallback of [`add_runs`].
pub(crate) fn add_runs_dyn(
    bl: usize,
    runs: RunList<'_>,
    values: &[f64],
    first_slot: usize,
    out: &mut [f64],
) {
    for (k, (&slot, w)) in runs.slots.iter().zip(runs.run_ptr.windows(2)).enumerate() {
        let o = &mut out[(slot as usize - first_slot) * bl..][..bl];
        if runs.opens(k) {
            o.fill(0.0);
        }
        for &c in &runs.contributions[w[0] as usize..w[1] as usize] {
            let c = c as usize * bl;
            o.iter_mut()
                .zip(&values[c..c + bl])
                .for_each(|(a, v)| *a += v);
        }
    }
}

/// Calls the const-size kernel for the common block lengths, else the fallback.
pub(crate) fn add_runs_any(
    bl: usize,
    runs: RunList<'_>,
    values: &[f64],
    first_slot: usize,
    out: &mut [f64],
) {
    match bl {
        1 => add_runs::<1>(runs, values, first_slot, out),
        3 => add_runs::<3>(runs, values, first_slot, out),
        6 => add_runs::<6>(runs, values, first_slot, out),
        9 => add_runs::<9>(runs, values, first_slot, out),
        18 => add_runs::<18>(runs, values, first_slot, out),
        36 => add_runs::<36>(runs, values, first_slot, out),
        _ => add_runs_dyn(bl, runs, values, first_slot, out),
    }
}
