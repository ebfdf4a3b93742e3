//! [`CudaContext`]: one GPU, one stream, the loaded kernels and the transfer counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{self as cu, CudaFunction, CudaModule, CudaStream};

use super::buffer::DeviceBuffer;
use super::nccl::DeviceComm;
use super::nvrtc::{compile, KernelSource};
use super::staging::{Staging, STAGED_BYTES};
use super::DeviceData;
use crate::LinalgError;

/// Bytes moved between host and device since the context was made (or last reset).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    /// Host to device.
    pub host_to_device: u64,
    /// Device to host.
    pub device_to_host: u64,
}

/// A handle on one CUDA device: its primary context, one non-blocking stream on which every
/// kernel and copy of this backend runs in order, the kernels loaded so far, and counters of the
/// bytes copied each way (every upload and download goes through this type and is counted).
///
/// Kernels are compiled by NVRTC at first use (per process, see module `nvrtc`) and loaded into
/// this context once per (source, block shape, options).
pub struct CudaContext {
    ordinal: usize,
    name: String,
    compute_capability: (i32, i32),
    multiprocessors: u32,
    /// Shared memory a block may use when its kernel opts in (bytes).
    shared_memory_optin: usize,
    ctx: Arc<cu::CudaContext>,
    stream: Arc<CudaStream>,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    functions: Mutex<HashMap<FunctionKey, CudaFunction>>,
    h2d: AtomicU64,
    d2h: AtomicU64,
    /// NCCL to the other ranks' GPUs, once [`CudaContext::set_peers`] was called (halo
    /// exchanges then go device to device; without it they are staged through the host).
    peers: OnceLock<Arc<DeviceComm>>,
    /// A second stream, of the highest priority, for work that runs beside the main stream's
    /// (the peer exchanges' sends), made at first use; its work is always joined back into the
    /// main stream before anything there depends on it.
    side: OnceLock<Arc<CudaStream>>,
    /// Page-locked host memory for small downloads ([`SMALL_DOWNLOAD_BYTES`] at most: the
    /// scalars and accumulators of reductions), made at first use; one download at a time.
    small: Mutex<Option<cu::PinnedHostSlice<u8>>>,
    /// The scratch of rounded exact sums (`vector::rounded_sums`), made at first use.
    rounded: Mutex<Option<super::vector::RoundedScratch>>,
    /// Page-locked chunks for large copies ([`super::staging`]), made at first use; one copy
    /// at a time.
    staging: Mutex<Option<Staging>>,
}

/// Downloads of at most this many bytes go through the context's page-locked buffer: a copy
/// into pageable memory is staged by the driver, which costs a reduction's scalar several
/// microseconds more.
const SMALL_DOWNLOAD_BYTES: usize = 4096;

impl std::fmt::Debug for CudaContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaContext")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("compute_capability", &self.compute_capability)
            .finish_non_exhaustive()
    }
}

/// The default memory pool of `ctx`'s device (where the stream-ordered allocations come from).
fn default_pool(ctx: &cu::CudaContext) -> Result<cu::sys::CUmemoryPool, LinalgError> {
    let mut pool: cu::sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a plain driver query on this context's device with a valid out-pointer.
    unsafe { cu::sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }
        .result()
        .map_err(driver_err("cuDeviceGetDefaultMemPool"))?;
    Ok(pool)
}

/// Maps a driver error to [`LinalgError::Cuda`] naming the operation.
pub(crate) fn driver_err(op: &str) -> impl FnOnce(cu::DriverError) -> LinalgError + '_ {
    move |e| LinalgError::Cuda {
        op: op.to_string(),
        message: format!("{e:?}"),
    }
}

/// Why CUDA cannot be used here, or `None` if the driver library and NVRTC load and the driver
/// reports at least one device. Never panics: library presence is checked before any call.
pub fn unavailable_reason() -> Option<String> {
    // SAFETY: only tries to open the driver library; nothing is called through it.
    if !unsafe { cu::sys::is_culib_present() } {
        return Some("the CUDA driver library (libcuda.so) was not found".into());
    }
    if !super::nvrtc::library_present() {
        return Some("the NVRTC library (libnvrtc.so) was not found".into());
    }
    let probe = std::panic::catch_unwind(|| -> Result<i32, cu::DriverError> {
        cu::result::init()?;
        cu::result::device::get_count()
    });
    match probe {
        Err(_) => Some("the CUDA driver library lacks a required entry point".into()),
        Ok(Err(e)) => Some(format!("the CUDA driver failed to start: {e:?}")),
        Ok(Ok(0)) => Some("the CUDA driver reports no device".into()),
        Ok(Ok(_)) => None,
    }
}

/// The devices [`warm_up`] was asked for, and the primary contexts it retained: held for the
/// life of the process, so that the driver keeps them initialised.
static WARMED: Mutex<(Vec<usize>, Vec<Arc<cu::CudaContext>>)> =
    Mutex::new((Vec::new(), Vec::new()));

/// Starts the CUDA driver and retains device `ordinal`'s primary context on a thread of its
/// own, once per device and process: a later [`CudaContext::new`] on it then finds both ready
/// (their start takes a few hundred milliseconds that a run spends building its problem
/// meanwhile). Nothing happens where CUDA is unavailable; errors are left to the later open,
/// which reports them.
pub fn warm_up(ordinal: usize) {
    warm_up_picked(move |_| ordinal);
}

/// [`warm_up`] of the GPU that node-local rank `node_rank` opens
/// ([`crate::dist::gpu_for`] of the GPUs visible here, counted on the warm-up's thread).
pub fn warm_up_node_rank(node_rank: usize) {
    warm_up_picked(move |visible| crate::dist::gpu_for(node_rank, visible));
}

/// [`warm_up`] of the device `pick(visible GPUs)`, on a thread of its own.
fn warm_up_picked(pick: impl FnOnce(usize) -> usize + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name("cuda warm-up".into())
        .spawn(move || {
            if unavailable_reason().is_some() {
                return;
            }
            // NVRTC loaded and its version asked here, not at the first kernel
            super::nvrtc::warm_up();
            let Ok(visible) = cu::result::device::get_count() else {
                return;
            };
            let ordinal = pick(visible as usize);
            {
                let mut warmed = WARMED.lock().unwrap_or_else(|p| p.into_inner());
                if warmed.0.contains(&ordinal) {
                    return;
                }
                warmed.0.push(ordinal);
            }
            if let Ok(ctx) = cu::CudaContext::new(ordinal) {
                WARMED.lock().unwrap_or_else(|p| p.into_inner()).1.push(ctx);
            }
        });
    // a thread that cannot start only loses the head start
    drop(spawned);
}

/// GPUs the driver reports here (visible to this process); [`LinalgError::CudaUnavailable`]
/// without a usable driver, NVRTC or GPU.
pub fn device_count() -> Result<usize, LinalgError> {
    if let Some(reason) = unavailable_reason() {
        return Err(LinalgError::CudaUnavailable { reason });
    }
    let count = cu::result::device::get_count().map_err(driver_err("cuDeviceGetCount"))?;
    Ok(count as usize)
}

/// Whether GPU `ordinal` can access the memory of GPU `peer` (`cuDeviceCanAccessPeer`).
pub fn can_access_peer(ordinal: usize, peer: usize) -> Result<bool, LinalgError> {
    if let Some(reason) = unavailable_reason() {
        return Err(LinalgError::CudaUnavailable { reason });
    }
    let (mut dev, mut other, mut can) = (0, 0, 0);
    // SAFETY: plain driver queries with valid out-pointers (the driver is loaded: checked above).
    unsafe {
        cu::sys::cuDeviceGet(&mut dev, ordinal as i32)
            .result()
            .map_err(driver_err("cuDeviceGet"))?;
        cu::sys::cuDeviceGet(&mut other, peer as i32)
            .result()
            .map_err(driver_err("cuDeviceGet"))?;
        cu::sys::cuDeviceCanAccessPeer(&mut can, dev, other)
            .result()
            .map_err(driver_err("cuDeviceCanAccessPeer"))?;
    }
    Ok(can != 0)
}

impl CudaContext {
    /// Opens device `ordinal`: checks that the driver, NVRTC and the device exist (a
    /// [`LinalgError::CudaUnavailable`] otherwise, never a panic), retains the primary context
    /// and creates the stream.
    pub fn new(ordinal: usize) -> Result<Arc<Self>, LinalgError> {
        if let Some(reason) = unavailable_reason() {
            return Err(LinalgError::CudaUnavailable { reason });
        }
        let count = cu::result::device::get_count().map_err(driver_err("cuDeviceGetCount"))?;
        if ordinal >= count as usize {
            return Err(LinalgError::CudaUnavailable {
                reason: format!("device {ordinal} requested, the driver reports {count}"),
            });
        }
        let ctx = cu::CudaContext::new(ordinal).map_err(driver_err("cuCtx (primary context)"))?;
        // One stream carries everything: ordering is the stream's, so the per-buffer events
        // cudarc records for multi-stream use would only cost time.
        // SAFETY: no buffer of this context exists yet, and this backend uses one stream only.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(driver_err("cuStreamCreate"))?;
        let compute_capability = ctx
            .compute_capability()
            .map_err(driver_err("compute capability"))?;
        let name = ctx.name().map_err(driver_err("cuDeviceGetName"))?;
        let multiprocessors = ctx
            .attribute(cu::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver_err("multiprocessor count"))? as u32;
        let shared_memory_optin =
            ctx.attribute(
                cu::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .map_err(driver_err("shared memory per block (opt-in)"))? as usize;
        if ctx.has_async_alloc() {
            // Buffers are stream-ordered allocations from the device's default pool; keep what
            // is freed in the pool (no release threshold), so that scratch freed and taken again
            // on the hot path (the Galerkin products' W) costs no new mapping.
            let pool = default_pool(&ctx)?;
            let mut threshold = u64::MAX;
            // SAFETY: a plain driver call on the device's pool with a valid pointer.
            unsafe {
                cu::sys::cuMemPoolSetAttribute(
                    pool,
                    cu::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut threshold as *mut u64).cast(),
                )
                .result()
                .map_err(driver_err("cuMemPoolSetAttribute"))?;
            }
        }
        Ok(Arc::new(Self {
            ordinal,
            name,
            compute_capability,
            multiprocessors,
            shared_memory_optin,
            ctx,
            stream,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            h2d: AtomicU64::new(0),
            d2h: AtomicU64::new(0),
            peers: OnceLock::new(),
            side: OnceLock::new(),
            small: Mutex::new(None),
            rounded: Mutex::new(None),
            staging: Mutex::new(None),
        }))
    }

    /// Device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's name as the driver reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Compute capability `(major, minor)`; kernels are compiled for `sm_{major}{minor}`.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }

    /// Streaming multiprocessors.
    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// The shared memory one block may use if its kernel opts in (bytes; 227 KiB on Hopper).
    pub fn shared_memory_optin(&self) -> usize {
        self.shared_memory_optin
    }

    /// `(free, total)` device memory in bytes.
    pub fn memory_info(&self) -> Result<(usize, usize), LinalgError> {
        self.ctx.mem_get_info().map_err(driver_err("cuMemGetInfo"))
    }

    /// Waits for the stream, then gives the memory freed into the device's default pool back to
    /// the device (the pool keeps freed blocks otherwise, see [`CudaContext::new`]), so that
    /// [`CudaContext::memory_info`] shows what is live. A no-op without stream-ordered
    /// allocation.
    pub fn trim_pool(&self) -> Result<(), LinalgError> {
        self.synchronize()?;
        if !self.ctx.has_async_alloc() {
            return Ok(());
        }
        let pool = default_pool(&self.ctx)?;
        // SAFETY: a plain driver call on the device's pool; the stream is idle (synchronized
        // above), so no pending free is racing the trim.
        unsafe {
            cu::sys::cuMemPoolTrimTo(pool, 0)
                .result()
                .map_err(driver_err("cuMemPoolTrimTo"))?;
        }
        Ok(())
    }

    /// The most bytes this process has had allocated at once from the device's default pool
    /// (stream-ordered allocations: nearly everything the solver allocates; not the context
    /// itself, its modules or IPC exports), or `None` without stream-ordered allocation. Unlike
    /// [`CudaContext::memory_info`] it is this process's alone where ranks share a GPU.
    pub fn pool_used_high(&self) -> Result<Option<u64>, LinalgError> {
        if !self.ctx.has_async_alloc() {
            return Ok(None);
        }
        let pool = default_pool(&self.ctx)?;
        let mut high: u64 = 0;
        // SAFETY: a plain driver query on the device's pool with a valid out-pointer
        // (`USED_MEM_HIGH` writes a cuuint64_t).
        unsafe {
            cu::sys::cuMemPoolGetAttribute(
                pool,
                cu::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                (&mut high as *mut u64).cast(),
            )
            .result()
            .map_err(driver_err("cuMemPoolGetAttribute"))?;
        }
        Ok(Some(high))
    }

    /// Bytes copied each way so far.
    pub fn transfers(&self) -> Transfers {
        Transfers {
            host_to_device: self.h2d.load(Ordering::Relaxed),
            device_to_host: self.d2h.load(Ordering::Relaxed),
        }
    }

    /// Sets both transfer counters to zero.
    pub fn reset_transfers(&self) {
        self.h2d.store(0, Ordering::Relaxed);
        self.d2h.store(0, Ordering::Relaxed);
    }

    /// Waits until every queued kernel and copy has finished; reports a failed kernel.
    pub fn synchronize(&self) -> Result<(), LinalgError> {
        self.stream
            .synchronize()
            .map_err(driver_err("cuStreamSynchronize"))
    }

    /// Binds the NCCL communicator halo exchanges on this GPU use from now on (one per context;
    /// a second call keeps the first and returns false).
    pub fn set_peers(&self, peers: Arc<DeviceComm>) -> bool {
        self.peers.set(peers).is_ok()
    }

    /// The NCCL communicator of [`CudaContext::set_peers`], if any.
    pub fn peers(&self) -> Option<&Arc<DeviceComm>> {
        self.peers.get()
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The side stream (see the field), made at the first call.
    pub(crate) fn side_stream(&self) -> Result<&Arc<CudaStream>, LinalgError> {
        if let Some(s) = self.side.get() {
            return Ok(s);
        }
        // the highest priority: the block scheduler dispatches its small kernels ahead of the
        // main stream's remaining blocks, so that they run beside a large kernel, not after it
        self.ctx
            .bind_to_thread()
            .map_err(driver_err("cuCtxSetCurrent"))?;
        let (_, greatest) = cu::result::stream::get_priority_range()
            .map_err(driver_err("cuCtxGetStreamPriorityRange"))?;
        let s = self
            .ctx
            .new_stream_with_priority(greatest)
            .map_err(driver_err("cuStreamCreate (side stream)"))?;
        Ok(self.side.get_or_init(|| s))
    }

    /// An event for ordering the two streams (no timing).
    pub(crate) fn new_order_event(&self) -> Result<cu::CudaEvent, LinalgError> {
        self.ctx
            .new_event(None)
            .map_err(driver_err("cuEventCreate"))
    }

    pub(crate) fn driver_context(&self) -> &Arc<cu::CudaContext> {
        &self.ctx
    }

    /// Counts `bytes` copied host to device by a copy queued elsewhere (pinned staging).
    pub(crate) fn count_h2d(&self, bytes: usize) {
        self.h2d.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Counts `bytes` copied device to host by a copy queued elsewhere (pinned staging).
    pub(crate) fn count_d2h(&self, bytes: usize) {
        self.d2h.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Copies `host` into a new device buffer (counted).
    pub fn upload<T: DeviceData>(&self, host: &[T]) -> Result<DeviceBuffer<T>, LinalgError> {
        if std::mem::size_of_val(host) > STAGED_BYTES {
            // SAFETY: every value is written by the staged copy before the buffer is used (or
            // the buffer is dropped).
            let mut dst = DeviceBuffer::new(
                unsafe { self.stream.alloc::<T>(host.len()) }.map_err(driver_err("cuMemAlloc"))?,
            );
            if self.staged(|s| s.upload(self, host, &mut dst))?.is_some() {
                return Ok(dst);
            }
        }
        let slice = if host.is_empty() {
            self.stream.null().map_err(driver_err("cuMemAlloc"))?
        } else {
            self.stream
                .clone_htod(host)
                .map_err(driver_err("cuMemcpyHtoD"))?
        };
        self.h2d
            .fetch_add(std::mem::size_of_val(host) as u64, Ordering::Relaxed);
        Ok(DeviceBuffer::new(slice))
    }

    /// Copies `host` over `dst` (counted); the lengths must agree.
    pub fn upload_into<T: DeviceData>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), LinalgError> {
        check_len("upload_into", dst.len(), host.len())?;
        if std::mem::size_of_val(host) > STAGED_BYTES
            && self.staged(|s| s.upload(self, host, dst))?.is_some()
        {
            return Ok(());
        }
        if !host.is_empty() {
            self.stream
                .memcpy_htod(host, dst.slice_mut())
                .map_err(driver_err("cuMemcpyHtoD"))?;
        }
        self.h2d
            .fetch_add(std::mem::size_of_val(host) as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Copies a device buffer back into a new `Vec` (counted; waits for the stream).
    pub fn download<T: DeviceData>(&self, src: &DeviceBuffer<T>) -> Result<Vec<T>, LinalgError> {
        if !src.is_empty() && src.bytes() <= SMALL_DOWNLOAD_BYTES {
            return self.download_small(src, src.len());
        }
        if src.bytes() > STAGED_BYTES {
            let mut v = Vec::<T>::with_capacity(src.len());
            let into = &mut v.spare_capacity_mut()[..src.len()];
            if self.staged(|s| s.download(self, src, into))?.is_some() {
                // SAFETY: the staged download wrote all `src.len()` values.
                unsafe { v.set_len(src.len()) };
                return Ok(v);
            }
        }
        let v = if src.is_empty() {
            Vec::new()
        } else {
            self.stream
                .clone_dtoh(src.slice())
                .map_err(driver_err("cuMemcpyDtoH"))?
        };
        self.synchronize()?;
        self.d2h.fetch_add(
            std::mem::size_of_val(v.as_slice()) as u64,
            Ordering::Relaxed,
        );
        Ok(v)
    }

    /// Copies `src` into `dst` (counted; the lengths must agree; waits for the stream): a
    /// download into memory the caller owns, e.g. the flattened values of a `Vec<[f64; 9]>`.
    pub fn download_into<T: DeviceData>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut [T],
    ) -> Result<(), LinalgError> {
        check_len("download_into", src.len(), dst.len())?;
        if src.bytes() > STAGED_BYTES {
            // SAFETY: `MaybeUninit<T>` has `T`'s layout; the download only writes values of `T`.
            let into =
                unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), dst.len()) };
            if self.staged(|s| s.download(self, src, into))?.is_some() {
                return Ok(());
            }
        }
        if !src.is_empty() {
            self.stream
                .memcpy_dtoh(src.slice(), dst)
                .map_err(driver_err("cuMemcpyDtoH"))?;
        }
        self.synchronize()?;
        self.count_d2h(src.bytes());
        Ok(())
    }

    /// Runs `f` on the context's page-locked chunks (made at the first call); `None` without
    /// running it where another copy holds them (another thread's, or this thread's from a
    /// task stolen while it copies): the caller then takes the driver's copy.
    fn staged<R>(
        &self,
        f: impl FnOnce(&mut Staging) -> Result<R, LinalgError>,
    ) -> Result<Option<R>, LinalgError> {
        let mut guard = match self.staging.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
        };
        let staging = match guard.take() {
            Some(staging) => staging,
            None => Staging::new(self)?,
        };
        f(guard.insert(staging)).map(Some)
    }

    /// The first `len` values of `src` (as [`Self::download`]; a few of them: through the
    /// page-locked buffer).
    pub(crate) fn download_prefix<T: DeviceData>(
        &self,
        src: &DeviceBuffer<T>,
        len: usize,
    ) -> Result<Vec<T>, LinalgError> {
        check_len("download prefix", src.len(), src.len().max(len))?;
        if len * std::mem::size_of::<T>() > SMALL_DOWNLOAD_BYTES {
            let mut v = self.download(src)?;
            v.truncate(len);
            return Ok(v);
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        self.download_small(src, len)
    }

    /// The rounded sums' scratch (see the field).
    pub(crate) fn rounded_scratch(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<super::vector::RoundedScratch>> {
        lock(&self.rounded)
    }

    /// The first `len` values of `src` through the page-locked buffer (made at the first
    /// call; `len` values fit it): an asynchronous copy, then the stream's end.
    fn download_small<T: DeviceData>(
        &self,
        src: &DeviceBuffer<T>,
        len: usize,
    ) -> Result<Vec<T>, LinalgError> {
        let bytes = len * std::mem::size_of::<T>();
        let mut guard = lock(&self.small);
        if guard.is_none() {
            // SAFETY: plain page-locked memory (flags 0: the host reads it), written only by
            // the copies below before it is read.
            let pinned = unsafe {
                self.ctx
                    .alloc_pinned_with_flags::<u8>(SMALL_DOWNLOAD_BYTES, 0)
            }
            .map_err(driver_err("cuMemHostAlloc"))?;
            *guard = Some(pinned);
        }
        let pinned = guard
            .as_mut()
            .expect("made above")
            .as_mut_slice()
            .map_err(driver_err("small download"))?;
        let (ptr, _record) = cu::DevicePtr::device_ptr(src.slice(), &self.stream);
        // SAFETY: `bytes` fit the page-locked buffer (checked by the caller), the source holds
        // `bytes`; the stream is synchronised before the host reads the copy.
        unsafe {
            cu::sys::cuMemcpyDtoHAsync_v2(
                pinned.as_mut_ptr().cast(),
                ptr,
                bytes,
                self.stream.cu_stream(),
            )
            .result()
            .map_err(driver_err("cuMemcpyDtoHAsync"))?;
        }
        self.synchronize()?;
        let mut v = Vec::<T>::with_capacity(len);
        // SAFETY: the buffer holds `len` values of `T` copied from the device (plain old
        // data: `DeviceRepr`); `v` has room for them.
        unsafe {
            std::ptr::copy_nonoverlapping(pinned.as_ptr(), v.as_mut_ptr().cast::<u8>(), bytes);
            v.set_len(len);
        }
        self.d2h.fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(v)
    }

    /// A buffer of `len` zeros.
    pub fn zeros<T: DeviceData>(&self, len: usize) -> Result<DeviceBuffer<T>, LinalgError> {
        let slice = self
            .stream
            .alloc_zeros(len)
            .map_err(driver_err("cuMemAlloc"))?;
        Ok(DeviceBuffer::new(slice))
    }

    /// A buffer of `len` values left unset: for scratch that a kernel writes whole before
    /// anything reads it.
    pub(crate) fn uninit(&self, len: usize) -> Result<DeviceBuffer<f64>, LinalgError> {
        // SAFETY: f64 has no invalid bit patterns; callers write every value before reading.
        let slice = unsafe { self.stream.alloc::<f64>(len) }.map_err(driver_err("cuMemAlloc"))?;
        Ok(DeviceBuffer::new(slice))
    }

    /// A buffer of `len` values, every one `value` (set on the device, nothing copied).
    pub fn filled(&self, len: usize, value: f64) -> Result<DeviceBuffer<f64>, LinalgError> {
        let mut b = self.zeros::<f64>(len)?;
        if value != 0.0 || value.is_sign_negative() {
            super::vector::fill(self, value, &mut b)?;
        }
        Ok(b)
    }

    /// A new buffer holding a copy of `src` (device to device, not a host transfer).
    pub fn duplicate<T: DeviceData>(
        &self,
        src: &DeviceBuffer<T>,
    ) -> Result<DeviceBuffer<T>, LinalgError> {
        let mut dst = self.zeros::<T>(src.len())?;
        self.copy(src, &mut dst)?;
        Ok(dst)
    }

    /// Device-to-device copy of `src` into `dst` (not a host transfer; lengths must agree).
    pub fn copy<T: DeviceData>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), LinalgError> {
        check_len("copy", dst.len(), src.len())?;
        if !src.is_empty() {
            self.stream
                .memcpy_dtod(src.slice(), dst.slice_mut())
                .map_err(driver_err("cuMemcpyDtoD"))?;
        }
        Ok(())
    }

    /// Device-to-device copy of `len` values of `src` from `src_start` into `dst` at
    /// `dst_start` (not a host transfer; both ranges must lie inside their buffers).
    pub fn copy_range<T: DeviceData>(
        &self,
        src: &DeviceBuffer<T>,
        src_start: usize,
        dst: &mut DeviceBuffer<T>,
        dst_start: usize,
        len: usize,
    ) -> Result<(), LinalgError> {
        check_len(
            "copy_range: source",
            src.len(),
            src.len().max(src_start + len),
        )?;
        check_len(
            "copy_range: destination",
            dst.len(),
            dst.len().max(dst_start + len),
        )?;
        if len > 0 {
            let from = src.slice().slice(src_start..src_start + len);
            let mut to = dst.slice_mut().slice_mut(dst_start..dst_start + len);
            self.stream
                .memcpy_dtod(&from, &mut to)
                .map_err(driver_err("cuMemcpyDtoD"))?;
        }
        Ok(())
    }

    /// The function `name` of `source` compiled with `defines` (compiled and loaded at first
    /// use, then cached).
    pub(crate) fn function(
        &self,
        source: &KernelSource,
        defines: &[(&'static str, i64)],
        name: &'static str,
    ) -> Result<CudaFunction, LinalgError> {
        // every launch looks its function up: a key without allocation
        let fkey = FunctionKey::new(source, defines, name);
        if let Some(f) = fkey
            .as_ref()
            .and_then(|k| lock(&self.functions).get(k).cloned())
        {
            return Ok(f);
        }
        let arch = format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        );
        let key = source.key(defines, &arch);
        let module = {
            let mut modules = lock(&self.modules);
            match modules.get(&key) {
                Some(m) => m.clone(),
                None => {
                    let started = std::time::Instant::now();
                    let cubin = compile(source, defines, &arch)?;
                    let module = self
                        .ctx
                        .load_module(cudarc::nvrtc::Ptx::from_binary(cubin.to_vec()))
                        .map_err(driver_err("cuModuleLoadData"))?;
                    super::kernel_cache::count_build(started.elapsed());
                    modules.insert(key.clone(), module.clone());
                    module
                }
            }
        };
        let f = module
            .load_function(name)
            .map_err(driver_err("cuModuleGetFunction"))?;
        if let Some(k) = fkey {
            lock(&self.functions).insert(k, f.clone());
        }
        Ok(f)
    }

    /// A timing event recorded now on the stream.
    pub fn record_event(&self) -> Result<Event, LinalgError> {
        let e = self
            .ctx
            .new_event(Some(cu::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver_err("cuEventCreate"))?;
        e.record(&self.stream)
            .map_err(driver_err("cuEventRecord"))?;
        Ok(Event(e))
    }
}

/// A point in the stream's work, for timing ([`CudaContext::record_event`]).
pub struct Event(cu::CudaEvent);

impl Event {
    /// Milliseconds of device time from `self` to `end` (waits for `end`).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, LinalgError> {
        end.0
            .synchronize()
            .map_err(driver_err("cuEventSynchronize"))?;
        self.0
            .elapsed_ms(&end.0)
            .map_err(driver_err("cuEventElapsedTime"))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn check_len(
    what: &'static str,
    expected: usize,
    found: usize,
) -> Result<(), LinalgError> {
    if expected != found {
        return Err(LinalgError::LengthMismatch {
            what,
            expected,
            found,
        });
    }
    Ok(())
}

/// Defines of one kernel variant at most in a [`FunctionKey`] (more are looked up by their
/// module key, allocating).
const KEY_DEFINES: usize = 8;

/// The function cache's key: the source, its defines and the function's name, compared by
/// value without allocating (one context compiles for one architecture).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FunctionKey {
    source: &'static str,
    fmad: bool,
    defines: [(&'static str, i64); KEY_DEFINES],
    n_defines: usize,
    name: &'static str,
}

impl FunctionKey {
    /// `None` for more than [`KEY_DEFINES`] defines.
    fn new(
        source: &KernelSource,
        defines: &[(&'static str, i64)],
        name: &'static str,
    ) -> Option<Self> {
        let mut d = [("", 0); KEY_DEFINES];
        d.get_mut(..defines.len())?.copy_from_slice(defines);
        Some(Self {
            source: source.name,
            fmad: source.fmad,
            defines: d,
            n_defines: defines.len(),
            name,
        })
    }
}
