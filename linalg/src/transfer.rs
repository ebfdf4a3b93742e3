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
    use crate::hash::SplitMix64;
    use crate::{spgemm, transpose};
    use std::sync::Arc;

    fn rand_vec(seed: u64, n: usize) -> Vec<f64> {
        let mut g = SplitMix64(seed);
        (0..n).map(|_| g.next_signed_unit()).collect()
    }

    /// A `n x m`-block prolongator-like matrix with 1 to 3 blocks per row and an empty row.
    fn sample(n: usize, m: usize, br: usize, bc: usize) -> Bsr {
        let mut row_ptr = vec![0];
        let mut cols = Vec::new();
        for i in 0..n {
            if i != 3 {
                let mut row: Vec<u32> = (0..1 + i % 3)
                    .map(|t| ((i * 7 + t * 5) % m) as u32)
                    .collect();
                row.sort_unstable();
                row.dedup();
                cols.extend(row);
            }
            row_ptr.push(cols.len());
        }
        let nnz = cols.len();
        let pattern = Arc::new(BlockPattern::new(n, m, row_ptr, cols).unwrap());
        Bsr::from_parts(pattern, br, bc, rand_vec(7, nnz * br * bc)).unwrap()
    }

    /// The Galerkin plan of `p` on a diagonal operator.
    fn plan(p: &Bsr) -> PtapPlan {
        let n = p.pattern().n_block_rows();
        let diagonal = BlockPattern::new(n, n, (0..=n).collect(), (0..n as u32).collect()).unwrap();
        PtapPlan::new(&Arc::new(diagonal), p.pattern()).unwrap()
    }

    #[test]
    fn restriction_equals_the_explicit_transpose_bit_for_bit() {
        for (br, bc) in [(1, 1), (3, 6), (6, 6), (2, 5)] {
            // More coarse rows than one task holds, to cross task boundaries.
            let p = sample(700, 300, br, bc);
            let x = Vector::from_vec(rand_vec(3, p.n_rows()));
            let mut y = Vector::from_vec(vec![f64::NAN; p.n_cols()]);
            restrict(&plan(&p), &p, &x, &mut y).unwrap();
            let mut expected = Vector::zeros(p.n_cols());
            transpose(&p).unwrap().spmv(&x, &mut expected).unwrap();
            assert_eq!(y, expected, "blocks {br}x{bc}");
        }
    }

    #[test]
    fn restriction_accepts_a_plan_of_an_equal_pattern_and_refuses_another() {
        let p = sample(20, 9, 3, 6);
        let copy = Arc::new(p.pattern().as_ref().clone());
        let q = Bsr::from_parts(copy, 3, 6, p.to_host_vec().unwrap()).unwrap();
        let x = Vector::from_vec(rand_vec(5, p.n_rows()));
        let (mut y, mut z) = (Vector::zeros(p.n_cols()), Vector::zeros(p.n_cols()));
        restrict(&plan(&p), &p, &x, &mut y).unwrap();
        restrict(&plan(&p), &q, &x, &mut z).unwrap();
        assert_eq!(y, z);
        let other = sample(20, 10, 3, 6);
        assert!(matches!(
            restrict(&plan(&other), &p, &x, &mut y),
            Err(LinalgError::PatternMismatch { .. })
        ));
        assert!(matches!(
            restrict(&plan(&p), &p, &Vector::zeros(3), &mut y),
            Err(LinalgError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn smoothing_matches_the_dense_formula() {
        let (n, bs, k): (usize, usize, usize) = (12, 3, 2);
        // A: block tridiagonal with a dominant diagonal.
        let mut row_ptr = vec![0];
        let mut cols = Vec::new();
        for i in 0..n {
            cols.extend((i.saturating_sub(1_usize)..(i + 2).min(n)).map(|j| j as u32));
            row_ptr.push(cols.len());
        }
        let nnz = cols.len();
        let pattern = Arc::new(BlockPattern::new(n, n, row_ptr, cols).unwrap());
        let mut values = rand_vec(5, nnz * bs * bs);
        for i in 0..n {
            let d = pattern.find(i, i).unwrap();
            for c in 0..bs {
                values[d * bs * bs + c * bs + c] += 4.0;
            }
        }
        let a = Bsr::from_parts(pattern, bs, bs, values).unwrap();
        // P0: rows grouped in pairs (aggregate i / 2), row 7 unaggregated.
        let mut row_ptr = vec![0];
        let mut cols = vec![];
        for i in 0..n {
            if i != 7 {
                cols.push((i / 2) as u32);
            }
            row_ptr.push(cols.len());
        }
        let pat = Arc::new(BlockPattern::new(n, n / 2, row_ptr, cols).unwrap());
        let p0 = Bsr::from_parts(pat, bs, k, rand_vec(2, (n - 1) * bs * k)).unwrap();
        let mut dinv = BlockDiagonal::from_diagonal(&a, bs).unwrap();
        dinv.invert().unwrap();
        let omega = 0.7;
        let mut p = spgemm(&a, &p0).unwrap();
        smooth_prolongator_in_place(&mut p, omega, &dinv, &p0).unwrap();
        // Dense reference.
        let (nr, nc) = (n * bs, n / 2 * k);
        let ad = a.to_dense().unwrap();
        let p0d = p0.to_dense().unwrap();
        let mut dd = vec![0.0; nr * nr];
        let inv = dinv.host().unwrap();
        for b in 0..n {
            for r in 0..bs {
                for c in 0..bs {
                    dd[(b * bs + r) * nr + b * bs + c] = inv[b * bs * bs + r * bs + c];
                }
            }
        }
        let mul = |x: &[f64], y: &[f64], m: usize, q: usize, w: usize| {
            let mut o = vec![0.0; m * w];
            for i in 0..m {
                for t in 0..q {
                    for j in 0..w {
                        o[i * w + j] += x[i * q + t] * y[t * w + j];
                    }
                }
            }
            o
        };
        let dap = mul(&dd, &mul(&ad, &p0d, nr, nr, nc), nr, nr, nc);
        let pd = p.to_dense().unwrap();
        for i in 0..nr * nc {
            assert!((pd[i] - (p0d[i] - omega * dap[i])).abs() < 1e-12);
        }
        // P0 outside the pattern of A P0 is refused.
        let mut narrow = Bsr::zeros(p0.pattern().clone(), bs, k);
        let wide = sample(n, n / 2, bs, k);
        assert!(smooth_prolongator_in_place(&mut narrow, omega, &dinv, &wide).is_err());
    }

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
