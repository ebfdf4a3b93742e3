//! Slot sums of COO assembly: every output block is the ordered sum of its contributions.
//!
//! The contributions of a slot lie scattered over the input (one per element sharing the slot's
//! two nodes), so the sums are latency-bound; the fixed-size kernel prefetches the contributions
//! [`PREFETCH_AHEAD`] places further down the slot lists.

/// Contributions (in slot-list order) between a prefetch and its use.
const PREFETCH_AHEAD: usize = 24;

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

/// Overwrites `out` (the blocks of consecutive slots `s0..s1`) with the sum of each slot's
/// contributions. `slot_ptr` holds `s1 - s0 + 1` absolute offsets into `contributions`; `values` is
/// contribution-major with `BL` values per contribution. Sums run in ascending contribution order.
#[inline(never)]
pub(crate) fn sum_slots<const BL: usize>(
    slot_ptr: &[usize],
    contributions: &[u32],
    values: &[f64],
    out: &mut [f64],
) {
    for (o, w) in out.chunks_exact_mut(BL).zip(slot_ptr.windows(2)) {
        let mut acc = [0.0f64; BL];
        for (pos, &c) in (w[0]..w[1]).zip(&contributions[w[0]..w[1]]) {
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

/// Runtime-size fallback of [`sum_slots`].
pub(crate) fn sum_slots_dyn(
    bl: usize,
    slot_ptr: &[usize],
    contributions: &[u32],
    values: &[f64],
    out: &mut [f64],
) {
    for (o, w) in out.chunks_exact_mut(bl).zip(slot_ptr.windows(2)) {
        o.fill(0.0);
        for &c in &contributions[w[0]..w[1]] {
            let c = c as usize * bl;
            o.iter_mut()
                .zip(&values[c..c + bl])
                .for_each(|(a, v)| *a += v);
        }
    }
}

/// Calls the const-size kernel for the common block lengths, else the fallback.
pub(crate) fn sum_slots_any(
    bl: usize,
    slot_ptr: &[usize],
    contributions: &[u32],
    values: &[f64],
    out: &mut [f64],
) {
    match bl {
        1 => sum_slots::<1>(slot_ptr, contributions, values, out),
        3 => sum_slots::<3>(slot_ptr, contributions, values, out),
        6 => sum_slots::<6>(slot_ptr, contributions, values, out),
        9 => sum_slots::<9>(slot_ptr, contributions, values, out),
        18 => sum_slots::<18>(slot_ptr, contributions, values, out),
        36 => sum_slots::<36>(slot_ptr, contributions, values, out),
        _ => sum_slots_dyn(bl, slot_ptr, contributions, values, out),
    }
}
