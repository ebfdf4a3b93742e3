//! Point-block Jacobi and the Chebyshev smoother on the device (`linalg/cuda/jacobi.cu`),
//! bit-identical to the host's (amg's `PointBlockJacobi` and `Smoother`).

use cudarc::driver::PushKernelArg;

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, JACOBI};
use super::matrix::DevicePattern;
use super::spmv::spmv;
use super::{CudaContext, DeviceBsr, DeviceBuffer, DeviceValue};
use crate::{BlockPattern, LinalgError};

/// Relative pivot tolerance of the inversion: the host's.
pub use crate::dense::PIVOT_RTOL;

/// The inverses of the `bs x bs` diagonal blocks of a square-block operator, on the device.
///
/// Calling order: [`DeviceBlockDiagonal::new`] once per pattern (finds where each diagonal
/// block sits: on the device from the pattern there, else on the host, uploaded), [`DeviceBlockDiagonal::invert`] for every new set of values, then
/// [`DeviceBlockDiagonal::apply`] / [`chebyshev_step`] as often as needed. The inverses are
/// stored as `T` (`f32` for fp32 storage: inverted in fp64, rounded once when stored).
#[derive(Debug)]
pub struct DeviceBlockDiagonal<T = f64> {
    bs: usize,
    n_blocks: usize,
    diag_slots: DeviceBuffer<u32>,
    inv: DeviceBuffer<T>,
}

impl DeviceBlockDiagonal {
    /// Prepares fp64 inverses of the diagonal blocks of operators on `pattern` with `bs x bs`
    /// blocks (errors if a diagonal block is structurally missing or the pattern not square);
    /// [`DeviceBlockDiagonal::new_of`] for another value type.
    #[cfg_attr(not(feature = "kernel-bench"), allow(dead_code))] // examples/cuda_bench.rs
    pub fn new(ctx: &CudaContext, pattern: &BlockPattern, bs: usize) -> Result<Self, LinalgError> {
        Self::new_of(ctx, pattern, bs)
    }
}

impl<T: DeviceValue> DeviceBlockDiagonal<T> {
    /// [`DeviceBlockDiagonal::new`] with inverses stored as `T`. Where `pattern`'s device mirror
    /// exists (a matrix on it is on this GPU) the diagonal's slots are found there
    /// ([`Self::on_device_pattern`]); otherwise the host finds them and uploads them.
    pub fn new_of(
        ctx: &CudaContext,
        pattern: &BlockPattern,
        bs: usize,
    ) -> Result<Self, LinalgError> {
        if let Some(dp) = pattern.device_mirror().get(ctx) {
            return Self::on_device_pattern(ctx, pattern, &dp, bs);
        }
        crate::bsr::check_block_size(bs, bs)?;
        let slots: Vec<u32> = pattern
            .diagonal_positions()?
            .into_iter()
            .map(|k| k as u32)
            .collect();
        Ok(Self {
            bs,
            n_blocks: slots.len(),
            inv: ctx.zeros::<T>(slots.len() * bs * bs)?,
            diag_slots: ctx.upload(&slots)?,
        })
    }

    /// [`Self::new_of`] for operators whose device pattern is `dp` (the same blocks as
    /// `pattern`, whose errors it reports): the diagonal's slots found on the device, nothing
    /// uploaded.
    pub(crate) fn on_device_pattern(
        ctx: &CudaContext,
        pattern: &BlockPattern,
        dp: &DevicePattern,
        bs: usize,
    ) -> Result<Self, LinalgError> {
        crate::bsr::check_block_size(bs, bs)?;
        if pattern.n_block_rows() != pattern.n_block_cols() {
            return Err(LinalgError::PatternNotSquare {
                n_block_rows: pattern.n_block_rows(),
                n_block_cols: pattern.n_block_cols(),
            });
        }
        if (dp.n_block_rows(), dp.n_block_cols(), dp.nnz())
            != (
                pattern.n_block_rows(),
                pattern.n_block_cols(),
                pattern.nnz(),
            )
        {
            return Err(LinalgError::PatternMismatch {
                what: "device block diagonal: device pattern against the host's",
            });
        }
        let (diag_slots, missing) = super::symbolic::diagonal_slots(ctx, dp)?;
        if missing > 0 {
            // the host search names the first row without a diagonal block
            pattern.diagonal_positions()?;
            return Err(LinalgError::PatternMismatch {
                what: "device diagonal slots: a row without its diagonal block",
            });
        }
        let n = pattern.n_block_rows();
        Ok(Self {
            bs,
            n_blocks: n,
            inv: ctx.zeros::<T>(n * bs * bs)?,
            diag_slots,
        })
    }

    /// The diagonal's slots, downloaded (tests compare them with the host's).
    #[cfg(test)]
    pub(crate) fn downloaded_slots(&self, ctx: &CudaContext) -> Vec<u32> {
        ctx.download(&self.diag_slots).unwrap_or_default()
    }

    /// A copy (slots and inverses copied device to device).
    pub fn duplicate(&self, ctx: &CudaContext) -> Result<Self, LinalgError> {
        let mut diag_slots = ctx.zeros::<u32>(self.diag_slots.len())?;
        if !self.diag_slots.is_empty() {
            ctx.stream()
                .memcpy_dtod(self.diag_slots.slice(), diag_slots.slice_mut())
                .map_err(driver_err("cuMemcpyDtoD"))?;
        }
        Ok(Self {
            bs: self.bs,
            n_blocks: self.n_blocks,
            diag_slots,
            inv: ctx.duplicate(&self.inv)?,
        })
    }

    /// The same slots with the inverses `inv` (another stored precision, converted by the caller).
    pub(crate) fn with_inverse<U: DeviceValue>(
        self,
        inv: DeviceBuffer<U>,
    ) -> Result<DeviceBlockDiagonal<U>, LinalgError> {
        check_len("device block diagonal: inverses", self.inv.len(), inv.len())?;
        Ok(DeviceBlockDiagonal {
            bs: self.bs,
            n_blocks: self.n_blocks,
            diag_slots: self.diag_slots,
            inv,
        })
    }

    /// Number of blocks.
    pub fn n_blocks(&self) -> usize {
        self.n_blocks
    }

    /// The inverses, `bs x bs` row-major, one per block row.
    pub fn inverse(&self) -> &DeviceBuffer<T> {
        &self.inv
    }

    /// Inverts the diagonal blocks of `a` (Gauss-Jordan, partial pivoting, the host's algorithm
    /// and rounding). A singular block is [`LinalgError::SingularBlock`] naming the first one (by
    /// block, then column); one `u64` comes back to the host per call.
    pub fn invert<A: DeviceValue>(
        &mut self,
        ctx: &CudaContext,
        a: &DeviceBsr<A>,
    ) -> Result<(), LinalgError> {
        if a.block_rows() != self.bs || a.block_cols() != self.bs {
            return Err(LinalgError::NonSquareBlocks {
                block_rows: a.block_rows(),
                block_cols: a.block_cols(),
            });
        }
        check_len(
            "device block diagonal: block rows of A",
            self.n_blocks,
            a.pattern().n_block_rows(),
        )?;
        // zero: no block failed (the kernel keeps the complement of the first failing index)
        let mut fail = ctx.zeros::<u64>(1)?;
        let defines = [("BS", self.bs as i64), ("A_F32", A::F32), ("D_F32", T::F32)];
        let f = ctx.function(&JACOBI, &defines, "block_invert")?;
        let (n, rtol) = (self.n_blocks as u32, PIVOT_RTOL);
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n)
            .arg(&self.diag_slots)
            .arg(a.values())
            .arg(&mut self.inv)
            .arg(&rtol)
            .arg(&mut fail);
        // SAFETY: arguments match `block_invert`; sizes set at construction and checked above.
        unsafe { l.launch(grid_1d(n as u64, 128)) }.map_err(driver_err("block_invert"))?;
        let failed = ctx.download(&fail)?[0];
        if failed != 0 {
            return Err(self.singular_block_error(ctx, a, (!failed / 64) as usize));
        }
        Ok(())
    }

    /// The error of a singular block `block` as the host reports it (column and pivot of the
    /// host's Gauss-Jordan on that block): an error path, so it downloads the operator's values.
    fn singular_block_error<A: DeviceValue>(
        &self,
        ctx: &CudaContext,
        a: &DeviceBsr<A>,
        block: usize,
    ) -> LinalgError {
        let bs = self.bs;
        let located = (|| {
            let slot = ctx.download(&self.diag_slots)?[block] as usize;
            let values = ctx.download(a.values())?;
            let block = &values[slot * bs * bs..(slot + 1) * bs * bs];
            Ok::<_, LinalgError>(block.iter().map(|v| v.to_f64()).collect::<Vec<f64>>())
        })();
        match located {
            Ok(mut values) => {
                match crate::backend::host::block_diagonal::invert_blocks(bs, &mut values) {
                    Some((_, z)) => LinalgError::SingularBlock {
                        block,
                        column: z.column,
                        pivot: z.pivot,
                    },
                    // the device's pivot test failed where the host's passes: report the block
                    None => LinalgError::SingularBlock {
                        block,
                        column: 0,
                        pivot: f64::NAN,
                    },
                }
            }
            Err(e) => e,
        }
    }

    /// `x = omega D^{-1} r + beta x` (with `beta == 0` the old `x` is not read).
    pub fn apply(
        &self,
        ctx: &CudaContext,
        omega: f64,
        r: &DeviceBuffer<f64>,
        beta: f64,
        x: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        let n = self.n_blocks * self.bs;
        check_len("device block diagonal apply: r", n, r.len())?;
        check_len("device block diagonal apply: x", n, x.len())?;
        let defines = [("BS", self.bs as i64), ("D_F32", T::F32)];
        let f = ctx.function(&JACOBI, &defines, "block_apply")?;
        let (nb, read_x) = (self.n_blocks as u32, (beta != 0.0) as i32);
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nb)
            .arg(&omega)
            .arg(&self.inv)
            .arg(r)
            .arg(&beta)
            .arg(&mut *x)
            .arg(&read_x);
        // SAFETY: arguments match `block_apply`; lengths checked.
        unsafe { l.launch(grid_1d(n as u64, 256)) }.map_err(driver_err("block_apply"))?;
        Ok(())
    }
}

/// One fused Chebyshev update: `d = a D^{-1} r + b d` (with `b == 0` the old `d` is not read),
/// then `x += d`, or `x = d` when `x_is_zero`.
#[allow(clippy::too_many_arguments)]
pub fn chebyshev_step<T: DeviceValue>(
    ctx: &CudaContext,
    diag: &DeviceBlockDiagonal<T>,
    a: f64,
    r: &DeviceBuffer<f64>,
    b: f64,
    d: &mut DeviceBuffer<f64>,
    x: &mut DeviceBuffer<f64>,
    x_is_zero: bool,
) -> Result<(), LinalgError> {
    let n = diag.n_blocks * diag.bs;
    check_len("device chebyshev step: r", n, r.len())?;
    check_len("device chebyshev step: d", n, d.len())?;
    check_len("device chebyshev step: x", n, x.len())?;
    let defines = [("BS", diag.bs as i64), ("D_F32", T::F32)];
    let f = ctx.function(&JACOBI, &defines, "cheb_update")?;
    let (nb, read_d, x_mode) = (diag.n_blocks as u32, (b != 0.0) as i32, (!x_is_zero) as i32);
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&nb)
        .arg(&a)
        .arg(&diag.inv)
        .arg(r)
        .arg(&b)
        .arg(&mut *d)
        .arg(&mut *x)
        .arg(&read_d)
        .arg(&x_mode);
    // SAFETY: arguments match `cheb_update`; lengths checked.
    unsafe { l.launch(grid_1d(n as u64, 256)) }.map_err(driver_err("cheb_update"))?;
    Ok(())
}

/// Chebyshev parameters: polynomial degree and the interval `[lower emax, upper emax]` of
/// `D^{-1} A`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(not(feature = "kernel-bench"), allow(dead_code))] // examples/cuda_bench.rs
pub struct Chebyshev {
    pub emax: f64,
    pub degree: usize,
    pub lower: f64,
    pub upper: f64,
}

/// Smooths `A x = b` with the Chebyshev iteration on `D^{-1} A` (Saad, Alg. 12.1), the host
/// smoother's algorithm step for step: the same bits. `r` and `d` are scratch of `x`'s length;
/// with `x_is_zero` the incoming `x` is not read.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(feature = "kernel-bench"), allow(dead_code))] // examples/cuda_bench.rs
pub fn chebyshev_smooth<A: DeviceValue, T: DeviceValue>(
    ctx: &CudaContext,
    a: &DeviceBsr<A>,
    diag: &DeviceBlockDiagonal<T>,
    cheb: Chebyshev,
    b: &DeviceBuffer<f64>,
    x: &mut DeviceBuffer<f64>,
    x_is_zero: bool,
    r: &mut DeviceBuffer<f64>,
    d: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    let (lo, hi) = (cheb.lower * cheb.emax, cheb.upper * cheb.emax);
    let theta = 0.5 * (hi + lo);
    let delta = 0.5 * (hi - lo);
    let sigma = theta / delta;
    let mut rho = 1.0 / sigma;
    ctx.copy(b, r)?;
    if !x_is_zero {
        spmv(ctx, a, -1.0, x, 1.0, r)?;
    }
    chebyshev_step(ctx, diag, 1.0 / theta, r, 0.0, d, x, x_is_zero)?;
    for _ in 1..cheb.degree {
        spmv(ctx, a, -1.0, d, 1.0, r)?;
        let rho_new = 1.0 / (2.0 * sigma - rho);
        chebyshev_step(
            ctx,
            diag,
            2.0 * rho_new / delta,
            r,
            rho_new * rho,
            d,
            x,
            false,
        )?;
        rho = rho_new;
    }
    Ok(())
}
