//! Large copies between pageable host memory and a GPU, staged through two page-locked chunks.
//!
//! The driver stages a copy from or into pageable memory itself, one bounce buffer at a time on
//! the calling thread, and a fresh destination `Vec` takes its page faults inside that copy: 90 MB
//! came down from an H200 in 29 ms (3 GB/s) where page-locked memory took 1.6 ms (2026-11-29,
//! `bench/data/2026-11-29-stop40/`). Here a copy of more than [`STAGED_BYTES`] goes through the
//! context's two page-locked chunks of [`CHUNK_BYTES`]: the GPU copies one chunk while the host's
//! threads (rayon) copy the other out of (or into) it, so the host side's copy and page faults run
//! in parallel and beside the transfer.
//!
//! Order: the copies are queued on the context's stream, so a download sees every kernel queued
//! before it and an upload comes before every kernel queued after it. Both return once the host
//! memory may be used again (as the driver's pageable copies do) and leave no copy in flight into
//! the chunks (each chunk's last copy is waited for before the chunks are released).

use cudarc::driver::{self as cu, DevicePtr, DevicePtrMut};
use rayon::prelude::*;

use super::context::driver_err;
use super::{CudaContext, DeviceBuffer, DeviceData};
use crate::LinalgError;

/// Copies of more bytes than this are staged (smaller ones cost less as the driver's one copy).
pub(super) const STAGED_BYTES: usize = 1 << 20;

/// Bytes of each page-locked chunk.
const CHUNK_BYTES: usize = 8 << 20;

/// Bytes each host thread copies at a time.
const PIECE_BYTES: usize = 256 << 10;

/// The two page-locked chunks and, per chunk, the event recorded after the last copy queued
/// into or out of it (waited for before the host touches the chunk again).
pub(super) struct Staging {
    chunks: [cu::PinnedHostSlice<u8>; 2],
    copied: [cu::CudaEvent; 2],
}

impl Staging {
    /// Two chunks of page-locked memory on `ctx`'s device (made at the context's first large
    /// copy).
    pub(super) fn new(ctx: &CudaContext) -> Result<Self, LinalgError> {
        let driver = ctx.driver_context();
        let chunk = || {
            // SAFETY: plain page-locked memory (flags 0: the host reads and writes it), written
            // by a copy before any byte of it is read.
            unsafe { driver.alloc_pinned_with_flags::<u8>(CHUNK_BYTES, 0) }
                .map_err(driver_err("cuMemHostAlloc"))
        };
        let event = || {
            driver
                .new_event(Some(cu::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(driver_err("cuEventCreate"))
        };
        Ok(Self {
            chunks: [chunk()?, chunk()?],
            copied: [event()?, event()?],
        })
    }

    /// The chunk `k` once the copy last queued on it has finished.
    fn chunk(&mut self, k: usize) -> Result<*mut u8, LinalgError> {
        self.copied[k]
            .synchronize()
            .map_err(driver_err("cuEventSynchronize"))?;
        self.chunks[k]
            .as_mut_ptr()
            .map_err(driver_err("page-locked chunk"))
    }

    /// Copies `src` into `dst` (the same number of values), waiting for the stream to reach
    /// the copy.
    pub(super) fn download<T: DeviceData>(
        &mut self,
        ctx: &CudaContext,
        src: &DeviceBuffer<T>,
        dst: &mut [std::mem::MaybeUninit<T>],
    ) -> Result<(), LinalgError> {
        let bytes = src.bytes();
        debug_assert_eq!(std::mem::size_of_val(dst), bytes);
        let stream = ctx.stream();
        let (base, _record) = src.slice().device_ptr(stream);
        let dst = dst.as_mut_ptr().cast::<u8>() as usize;
        let pieces = bytes.div_ceil(CHUNK_BYTES);
        // chunk `i` goes down into staging chunk `i % 2`; the host copies it out while chunk
        // `i + 1` comes down into the other
        let mut pending: Option<(usize, usize)> = None;
        for i in 0..pieces {
            let start = i * CHUNK_BYTES;
            let len = CHUNK_BYTES.min(bytes - start);
            let k = i % 2;
            let chunk = self.chunk(k)?;
            // SAFETY: `chunk` holds CHUNK_BYTES >= len bytes and no copy is queued on it (its
            // last one was waited for above); the source holds `start + len` bytes.
            unsafe {
                cu::sys::cuMemcpyDtoHAsync_v2(
                    chunk.cast(),
                    base + start as u64,
                    len,
                    stream.cu_stream(),
                )
                .result()
                .map_err(driver_err("cuMemcpyDtoHAsync"))?;
            }
            self.copied[k]
                .record(stream)
                .map_err(driver_err("cuEventRecord"))?;
            if let Some((start, len)) = pending.replace((start, len)) {
                self.copy_out(1 - k, dst, start, len)?;
            }
        }
        if let Some((start, len)) = pending {
            self.copy_out((pieces - 1) % 2, dst, start, len)?;
        }
        ctx.count_d2h(bytes);
        Ok(())
    }

    /// Copies staging chunk `k`'s first `len` bytes to `dst + start`, once they are there.
    fn copy_out(
        &mut self,
        k: usize,
        dst: usize,
        start: usize,
        len: usize,
    ) -> Result<(), LinalgError> {
        let chunk = self.chunk(k)? as usize;
        parallel_copy(chunk, dst + start, len);
        Ok(())
    }

    /// Copies `src` into `dst` (the same number of values); returns once the copy has
    /// finished (the host may then change `src`).
    pub(super) fn upload<T: DeviceData>(
        &mut self,
        ctx: &CudaContext,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), LinalgError> {
        let bytes = std::mem::size_of_val(src);
        debug_assert_eq!(dst.bytes(), bytes);
        let stream = ctx.stream().clone();
        let (base, _record) = dst.slice_mut().device_ptr_mut(&stream);
        let src = src.as_ptr().cast::<u8>() as usize;
        for (i, start) in (0..bytes).step_by(CHUNK_BYTES).enumerate() {
            let len = CHUNK_BYTES.min(bytes - start);
            let k = i % 2;
            // waits for the copy that left chunk `k` two chunks ago, so the host fills it
            // while the other chunk goes up
            let chunk = self.chunk(k)?;
            parallel_copy(src + start, chunk as usize, len);
            // SAFETY: `chunk` holds the `len` bytes written above; the destination holds
            // `start + len` bytes; nothing writes the chunk before its event has passed.
            unsafe {
                cu::sys::cuMemcpyHtoDAsync_v2(
                    base + start as u64,
                    chunk.cast_const().cast(),
                    len,
                    stream.cu_stream(),
                )
                .result()
                .map_err(driver_err("cuMemcpyHtoDAsync"))?;
            }
            self.copied[k]
                .record(&stream)
                .map_err(driver_err("cuEventRecord"))?;
        }
        for k in 0..2 {
            self.chunk(k)?;
        }
        ctx.count_h2d(bytes);
        Ok(())
    }
}

/// Copies `len` bytes from address `src` to address `dst` in pieces on rayon's threads.
///
/// The callers pass ranges that do not overlap, each valid for `len` bytes and not used
/// elsewhere during the call (a page-locked chunk and a caller's slice).
fn parallel_copy(src: usize, dst: usize, len: usize) {
    (0..len.div_ceil(PIECE_BYTES))
        .into_par_iter()
        .for_each(|p| {
            let at = p * PIECE_BYTES;
            let n = PIECE_BYTES.min(len - at);
            // SAFETY: see the function's contract; pieces are disjoint.
            unsafe {
                std::ptr::copy_nonoverlapping((src + at) as *const u8, (dst + at) as *mut u8, n);
            }
        });
}
