//! Where values live: the [`Device`] of a vector or matrix, and the storage enum behind it.
//!
//! Every [`crate::Vector`], [`crate::Bsr`] and [`crate::BlockDiagonal`] keeps its values in a
//! [`Storage`] and reports its [`Device`]; numeric operations match on the storage of their
//! operands (candle's pattern) and run the kernel of that backend ([`crate::backend`]). Operands
//! of one call must live on one device ([`crate::LinalgError::DeviceMismatch`]); nothing moves
//! between devices except through the explicit calls (`to_device`, `to_host`, `host`,
//! `host_mut`, `to_host_vec`, the host constructors, `Bsr::upload_values_from`). Symbolic data
//! (patterns, plans) is host-side and immutable; a device mirror of it is uploaded on first use
//! and cached in a [`DeviceMirror`].

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::backend::cuda::{self, CudaContext, DeviceBlockDiagonal, DeviceBsr, DeviceBuffer};
use crate::precision::widen;
use crate::{BlockPattern, LinalgError, Precision};

thread_local! {
    /// See [`Device::thread_gpu`].
    static THREAD_GPU: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Puts the thread's GPU back when dropped (also when `f` panics).
struct RestoreThreadGpu(usize);

impl Drop for RestoreThreadGpu {
    fn drop(&mut self) {
        THREAD_GPU.with(|g| g.set(self.0));
    }
}

/// The memory a vector's or matrix's values live in.
#[derive(Clone, Debug, Default)]
pub enum Device {
    /// Main memory; kernels run on the CPU (rayon).
    #[default]
    Host,
    /// One CUDA GPU: its context (stream, loaded kernels, transfer counters).
    Cuda(Arc<CudaContext>),
}

/// Bytes moved between host and device.
pub use crate::backend::cuda::Transfers;
pub use crate::backend::cuda::{
    kernel_build_seconds, kernel_cache_report, KernelCacheReport, KERNEL_CACHE_ENV,
};

impl Device {
    /// Opens CUDA device `ordinal`. A missing driver, NVRTC or GPU is
    /// [`LinalgError::CudaUnavailable`] (never a panic).
    pub fn cuda(ordinal: usize) -> Result<Device, LinalgError> {
        Ok(Device::Cuda(CudaContext::new(ordinal)?))
    }

    /// Starts the CUDA driver and device `ordinal`'s context in the background (once per
    /// process), so that a [`Device::cuda`] later in the process does not wait for them: a run
    /// calls it before it builds its mesh and problem. Does nothing where CUDA is unavailable.
    pub fn warm_up_cuda(ordinal: usize) {
        crate::backend::cuda::warm_up(ordinal);
    }

    /// This thread's GPU ([`Device::thread_gpu`]) where it is usable, else the host
    /// (`device: auto`).
    pub fn auto() -> Device {
        Device::cuda(Device::thread_gpu()).unwrap_or(Device::Host)
    }

    /// The GPU that `auto` and a serial solver's `cuda` open on this thread: 0 unless
    /// [`Device::with_thread_gpu`] chose another (a campaign worker's GPU). Like CUDA's current
    /// device, a property of the host thread; the distributed path picks each rank's GPU itself.
    pub fn thread_gpu() -> usize {
        THREAD_GPU.with(std::cell::Cell::get)
    }

    /// Runs `f` with `ordinal` as this thread's GPU, then restores the one before.
    pub fn with_thread_gpu<R>(ordinal: usize, f: impl FnOnce() -> R) -> R {
        let before = THREAD_GPU.with(|g| g.replace(ordinal));
        let _restore = RestoreThreadGpu(before);
        f()
    }

    /// True for [`Device::Host`].
    pub fn is_host(&self) -> bool {
        matches!(self, Device::Host)
    }

    /// A short name for messages (`host`, `cuda:0 (NVIDIA H100 ...)`).
    pub fn name(&self) -> String {
        match self {
            Device::Host => "host".to_owned(),
            Device::Cuda(c) => format!("cuda:{} ({})", c.ordinal(), c.name()),
        }
    }

    /// True if both name the same memory (the same GPU for device variants).
    pub fn same_as(&self, other: &Device) -> bool {
        match (self, other) {
            (Device::Host, Device::Host) => true,
            (Device::Cuda(a), Device::Cuda(b)) => a.ordinal() == b.ordinal(),
            _ => false,
        }
    }

    /// The CUDA context, if this is a GPU.
    pub fn cuda_context(&self) -> Option<&Arc<CudaContext>> {
        match self {
            Device::Cuda(c) => Some(c),
            Device::Host => None,
        }
    }

    /// Bytes copied between host and this device so far (zero for the host).
    pub fn transfers(&self) -> Transfers {
        match self {
            Device::Cuda(c) => c.transfers(),
            Device::Host => Transfers::default(),
        }
    }

    /// Waits for the device's queued work (a no-op on the host); reports a failed kernel.
    pub fn synchronize(&self) -> Result<(), LinalgError> {
        match self {
            Device::Cuda(c) => c.synchronize(),
            Device::Host => Ok(()),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Errors unless `found` is the same device as `expected`.
pub(crate) fn check_same_device(
    what: &'static str,
    expected: &Device,
    found: &Device,
) -> Result<(), LinalgError> {
    if expected.same_as(found) {
        Ok(())
    } else {
        Err(LinalgError::DeviceMismatch {
            what,
            expected: expected.name(),
            found: found.name(),
        })
    }
}

/// The error of an operation that has no kernel on `device` yet.
pub(crate) fn unsupported(what: &'static str, device: &Device) -> LinalgError {
    LinalgError::Unsupported {
        what,
        device: device.name(),
    }
}

/// The values of a vector, matrix or block diagonal, on their device.
///
/// `Cuda` holds a plain array (vectors), `CudaBsr` a matrix with its uploaded pattern, and
/// `CudaDiag` the inverted diagonal blocks of point-block Jacobi with the slots they come from.
#[derive(Debug)]
pub(crate) enum Storage {
    Host(Vec<f64>),
    /// fp32 values in host memory (matrices and block diagonals in [`Precision::Single`]).
    Host32(Vec<f32>),
    Cuda {
        ctx: Arc<CudaContext>,
        buf: DeviceBuffer<f64>,
    },
    CudaBsr {
        ctx: Arc<CudaContext>,
        m: DeviceBsr,
    },
    CudaDiag {
        ctx: Arc<CudaContext>,
        d: DeviceBlockDiagonal,
        /// Pattern of the operator whose diagonal slots `d` reads.
        source: Arc<BlockPattern>,
    },
    /// [`Storage::CudaBsr`] with fp32 values ([`Precision::Single`]).
    CudaBsr32 {
        ctx: Arc<CudaContext>,
        m: DeviceBsr<f32>,
    },
    /// [`Storage::CudaDiag`] with fp32 inverses ([`Precision::Single`]).
    CudaDiag32 {
        ctx: Arc<CudaContext>,
        d: DeviceBlockDiagonal<f32>,
        source: Arc<BlockPattern>,
    },
}

impl Clone for Storage {
    /// A copy on the same device (a device-to-device copy for GPU storage). Like a host `Vec`'s
    /// clone, which aborts when memory runs out, a device clone panics if the device allocation
    /// fails; fallible code uses [`Storage::try_clone`].
    fn clone(&self) -> Self {
        self.try_clone()
            .unwrap_or_else(|e| panic!("device copy failed: {e}"))
    }
}

impl PartialEq for Storage {
    /// Equal values (downloaded where they live on a device: for tests).
    fn eq(&self, other: &Self) -> bool {
        match (self.to_host_vec(), other.to_host_vec()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl Storage {
    /// A copy on the same device.
    pub(crate) fn try_clone(&self) -> Result<Self, LinalgError> {
        Ok(match self {
            Storage::Host(v) => Storage::Host(v.clone()),
            Storage::Host32(v) => Storage::Host32(v.clone()),
            Storage::Cuda { ctx, buf } => Storage::Cuda {
                ctx: ctx.clone(),
                buf: ctx.duplicate(buf)?,
            },
            Storage::CudaBsr { ctx, m } => Storage::CudaBsr {
                ctx: ctx.clone(),
                m: m.duplicate(ctx)?,
            },
            Storage::CudaDiag { ctx, d, source } => Storage::CudaDiag {
                ctx: ctx.clone(),
                d: d.duplicate(ctx)?,
                source: source.clone(),
            },
            Storage::CudaBsr32 { ctx, m } => Storage::CudaBsr32 {
                ctx: ctx.clone(),
                m: m.duplicate(ctx)?,
            },
            Storage::CudaDiag32 { ctx, d, source } => Storage::CudaDiag32 {
                ctx: ctx.clone(),
                d: d.duplicate(ctx)?,
                source: source.clone(),
            },
        })
    }

    /// The device the values live on.
    pub(crate) fn device(&self) -> Device {
        match self {
            Storage::Host(_) | Storage::Host32(_) => Device::Host,
            Storage::Cuda { ctx, .. }
            | Storage::CudaBsr { ctx, .. }
            | Storage::CudaDiag { ctx, .. }
            | Storage::CudaBsr32 { ctx, .. }
            | Storage::CudaDiag32 { ctx, .. } => Device::Cuda(ctx.clone()),
        }
    }

    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        match self {
            Storage::Host(v) => v.len(),
            Storage::Host32(v) => v.len(),
            Storage::Cuda { buf, .. } => buf.len(),
            Storage::CudaBsr { m, .. } => m.values().len(),
            Storage::CudaDiag { d, .. } => d.inverse().len(),
            Storage::CudaBsr32 { m, .. } => m.values().len(),
            Storage::CudaDiag32 { d, .. } => d.inverse().len(),
        }
    }

    fn not_on_host(&self, what: &'static str) -> LinalgError {
        match self {
            Storage::Host32(_) => LinalgError::PrecisionUnsupported {
                what,
                precision: Precision::Single.name(),
            },
            _ => LinalgError::NotOnHost {
                what,
                device: self.device().name(),
            },
        }
    }

    /// The stored precision of the values.
    pub(crate) fn precision(&self) -> Precision {
        match self {
            Storage::Host32(_) | Storage::CudaBsr32 { .. } | Storage::CudaDiag32 { .. } => {
                Precision::Single
            }
            _ => Precision::Double,
        }
    }

    /// The fp64 values in host memory; `NotOnHost` for values elsewhere, `PrecisionUnsupported`
    /// for fp32 values.
    pub(crate) fn host(&self) -> Result<&[f64], LinalgError> {
        match self {
            Storage::Host(v) => Ok(v),
            _ => Err(self.not_on_host("host()")),
        }
    }

    /// The values in host memory, mutably; `NotOnHost` for values elsewhere.
    pub(crate) fn host_mut(&mut self) -> Result<&mut [f64], LinalgError> {
        match self {
            Storage::Host(v) => Ok(v),
            _ => Err(self.not_on_host("host_mut()")),
        }
    }

    /// A host copy of the values in fp64 (a download for device storage, widened from fp32).
    pub(crate) fn to_host_vec(&self) -> Result<Vec<f64>, LinalgError> {
        match self {
            Storage::Host(v) => Ok(v.clone()),
            Storage::Host32(v) => Ok(widen(v)),
            Storage::Cuda { ctx, buf } => ctx.download(buf),
            Storage::CudaBsr { ctx, m } => ctx.download(m.values()),
            Storage::CudaDiag { ctx, d, .. } => ctx.download(d.inverse()),
            Storage::CudaBsr32 { ctx, m } => Ok(widen(&ctx.download(m.values())?)),
            Storage::CudaDiag32 { ctx, d, .. } => Ok(widen(&ctx.download(d.inverse())?)),
        }
    }

    /// `len` zeros on `device` as plain array storage.
    pub(crate) fn zeros_on(device: &Device, len: usize) -> Result<Self, LinalgError> {
        Ok(match device {
            Device::Host => Storage::Host(vec![0.0; len]),
            Device::Cuda(ctx) => Storage::Cuda {
                ctx: ctx.clone(),
                buf: ctx.zeros(len)?,
            },
        })
    }

    /// `host` copied to `device` as plain array storage (an upload for a GPU).
    pub(crate) fn from_host_on(device: &Device, host: &[f64]) -> Result<Self, LinalgError> {
        Ok(match device {
            Device::Host => Storage::Host(host.to_vec()),
            Device::Cuda(ctx) => Storage::Cuda {
                ctx: ctx.clone(),
                buf: ctx.upload(host)?,
            },
        })
    }
}

/// A device copy of immutable host data (a pattern, a plan), made on first use for one GPU and
/// kept: later calls on the same GPU reuse it without a transfer. Cloning the host value does
/// not clone the mirror; equality ignores it.
pub(crate) struct DeviceMirror<T>(OnceLock<(usize, Arc<T>)>);

impl<T> DeviceMirror<T> {
    pub(crate) fn new() -> Self {
        Self(OnceLock::new())
    }

    /// The mirror on `ctx`'s GPU, made by `make` at the first call. A second GPU gets a fresh,
    /// uncached copy.
    pub(crate) fn get_or_upload(
        &self,
        ctx: &CudaContext,
        make: impl FnOnce() -> Result<T, LinalgError>,
    ) -> Result<Arc<T>, LinalgError> {
        if let Some((ordinal, m)) = self.0.get() {
            if *ordinal == ctx.ordinal() {
                return Ok(m.clone());
            }
            return Ok(Arc::new(make()?));
        }
        let m = Arc::new(make()?);
        let _ = self.0.set((ctx.ordinal(), m.clone()));
        Ok(m)
    }
}

impl<T> DeviceMirror<T> {
    /// The mirror on `ctx`'s GPU if one was made (nothing is made here).
    pub(crate) fn get(&self, ctx: &CudaContext) -> Option<Arc<T>> {
        self.0
            .get()
            .filter(|(ordinal, _)| *ordinal == ctx.ordinal())
            .map(|(_, m)| m.clone())
    }

    /// Sets the mirror on `ctx`'s GPU to `made` (a copy built there), unless one is set.
    pub(crate) fn install(&self, ctx: &CudaContext, made: Arc<T>) {
        let _ = self.0.set((ctx.ordinal(), made));
    }
}

impl<T> Default for DeviceMirror<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for DeviceMirror<T> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<T> PartialEq for DeviceMirror<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for DeviceMirror<T> {}

impl<T> fmt::Debug for DeviceMirror<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "DeviceMirror(uploaded)"
        } else {
            "DeviceMirror(-)"
        })
    }
}

/// The uploaded mirror of `pattern` on `ctx` (cached in the pattern).
pub(crate) fn device_pattern(
    ctx: &CudaContext,
    pattern: &BlockPattern,
) -> Result<Arc<cuda::DevicePattern>, LinalgError> {
    pattern
        .device_mirror()
        .get_or_upload(ctx, || cuda::DevicePattern::upload_plain(ctx, pattern))
}
