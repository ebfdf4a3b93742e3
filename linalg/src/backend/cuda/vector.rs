//! Vector kernels of CG and the smoothers (`linalg/cuda/vector.cu`), bit-identical to
//! [`crate::ops`]: element-wise updates round as the host's, and [`dot`] sums the host's fixed
//! chunks in the host's order (the same bits on every run, on any device).

use cudarc::driver::PushKernelArg;

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, grid_stride, VECTOR};
use super::{CudaContext, DeviceBuffer};
use crate::ops::REDUCTION_CHUNK;
use crate::LinalgError;

/// The host's reduction chunk, so that the device sums the same chunks.
const DEFINES: &[(&str, i64)] = &[("DOT_CHUNK", REDUCTION_CHUNK as i64)];

/// Every entry of `y` set to `a`.
pub fn fill(ctx: &CudaContext, a: f64, y: &mut DeviceBuffer<f64>) -> Result<(), LinalgError> {
    let f = ctx.function(&VECTOR, DEFINES, "fill")?;
    let n = y.len() as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&a).arg(&mut *y);
    // SAFETY: arguments match `fill`.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("fill"))?;
    Ok(())
}

/// `y = a x + b y`; with `b == 0` the old `y` is not read.
pub fn axpby(
    ctx: &CudaContext,
    a: f64,
    x: &DeviceBuffer<f64>,
    b: f64,
    y: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device axpby: x", y.len(), x.len())?;
    let f = ctx.function(&VECTOR, DEFINES, "axpby")?;
    let (n, read_y) = (y.len() as u64, (b != 0.0) as i32);
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&a).arg(x).arg(&b).arg(&mut *y).arg(&read_y);
    // SAFETY: arguments match `axpby`; lengths checked.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("axpby"))?;
    Ok(())
}

/// `y += a x`.
pub fn axpy(
    ctx: &CudaContext,
    a: f64,
    x: &DeviceBuffer<f64>,
    y: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device axpy: x", y.len(), x.len())?;
    let f = ctx.function(&VECTOR, DEFINES, "axpy")?;
    let n = y.len() as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&a).arg(x).arg(&mut *y);
    // SAFETY: arguments match `axpy`; lengths checked.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("axpy"))?;
    Ok(())
}

/// `z = a x + b y + c z`; with `c == 0` the old `z` is not read.
pub fn axpbypcz(
    ctx: &CudaContext,
    a: f64,
    x: &DeviceBuffer<f64>,
    b: f64,
    y: &DeviceBuffer<f64>,
    c: f64,
    z: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device axpbypcz: x", z.len(), x.len())?;
    check_len("device axpbypcz: y", z.len(), y.len())?;
    let f = ctx.function(&VECTOR, DEFINES, "axpbypcz")?;
    let (n, read_z) = (z.len() as u64, (c != 0.0) as i32);
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n)
        .arg(&a)
        .arg(x)
        .arg(&b)
        .arg(y)
        .arg(&c)
        .arg(&mut *z)
        .arg(&read_z);
    // SAFETY: arguments match `axpbypcz`; lengths checked.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("axpbypcz"))?;
    Ok(())
}

/// The CG update `x += alpha p; r -= alpha q` in one pass.
pub fn cg_update(
    ctx: &CudaContext,
    alpha: f64,
    p: &DeviceBuffer<f64>,
    q: &DeviceBuffer<f64>,
    x: &mut DeviceBuffer<f64>,
    r: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    let n = x.len();
    check_len("device cg_update: p", n, p.len())?;
    check_len("device cg_update: q", n, q.len())?;
    check_len("device cg_update: r", n, r.len())?;
    let f = ctx.function(&VECTOR, DEFINES, "cg_update")?;
    let n = n as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n)
        .arg(&alpha)
        .arg(p)
        .arg(q)
        .arg(&mut *x)
        .arg(&mut *r);
    // SAFETY: arguments match `cg_update`; lengths checked.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("cg_update"))?;
    Ok(())
}

/// `x . y` into `out[0]`, left on the device (no transfer); `out` must hold one value.
pub fn dot_into(
    ctx: &CudaContext,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
    out: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device dot: y", x.len(), y.len())?;
    check_len("device dot: out", 1, out.len())?;
    let n = x.len() as u64;
    let n_chunks = n.div_ceil(REDUCTION_CHUNK as u64);
    let mut sums = ctx.zeros::<f64>(n_chunks.max(1) as usize)?;
    let chunks = ctx.function(&VECTOR, DEFINES, "dot_chunks")?;
    let mut l = ctx.stream().launch_builder(&chunks);
    l.arg(&n).arg(x).arg(y).arg(&mut sums);
    // SAFETY: arguments match `dot_chunks` (one warp per chunk, DOT_WARPS = 4 warps per block);
    // `sums` holds one value per chunk.
    unsafe { l.launch(grid_1d(n_chunks * 32, 128)) }.map_err(driver_err("dot_chunks"))?;
    let sum = ctx.function(&VECTOR, DEFINES, "dot_sum")?;
    let mut l = ctx.stream().launch_builder(&sum);
    l.arg(&n_chunks).arg(&sums).arg(&mut *out);
    // SAFETY: arguments match `dot_sum`.
    unsafe { l.launch(grid_1d(1, 32)) }.map_err(driver_err("dot_sum"))?;
    Ok(())
}

/// `x . y` (one scalar downloaded), bit-identical to [`crate::ops::dot`].
pub fn dot(
    ctx: &CudaContext,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
) -> Result<f64, LinalgError> {
    let mut out = ctx.zeros::<f64>(1)?;
    dot_into(ctx, x, y, &mut out)?;
    Ok(ctx.download(&out)?[0])
}

/// `sqrt(x . x)`, bit-identical to [`crate::ops::norm2`].
pub fn norm2(ctx: &CudaContext, x: &DeviceBuffer<f64>) -> Result<f64, LinalgError> {
    Ok(dot(ctx, x, x)?.sqrt())
}
