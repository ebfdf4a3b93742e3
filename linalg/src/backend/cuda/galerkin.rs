//! The device side of the distributed Galerkin product's numeric phase (kernels in
//! `linalg/cuda/galerkin.cu`): whole blocks gathered from two sources ([`gather_blocks_two`]:
//! a distributed matrix's `diag` and `offd` values into the local matrix's slots) and blocks
//! summed from listed contributions in the listed order ([`sum_blocks_in_order`]: the partial
//! coarse blocks into the coarse operator's slots). Copies and additions in the host's order:
//! the host's bits.

use cudarc::driver::PushKernelArg;

use super::context::{check_len, driver_err};
use super::kernels::{grid_stride, GALERKIN};
use super::{CudaContext, DeviceBuffer};
use crate::LinalgError;

/// The virtual concatenation `[a; b]` of two device arrays of blocks (`n0` blocks in `a`).
#[derive(Clone, Copy, Debug)]
pub struct TwoSources<'a> {
    /// Blocks in `a`.
    pub n0: usize,
    /// The first blocks.
    pub a: &'a DeviceBuffer<f64>,
    /// The blocks after them.
    pub b: &'a DeviceBuffer<f64>,
}

/// The sources hold whole blocks: `a` exactly `n0`, `b` any number (the indices come from a
/// plan made for these lengths).
fn check_sources(what: &'static str, bl: usize, src: TwoSources<'_>) -> Result<(), LinalgError> {
    let TwoSources { n0, a, b } = src;
    check_len(what, n0 * bl, a.len())?;
    if bl == 0 || !b.len().is_multiple_of(bl) {
        return Err(LinalgError::LengthMismatch {
            what,
            expected: b.len().next_multiple_of(bl.max(1)),
            found: b.len(),
        });
    }
    Ok(())
}

/// `out[k bl + c] = [a; b][idx[k] bl + c]` for every listed block (`src`: `a` holds `n0`
/// blocks of `bl` values, `b` the blocks after them; `out` holds `idx.len() bl`).
pub fn gather_blocks_two(
    ctx: &CudaContext,
    bl: usize,
    idx: &DeviceBuffer<u32>,
    src: TwoSources<'_>,
    out: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("gather_blocks_two: out", idx.len() * bl, out.len())?;
    check_sources("gather_blocks_two: sources", bl, src)?;
    let TwoSources { n0, a, b } = src;
    let n = idx.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let f = ctx.function(&GALERKIN, &[], "gather_blocks_two")?;
    let (bl32, n0) = (bl as u32, n0 as u64);
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n)
        .arg(&bl32)
        .arg(idx)
        .arg(&n0)
        .arg(a)
        .arg(b)
        .arg(&mut *out);
    // SAFETY: arguments match the kernel; `out`'s length is checked, the indices come from a
    // plan whose source blocks are `a`'s and `b`'s (lengths checked).
    unsafe { l.launch(grid_stride(n * bl as u64)) }.map_err(driver_err("gather_blocks_two"))?;
    Ok(())
}

/// `out[s bl + c] = sum of [a; b][contrib[t] bl + c]` over `t` in `ptr[s]..ptr[s + 1]`, the
/// first assigned and the later ones added in order, for every slot `s < ptr.len() - 1`
/// (each with one contribution at least; `out` holds `(ptr.len() - 1) bl`).
pub fn sum_blocks_in_order(
    ctx: &CudaContext,
    bl: usize,
    ptr: &DeviceBuffer<u32>,
    contrib: &DeviceBuffer<u32>,
    src: TwoSources<'_>,
    out: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    let n = ptr.len().saturating_sub(1);
    check_len("sum_blocks_in_order: out", n * bl, out.len())?;
    check_sources("sum_blocks_in_order: sources", bl, src)?;
    let TwoSources { n0, a, b } = src;
    if n == 0 {
        return Ok(());
    }
    let f = ctx.function(&GALERKIN, &[], "sum_blocks_in_order")?;
    let (n, bl32, n0) = (n as u64, bl as u32, n0 as u64);
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n)
        .arg(&bl32)
        .arg(ptr)
        .arg(contrib)
        .arg(&n0)
        .arg(a)
        .arg(b)
        .arg(&mut *out);
    // SAFETY: arguments match the kernel; `out`'s length is checked, `ptr` and `contrib` come
    // from a reduction plan whose contributions index `a`'s and `b`'s blocks (lengths checked).
    unsafe { l.launch(grid_stride(n * bl as u64)) }.map_err(driver_err("sum_blocks_in_order"))?;
    Ok(())
}

/// `out`'s block `k` is the transpose of `src`'s block `idx[k]` (`src`: `br x bc` blocks,
/// `out`: `bc x br` blocks, `idx.len()` of them): a block transpose's numeric step on the device
/// (`crate::transpose_numeric` of device matrices), plain copies: the host's bits.
pub(crate) fn gather_transposed_blocks(
    ctx: &CudaContext,
    (br, bc): (usize, usize),
    idx: &DeviceBuffer<u32>,
    src: &DeviceBuffer<f64>,
    out: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    let bl = br * bc;
    check_len("gather_transposed_blocks: out", idx.len() * bl, out.len())?;
    if bl == 0 || !src.len().is_multiple_of(bl) {
        return Err(LinalgError::LengthMismatch {
            what: "gather_transposed_blocks: source blocks",
            expected: src.len().next_multiple_of(bl.max(1)),
            found: src.len(),
        });
    }
    let n = idx.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let f = ctx.function(&GALERKIN, &[], "gather_transposed_blocks")?;
    let (br32, bc32) = (br as u32, bc as u32);
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n)
        .arg(&br32)
        .arg(&bc32)
        .arg(idx)
        .arg(src)
        .arg(&mut *out);
    // SAFETY: arguments match the kernel; `out`'s length is checked, the indices come from a
    // transpose plan of `src`'s pattern (every index below its block count).
    unsafe { l.launch(grid_stride(n * bl as u64)) }
        .map_err(driver_err("gather_transposed_blocks"))?;
    Ok(())
}
