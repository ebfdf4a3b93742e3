//! The level transfers of smoothed-aggregation AMG as typed operations: restriction `y = P^T x`
//! without storing `P^T`, prolongation `x += P y`, and the Jacobi smoothing of a tentative
//! prolongator `P = P0 - omega D^{-1} (A P0)`.

use std::sync::Arc;

use crate::backend::{cuda, host};
use crate::device::{
    check_same_device, either_precision, unsupported, ByPrecision::Double, DeviceMirror, Placed,
};
use crate::vector::check_len;
use crate::{BlockDiagonal, BlockPattern, Bsr, LinalgError, PtapPlan, SpgemmPlan, Vector};

/// `y = P^T x` with `plan` a Galerkin plan built for `p`'s pattern (the same object, or an equal
/// pattern). Reads `P`'s blocks through the plan's `P^T` pattern and slot map
/// ([`PtapPlan::pt_pattern`], [`PtapPlan::pt_slots`]) and transposes them on the fly: one copy
/// of the prolongator values, no transpose kept. Parallel over fixed chunks of coarse rows; every
/// entry sums in fine-row order, so the result does not depend on the thread count and equals
/// `transpose(P).spmv(x)` bit for bit.
pub fn restrict(plan: &PtapPlan, p: &Bsr, x: &Vector, y: &mut Vector) -> Result<(), LinalgError> {
    if !BlockPattern::same(plan.p_pattern(), p.pattern()) {
        return Err(LinalgError::PatternMismatch {
            what: "restrict: Galerkin plan not built for P",
        });
    }
    check_len("restrict: x", x, p.n_rows())?;
    check_len("restrict: y", y, p.n_cols())?;
    let device = p.device();
    check_same_device("restrict: x", &device, &x.device())?;
    check_same_device("restrict: y", &device, &y.device())?;
    let (br, bc) = (p.block_rows(), p.block_cols());
    match (p.storage(), x.storage(), y.storage_mut()) {
        (Placed::Host(pv), Placed::Host(x), Placed::Host(y)) => either_precision!(pv, pv => {
            host::transfer::restrict(plan.pt_pattern(), plan.pt_slots(), br, bc, pv, x, y)
        }),
        (Placed::Cuda(ctx, m), Placed::Cuda(_, x), Placed::Cuda(_, y)) => {
            let dplan = plan.device_plan(ctx)?;
            either_precision!(m, m => {
                cuda::spmv_transpose(ctx, dplan.restriction_map(), m, 1.0, x, 0.0, y)?
            })
        }
        _ => return Err(unsupported("restrict", &device)),
    }
    Ok(())
}

/// `x += P y`: the coarse correction brought to the fine level (an SpMV that adds).
pub fn prolong_add(p: &Bsr, y: &Vector, x: &mut Vector) -> Result<(), LinalgError> {
    p.spmv_add(1.0, y, 1.0, x)
}

/// Turns `w = A P0` into the smoothed prolongator `P = P0 - omega D^{-1} (A P0)` in place, with
/// `dinv` the inverses of `A`'s diagonal blocks. `w` has `bs x k` blocks; `p0` the same block
/// sizes and a pattern contained in `w`'s (as it is when every diagonal block of `A` is stored).
/// Parallel over fixed groups of block rows; entry by entry the same operations in the same order
/// whatever the thread count.
pub fn smooth_prolongator_in_place(
    w: &mut Bsr,
    omega: f64,
    dinv: &BlockDiagonal,
    p0: &Bsr,
) -> Result<(), LinalgError> {
    check_smoothing_operands(&IN_PLACE, w, dinv, p0)?;
    if !contains(w.pattern(), p0.pattern()) {
        return Err(LinalgError::PatternMismatch {
            what: "smooth_prolongator_in_place: P0's pattern is not inside A P0's",
        });
    }
    smooth_checked(w, omega, dinv, p0, None)
}

/// The names a smoothing call gives its operands in errors.
struct SmoothingCall {
    dinv: &'static str,
    p0: &'static str,
}

const IN_PLACE: SmoothingCall = SmoothingCall {
    dinv: "smooth_prolongator_in_place: blocks of D^-1",
    p0: "smooth_prolongator_in_place: block columns of P0",
};

const MAPPED: SmoothingCall = SmoothingCall {
    dinv: "smooth_prolongator_mapped: blocks of D^-1",
    p0: "smooth_prolongator_mapped: block columns of P0",
};

/// The block sizes and devices of a smoothing's operands.
fn check_smoothing_operands(
    call: &SmoothingCall,
    w: &Bsr,
    dinv: &BlockDiagonal,
    p0: &Bsr,
) -> Result<(), LinalgError> {
    let (bs, k) = (w.block_rows(), w.block_cols());
    let n = w.pattern().n_block_rows();
    if dinv.block_size() != bs || dinv.n_blocks() != n {
        return Err(LinalgError::DimensionMismatch {
            what: call.dinv,
            expected: n,
            found: dinv.n_blocks(),
        });
    }
    if (p0.block_rows(), p0.block_cols()) != (bs, k) {
        return Err(LinalgError::DimensionMismatch {
            what: call.p0,
            expected: k,
            found: p0.block_cols(),
        });
    }
    let device = w.device();
    check_same_device(call.dinv, &device, &dinv.device())?;
    check_same_device(call.p0, &device, &p0.device())
}

/// The smoothing of operands checked ([`check_smoothing_operands`], `P0` inside `W`): on a GPU
/// through `map`'s kept slot maps (made there at its first call), or maps made for this call.
fn smooth_checked(
    w: &mut Bsr,
    omega: f64,
    dinv: &BlockDiagonal,
    p0: &Bsr,
    map: Option<&SmoothingMap>,
) -> Result<(), LinalgError> {
    let (bs, k) = (w.block_rows(), w.block_cols());
    let device = w.device();
    let pattern = w.pattern().clone();
    if let (Some(dv), Some((_, p0m))) = (dinv.cuda_values(), p0.cuda()) {
        let p0_pattern = p0.pattern().clone();
        let Some((ctx, wm)) = w.cuda_mut() else {
            return Err(unsupported("smooth_prolongator_in_place", &device));
        };
        let ctx = ctx.clone();
        let make = || cuda::ops::DeviceSmoothMap::new(&ctx, &pattern, &p0_pattern);
        let slots = match map {
            Some(map) => map.device.get_or_upload(&ctx, make)?,
            None => Arc::new(make()?),
        };
        return cuda::ops::smooth_prolongator_mapped(&ctx, &slots, wm, omega, dv, p0m);
    }
    let dinv_values = dinv.host()?;
    match (p0.storage(), w.storage_mut()) {
        (Placed::Host(Double(p0_values)), Placed::Host(Double(values))) => {
            let args = host::transfer::SmoothArgs {
                omega,
                bs,
                k,
                dinv: dinv_values,
                p0: p0.pattern(),
                p0_values,
            };
            host::transfer::smooth_prolongator(&pattern, &args, values);
        }
        _ => return Err(unsupported("smooth_prolongator_in_place", &device)),
    }
    Ok(())
}

/// [`smooth_prolongator_in_place`] with `w` and `p0` on the patterns of `plan` (the product
/// `A P0` that made `w`: its result and right-hand patterns, the same objects): the same bits;
/// on a GPU the slot maps are uploaded at the plan's first call there and kept with it, so a
/// later call (a renewal's) moves nothing and scans no pattern on the host.
pub fn smooth_prolongator_planned(
    plan: &SpgemmPlan,
    w: &mut Bsr,
    omega: f64,
    dinv: &BlockDiagonal,
    p0: &Bsr,
) -> Result<(), LinalgError> {
    if !BlockPattern::same(plan.pattern(), w.pattern())
        || !BlockPattern::same(plan.b(), p0.pattern())
    {
        return Err(LinalgError::PatternMismatch {
            what: "smooth_prolongator_planned: W and P0 not on the plan's patterns",
        });
    }
    let (bs, k) = (w.block_rows(), w.block_cols());
    let device_operands = (dinv.cuda_values(), p0.cuda());
    let (Some(dv), Some((_, p0m))) = device_operands else {
        return smooth_prolongator_in_place(w, omega, dinv, p0);
    };
    if dinv.block_size() != bs || (p0.block_rows(), p0.block_cols()) != (bs, k) {
        return smooth_prolongator_in_place(w, omega, dinv, p0); // its errors
    }
    let device = w.device();
    check_same_device("smooth_prolongator_planned: D^-1", &device, &dinv.device())?;
    check_same_device("smooth_prolongator_planned: P0", &device, &p0.device())?;
    let Some((ctx, wm)) = w.cuda_mut() else {
        return Err(unsupported("smooth_prolongator_planned", &device));
    };
    let ctx = ctx.clone();
    let map = plan.smoothing_map(&ctx)?;
    cuda::ops::smooth_prolongator_mapped(&ctx, &map, wm, omega, dv, p0m)
}

/// The prolongator smoothing's pattern pair `W` (`A P0`) and `P0`, checked once (`P0`'s
/// blocks inside `W`'s, the same block rows and columns), for [`smooth_prolongator_mapped`]:
/// the smoothing of matrices on these patterns (the same objects) scans no pattern again, and
/// on a GPU its slot maps are built there at the first call and kept (a later call moves
/// nothing). For a `W` that is not the product of an [`SpgemmPlan`] with `P0` as its right
/// operand (a rank's product of its local `A` with `P0`'s extended rows, `P0`'s owned rows
/// smoothed), which [`smooth_prolongator_planned`] takes.
#[derive(Debug)]
pub struct SmoothingMap {
    w: Arc<BlockPattern>,
    p0: Arc<BlockPattern>,
    device: DeviceMirror<cuda::ops::DeviceSmoothMap>,
}

impl SmoothingMap {
    /// The map of `w` and `p0`; [`LinalgError::PatternMismatch`] where a block of `p0` is not
    /// in `w` or their block rows or columns differ.
    pub fn new(w: &Arc<BlockPattern>, p0: &Arc<BlockPattern>) -> Result<Self, LinalgError> {
        if !contains(w, p0) {
            return Err(LinalgError::PatternMismatch {
                what: "SmoothingMap: P0's pattern is not inside A P0's",
            });
        }
        Ok(Self {
            w: w.clone(),
            p0: p0.clone(),
            device: DeviceMirror::new(),
        })
    }
}

/// [`smooth_prolongator_in_place`] of `w` and `p0` on the patterns of `map` (the same objects,
/// or equal patterns): the same bits, with no pattern scanned on the host; on a GPU the slot
/// maps are made at the map's first call there and kept.
pub fn smooth_prolongator_mapped(
    map: &SmoothingMap,
    w: &mut Bsr,
    omega: f64,
    dinv: &BlockDiagonal,
    p0: &Bsr,
) -> Result<(), LinalgError> {
    if !BlockPattern::same(&map.w, w.pattern()) || !BlockPattern::same(&map.p0, p0.pattern()) {
        return Err(LinalgError::PatternMismatch {
            what: "smooth_prolongator_mapped: W and P0 not on the map's patterns",
        });
    }
    check_smoothing_operands(&MAPPED, w, dinv, p0)?;
    smooth_checked(w, omega, dinv, p0, Some(map))
}

/// True if both have the same dimensions and every block of `inner` is in `outer`.
/// Rows in parallel (a fine level's patterns hold millions).
fn contains(outer: &BlockPattern, inner: &BlockPattern) -> bool {
    use rayon::prelude::*;
    outer.n_block_rows() == inner.n_block_rows()
        && outer.n_block_cols() == inner.n_block_cols()
        && (0..inner.n_block_rows())
            .into_par_iter()
            .with_min_len(4096)
            .all(|i| {
                let row = outer.row(i);
                let mut q = 0;
                inner.row(i).iter().all(|&j| {
                    while q < row.len() && row[q] < j {
                        q += 1;
                    }
                    q < row.len() && row[q] == j
                })
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pattern of the rows `rows` over `n_cols` block columns.
    fn pattern(n_cols: usize, rows: &[Vec<u32>]) -> Arc<BlockPattern> {
        let mut row_ptr = vec![0];
        for r in rows {
            row_ptr.push(row_ptr.last().unwrap() + r.len());
        }
        let cols = rows.concat();
        Arc::new(BlockPattern::new(rows.len(), n_cols, row_ptr, cols).unwrap())
    }

    /// `W = A P0` for a block tridiagonal `A` (2x2 blocks) and `P0` aggregating pairs of rows,
    /// with `D^{-1}` of `A`.
    fn operands() -> (Bsr, BlockDiagonal, Bsr) {
        let n = 6;
        let rows: Vec<Vec<u32>> = (0..n)
            .map(|i: usize| {
                (i.saturating_sub(1)..(i + 2).min(n))
                    .map(|j| j as u32)
                    .collect()
            })
            .collect();
        let a_pattern = pattern(n, &rows);
        let a_values: Vec<f64> = (0..a_pattern.nnz() * 4)
            .map(|e| {
                if e % 5 == 0 {
                    4.0
                } else {
                    -0.5 - 0.01 * e as f64
                }
            })
            .collect();
        let a = Bsr::from_parts(a_pattern, 2, 2, a_values).unwrap();
        let p0_rows: Vec<Vec<u32>> = (0..n).map(|i| vec![(i / 2) as u32]).collect();
        let p0_values: Vec<f64> = (0..n * 2).map(|e| 1.0 + 0.1 * e as f64).collect();
        let p0 = Bsr::from_parts(pattern(n / 2, &p0_rows), 2, 1, p0_values).unwrap();
        let dinv = BlockDiagonal::inverse_of_diagonal(&a, 2).unwrap();
        (crate::spgemm(&a, &p0).unwrap(), dinv, p0)
    }

    /// A kept map gives the one-off smoothing's bits, call after call; a `W` on another pattern
    /// than the map's and a `P0` with a block outside `W` are errors.
    #[test]
    fn the_mapped_smoothing_is_the_one_off_smoothing() {
        let (w, dinv, p0) = operands();
        let bits = |m: &Bsr| {
            m.host()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<_>>()
        };
        let mut once = w.clone();
        smooth_prolongator_in_place(&mut once, 0.7, &dinv, &p0).unwrap();
        let map = SmoothingMap::new(w.pattern(), p0.pattern()).unwrap();
        for _ in 0..2 {
            let mut mapped = w.clone();
            smooth_prolongator_mapped(&map, &mut mapped, 0.7, &dinv, &p0).unwrap();
            assert_eq!(bits(&mapped), bits(&once));
        }
        let diagonal: Vec<Vec<u32>> = (0..6).map(|i| vec![(i / 2) as u32]).collect();
        let mut other = Bsr::zeros(pattern(3, &diagonal), 2, 1);
        assert!(matches!(
            smooth_prolongator_mapped(&map, &mut other, 0.7, &dinv, &p0),
            Err(LinalgError::PatternMismatch { .. })
        ));
        let far: Vec<Vec<u32>> = (0..6)
            .map(|i| vec![if i == 0 { 2 } else { (i / 2) as u32 }])
            .collect();
        assert!(matches!(
            SmoothingMap::new(w.pattern(), &pattern(3, &far)),
            Err(LinalgError::PatternMismatch { .. })
        ));
    }
}
