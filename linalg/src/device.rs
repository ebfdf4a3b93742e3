//! Where values live: the [`Device`] of a vector or matrix, and the two axes of their storage.
//!
//! Stored values have independent axes, each a small enum: the device ([`Placed`]: host memory,
//! or one GPU with its context) and, for matrices and block diagonals, the precision
//! ([`ByPrecision`]: fp64 or fp32). Each container composes them with its own payloads, so that
//! every state the types allow is meaningful: a [`crate::Vector`] is
//! `Placed<Vec<f64>, DeviceBuffer<f64>>` (vectors are fp64 only), a [`crate::Bsr`]
//! `Placed<ByPrecision<Vec<f64>, Vec<f32>>, ByPrecision<DeviceBsr, DeviceBsr<f32>>>`, a
//! [`crate::BlockDiagonal`] the same host side and, on a GPU, its inverses in either precision
//! with the pattern whose diagonal slots they read. Numeric operations match on the placement of
//! their operands (candle's pattern) and run the kernel of that backend ([`crate::backend`]);
//! code generic over the stored value type covers both precisions in one arm
//! ([`either_precision!`]). Operands of one call must live on one device
//! ([`crate::LinalgError::DeviceMismatch`]); nothing moves between devices except through the
//! explicit calls (`to_device`, `to_host`, `host`, `host_mut`, `to_host_vec`, the host
//! constructors, `Bsr::upload_values_from`). Symbolic data (patterns, plans) is host-side and
//! immutable; a device mirror of it is uploaded on first use and cached in a [`DeviceMirror`].

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::backend::cuda::{
    self, CudaContext, DeviceBlockDiagonal, DeviceBsr, DeviceBuffer, DeviceValue,
};
use crate::precision::{narrow, widen, Value};
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

/// The device axis of stored values: `H` in host memory, or `D` on one GPU with its context.
///
/// Each container names its own payloads, so that every state the types allow is a meaningful
/// one: a [`crate::Vector`] is `Placed<Vec<f64>, DeviceBuffer<f64>>` (fp64 only), a
/// [`crate::Bsr`] and a [`crate::BlockDiagonal`] hold a [`ByPrecision`] on either side.
#[derive(Debug)]
pub(crate) enum Placed<H, D> {
    /// Main memory.
    Host(H),
    /// One GPU: its context (stream, kernels) and the values there.
    Cuda(Arc<CudaContext>, D),
}

/// The precision axis of stored values: fp64 (`D`) or fp32 (`S`), [`Precision`]'s two forms.
#[derive(Debug, Clone)]
pub(crate) enum ByPrecision<D, S> {
    /// [`Precision::Double`].
    Double(D),
    /// [`Precision::Single`].
    Single(S),
}

/// Evaluates `$body` with `$bind` bound to the value inside a [`ByPrecision`], whichever
/// precision it holds: the body is compiled once per precision, so it may call kernels that
/// are generic over the stored value type.
macro_rules! either_precision {
    ($value:expr, $bind:pat => $body:expr) => {
        match $value {
            $crate::device::ByPrecision::Double($bind) => $body,
            $crate::device::ByPrecision::Single($bind) => $body,
        }
    };
}
pub(crate) use either_precision;

/// A matrix's or block diagonal's values in host memory, in either precision.
pub(crate) type HostByPrecision = ByPrecision<Vec<f64>, Vec<f32>>;

/// What [`Placed`] needs of the values it keeps in host memory.
pub(crate) trait HostValues: Clone {
    /// Number of values.
    fn len(&self) -> usize;
    /// The values, if they are stored in fp64 (`None` for fp32 values).
    fn as_f64(&self) -> Option<&[f64]>;
    /// [`HostValues::as_f64`], mutably.
    fn as_f64_mut(&mut self) -> Option<&mut [f64]>;
    /// A copy in fp64 (widened from fp32).
    fn to_f64_vec(&self) -> Vec<f64>;
}

/// What [`Placed`] needs of the values it keeps on a GPU.
pub(crate) trait DeviceValues: Sized {
    /// Number of values.
    fn len(&self) -> usize;
    /// A copy on the same GPU.
    fn duplicate(&self, ctx: &CudaContext) -> Result<Self, LinalgError>;
    /// A host copy in fp64 (widened from fp32).
    fn download(&self, ctx: &CudaContext) -> Result<Vec<f64>, LinalgError>;
}

impl HostValues for Vec<f64> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn as_f64(&self) -> Option<&[f64]> {
        Some(self)
    }

    fn as_f64_mut(&mut self) -> Option<&mut [f64]> {
        Some(self)
    }

    fn to_f64_vec(&self) -> Vec<f64> {
        self.clone()
    }
}

impl HostValues for HostByPrecision {
    fn len(&self) -> usize {
        either_precision!(self, v => v.len())
    }

    fn as_f64(&self) -> Option<&[f64]> {
        match self {
            ByPrecision::Double(v) => Some(v),
            ByPrecision::Single(_) => None,
        }
    }

    fn as_f64_mut(&mut self) -> Option<&mut [f64]> {
        match self {
            ByPrecision::Double(v) => Some(v),
            ByPrecision::Single(_) => None,
        }
    }

    fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            ByPrecision::Double(v) => v.clone(),
            ByPrecision::Single(v) => widen(v),
        }
    }
}

impl HostByPrecision {
    /// The values stored in `precision` (a copy; rounded to fp32 or widened to fp64).
    pub(crate) fn to_precision(&self, precision: Precision) -> Self {
        match (self, precision) {
            (ByPrecision::Double(v), Precision::Double) => ByPrecision::Double(v.clone()),
            (ByPrecision::Double(v), Precision::Single) => ByPrecision::Single(narrow(v)),
            (ByPrecision::Single(v), Precision::Double) => ByPrecision::Double(widen(v)),
            (ByPrecision::Single(v), Precision::Single) => ByPrecision::Single(v.clone()),
        }
    }
}

impl DeviceValues for DeviceBuffer<f64> {
    fn len(&self) -> usize {
        DeviceBuffer::len(self)
    }

    fn duplicate(&self, ctx: &CudaContext) -> Result<Self, LinalgError> {
        ctx.duplicate(self)
    }

    fn download(&self, ctx: &CudaContext) -> Result<Vec<f64>, LinalgError> {
        ctx.download(self)
    }
}

impl<T: DeviceValue + Value> DeviceValues for DeviceBsr<T> {
    fn len(&self) -> usize {
        self.values().len()
    }

    fn duplicate(&self, ctx: &CudaContext) -> Result<Self, LinalgError> {
        DeviceBsr::duplicate(self, ctx)
    }

    fn download(&self, ctx: &CudaContext) -> Result<Vec<f64>, LinalgError> {
        Ok(T::into_f64(ctx.download(self.values())?))
    }
}

impl<T: DeviceValue + Value> DeviceValues for DeviceBlockDiagonal<T> {
    fn len(&self) -> usize {
        self.inverse().len()
    }

    fn duplicate(&self, ctx: &CudaContext) -> Result<Self, LinalgError> {
        DeviceBlockDiagonal::duplicate(self, ctx)
    }

    fn download(&self, ctx: &CudaContext) -> Result<Vec<f64>, LinalgError> {
        Ok(T::into_f64(ctx.download(self.inverse())?))
    }
}

impl<D: DeviceValues, S: DeviceValues> DeviceValues for ByPrecision<D, S> {
    fn len(&self) -> usize {
        either_precision!(self, v => v.len())
    }

    fn duplicate(&self, ctx: &CudaContext) -> Result<Self, LinalgError> {
        Ok(match self {
            ByPrecision::Double(v) => ByPrecision::Double(v.duplicate(ctx)?),
            ByPrecision::Single(v) => ByPrecision::Single(v.duplicate(ctx)?),
        })
    }

    fn download(&self, ctx: &CudaContext) -> Result<Vec<f64>, LinalgError> {
        either_precision!(self, v => v.download(ctx))
    }
}

impl<D, S> ByPrecision<D, S> {
    /// The precision held.
    pub(crate) fn precision(&self) -> Precision {
        match self {
            ByPrecision::Double(_) => Precision::Double,
            ByPrecision::Single(_) => Precision::Single,
        }
    }
}

impl<H, D> Placed<H, D> {
    /// The device the values live on.
    pub(crate) fn device(&self) -> Device {
        match self {
            Placed::Host(_) => Device::Host,
            Placed::Cuda(ctx, _) => Device::Cuda(ctx.clone()),
        }
    }
}

impl<H64, H32, D64, D32> Placed<ByPrecision<H64, H32>, ByPrecision<D64, D32>> {
    /// The stored precision of the values.
    pub(crate) fn precision(&self) -> Precision {
        match self {
            Placed::Host(v) => v.precision(),
            Placed::Cuda(_, data) => data.precision(),
        }
    }
}

impl<H: HostValues, D: DeviceValues> Placed<H, D> {
    /// A copy on the same device.
    pub(crate) fn try_clone(&self) -> Result<Self, LinalgError> {
        Ok(match self {
            Placed::Host(v) => Placed::Host(v.clone()),
            Placed::Cuda(ctx, data) => Placed::Cuda(ctx.clone(), data.duplicate(ctx)?),
        })
    }

    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        match self {
            Placed::Host(v) => v.len(),
            Placed::Cuda(_, data) => data.len(),
        }
    }

    /// The fp64 values in host memory; `NotOnHost` for values elsewhere, `PrecisionUnsupported`
    /// for fp32 values.
    pub(crate) fn host(&self) -> Result<&[f64], LinalgError> {
        match self {
            Placed::Host(v) => v.as_f64().ok_or_else(|| fp32_on_host("host()")),
            Placed::Cuda(ctx, _) => Err(not_on_host("host()", ctx)),
        }
    }

    /// The fp64 values in host memory, mutably; errors as [`Placed::host`].
    pub(crate) fn host_mut(&mut self) -> Result<&mut [f64], LinalgError> {
        match self {
            Placed::Host(v) => v.as_f64_mut().ok_or_else(|| fp32_on_host("host_mut()")),
            Placed::Cuda(ctx, _) => Err(not_on_host("host_mut()", ctx)),
        }
    }

    /// A host copy of the values in fp64 (a download for device values, widened from fp32).
    pub(crate) fn to_host_vec(&self) -> Result<Vec<f64>, LinalgError> {
        match self {
            Placed::Host(v) => Ok(v.to_f64_vec()),
            Placed::Cuda(ctx, data) => data.download(ctx),
        }
    }
}

/// The error of reading fp32 host values as fp64.
fn fp32_on_host(what: &'static str) -> LinalgError {
    LinalgError::PrecisionUnsupported {
        what,
        precision: Precision::Single.name(),
    }
}

/// The error of reading values on the GPU of `ctx` as host memory.
fn not_on_host(what: &'static str, ctx: &Arc<CudaContext>) -> LinalgError {
    LinalgError::NotOnHost {
        what,
        device: Device::Cuda(ctx.clone()).name(),
    }
}

impl<H: HostValues, D: DeviceValues> Clone for Placed<H, D> {
    /// A copy on the same device (a device-to-device copy for GPU values). Like a host `Vec`'s
    /// clone, which aborts when memory runs out, a device clone panics if the device allocation
    /// fails; fallible code uses [`Placed::try_clone`].
    fn clone(&self) -> Self {
        self.try_clone()
            .unwrap_or_else(|e| panic!("device copy failed: {e}"))
    }
}

impl<H: HostValues, D: DeviceValues> PartialEq for Placed<H, D> {
    /// Equal values (downloaded where they live on a device: for tests).
    fn eq(&self, other: &Self) -> bool {
        match (self.to_host_vec(), other.to_host_vec()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
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
