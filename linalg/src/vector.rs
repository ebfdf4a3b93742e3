//! [`Vector`] and the BLAS-1 operations of [`ops`].

use std::sync::Arc;

use crate::backend::{cuda, host};
use crate::device::{check_same_device, unsupported, Placed};
use crate::{Device, Layout, LinalgError};

/// A vector's values: fp64 in host memory or in one array on a GPU (vectors have no
/// precision axis).
pub(crate) type VectorStorage = Placed<Vec<f64>, cuda::DeviceBuffer<f64>>;

impl VectorStorage {
    /// `len` zeros on `device`.
    fn zeros_on(device: &Device, len: usize) -> Result<Self, LinalgError> {
        Ok(match device {
            Device::Host => Placed::Host(vec![0.0; len]),
            Device::Cuda(ctx) => Placed::Cuda(ctx.clone(), ctx.zeros(len)?),
        })
    }

    /// `host` copied to `device` (an upload for a GPU).
    fn from_host_on(device: &Device, host: &[f64]) -> Result<Self, LinalgError> {
        Ok(match device {
            Device::Host => Placed::Host(host.to_vec()),
            Device::Cuda(ctx) => Placed::Cuda(ctx.clone(), ctx.upload(host)?),
        })
    }
}

/// A dense vector of `f64`: its values on a [`Device`] and its [`Layout`] (the owned entries of
/// this rank, then a tail of ghost entries).
///
/// Host access is explicit: [`Vector::host`] and [`Vector::host_mut`] (an error where the values
/// live elsewhere), [`Vector::to_host_vec`]. Numeric work goes through [`ops`] and the matrix
/// operations, which run where the values live.
#[derive(Debug, Clone, PartialEq)]
pub struct Vector {
    storage: VectorStorage,
    layout: Arc<Layout>,
}

impl Vector {
    /// A host vector of `n` zeros, serial layout.
    pub fn zeros(n: usize) -> Self {
        Self::from_vec(vec![0.0; n])
    }

    /// A host vector owning `v`, serial layout.
    pub fn from_vec(v: Vec<f64>) -> Self {
        let layout = Arc::new(Layout::serial(v.len()));
        Self {
            storage: Placed::Host(v),
            layout,
        }
    }

    /// A host vector with the given layout; `v` holds the owned entries, then the ghosts.
    pub fn from_vec_with_layout(layout: Arc<Layout>, v: Vec<f64>) -> Result<Self, LinalgError> {
        if v.len() != layout.len() {
            return Err(LinalgError::LengthMismatch {
                what: "Vector::from_vec_with_layout",
                expected: layout.len(),
                found: v.len(),
            });
        }
        Ok(Self {
            storage: Placed::Host(v),
            layout,
        })
    }

    /// A vector of zeros with the layout and device of `self`.
    pub fn zeros_like(&self) -> Result<Self, LinalgError> {
        Ok(Self {
            storage: VectorStorage::zeros_on(&self.device(), self.len())?,
            layout: self.layout.clone(),
        })
    }

    /// Zeros of `layout` (owned entries and ghosts) on `device`.
    pub fn zeros_with_layout(device: &Device, layout: Arc<Layout>) -> Result<Self, LinalgError> {
        Ok(Self {
            storage: VectorStorage::zeros_on(device, layout.len())?,
            layout,
        })
    }

    /// `n` zeros on `device`, serial layout.
    pub fn zeros_on(device: &Device, n: usize) -> Result<Self, LinalgError> {
        Ok(Self {
            storage: VectorStorage::zeros_on(device, n)?,
            layout: Arc::new(Layout::serial(n)),
        })
    }

    /// A vector on `ctx` whose values are `buf`'s, without a copy (serial layout);
    /// [`Vector::into_device_buffer`] gives `buf` back.
    pub fn from_device_buffer(ctx: Arc<cuda::CudaContext>, buf: cuda::DeviceBuffer<f64>) -> Self {
        let n = buf.len();
        Self {
            storage: Placed::Cuda(ctx, buf),
            layout: Arc::new(Layout::serial(n)),
        }
    }

    /// The device buffer behind a vector on a GPU, without a copy; an error for a host vector.
    pub fn into_device_buffer(self) -> Result<cuda::DeviceBuffer<f64>, LinalgError> {
        match self.storage {
            Placed::Cuda(_, data) => Ok(data),
            Placed::Host(_) => Err(unsupported("Vector::into_device_buffer", &Device::Host)),
        }
    }

    /// The device buffer behind a vector on a GPU, borrowed; an error for a host vector.
    pub fn device_buffer(&self) -> Result<&cuda::DeviceBuffer<f64>, LinalgError> {
        match &self.storage {
            Placed::Cuda(_, data) => Ok(data),
            Placed::Host(_) => Err(unsupported("Vector::device_buffer", &Device::Host)),
        }
    }

    /// The device buffer behind a vector on a GPU, mutably borrowed; an error for a host vector.
    pub fn device_buffer_mut(&mut self) -> Result<&mut cuda::DeviceBuffer<f64>, LinalgError> {
        match &mut self.storage {
            Placed::Cuda(_, data) => Ok(data),
            Placed::Host(_) => Err(unsupported("Vector::device_buffer_mut", &Device::Host)),
        }
    }

    /// A copy on `device` (an upload, a download, or a copy on the same device); the layout is
    /// kept.
    pub fn to_device(&self, device: &Device) -> Result<Self, LinalgError> {
        let storage = if device.same_as(&self.device()) {
            self.storage.try_clone()?
        } else {
            match &self.storage {
                Placed::Host(v) => VectorStorage::from_host_on(device, v)?,
                Placed::Cuda(..) => {
                    VectorStorage::from_host_on(device, &self.storage.to_host_vec()?)?
                }
            }
        };
        Ok(Self {
            storage,
            layout: self.layout.clone(),
        })
    }

    /// A copy of the first `len` values where they live (serial layout): a rank's owned
    /// entries without the ghost tail; on a GPU a copy there, not a transfer.
    pub fn prefix(&self, len: usize) -> Result<Self, LinalgError> {
        if len > self.len() {
            return Err(LinalgError::LengthMismatch {
                what: "Vector::prefix",
                expected: self.len(),
                found: len,
            });
        }
        Ok(match &self.storage {
            Placed::Host(x) => Self::from_vec(x[..len].to_vec()),
            Placed::Cuda(ctx, data) => {
                let mut out = ctx.zeros::<f64>(len)?;
                ctx.copy_range(data, 0, &mut out, 0, len)?;
                Self::from_device_buffer(ctx.clone(), out)
            }
        })
    }

    /// A host copy (a download for a device vector).
    pub fn to_host(&self) -> Result<Self, LinalgError> {
        self.to_device(&Device::Host)
    }

    /// A copy on the same device; unlike `clone`, a failed device allocation is an error.
    pub fn try_clone(&self) -> Result<Self, LinalgError> {
        Ok(Self {
            storage: self.storage.try_clone()?,
            layout: self.layout.clone(),
        })
    }

    /// Overwrites the values with those of the host slice `v` (an upload for a device vector).
    pub fn copy_from_host(&mut self, v: &[f64]) -> Result<(), LinalgError> {
        if v.len() != self.len() {
            return Err(LinalgError::LengthMismatch {
                what: "Vector::copy_from_host",
                expected: self.len(),
                found: v.len(),
            });
        }
        match &mut self.storage {
            Placed::Host(x) => x.copy_from_slice(v),
            Placed::Cuda(ctx, data) => ctx.upload_into(v, data)?,
        }
        Ok(())
    }

    /// Overwrites the host slice `into` with the values (a download for a device vector, straight
    /// into `into`: no intermediate copy), the inverse of [`Vector::copy_from_host`].
    pub fn copy_to_host(&self, into: &mut [f64]) -> Result<(), LinalgError> {
        if into.len() != self.len() {
            return Err(LinalgError::LengthMismatch {
                what: "Vector::copy_to_host",
                expected: self.len(),
                found: into.len(),
            });
        }
        match &self.storage {
            Placed::Host(x) => into.copy_from_slice(x),
            Placed::Cuda(ctx, data) => ctx.download_into(data, into)?,
        }
        Ok(())
    }

    /// Number of local entries (owned and ghosts).
    pub fn len(&self) -> usize {
        self.storage.len()
    }

    /// True if the vector has no local entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The layout (owned range, ghosts, communicator).
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Where the values live.
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// The local entries in host memory; [`LinalgError::NotOnHost`] for a device vector.
    pub fn host(&self) -> Result<&[f64], LinalgError> {
        self.storage.host()
    }

    /// The local entries in host memory, mutably; [`LinalgError::NotOnHost`] for a device vector.
    pub fn host_mut(&mut self) -> Result<&mut [f64], LinalgError> {
        self.storage.host_mut()
    }

    /// A host copy of the local entries (a download for a device vector).
    pub fn to_host_vec(&self) -> Result<Vec<f64>, LinalgError> {
        self.storage.to_host_vec()
    }

    /// Sets every local entry to `a`.
    pub fn fill(&mut self, a: f64) -> Result<(), LinalgError> {
        match &mut self.storage {
            Placed::Host(v) => v.fill(a),
            Placed::Cuda(ctx, data) => cuda::vector::fill(ctx, a, data)?,
        }
        Ok(())
    }

    /// Copies `x` into `self` (same length, layout and device).
    pub fn copy_from(&mut self, x: &Vector) -> Result<(), LinalgError> {
        ops::check_pair("Vector::copy_from", x, self)?;
        match (&x.storage, &mut self.storage) {
            (Placed::Host(x), Placed::Host(y)) => y.copy_from_slice(x),
            (Placed::Cuda(_, x), Placed::Cuda(ctx, y)) => ctx.copy(x, y)?,
            _ => return Err(unsupported("Vector::copy_from", &x.device())),
        }
        Ok(())
    }

    pub(crate) fn storage(&self) -> &VectorStorage {
        &self.storage
    }

    pub(crate) fn storage_mut(&mut self) -> &mut VectorStorage {
        &mut self.storage
    }
}

impl From<Vec<f64>> for Vector {
    fn from(v: Vec<f64>) -> Self {
        Self::from_vec(v)
    }
}

/// Errors unless `x` has `expected` local entries.
pub(crate) fn check_len(
    what: &'static str,
    x: &Vector,
    expected: usize,
) -> Result<(), LinalgError> {
    if x.len() != expected {
        return Err(LinalgError::LengthMismatch {
            what,
            expected,
            found: x.len(),
        });
    }
    Ok(())
}

/// BLAS-1 operations, parallel, on the device of their operands.
///
/// Element-wise operations act on every local entry (owned and ghosts). Reductions ([`dot`],
/// [`norm2`], [`norm_inf`]) reduce the owned entries. [`dot`] sums the rounded products
/// exactly ([`crate::exact::ExactSum`], over the ranks too) and rounds once, on the host and on
/// a GPU alike, so its result is the same bits for any thread count, any rank count, any
/// numbering of the entries and either device. Operands of other lengths, layouts or devices
/// are errors.
pub mod ops {
    use super::{check_same_device, cuda, host, unsupported, Placed, Vector};
    use crate::LinalgError;

    pub use crate::backend::host::blas1::REDUCTION_CHUNK;

    /// Errors unless `x` and `y` have the same length, layout and device.
    pub(crate) fn check_pair(
        what: &'static str,
        x: &Vector,
        y: &Vector,
    ) -> Result<(), LinalgError> {
        check_same_device(what, &y.device(), &x.device())?;
        if x.len() != y.len() {
            return Err(LinalgError::LengthMismatch {
                what,
                expected: y.len(),
                found: x.len(),
            });
        }
        if !x.layout.matches(&y.layout) {
            return Err(LinalgError::LayoutMismatch { what });
        }
        Ok(())
    }

    /// `x . y` over the owned entries, reduced over the ranks; deterministic (the exact sum of
    /// the rounded products, rounded once, whatever the rank count and device): [`dots`] of one
    /// pair.
    pub fn dot(x: &Vector, y: &Vector) -> Result<f64, LinalgError> {
        check_pair("ops::dot", x, y)?;
        Ok(dots([(x, y)])?[0])
    }

    /// The dot products of `N` pairs at once, each over the owned entries and deterministic
    /// (the exact sum of the rounded products over every rank, rounded once): one wait for the
    /// device (one download of every pair's exact sum, or on one rank of the rounded values)
    /// and one reduction over the ranks. Every vector must share the first pair's layout and
    /// device.
    pub fn dots<const N: usize>(pairs: [(&Vector, &Vector); N]) -> Result<[f64; N], LinalgError> {
        let Some(&(first, _)) = pairs.first() else {
            return Ok([0.0; N]);
        };
        for &(x, y) in &pairs {
            check_pair("ops::dots", x, y)?;
            check_pair("ops::dots (another pair)", first, x)?;
        }
        let owned = first.layout.owned();
        let mut sums = match &first.storage {
            Placed::Host(_) => pairs
                .iter()
                .map(|(x, y)| {
                    Ok(host::blas1::dot_exact(
                        &x.host()?[..owned],
                        &y.host()?[..owned],
                    ))
                })
                .collect::<Result<Vec<_>, LinalgError>>()?,
            Placed::Cuda(ctx, _) => {
                let buffers = pairs
                    .iter()
                    .map(|(x, y)| Ok((x.device_buffer()?, y.device_buffer()?, owned)))
                    .collect::<Result<Vec<_>, LinalgError>>()?;
                if first.layout.comm().size() == 1 {
                    // one rank: rounded on the device, only the values come back
                    let values = cuda::vector::dots(ctx, &buffers)?;
                    let mut out = [0.0; N];
                    out.copy_from_slice(&values);
                    return Ok(out);
                }
                cuda::vector::dots_exact_prefix(ctx, &buffers)?
            }
        };
        crate::exact::ExactSum::allreduce(&**first.layout.comm(), &mut sums)?;
        let mut out = [0.0; N];
        for (o, s) in out.iter_mut().zip(&sums) {
            *o = s.value();
        }
        Ok(out)
    }

    /// `x . y` over the entries of host vectors of one rank in plain floating point (partial
    /// sums of [`REDUCTION_CHUNK`] entries added in chunk order): the former dot, kept to
    /// measure the exact [`dot`]'s cost; it agrees with [`dot`] to rounding only.
    pub fn dot_in_chunks(x: &Vector, y: &Vector) -> Result<f64, LinalgError> {
        check_pair("ops::dot_in_chunks", x, y)?;
        match (&x.storage, &y.storage) {
            (Placed::Host(xs), Placed::Host(ys)) if x.layout.comm().size() == 1 => {
                Ok(host::blas1::dot_in_chunks(xs, ys))
            }
            _ => Err(unsupported("ops::dot_in_chunks", &x.device())),
        }
    }

    /// Euclidean norm `sqrt(x . x)`; deterministic.
    pub fn norm2(x: &Vector) -> Result<f64, LinalgError> {
        Ok(dot(x, x)?.sqrt())
    }

    /// `max |x_i|` over the owned entries, reduced over the ranks; NaN if any entry is NaN.
    pub fn norm_inf(x: &Vector) -> Result<f64, LinalgError> {
        let owned = x.layout.owned();
        let local = match &x.storage {
            Placed::Host(x) => host::blas1::norm_inf(&x[..owned]),
            Placed::Cuda(ctx, data) => cuda::ops::norm_inf(ctx, data, owned)?,
        };
        let mut max = [local];
        x.layout.comm().allreduce_max(&mut max)?;
        Ok(max[0])
    }

    /// `y += a x`.
    pub fn axpy(a: f64, x: &Vector, y: &mut Vector) -> Result<(), LinalgError> {
        check_pair("ops::axpy", x, y)?;
        match (&x.storage, &mut y.storage) {
            (Placed::Host(x), Placed::Host(y)) => host::blas1::axpy(a, x, y),
            (Placed::Cuda(_, x), Placed::Cuda(ctx, y)) => cuda::vector::axpy(ctx, a, x, y)?,
            _ => return Err(unsupported("ops::axpy", &x.device())),
        }
        Ok(())
    }

    /// `y = a x + b y`. With `b == 0` the old `y` is not read (NaNs in it do not propagate).
    pub fn axpby(a: f64, x: &Vector, b: f64, y: &mut Vector) -> Result<(), LinalgError> {
        check_pair("ops::axpby", x, y)?;
        match (&x.storage, &mut y.storage) {
            (Placed::Host(x), Placed::Host(y)) => host::blas1::axpby(a, x, b, y),
            (Placed::Cuda(_, x), Placed::Cuda(ctx, y)) => cuda::vector::axpby(ctx, a, x, b, y)?,
            _ => return Err(unsupported("ops::axpby", &x.device())),
        }
        Ok(())
    }

    /// `x = a x`.
    pub fn scale(a: f64, x: &mut Vector) -> Result<(), LinalgError> {
        match &mut x.storage {
            Placed::Host(x) => host::blas1::scale(a, x),
            Placed::Cuda(ctx, data) => cuda::ops::scale(ctx, a, data)?,
        }
        Ok(())
    }

    /// Fills `x` with deterministic pseudo-random values in `[-1, 1)`: the entry of global index
    /// `g` is a hash of `g` and `seed` ([`crate::hash`]), so the values do not depend on threads,
    /// ranks or devices. Owned entries only; ghosts are left as they are.
    pub fn fill_hashed(x: &mut Vector, seed: u64) -> Result<(), LinalgError> {
        let first = x.layout.global_offset();
        let owned = x.layout.owned();
        match &mut x.storage {
            Placed::Host(x) => host::blas1::fill_hashed(first, seed, &mut x[..owned]),
            Placed::Cuda(ctx, data) => cuda::ops::fill_hashed(ctx, first, seed, data, owned)?,
        }
        Ok(())
    }
}
