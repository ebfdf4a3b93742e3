//! Galerkin product `A_c = P^T A P`.
//!
//! [`PtapPlan::new`] (once per pair of patterns) builds the pattern of `P^T` with its slot map and
//! the pattern of `A_c` ([`PtapPlan::new_on`]: the symbolic phase on the operands' GPU, the host
//! parts made only if asked for); [`PtapPlan::workspace`] sizes the scratch a numeric call needs,
//! which the caller keeps; [`ptap_numeric`] (every Newton step, new `A` values, same `P`)
//! recomputes only values and allocates nothing. Blocks: `A` is `b x b`, `P` is `b x c`, `A_c` is
//! `c x c`. `A P` and its pattern are never stored: each row `W_i = A_i P` is computed on the fly
//! (module `wrow`) in fine-row batches (module `streamed`).
//!
//! One order of sums, on the host and on the device: every block of `W` sums its terms along
//! `A_i`'s row, every block of `A_c` sums its terms over fine rows ascending, whatever the thread
//! count, the batch size and the device; so a product is the same bits wherever it runs.

mod streamed;
#[cfg(test)]
mod tests;
mod workspace;
mod wrow;

use std::borrow::Cow;
use std::mem::size_of_val;
use std::sync::{Arc, OnceLock};

use streamed::{streamed_numeric, StreamedArgs, ROWS_PER_BATCH, W_ROWS_PER_TASK};
pub use workspace::PtapWorkspace;
use wrow::Operands;

use crate::backend::cuda::DevicePtapPlan;
use crate::backend::host::gemm::{DynNn, DynTn, Nn, Tn};
use crate::device::{
    check_same_device, device_pattern, unsupported, ByPrecision, DeviceMirror, HostByPrecision,
    Placed,
};
use crate::spgemm::{check_dim, product_pattern};
use crate::transpose::transpose_pattern;
use crate::{BlockPattern, Bsr, LinalgError};

/// `dispatch_galerkin!((b, c), (m_ap, m_ptw) => body)` binds the block products of `A P` (`Nn`,
/// `b x b` times `b x c`) and of `P^T W` (`Tn`, `(b x c)^T` times `b x c`), fixed-size for the shapes
/// (b, c) = (3, 6), (6, 6), (3, 3), (1, 1), runtime-size otherwise, and evaluates `body`.
macro_rules! dispatch_galerkin {
    (($b:expr, $c:expr), ($m1:ident, $m2:ident) => $body:expr) => {
        match ($b, $c) {
            (3, 6) => {
                let ($m1, $m2) = (Nn::<3, 3, 6>, Tn::<6, 3, 6>);
                $body
            }
            (6, 6) => {
                let ($m1, $m2) = (Nn::<6, 6, 6>, Tn::<6, 6, 6>);
                $body
            }
            (3, 3) => {
                let ($m1, $m2) = (Nn::<3, 3, 3>, Tn::<3, 3, 3>);
                $body
            }
            (1, 1) => {
                let ($m1, $m2) = (Nn::<1, 1, 1>, Tn::<1, 1, 1>);
                $body
            }
            (b, c) => {
                let ($m1, $m2) = (DynNn { r: b, k: b, c }, DynTn { r: c, k: b, c });
                $body
            }
        }
    };
}

/// Plan of `P^T A P` for one pair of patterns.
///
/// Holds the patterns of `A` and `P` (shared with the caller, to check numeric operands), the
/// pattern of `A_c` and the host's numeric parts: the pattern of `P^T` with, per block, the slot
/// of `P` storing it (also what a restriction `y = P^T x` needs: [`PtapPlan::pt_pattern`],
/// [`PtapPlan::pt_slots`]). No values and no scratch: numeric calls
/// work in the caller's [`PtapWorkspace`] ([`PtapPlan::workspace`]), so several threads may
/// share a plan. A plan made on a GPU ([`PtapPlan::new_on`]) makes its host parts only if a
/// host product or restriction asks for them.
#[derive(Debug)]
pub struct PtapPlan {
    a: Arc<BlockPattern>,
    p: Arc<BlockPattern>,
    pattern: Arc<BlockPattern>,
    /// `P^T` and its slot map: made with the plan on the host, at first use for a plan made on
    /// a GPU.
    host: OnceLock<HostParts>,
    /// Fine rows per batch of the host product (>= 1; tests vary it, the order of sums does not
    /// depend on it).
    rows_per_batch: usize,
    /// The plan on a GPU (patterns of `P^T`, `A P`, `A_c`, the `P^T` slot map; built there from
    /// the patterns' device mirrors, see [`DevicePtapPlan::upload`]) at the first device numeric
    /// call or restriction and reused by every later one; made with the plan by
    /// [`PtapPlan::new_on`].
    device: DeviceMirror<DevicePtapPlan>,
}

/// The parts of a [`PtapPlan`] that only the host's numeric products and restriction read.
#[derive(Debug)]
struct HostParts {
    pt: Arc<BlockPattern>,
    pt_slots: Vec<u32>,
}

impl HostParts {
    /// `P^T` with its slot map.
    fn new(p: &BlockPattern) -> Self {
        let (pt, pt_slots) = transpose_pattern(p, |k| k as u32);
        Self {
            pt: Arc::new(pt),
            pt_slots,
        }
    }
}

impl PtapPlan {
    /// Symbolic phase sharing the caller's patterns (numeric calls then recognise matrices on these
    /// very patterns by pointer, without comparing them). Errors if `A` is not `n x n` blocks with
    /// `n` the block rows of `P`, or `P` has `2^32` blocks or more.
    pub fn new(a: &Arc<BlockPattern>, p: &Arc<BlockPattern>) -> Result<Self, LinalgError> {
        Self::with_rows_per_batch(a, p, ROWS_PER_BATCH)
    }

    /// [`PtapPlan::new`] where the operands live: on a GPU the symbolic phase runs there, from
    /// the device mirrors of `a` and `p` (uploaded if they are not there yet: a set-up on the
    /// device has them): `P^T`, `W = A P`, `A_c`'s pattern and the products' slot rows are
    /// built there (the host's patterns entry for entry) and kept as the plan's device form;
    /// only `A_c`'s pattern comes down (its host copy, whose device mirror is the one built
    /// there), and the host parts ([`PtapPlan::pt_pattern`]) are made only if a host product
    /// or restriction asks for them. On the host: [`PtapPlan::new`].
    pub fn new_on(
        device: &crate::Device,
        a: &Arc<BlockPattern>,
        p: &Arc<BlockPattern>,
    ) -> Result<Self, LinalgError> {
        let ctx = match device {
            crate::Device::Host => return Self::new(a, p),
            crate::Device::Cuda(ctx) => ctx,
        };
        check_shapes(a, p)?;
        let (da, dp) = (device_pattern(ctx, a)?, device_pattern(ctx, p)?);
        let dplan = Arc::new(DevicePtapPlan::from_patterns(ctx, da, dp, None)?);
        let pattern = Arc::new(dplan.pattern().download_trusted(ctx)?);
        let plan = Self {
            a: a.clone(),
            p: p.clone(),
            pattern,
            host: OnceLock::new(),
            rows_per_batch: ROWS_PER_BATCH,
            device: DeviceMirror::new(),
        };
        plan.device.install(ctx, dplan);
        Ok(plan)
    }

    /// [`PtapPlan::new`] with `rows_per_batch` (>= 1) fine rows per batch of the host product.
    pub(crate) fn with_rows_per_batch(
        a: &Arc<BlockPattern>,
        p: &Arc<BlockPattern>,
        rows_per_batch: usize,
    ) -> Result<Self, LinalgError> {
        check_shapes(a, p)?;
        let host = HostParts::new(p);
        // `A P`'s pattern lives only as long as this line.
        let pattern = Arc::new(product_pattern(&host.pt, &product_pattern(a, p)));
        Ok(Self {
            a: a.clone(),
            p: p.clone(),
            pattern,
            host: OnceLock::from(host),
            rows_per_batch: rows_per_batch.max(1),
            device: DeviceMirror::new(),
        })
    }

    /// The host parts, made at the first call for a plan made on a GPU.
    fn host(&self) -> &HostParts {
        self.host.get_or_init(|| HostParts::new(&self.p))
    }

    /// The plan's mirror on `ctx`'s GPU (built at the first call).
    pub(crate) fn device_plan(
        &self,
        ctx: &crate::backend::cuda::CudaContext,
    ) -> Result<Arc<DevicePtapPlan>, LinalgError> {
        self.device
            .get_or_upload(ctx, || DevicePtapPlan::upload(ctx, self))
    }

    /// Batch buffers of the host product's workspace.
    fn w_tasks(&self) -> usize {
        self.rows_per_batch.div_ceil(W_ROWS_PER_TASK)
    }

    /// The scratch [`ptap_numeric`] needs on this plan: per-thread markers over the coarse rows,
    /// one batch of `A P` rows and a cursor per coarse row (the device products keep theirs in
    /// the plan's device form and read none of it). Keep it with the plan and pass it to every
    /// numeric call.
    pub fn workspace(&self) -> PtapWorkspace {
        PtapWorkspace::new(self.pattern.n_block_rows(), self.w_tasks())
    }

    /// Pattern of `A_c = P^T A P`.
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Pattern of `A` the plan was built for.
    pub fn a_pattern(&self) -> &Arc<BlockPattern> {
        &self.a
    }

    /// Pattern of `P` the plan was built for.
    pub fn p_pattern(&self) -> &Arc<BlockPattern> {
        &self.p
    }

    /// Pattern of `P^T`: for each coarse row, the fine rows with a block in that column of `P`,
    /// ascending.
    pub fn pt_pattern(&self) -> &Arc<BlockPattern> {
        &self.host().pt
    }

    /// For each block `k` of [`PtapPlan::pt_pattern`], the slot of `P` that stores it (untransposed).
    pub fn pt_slots(&self) -> &[u32] {
        &self.host().pt_slots
    }

    /// Bytes the plan holds on the host besides the patterns of `A`, `P` and `A_c` (the first
    /// two are the caller's, the last is shared with the matrices built on it): `P^T`'s pattern
    /// and slot map, where made.
    pub fn memory_bytes(&self) -> usize {
        self.host.get().map_or(0, |host| {
            size_of_val(host.pt.row_ptr())
                + size_of_val(host.pt.col_idx())
                + size_of_val(host.pt_slots.as_slice())
        })
    }
}

/// The shapes a Galerkin plan needs: `A` square with `P`'s block rows, `P`'s blocks counted in
/// `u32`.
fn check_shapes(a: &BlockPattern, p: &BlockPattern) -> Result<(), LinalgError> {
    check_dim("ptap: block cols of A", p.n_block_rows(), a.n_block_cols())?;
    check_dim("ptap: block rows of A", p.n_block_rows(), a.n_block_rows())?;
    if u32::try_from(p.nnz()).is_err() {
        return Err(LinalgError::DimensionTooLarge {
            what: "ptap: number of blocks of P",
            value: p.nnz(),
        });
    }
    Ok(())
}

/// Symbolic `P^T A P` (copies both patterns; see [`PtapPlan::new`] to share them). Errors if `A` is
/// not `n x n` blocks with `n` the block rows of `P`.
pub fn ptap_symbolic(a: &BlockPattern, p: &BlockPattern) -> Result<PtapPlan, LinalgError> {
    PtapPlan::new(&Arc::new(a.clone()), &Arc::new(p.clone()))
}

/// Recomputes `ac = P^T A P` on the plan's patterns, in the scratch `ws` made by
/// [`PtapPlan::workspace`] on this plan. `A` must have `b x b` blocks with `b` the block rows of
/// `P`; `ac` must carry `plan.pattern()` and `c x c` blocks (`c` the block cols of `P`).
/// Deterministic: every block sums in a fixed order whatever the thread count.
pub fn ptap_numeric(
    plan: &PtapPlan,
    a: &Bsr,
    p: &Bsr,
    ac: &mut Bsr,
    ws: &mut PtapWorkspace,
) -> Result<(), LinalgError> {
    for (ok, what) in [
        (BlockPattern::same(a.pattern(), &plan.a), "ptap_numeric: A"),
        (BlockPattern::same(p.pattern(), &plan.p), "ptap_numeric: P"),
        (
            BlockPattern::same(ac.pattern(), &plan.pattern),
            "ptap_numeric: A_c",
        ),
    ] {
        if !ok {
            return Err(LinalgError::PatternMismatch { what });
        }
    }
    let (b, c) = (p.block_rows(), p.block_cols());
    check_dim("ptap_numeric: block rows of A", b, a.block_rows())?;
    check_dim("ptap_numeric: block cols of A", b, a.block_cols())?;
    check_dim("ptap_numeric: block rows of A_c", c, ac.block_rows())?;
    check_dim("ptap_numeric: block cols of A_c", c, ac.block_cols())?;
    let other_plan = LinalgError::PatternMismatch {
        what: "ptap_numeric: workspace made for another plan",
    };
    if ws.n_coarse != plan.pattern.n_block_rows() {
        return Err(other_plan);
    }
    let device = ac.device();
    check_same_device("ptap_numeric: A", &device, &a.device())?;
    check_same_device("ptap_numeric: P", &device, &p.device())?;

    if let (Placed::Host(a_host), Placed::Host(p_host), Placed::Host(out)) =
        (a.storage(), p.storage(), ac.storage_mut())
    {
        // the batches are the host product's only (device products keep theirs in the plan)
        if ws.w_tasks.len() != plan.w_tasks() {
            return Err(other_plan);
        }
        // fp32 operands are widened for the product (transient copies) and the result is
        // rounded into fp32 storage: the host kernels compute in fp64 only.
        let a_values = host_f64(a_host);
        let p_values = host_f64(p_host);
        let host = HostProduct {
            plan,
            ops: Operands {
                a: a.pattern(),
                a_values: &a_values,
                p: p.pattern(),
                p_values: &p_values,
            },
            b,
            c,
        };
        match out {
            ByPrecision::Double(out) => host.run(ws, out),
            ByPrecision::Single(out32) => {
                let mut out = vec![0.0; out32.len()];
                host.run(ws, &mut out);
                out32.iter_mut().zip(&out).for_each(|(d, &v)| *d = v as f32);
            }
        }
        return Ok(());
    }
    let (Placed::Cuda(_, am), Placed::Cuda(_, pm), Placed::Cuda(ctx, out)) =
        (a.storage(), p.storage(), ac.storage_mut())
    else {
        return Err(unsupported("ptap_numeric", &device));
    };
    use ByPrecision::{Double as D64, Single as D32};
    match (am, pm, out) {
        (D64(am), D64(pm), D64(out)) => plan.device_plan(ctx)?.numeric(ctx, am, pm, out)?,
        // mixed precision: fp64 fine or fp32 coarse A, fp32 P and A_c
        (D64(am), D32(pm), D32(out)) => plan.device_plan(ctx)?.numeric(ctx, am, pm, out)?,
        (D32(am), D32(pm), D32(out)) => plan.device_plan(ctx)?.numeric(ctx, am, pm, out)?,
        _ => {
            return Err(LinalgError::PrecisionUnsupported {
                what: "ptap_numeric on the device (A fp64 or fp32, P and A_c of one precision)",
                precision: ac.precision().name(),
            })
        }
    }
    Ok(())
}

/// Host values in fp64 (borrowed, or widened from fp32).
fn host_f64(v: &HostByPrecision) -> Cow<'_, [f64]> {
    match v {
        ByPrecision::Double(v) => Cow::Borrowed(v),
        ByPrecision::Single(v) => Cow::Owned(crate::precision::widen(v)),
    }
}

/// The host numeric product of a plan on fp64 operands.
struct HostProduct<'a> {
    plan: &'a PtapPlan,
    ops: Operands<'a>,
    b: usize,
    c: usize,
}

impl HostProduct<'_> {
    fn run(self, ws: &mut PtapWorkspace, out: &mut [f64]) {
        let (plan, ops, b, c) = (self.plan, self.ops, self.b, self.c);
        let host = plan.host();
        let args = StreamedArgs {
            ops,
            pt: &host.pt,
            pt_slots: &host.pt_slots,
            ac: &plan.pattern,
            rows_per_batch: plan.rows_per_batch,
        };
        dispatch_galerkin!((b, c), (m_ap, m_ptw) => streamed_numeric(m_ap, m_ptw, &args, ws, out));
    }
}

/// `P^T A P` as a new matrix.
pub fn ptap(a: &Bsr, p: &Bsr) -> Result<Bsr, LinalgError> {
    let plan = PtapPlan::new(a.pattern(), p.pattern())?;
    let mut ac = Bsr::zeros_on(
        &a.device(),
        plan.pattern.clone(),
        p.block_cols(),
        p.block_cols(),
    )?;
    ptap_numeric(&plan, a, p, &mut ac, &mut plan.workspace())?;
    Ok(ac)
}
