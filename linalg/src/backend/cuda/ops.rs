//! The kernels of `linalg/cuda/ops.cu`: scaling, hashed fill, max norm, block norms, the
//! prolongator smoothing and the coarsest level's dense inverse ([`DeviceDenseInverse`]).

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, grid_stride, OPS};
use super::{symbolic, CudaContext, DeviceBsr, DeviceBuffer};
use crate::device::device_pattern;
use crate::{BlockPattern, LinalgError};

/// `x = a x`.
pub fn scale(ctx: &CudaContext, a: f64, x: &mut DeviceBuffer<f64>) -> Result<(), LinalgError> {
    let f = ctx.function(&OPS, &[], "scale")?;
    let n = x.len() as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&a).arg(&mut *x);
    // SAFETY: arguments match `scale`.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("scale"))?;
    Ok(())
}

/// `x` rounded to fp32 in a new device buffer (fp32 storage of a matrix or block diagonal).
pub fn narrow_to_f32(
    ctx: &CudaContext,
    x: &DeviceBuffer<f64>,
) -> Result<DeviceBuffer<f32>, LinalgError> {
    let mut y = ctx.zeros::<f32>(x.len())?;
    let f = ctx.function(&OPS, &[], "narrow_to_f32")?;
    let n = x.len() as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(x).arg(&mut y);
    // SAFETY: arguments match `narrow_to_f32`; both buffers hold n values.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("narrow_to_f32"))?;
    Ok(y)
}

/// `x` widened to fp64 in a new device buffer.
pub fn widen_to_f64(
    ctx: &CudaContext,
    x: &DeviceBuffer<f32>,
) -> Result<DeviceBuffer<f64>, LinalgError> {
    let mut y = ctx.zeros::<f64>(x.len())?;
    let f = ctx.function(&OPS, &[], "widen_to_f64")?;
    let n = x.len() as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(x).arg(&mut y);
    // SAFETY: arguments match `widen_to_f64`; both buffers hold n values.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("widen_to_f64"))?;
    Ok(y)
}

/// The host's `fill_hashed`: entry `i` is the hash of global index `first + i` and `seed`.
pub fn fill_hashed(
    ctx: &CudaContext,
    first: u64,
    seed: u64,
    x: &mut DeviceBuffer<f64>,
    len: usize,
) -> Result<(), LinalgError> {
    check_prefix("device fill_hashed", len, x.len())?;
    let f = ctx.function(&OPS, &[], "fill_hashed")?;
    let (n, rot) = (len as u64, seed.rotate_left(32));
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&first).arg(&rot).arg(&mut *x);
    // SAFETY: arguments match `fill_hashed`; `len <= x.len()`.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("fill_hashed"))?;
    Ok(())
}

/// `max |x_i|` over the first `len` entries (NaN if any is NaN); one scalar downloaded.
pub fn norm_inf(ctx: &CudaContext, x: &DeviceBuffer<f64>, len: usize) -> Result<f64, LinalgError> {
    check_prefix("device norm_inf", len, x.len())?;
    let n = len as u64;
    let cfg = grid_stride(n);
    let blocks = cfg.grid_dim.0;
    let mut partial = ctx.zeros::<f64>(blocks as usize)?;
    let f = ctx.function(&OPS, &[], "max_abs_blocks")?;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(x).arg(&mut partial);
    // SAFETY: arguments match `max_abs_blocks` (256 threads, one partial per block).
    unsafe { l.launch(cfg) }.map_err(driver_err("max_abs_blocks"))?;
    let mut out = ctx.zeros::<f64>(1)?;
    let f = ctx.function(&OPS, &[], "max_abs_final")?;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&blocks).arg(&partial).arg(&mut out);
    // SAFETY: arguments match `max_abs_final`.
    unsafe { l.launch(grid_1d(1, 32)) }.map_err(driver_err("max_abs_final"))?;
    Ok(ctx.download(&out)?[0])
}

/// The Frobenius norm of every block of `a` into `norms` (`nnz` entries).
pub fn block_norms(
    ctx: &CudaContext,
    a: &DeviceBsr,
    norms: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    let nnz = a.pattern().nnz() as u64;
    check_len("device block_norms", nnz as usize, norms.len())?;
    let bl = (a.block_rows() * a.block_cols()) as u32;
    let f = ctx.function(&OPS, &[], "block_norms")?;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&nnz).arg(&bl).arg(a.values()).arg(&mut *norms);
    // SAFETY: arguments match `block_norms`.
    unsafe { l.launch(grid_stride(nnz)) }.map_err(driver_err("block_norms"))?;
    Ok(())
}

/// The slot maps of the device prolongator smoothing for one pair of patterns `W` (`A P0`) and
/// `P0`: each slot's block row and, per slot of `W`, the slot of `P0` it holds (`u32::MAX`:
/// none). Built on the device from the patterns' device mirrors (module `symbolic`: nothing
/// uploaded where the matrices on them are there already); a smoothing plan or map keeps it
/// ([`crate::SpgemmPlan`], [`crate::SmoothingMap`]), so a renewal's smoothing on the same
/// patterns moves nothing.
#[derive(Debug)]
pub struct DeviceSmoothMap {
    nnz: usize,
    n_block_rows: usize,
    rows: DeviceBuffer<u32>,
    p0_slot: DeviceBuffer<u32>,
}

impl DeviceSmoothMap {
    /// The maps of `w_pattern` and `p0_pattern`; an error if a block of `P0` is not in `W`.
    pub fn new(
        ctx: &CudaContext,
        w_pattern: &BlockPattern,
        p0_pattern: &BlockPattern,
    ) -> Result<Self, LinalgError> {
        let mismatch = LinalgError::PatternMismatch {
            what: "device smooth_prolongator: P0's pattern is not inside A P0's",
        };
        if w_pattern.n_block_rows() != p0_pattern.n_block_rows()
            || w_pattern.n_block_cols() != p0_pattern.n_block_cols()
        {
            return Err(mismatch);
        }
        let w = device_pattern(ctx, w_pattern)?;
        let p0 = device_pattern(ctx, p0_pattern)?;
        let (p0_slot, found) = symbolic::inner_slots(ctx, &w, &p0)?;
        if found != p0_pattern.nnz() {
            return Err(mismatch);
        }
        Ok(Self {
            nnz: w_pattern.nnz(),
            n_block_rows: w_pattern.n_block_rows(),
            rows: symbolic::slot_rows(ctx, &w)?,
            p0_slot,
        })
    }

    /// The maps downloaded: each slot's row and its slot of `P0` (tests).
    #[cfg(test)]
    pub(crate) fn downloaded(&self, ctx: &CudaContext) -> (Vec<u32>, Vec<u32>) {
        (
            ctx.download(&self.rows).unwrap(),
            ctx.download(&self.p0_slot).unwrap(),
        )
    }
}

/// `W = P0 - omega D^{-1} W` in place (`W` with `bs x k` blocks, `dinv` one `bs x bs` inverse
/// per block row, `P0` on a pattern inside `W`'s) through the slot maps of their patterns
/// ([`DeviceSmoothMap`], kept by the caller), bit-identical to the host's smoothing: no
/// transfer, no wait.
pub fn smooth_prolongator_mapped(
    ctx: &CudaContext,
    map: &DeviceSmoothMap,
    w: &mut DeviceBsr,
    omega: f64,
    dinv: &DeviceBuffer<f64>,
    p0: &DeviceBsr,
) -> Result<(), LinalgError> {
    let (bs, k) = (w.block_rows(), w.block_cols());
    check_len(
        "device smooth_prolongator: D^-1",
        map.n_block_rows * bs * bs,
        dinv.len(),
    )?;
    check_len(
        "device smooth_prolongator: W",
        map.nnz * bs * k,
        w.values().len(),
    )?;
    if map.nnz == 0 {
        return Ok(());
    }
    let f = ctx.function(
        &OPS,
        &[("BS", bs as i64), ("K", k as i64)],
        "smooth_prolongator",
    )?;
    let nnz = map.nnz as u32;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&nnz)
        .arg(&map.rows)
        .arg(&map.p0_slot)
        .arg(dinv)
        .arg(p0.values())
        .arg(w.values_mut())
        .arg(&omega);
    // SAFETY: arguments match `smooth_prolongator`; sizes checked by the caller and above.
    unsafe { l.launch(grid_1d(nnz as u64, 128)) }.map_err(driver_err("smooth_prolongator"))?;
    Ok(())
}

/// The explicit inverse of a small square matrix on the device (the coarsest AMG level): the
/// matrix is densified and inverted by Gauss-Jordan with partial pivoting in one thread block
/// (in its shared memory where the matrix fits: up to 169 unknowns on Hopper; beyond, a launch
/// per pivot step);
/// a solve is one dense matrix-vector product. Equal to the host's Cholesky/LU solve to rounding.
#[derive(Debug)]
pub struct DeviceDenseInverse {
    n: usize,
    inv: DeviceBuffer<f64>,
}

/// From this many unknowns on, where the matrix does not fit one block's shared memory (the
/// first choice, `dense_invert_shared`), the dense inverse runs a launch per pivot step over the
/// whole GPU (`dense_invert_pivot`, `dense_invert_update`) instead of one block in global
/// memory: one block's share of L2 bandwidth bounds that kernel (1.3 ms at 156 unknowns, 10.4 ms
/// at 306 on an H100), two launches a step cost a few microseconds each. Up to the `u32` entry
/// index.
const INVERT_BY_STEPS_MIN_N: usize = 160;
const INVERT_BY_STEPS_MAX_N: usize = 65_535;

/// The Gauss-Jordan inverse of the dense `n x n` matrix `a` step by step (see `ops.cu`): the
/// single-block kernel's operations per entry, so its bits. `perm`, `f`: scratch of `n`;
/// `fail`: zero, or the failing column's complement afterwards.
fn invert_by_steps(
    ctx: &CudaContext,
    n: u32,
    a: &mut DeviceBuffer<f64>,
    perm: &mut DeviceBuffer<u32>,
    f: &mut DeviceBuffer<f64>,
    rtol: f64,
    fail: &mut DeviceBuffer<u64>,
) -> Result<(), LinalgError> {
    let one_block = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1024, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut tol = ctx.zeros::<f64>(1)?;
    let kernel = ctx.function(&OPS, &[], "dense_invert_tol")?;
    let mut l = ctx.stream().launch_builder(&kernel);
    l.arg(&n).arg(&*a).arg(&rtol).arg(&mut tol);
    // SAFETY: arguments match `dense_invert_tol` (one block of 1024 threads).
    unsafe { l.launch(one_block) }.map_err(driver_err("dense_invert_tol"))?;
    let pivot = ctx.function(&OPS, &[], "dense_invert_pivot")?;
    let update = ctx.function(&OPS, &[], "dense_invert_update")?;
    let entries = grid_stride(n as u64 * n as u64);
    for k in 0..n {
        let mut l = ctx.stream().launch_builder(&pivot);
        l.arg(&n)
            .arg(&k)
            .arg(&mut *a)
            .arg(&mut *perm)
            .arg(&mut *f)
            .arg(&tol)
            .arg(&mut *fail);
        // SAFETY: arguments match `dense_invert_pivot` (one block of 1024 threads); the
        // buffers hold n x n, n, n, 1 and 1 entries.
        unsafe { l.launch(one_block) }.map_err(driver_err("dense_invert_pivot"))?;
        let mut l = ctx.stream().launch_builder(&update);
        l.arg(&n).arg(&k).arg(&mut *a).arg(&*f).arg(&*fail);
        // SAFETY: arguments match `dense_invert_update` (a grid-stride loop over n x n).
        unsafe { l.launch(entries) }.map_err(driver_err("dense_invert_update"))?;
    }
    let unpermute = ctx.function(&OPS, &[], "dense_invert_unpermute")?;
    let mut l = ctx.stream().launch_builder(&unpermute);
    l.arg(&n).arg(&mut *a).arg(&*perm).arg(&*fail);
    // SAFETY: arguments match `dense_invert_unpermute` (one block of 1024 threads).
    unsafe { l.launch(one_block) }.map_err(driver_err("dense_invert_unpermute"))?;
    Ok(())
}

impl DeviceDenseInverse {
    /// Densifies and inverts `a`. A pivot below `rtol` times the largest entry is
    /// `Err(column)` through [`LinalgError::SingularMatrix`] (pivot reported as NaN: the device
    /// keeps only its column). One `u64` comes back to the host; nothing goes up (each block's
    /// row is found on the device).
    pub fn factor(ctx: &CudaContext, a: &DeviceBsr, rtol: f64) -> Result<Self, LinalgError> {
        let n = a.n_rows();
        check_len("device dense inverse: square", n, a.n_cols())?;
        let mut dense = ctx.zeros::<f64>(n * n)?;
        let rows = symbolic::slot_rows(ctx, a.pattern())?;
        let n_values = a.values().len() as u64;
        let (br, bc, ncols) = (a.block_rows() as u32, a.block_cols() as u32, n as u32);
        let f = ctx.function(&OPS, &[], "bsr_to_dense")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n_values)
            .arg(&br)
            .arg(&bc)
            .arg(&rows)
            .arg(&a.pattern().col_idx)
            .arg(a.values())
            .arg(&ncols)
            .arg(&mut dense);
        // SAFETY: arguments match `bsr_to_dense`; `dense` holds n * n values.
        unsafe { l.launch(grid_stride(n_values)) }.map_err(driver_err("bsr_to_dense"))?;
        let mut perm = ctx.zeros::<u32>(n.max(1))?;
        // the multipliers' scratch in global memory: the paths but the shared-memory one
        let multipliers = || ctx.zeros::<f64>(n.max(1));
        // zero: no pivot failed (the kernels store the failing column's complement)
        let mut fail = ctx.zeros::<u64>(1)?;
        let nn = n as u32;
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        // the matrix and the multipliers in one block's shared memory, beside the kernel's
        // own (the pivot search's 33 + 33 values and two scalars: under 1 KiB)
        let shared_bytes = (n * n + n) * std::mem::size_of::<f64>();
        if shared_bytes + 1024 <= ctx.shared_memory_optin() {
            let f = ctx.function(&OPS, &[], "dense_invert_shared")?;
            f.set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes as i32,
            )
            .map_err(driver_err("cuFuncSetAttribute (dense_invert_shared)"))?;
            let mut l = ctx.stream().launch_builder(&f);
            l.arg(&nn)
                .arg(&mut dense)
                .arg(&mut perm)
                .arg(&rtol)
                .arg(&mut fail);
            let in_shared = LaunchConfig {
                shared_mem_bytes: shared_bytes as u32,
                ..one_block
            };
            // SAFETY: arguments match `dense_invert_shared` (one block of 1024 threads, n * n + n
            // values of dynamic shared memory, allowed by the attribute set above).
            unsafe { l.launch(in_shared) }.map_err(driver_err("dense_invert_shared"))?;
        } else if (INVERT_BY_STEPS_MIN_N..=INVERT_BY_STEPS_MAX_N).contains(&n) {
            let mut fvec = multipliers()?;
            invert_by_steps(ctx, nn, &mut dense, &mut perm, &mut fvec, rtol, &mut fail)?;
        } else {
            let f = ctx.function(&OPS, &[], "dense_invert")?;
            let mut fvec = multipliers()?;
            let mut l = ctx.stream().launch_builder(&f);
            l.arg(&nn)
                .arg(&mut dense)
                .arg(&mut perm)
                .arg(&mut fvec)
                .arg(&rtol)
                .arg(&mut fail);
            // SAFETY: arguments match `dense_invert` (one block of 1024 threads).
            unsafe { l.launch(one_block) }.map_err(driver_err("dense_invert"))?;
        }
        let failed = ctx.download(&fail)?[0];
        if failed != 0 {
            return Err(LinalgError::SingularMatrix {
                n,
                column: !failed as usize,
                pivot: f64::NAN,
            });
        }
        Ok(Self { n, inv: dense })
    }

    /// `x = A^{-1} b`.
    pub fn solve(
        &self,
        ctx: &CudaContext,
        b: &DeviceBuffer<f64>,
        x: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        check_len("device dense solve: b", self.n, b.len())?;
        check_len("device dense solve: x", self.n, x.len())?;
        let f = ctx.function(&OPS, &[], "dense_matvec")?;
        let n = self.n as u32;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n).arg(&self.inv).arg(b).arg(&mut *x);
        // SAFETY: arguments match `dense_matvec`.
        unsafe { l.launch(grid_1d(n as u64, 128)) }.map_err(driver_err("dense_matvec"))?;
        Ok(())
    }
}

/// Errors unless the first `len` entries exist in a buffer of `available`.
fn check_prefix(what: &'static str, len: usize, available: usize) -> Result<(), LinalgError> {
    if len > available {
        return Err(LinalgError::IndexOutOfRange {
            what,
            index: len,
            len: available,
        });
    }
    Ok(())
}
