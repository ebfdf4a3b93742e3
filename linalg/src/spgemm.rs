//! Sparse block product `C = A B` (Gustavson, row by row): [`spgemm_symbolic`] builds the pattern of
//! `C` once, [`spgemm_numeric`] recomputes its values. `A` has `br x bk` blocks, `B` has `bk x bc`
//! blocks, `C` has `br x bc` blocks.

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::backend::cuda::DeviceSpgemmPlan;
use crate::backend::host::gemm::{dispatch_product, BlockProduct, DynNn, Nn};
use crate::device::{
    check_same_device, device_pattern, unsupported, ByPrecision::Double, DeviceMirror, Placed,
};
use crate::rows::split_rows;
use crate::{BlockPattern, Bsr, LinalgError};

/// Rows per task of the symbolic and numeric phases (fixed: the split never depends on thread count).
const ROWS_PER_TASK: usize = 128;

/// Plan of `C = A B` for one pair of patterns: the patterns of `A` and `B` (to check the operands of
/// numeric calls) and the pattern of `C` (sorted unique columns per row).
#[derive(Debug, Clone)]
pub struct SpgemmPlan {
    a: Arc<BlockPattern>,
    b: Arc<BlockPattern>,
    pattern: Arc<BlockPattern>,
    /// Products on these patterns will repeat ([`SpgemmPlan::for_repeated_products`]).
    repeated: bool,
    /// The plan on a GPU, made by the first device numeric call (its slot rows built there).
    device: DeviceMirror<DeviceSpgemmPlan>,
    /// The prolongator smoothing's slot maps of `C` (`A P0`) and `B` (`P0`) on a GPU, built there
    /// at the first [`crate::smooth_prolongator_planned`] there.
    smoothing: DeviceMirror<crate::backend::cuda::ops::DeviceSmoothMap>,
}

impl SpgemmPlan {
    /// [`spgemm_symbolic`] sharing the caller's patterns (no copies): a plan to keep and reuse
    /// for later numeric products on the same patterns.
    pub fn new(a: &Arc<BlockPattern>, b: &Arc<BlockPattern>) -> Result<Self, LinalgError> {
        spgemm_symbolic_shared(a.clone(), b.clone())
    }

    /// [`SpgemmPlan::new`] where the operands live: on a GPU the pattern of `C` is built there
    /// from the device mirrors of `a` and `b` (uploaded if not there yet: a set-up on the device
    /// has them), the host's pattern entry for entry; it comes down as the plan's host pattern,
    /// whose device mirror is the one built there (matrices on it upload nothing), and the
    /// plan's device form is made with it. On the host: [`SpgemmPlan::new`].
    pub fn new_on(
        device: &crate::Device,
        a: &Arc<BlockPattern>,
        b: &Arc<BlockPattern>,
    ) -> Result<Self, LinalgError> {
        let ctx = match device {
            crate::Device::Host => return Self::new(a, b),
            crate::Device::Cuda(ctx) => ctx,
        };
        check_inner(a, b)?;
        let (da, db) = (device_pattern(ctx, a)?, device_pattern(ctx, b)?);
        let dplan = Arc::new(DeviceSpgemmPlan::from_patterns(ctx, &da, &db, false)?);
        let pattern = Arc::new(dplan.pattern().download_trusted(ctx)?);
        let plan = SpgemmPlan {
            a: a.clone(),
            b: b.clone(),
            pattern,
            repeated: false,
            device: DeviceMirror::new(),
            smoothing: DeviceMirror::new(),
        };
        plan.device.install(ctx, dplan);
        Ok(plan)
    }

    /// Marks the plan as one whose product repeats (a hot update's Galerkin product, say): its
    /// GPU copy then lists every block product's operands once, at upload, where the device's
    /// memory allows, so that each product skips the operand searches (the same sums in the
    /// same order: the same bits). Plans used once (a cold set-up's) skip that host work.
    pub fn for_repeated_products(mut self) -> Self {
        self.repeated = true;
        // a device form made before (by `new_on`) was made for single products
        self.device = DeviceMirror::new();
        self
    }

    /// Whether [`SpgemmPlan::for_repeated_products`] marked the plan.
    pub fn repeated(&self) -> bool {
        self.repeated
    }

    /// Pattern of `C`.
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Pattern of `A`.
    pub fn a(&self) -> &Arc<BlockPattern> {
        &self.a
    }

    /// Pattern of `B`.
    pub fn b(&self) -> &Arc<BlockPattern> {
        &self.b
    }

    /// The prolongator smoothing's slot maps on `ctx`'s GPU (built there at the first
    /// call, then kept with the plan).
    pub(crate) fn smoothing_map(
        &self,
        ctx: &crate::backend::cuda::CudaContext,
    ) -> Result<Arc<crate::backend::cuda::ops::DeviceSmoothMap>, LinalgError> {
        self.smoothing.get_or_upload(ctx, || {
            crate::backend::cuda::ops::DeviceSmoothMap::new(ctx, &self.pattern, &self.b)
        })
    }
}

/// Symbolic `C = A B`; errors if `A`'s block columns are not `B`'s block rows. Copies both patterns
/// into the plan (to check numeric operands).
pub fn spgemm_symbolic(a: &BlockPattern, b: &BlockPattern) -> Result<SpgemmPlan, LinalgError> {
    spgemm_symbolic_shared(Arc::new(a.clone()), Arc::new(b.clone()))
}

/// [`spgemm_symbolic`] sharing the caller's patterns.
fn spgemm_symbolic_shared(
    a: Arc<BlockPattern>,
    b: Arc<BlockPattern>,
) -> Result<SpgemmPlan, LinalgError> {
    check_inner(&a, &b)?;
    let pattern = Arc::new(product_pattern(&a, &b));
    Ok(SpgemmPlan {
        a,
        b,
        pattern,
        repeated: false,
        device: DeviceMirror::new(),
        smoothing: DeviceMirror::new(),
    })
}

/// `A`'s block columns are `B`'s block rows.
fn check_inner(a: &BlockPattern, b: &BlockPattern) -> Result<(), LinalgError> {
    if a.n_block_cols() != b.n_block_rows() {
        return Err(LinalgError::DimensionMismatch {
            what: "spgemm: block rows of B",
            expected: a.n_block_cols(),
            found: b.n_block_rows(),
        });
    }
    Ok(())
}

/// Pattern of `left * right` (dimensions already checked), row groups in parallel with a dense
/// marker per task.
pub(crate) fn product_pattern(left: &BlockPattern, right: &BlockPattern) -> BlockPattern {
    let (n_rows, n_cols) = (left.n_block_rows(), right.n_block_cols());
    let groups: Vec<(Vec<usize>, Vec<u32>)> = (0..n_rows.div_ceil(ROWS_PER_TASK))
        .into_par_iter()
        .map_init(
            || vec![usize::MAX; n_cols],
            |marker, g| {
                let rows = g * ROWS_PER_TASK..((g + 1) * ROWS_PER_TASK).min(n_rows);
                let (mut row_nnz, mut cols) = (Vec::with_capacity(rows.len()), Vec::new());
                for i in rows {
                    let start = cols.len();
                    for &k in left.row(i) {
                        for &j in right.row(k as usize) {
                            if marker[j as usize] != i {
                                marker[j as usize] = i;
                                cols.push(j);
                            }
                        }
                    }
                    cols[start..].sort_unstable();
                    row_nnz.push(cols.len() - start);
                }
                (row_nnz, cols)
            },
        )
        .collect();
    let mut row_ptr = Vec::with_capacity(n_rows + 1);
    row_ptr.push(0);
    let mut col_idx = Vec::with_capacity(groups.iter().map(|g| g.1.len()).sum());
    for (row_nnz, cols) in groups {
        for k in row_nnz {
            row_ptr.push(row_ptr[row_ptr.len() - 1] + k);
        }
        col_idx.extend_from_slice(&cols);
    }
    BlockPattern::new_trusted(n_rows, n_cols, row_ptr, col_idx)
}

/// Recomputes `c = a b` on the plan's patterns; `c` must carry `plan.pattern()` and `br x bc` blocks.
/// Parallel over fixed groups of rows; each block of `C` sums its products in the order of `A`'s row
/// then `B`'s row, so the result does not depend on the thread count.
pub fn spgemm_numeric(plan: &SpgemmPlan, a: &Bsr, b: &Bsr, c: &mut Bsr) -> Result<(), LinalgError> {
    for (ok, what) in [
        (
            BlockPattern::same(a.pattern(), &plan.a),
            "spgemm_numeric: A",
        ),
        (
            BlockPattern::same(b.pattern(), &plan.b),
            "spgemm_numeric: B",
        ),
        (
            BlockPattern::same(c.pattern(), &plan.pattern),
            "spgemm_numeric: C",
        ),
    ] {
        if !ok {
            return Err(LinalgError::PatternMismatch { what });
        }
    }
    check_dim(
        "spgemm_numeric: block rows of B",
        a.block_cols(),
        b.block_rows(),
    )?;
    check_dim(
        "spgemm_numeric: block rows of C",
        a.block_rows(),
        c.block_rows(),
    )?;
    check_dim(
        "spgemm_numeric: block cols of C",
        b.block_cols(),
        c.block_cols(),
    )?;
    let device = c.device();
    check_same_device("spgemm_numeric: A", &device, &a.device())?;
    check_same_device("spgemm_numeric: B", &device, &b.device())?;
    let plan_pattern = plan.pattern.clone();
    let (r, k, cols) = (a.block_rows(), a.block_cols(), b.block_cols());
    match (a.storage(), b.storage(), c.storage_mut()) {
        (Placed::Host(Double(av)), Placed::Host(Double(bv)), Placed::Host(Double(cv))) => {
            dispatch_product!(Nn, DynNn, (r, k, cols), m => {
                product_numeric(m, a.pattern(), av, b.pattern(), bv, &plan_pattern, cv)
            })
        }
        (
            Placed::Cuda(_, Double(am)),
            Placed::Cuda(_, Double(bm)),
            Placed::Cuda(ctx, Double(cm)),
        ) => {
            let dplan = plan
                .device
                .get_or_upload(ctx, || DeviceSpgemmPlan::upload(ctx, plan))?;
            dplan.numeric(ctx, am, bm, cm)?
        }
        _ => return Err(unsupported("spgemm_numeric", &device)),
    }
    Ok(())
}

/// `A B` as a new matrix.
pub fn spgemm(a: &Bsr, b: &Bsr) -> Result<Bsr, LinalgError> {
    check_dim("spgemm: block rows of B", a.block_cols(), b.block_rows())?;
    let plan = spgemm_symbolic_shared(a.pattern().clone(), b.pattern().clone())?;
    let mut c = Bsr::zeros_on(
        &a.device(),
        plan.pattern.clone(),
        a.block_rows(),
        b.block_cols(),
    )?;
    spgemm_numeric(&plan, a, b, &mut c)?;
    Ok(c)
}

/// Numeric Gustavson product `out = left right` on the pattern `out_pattern` (which must contain
/// every product block); `m` fixes the block shapes.
fn product_numeric<M: BlockProduct>(
    m: M,
    left: &BlockPattern,
    left_values: &[f64],
    right_pattern: &BlockPattern,
    right_values: &[f64],
    out_pattern: &BlockPattern,
    out: &mut [f64],
) {
    let obl = m.rows() * m.cols();
    let (op, n_cols) = (out_pattern.row_ptr(), out_pattern.n_block_cols());
    let args = ProductArgs {
        left,
        left_values,
        right_pattern,
        right_values,
        out_pattern,
    };
    split_rows(op, obl, ROWS_PER_TASK, out)
        .into_par_iter()
        .for_each_init(
            || vec![0u32; n_cols],
            |marker, (rows, out)| {
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    unsafe { product_rows_avx2(m, &args, rows, marker, out) };
                    return;
                }
                product_rows(m, &args, rows, marker, out);
            },
        );
}

/// The operands of [`product_numeric`].
struct ProductArgs<'a> {
    left: &'a BlockPattern,
    left_values: &'a [f64],
    right_pattern: &'a BlockPattern,
    right_values: &'a [f64],
    out_pattern: &'a BlockPattern,
}

/// Rows `rows` of the product into `out` (their blocks), columns located through `marker`.
#[inline(always)]
fn product_rows<M: BlockProduct>(
    m: M,
    args: &ProductArgs<'_>,
    rows: Range<usize>,
    marker: &mut [u32],
    out: &mut [f64],
) {
    let (lbl, rbl, obl) = (
        m.rows() * m.inner(),
        m.inner() * m.cols(),
        m.rows() * m.cols(),
    );
    let left = args.left;
    let (rp, rc, rv) = (
        args.right_pattern.row_ptr(),
        args.right_pattern.col_idx(),
        args.right_values,
    );
    let (op, oc) = (args.out_pattern.row_ptr(), args.out_pattern.col_idx());
    let base = op[rows.start];
    for i in rows {
        let (start, end) = (op[i], op[i + 1]);
        for (l, &j) in oc[start..end].iter().enumerate() {
            marker[j as usize] = l as u32;
        }
        let orow = &mut out[(start - base) * obl..(end - base) * obl];
        orow.fill(0.0);
        let lp = left.row_ptr();
        for ls in lp[i]..lp[i + 1] {
            let k = left.col_idx()[ls] as usize;
            let lblk = &args.left_values[ls * lbl..(ls + 1) * lbl];
            for rs in rp[k]..rp[k + 1] {
                let l = marker[rc[rs] as usize] as usize;
                m.mul_add(
                    lblk,
                    &rv[rs * rbl..(rs + 1) * rbl],
                    &mut orow[l * obl..(l + 1) * obl],
                );
            }
        }
    }
}

/// [`product_rows`] compiled for AVX2 (no FMA: bit-identical to the baseline build).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn product_rows_avx2<M: BlockProduct>(
    m: M,
    args: &ProductArgs<'_>,
    rows: Range<usize>,
    marker: &mut [u32],
    out: &mut [f64],
) {
    product_rows(m, args, rows, marker, out);
}

pub(crate) fn check_dim(
    what: &'static str,
    expected: usize,
    found: usize,
) -> Result<(), LinalgError> {
    if expected != found {
        return Err(LinalgError::DimensionMismatch {
            what,
            expected,
            found,
        });
    }
    Ok(())
}
