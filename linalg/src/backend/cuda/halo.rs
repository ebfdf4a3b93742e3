//! The device side of distributed vectors' halo exchanges (kernels in `linalg/cuda/halo.cu`):
//! whole blocks gathered into one send buffer ([`gather_blocks`]), received blocks added in
//! place ([`scatter_add_blocks`]), and [`PinnedBuffer`]: page-locked host memory that the
//! messages are staged through (copies to and from it are asynchronous on the context's stream
//! and counted like every other transfer).

use cudarc::driver::{self as cu, PushKernelArg};

use super::context::{check_len, driver_err};
use super::kernels::{grid_stride, HALO};
use super::{CudaContext, DeviceBuffer};
use crate::LinalgError;

/// `out[k bs + c] = x[idx[k] bs + c]` for every listed block (`out` holds `idx.len() bs`;
/// `x` holds every indexed block).
pub fn gather_blocks(
    ctx: &CudaContext,
    bs: usize,
    idx: &DeviceBuffer<u32>,
    x: &DeviceBuffer<f64>,
    out: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("gather_blocks: out", idx.len() * bs, out.len())?;
    let n = idx.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let f = ctx.function(&HALO, &[], "gather_blocks")?;
    let bs32 = bs as u32;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&bs32).arg(idx).arg(x).arg(&mut *out);
    // SAFETY: arguments match the kernel; `out`'s length is checked, and the indices come from
    // a halo plan whose blocks lie inside `x` (callers check the lengths of the plan's vectors).
    unsafe { l.launch(grid_stride(n * bs as u64)) }.map_err(driver_err("gather_blocks"))?;
    Ok(())
}

/// `y[idx[k] bs + c] += buf[k bs + c]` for the listed blocks `k` in `blocks` (none twice among
/// them; `buf` holds `idx.len() bs`); with `wait`, once a peer exchange's messages (`buf`) have
/// landed.
pub fn scatter_add_blocks(
    ctx: &CudaContext,
    bs: usize,
    idx: &DeviceBuffer<u32>,
    blocks: std::ops::Range<usize>,
    buf: &DeviceBuffer<f64>,
    y: &mut DeviceBuffer<f64>,
    wait: Option<&super::peer::PeerWait<'_>>,
) -> Result<(), LinalgError> {
    check_len("scatter_add_blocks: buf", idx.len() * bs, buf.len())?;
    if blocks.end > idx.len() {
        return Err(LinalgError::LengthMismatch {
            what: "scatter_add_blocks: listed blocks",
            expected: idx.len(),
            found: blocks.end,
        });
    }
    let (first, n) = (blocks.start as u64, blocks.len() as u64);
    if n == 0 {
        return wait.map_or(Ok(()), |w| w.queue(ctx));
    }
    let f = ctx.function(&HALO, &[], "scatter_add_blocks")?;
    let bs32 = bs as u32;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&first)
        .arg(&n)
        .arg(&bs32)
        .arg(idx)
        .arg(buf)
        .arg(&mut *y);
    match wait {
        Some(w) => w.push_args(&mut l),
        None => super::peer::push_no_wait(&mut l, idx),
    }
    // SAFETY: arguments match the kernel; `buf` and the range are checked, the indices come
    // from a halo plan whose blocks lie inside `y`; the wait's table (if any) holds its
    // sources' flag pointers.
    unsafe { l.launch(grid_stride(n * bs as u64)) }.map_err(driver_err("scatter_add_blocks"))?;
    Ok(())
}

/// `len` values of page-locked host memory (not write-combined: the host reads them).
pub struct PinnedBuffer {
    slice: Option<cu::PinnedHostSlice<f64>>,
    len: usize,
}

impl std::fmt::Debug for PinnedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("len", &self.len)
            .finish()
    }
}

impl PinnedBuffer {
    /// `len` zeros (no allocation for `len == 0`).
    pub fn zeros(ctx: &CudaContext, len: usize) -> Result<Self, LinalgError> {
        let slice = if len == 0 {
            None
        } else {
            // SAFETY: the memory is unset until written below; flags 0: plain page-locked.
            let mut s = unsafe { ctx.driver_context().alloc_pinned_with_flags::<f64>(len, 0) }
                .map_err(driver_err("cuMemHostAlloc"))?;
            s.as_mut_slice()
                .map_err(driver_err("pinned buffer"))?
                .fill(0.0);
            Some(s)
        };
        Ok(Self { slice, len })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True without values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values. Copies queued into the buffer must be waited for first
    /// ([`CudaContext::synchronize`] or a [`StreamMark`]).
    pub fn as_slice(&self) -> Result<&[f64], LinalgError> {
        match &self.slice {
            None => Ok(&[]),
            Some(s) => s.as_slice().map_err(driver_err("pinned buffer")),
        }
    }

    /// The values, writable (see [`PinnedBuffer::as_slice`]).
    pub fn as_mut_slice(&mut self) -> Result<&mut [f64], LinalgError> {
        match &mut self.slice {
            None => Ok(&mut []),
            Some(s) => s.as_mut_slice().map_err(driver_err("pinned buffer")),
        }
    }

    /// Queues the copy of `src` into this buffer (counted; the lengths must agree). The host
    /// may read the values once a [`StreamMark`] recorded after this call has passed.
    pub fn download_from(
        &mut self,
        ctx: &CudaContext,
        src: &DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        check_len("pinned download", self.len, src.len())?;
        if let Some(s) = &mut self.slice {
            ctx.stream()
                .memcpy_dtoh(src.slice(), s)
                .map_err(driver_err("cuMemcpyDtoHAsync"))?;
            ctx.count_d2h(src.bytes());
        }
        Ok(())
    }

    /// Queues the copy of this buffer into `dst` (counted; the lengths must agree). The host
    /// must not write the buffer again before the stream has passed the copy.
    pub fn upload_to(
        &self,
        ctx: &CudaContext,
        dst: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        check_len("pinned upload", dst.len(), self.len)?;
        if let Some(s) = &self.slice {
            ctx.stream()
                .memcpy_htod(s, dst.slice_mut())
                .map_err(driver_err("cuMemcpyHtoDAsync"))?;
            ctx.count_h2d(dst.bytes());
        }
        Ok(())
    }
}

/// The two pinned buffers of `lens` values in `slot`, made at the first call and kept: the
/// staging of an exchange that needs it only on some paths (through MPI, not between peers)
/// costs nothing until used (in stop 48's trace, page-locking and zeroing a cold set-up's
/// Galerkin reduction buffers took ~11 ms at the fine level of ex56 104^3 on 2 H200s).
pub fn pinned_at_first_use<'a>(
    slot: &'a mut Option<[PinnedBuffer; 2]>,
    ctx: &CudaContext,
    lens: [usize; 2],
) -> Result<&'a mut [PinnedBuffer; 2], LinalgError> {
    let made = match slot.take() {
        Some(made) => made,
        None => [
            PinnedBuffer::zeros(ctx, lens[0])?,
            PinnedBuffer::zeros(ctx, lens[1])?,
        ],
    };
    Ok(slot.insert(made))
}

/// A point in the context's stream: [`StreamMark::wait`] returns once everything queued before
/// it has finished (later work may still run: that is the overlap).
pub struct StreamMark(cu::CudaEvent);

impl StreamMark {
    /// Records a mark now.
    pub fn record(ctx: &CudaContext) -> Result<Self, LinalgError> {
        let e = ctx
            .driver_context()
            .new_event(Some(cu::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(driver_err("cuEventCreate"))?;
        e.record(ctx.stream())
            .map_err(driver_err("cuEventRecord"))?;
        Ok(Self(e))
    }

    /// Waits until the stream has passed the mark; reports a failed kernel before it.
    pub fn wait(&self) -> Result<(), LinalgError> {
        self.0
            .synchronize()
            .map_err(driver_err("cuEventSynchronize"))
    }
}
