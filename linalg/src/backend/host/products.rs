//! Host kernels of the block transpose (the products SpGEMM and PtAP keep their row loops in
//! their own modules, built on [`super::gemm`]).

use rayon::prelude::*;

/// Slots per task of the transpose.
const TRANSPOSE_SLOTS_PER_TASK: usize = 4096;

/// Block `t` of `out` (`bc x br`) becomes block `source_slot[t]` of `src` (`br x bc`),
/// transposed; parallel over fixed groups of slots.
pub(crate) fn transpose_blocks(
    source_slot: &[usize],
    br: usize,
    bc: usize,
    src: &[f64],
    out: &mut [f64],
) {
    let bl = br * bc;
    out.par_chunks_mut(TRANSPOSE_SLOTS_PER_TASK * bl)
        .enumerate()
        .for_each(|(task, out)| {
            let slots = &source_slot[task * TRANSPOSE_SLOTS_PER_TASK..];
            for (o, &s) in out.chunks_exact_mut(bl).zip(slots) {
                let blk = &src[s * bl..(s + 1) * bl];
                for r in 0..bc {
                    for c in 0..br {
                        o[r * br + c] = blk[c * bc + r];
                    }
                }
            }
        });
}
