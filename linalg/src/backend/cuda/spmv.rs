//! Block SpMV on the device, `y = alpha op(A) x + beta y`, any block shape (kernels in
//! `linalg/cuda/spmv.cu`). [`spmv`] and [`spmv_transpose`] are bit-identical to the host's
//! `Bsr::spmv_add` and to the restriction through the Galerkin plan's `P^T` slot map.

use std::sync::Arc;

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, SPMV};
use super::matrix::DevicePattern;
use super::{CudaContext, DeviceBsr, DeviceBuffer, DeviceValue};
use crate::LinalgError;

/// Warps (block rows) per thread block of the exact kernel (`WARPS` in spmv.cu).
const SEQ_WARPS: u32 = 4;
/// Largest output block dimension of the exact kernel (one lane per component).
const MAX_SEQ_DIM: usize = 32;

/// Which SpMV kernel to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpmvKernel {
    /// One warp per block row, bit-identical to the host (the default).
    Exact,
    /// `group` lanes (a power of two up to 32) per block row striding over its values, reduced
    /// by shuffles: equal to the host's to rounding.
    Flat { group: u32 },
}

/// `y = alpha A x + beta y` (with `beta == 0` the old `y` is not read), bit-identical to the host
/// (for fp32 values too: loaded widened, summed in fp64 in the host's order).
pub fn spmv<T: DeviceValue>(
    ctx: &CudaContext,
    a: &DeviceBsr<T>,
    alpha: f64,
    x: &DeviceBuffer<f64>,
    beta: f64,
    y: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    spmv_with(ctx, SpmvKernel::Exact, a, alpha, x, beta, y)
}

/// `y[out_rows[k]] += (A x)[k]` for the non-empty block rows of `a` only (a distributed
/// matrix's off-diagonal part touches only the rows next to other ranks): `rows` is the
/// [`DevicePattern`] of those rows, its `row_ptr` the rows' starts in `a`'s slots (so it shares
/// `a`'s column indices and values), `out_rows` each listed row's block row of `y` (none twice).
/// Each row's sum is [`spmv`]'s (the same summation on the same entries) added to `y`: the bits
/// of `spmv(a, 1, x, 1, y)`, without the empty rows' launches and in one kernel. With `wait`
/// the kernel first waits for a peer exchange's messages (`x`'s ghosts). `None` if `a`'s
/// blocks are too tall for that kernel (then queue the wait, if any, and use [`spmv`]); the
/// wait is then not queued.
pub fn spmv_rows_add<T: DeviceValue>(
    ctx: &CudaContext,
    a: &DeviceBsr<T>,
    rows: &DevicePattern,
    out_rows: &DeviceBuffer<u32>,
    x: &DeviceBuffer<f64>,
    y: &mut DeviceBuffer<f64>,
    wait: Option<&super::peer::PeerWait<'_>>,
) -> Result<Option<()>, LinalgError> {
    if a.block_rows() > MAX_SEQ_DIM {
        return Ok(None);
    }
    check_len("device spmv_rows_add: x", a.n_cols(), x.len())?;
    check_len("device spmv_rows_add: y", a.n_rows(), y.len())?;
    check_len(
        "device spmv_rows_add: rows",
        rows.n_block_rows(),
        out_rows.len(),
    )?;
    check_len(
        "device spmv_rows_add: blocks",
        a.pattern().nnz(),
        rows.nnz(),
    )?;
    let (br, bc) = (a.block_rows() as i64, a.block_cols() as i64);
    let defines = [("BR", br), ("BC", bc), ("VAL_F32", T::F32)];
    let f = ctx.function(&SPMV, &defines, "bsr_spmv_seq_add_rows")?;
    let n_rows = rows.n_block_rows() as u32;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n_rows)
        .arg(&rows.row_ptr)
        .arg(&rows.col_idx)
        .arg(&rows.col_idx)
        .arg(a.values())
        .arg(x)
        .arg(out_rows)
        .arg(&mut *y);
    match wait {
        Some(w) => w.push_args(&mut l),
        None => super::peer::push_no_wait(&mut l, out_rows),
    }
    // SAFETY: the argument list matches bsr_spmv_seq_add_rows (`slots` is not read without
    // SLOTS); the lengths are checked above and the output rows lie inside `y` (built from
    // `a`'s rows by the caller); the wait's table (if any) holds its sources' flag pointers.
    unsafe { l.launch(seq_config(rows.n_block_rows())) }
        .map_err(driver_err("bsr_spmv_seq_add_rows"))?;
    Ok(Some(()))
}

/// [`spmv`] with a chosen kernel (benchmarks compare them).
pub fn spmv_with<T: DeviceValue>(
    ctx: &CudaContext,
    kernel: SpmvKernel,
    a: &DeviceBsr<T>,
    alpha: f64,
    x: &DeviceBuffer<f64>,
    beta: f64,
    y: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device spmv: x", a.n_cols(), x.len())?;
    check_len("device spmv: y", a.n_rows(), y.len())?;
    let (br, bc) = (a.block_rows() as i64, a.block_cols() as i64);
    let p = a.pattern();
    let n_rows = p.n_block_rows() as u32;
    let read_y = (beta != 0.0) as i32;
    match kernel {
        SpmvKernel::Exact if a.block_rows() <= MAX_SEQ_DIM => {
            let defines = [("BR", br), ("BC", bc), ("VAL_F32", T::F32)];
            // the kernel reads `slots` only with SLOTS=1; any valid pointer will do
            let operands = SeqOperands {
                pattern: p,
                slots: &p.col_idx,
                values: a.values(),
                x,
            };
            launch_seq(ctx, &defines, operands, (alpha, beta), y, "bsr_spmv_seq")?;
        }
        SpmvKernel::Exact => {
            return spmv_with(ctx, SpmvKernel::Flat { group: 32 }, a, alpha, x, beta, y)
        }
        SpmvKernel::Flat { group } => {
            if !group.is_power_of_two() || group > 32 {
                return Err(LinalgError::DimensionMismatch {
                    what: "device spmv: lanes per row (a power of two up to 32)",
                    expected: 32,
                    found: group as usize,
                });
            }
            let f = ctx.function(
                &SPMV,
                &[
                    ("BR", br),
                    ("BC", bc),
                    ("GROUP", group as i64),
                    ("VAL_F32", T::F32),
                ],
                "bsr_spmv_flat",
            )?;
            let cfg = grid_1d(p.n_block_rows() as u64 * group as u64, 256);
            let mut l = ctx.stream().launch_builder(&f);
            l.arg(&n_rows)
                .arg(&p.row_ptr)
                .arg(&p.col_idx)
                .arg(a.values())
                .arg(x)
                .arg(&mut *y)
                .arg(&alpha)
                .arg(&beta)
                .arg(&read_y);
            // SAFETY: argument list matches bsr_spmv_flat; lengths checked above.
            unsafe { l.launch(cfg) }.map_err(driver_err("bsr_spmv_flat"))?;
        }
    }
    Ok(())
}

/// What `bsr_spmv_seq` reads: the rows it computes (`pattern`), the value slot of each of their
/// entries (`slots`, read with `SLOTS=1` only), the values and `x`.
struct SeqOperands<'a, T: DeviceValue> {
    pattern: &'a DevicePattern,
    slots: &'a DeviceBuffer<u32>,
    values: &'a DeviceBuffer<T>,
    x: &'a DeviceBuffer<f64>,
}

/// Launches `bsr_spmv_seq` with `defines`: `y = alpha op(A) x + beta y` (`(alpha, beta)`; with
/// `beta == 0` the old `y` is not read). The callers check the lengths.
fn launch_seq<T: DeviceValue>(
    ctx: &CudaContext,
    defines: &[(&'static str, i64)],
    operands: SeqOperands<'_, T>,
    (alpha, beta): (f64, f64),
    y: &mut DeviceBuffer<f64>,
    what: &'static str,
) -> Result<(), LinalgError> {
    let f = ctx.function(&SPMV, defines, "bsr_spmv_seq")?;
    let rows = operands.pattern;
    let n_rows = rows.n_block_rows() as u32;
    let read_y = (beta != 0.0) as i32;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n_rows)
        .arg(&rows.row_ptr)
        .arg(&rows.col_idx)
        .arg(operands.slots)
        .arg(operands.values)
        .arg(operands.x)
        .arg(&mut *y)
        .arg(&alpha)
        .arg(&beta)
        .arg(&read_y);
    // SAFETY: the argument list matches bsr_spmv_seq; the callers checked the lengths.
    unsafe { l.launch(seq_config(rows.n_block_rows())) }.map_err(driver_err(what))?;
    Ok(())
}

fn seq_config(n_rows: usize) -> LaunchConfig {
    let blocks = (n_rows as u64).div_ceil(SEQ_WARPS as u64).max(1) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (SEQ_WARPS * 32, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The pattern of `A^T` with, per block, the slot of `A` holding it: what a transpose SpMV
/// (and the restriction `P^T x`) reads, uploaded once from a host plan.
#[derive(Debug)]
pub struct DeviceTransposeMap {
    /// Pattern of `A^T`.
    pub(crate) pattern: Arc<DevicePattern>,
    /// Slot of `A` for each block of `A^T`.
    pub(crate) slots: DeviceBuffer<u32>,
    /// Block rows, block columns and blocks of `A`.
    source: (usize, usize, usize),
}

impl DeviceTransposeMap {
    /// The `P^T` pattern and slot map of a Galerkin plan (for the restriction `y = P^T x`).
    #[cfg(test)]
    pub fn from_ptap_plan(ctx: &CudaContext, plan: &crate::PtapPlan) -> Result<Self, LinalgError> {
        let p = plan.p_pattern();
        Ok(Self {
            pattern: DevicePattern::upload(ctx, plan.pt_pattern())?,
            slots: ctx.upload(plan.pt_slots())?,
            source: (p.n_block_rows(), p.n_block_cols(), p.nnz()),
        })
    }

    /// A map built on the device: `pattern` of `A^T`, `slots` (a slot of `A` per block of it),
    /// `source` the block rows, block columns and blocks of `A`.
    pub(crate) fn from_parts(
        pattern: Arc<DevicePattern>,
        slots: DeviceBuffer<u32>,
        source: (usize, usize, usize),
    ) -> Self {
        Self {
            pattern,
            slots,
            source,
        }
    }

    /// The pattern and slot map of a transpose plan.
    #[cfg(test)]
    pub fn from_transpose_plan(
        ctx: &CudaContext,
        plan: &crate::TransposePlan,
    ) -> Result<Self, LinalgError> {
        let s = plan.source();
        let slots: Vec<u32> = plan.source_slots().iter().map(|&k| k as u32).collect();
        if s.nnz() > u32::MAX as usize {
            return Err(LinalgError::DimensionTooLarge {
                what: "device transpose map: number of blocks",
                value: s.nnz(),
            });
        }
        Ok(Self {
            pattern: DevicePattern::upload(ctx, plan.pattern())?,
            slots: ctx.upload(&slots)?,
            source: (s.n_block_rows(), s.n_block_cols(), s.nnz()),
        })
    }

    /// Device bytes of the map.
    pub fn bytes(&self) -> usize {
        self.pattern.bytes() + self.slots.bytes()
    }
}

/// `y = alpha A^T x + beta y` through the transpose map of `A`'s pattern (with `beta == 0` the
/// old `y` is not read). With a Galerkin plan's map and `A = P` this is the restriction, and it
/// is bit-identical to the host's.
pub fn spmv_transpose<T: DeviceValue>(
    ctx: &CudaContext,
    map: &DeviceTransposeMap,
    a: &DeviceBsr<T>,
    alpha: f64,
    x: &DeviceBuffer<f64>,
    beta: f64,
    y: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    let ap = a.pattern();
    if map.source != (ap.n_block_rows(), ap.n_block_cols(), ap.nnz()) {
        return Err(LinalgError::PatternMismatch {
            what: "device spmv_transpose: A (not the map's source pattern)",
        });
    }
    check_len("device spmv_transpose: x", a.n_rows(), x.len())?;
    check_len("device spmv_transpose: y", a.n_cols(), y.len())?;
    if a.block_cols() > MAX_SEQ_DIM {
        return Err(LinalgError::DimensionMismatch {
            what: "device spmv_transpose: block columns (at most 32)",
            expected: MAX_SEQ_DIM,
            found: a.block_cols(),
        });
    }
    let defines = [
        ("BR", a.block_rows() as i64),
        ("BC", a.block_cols() as i64),
        ("TRANSPOSE", 1),
        ("SLOTS", 1),
        ("VAL_F32", T::F32),
    ];
    let operands = SeqOperands {
        pattern: &map.pattern,
        slots: &map.slots,
        values: a.values(),
        x,
    };
    launch_seq(
        ctx,
        &defines,
        operands,
        (alpha, beta),
        y,
        "bsr_spmv_seq (T)",
    )?;
    Ok(())
}
