//! [`Bsr`]: block sparse row matrix with independent row and column block sizes, and its SpMV.

use std::borrow::Cow;
use std::sync::Arc;

use crate::backend::{cuda, host};
use crate::device::{
    check_same_device, device_pattern, either_precision, unsupported, ByPrecision, HostByPrecision,
    Placed,
};
use crate::precision::widen;
use crate::vector::check_len;
use crate::{BlockPattern, Device, LinalgError, Precision, Vector};
use ByPrecision::{Double, Single};

/// A matrix's values: in host memory or on a GPU (with the uploaded pattern), in fp64 or fp32.
pub(crate) type BsrStorage =
    Placed<HostByPrecision, ByPrecision<cuda::DeviceBsr, cuda::DeviceBsr<f32>>>;

/// Block sparse row matrix: a shared [`BlockPattern`] and `block_rows x block_cols` blocks.
///
/// Values are block-major in pattern (slot) order; each block is row-major, so entry `(r, c)` of the
/// block in slot `k` is `values[k * block_len + r * block_cols + c]`. The scalar matrix has
/// `n_block_rows * block_rows` rows and `n_block_cols * block_cols` columns. The pattern is a
/// host-side value shared with plans; the values live on [`Bsr::device`].
#[derive(Debug, Clone, PartialEq)]
pub struct Bsr {
    pattern: Arc<BlockPattern>,
    block_rows: usize,
    block_cols: usize,
    storage: BsrStorage,
}

impl Bsr {
    /// A host matrix of the given pattern with all stored blocks zero.
    ///
    /// # Panics
    /// If a block size is zero (use [`Bsr::from_parts`] for a checked constructor).
    pub fn zeros(pattern: Arc<BlockPattern>, block_rows: usize, block_cols: usize) -> Self {
        assert!(
            block_rows > 0 && block_cols > 0,
            "Bsr::zeros: block sizes must be >= 1"
        );
        let values = vec![0.0; pattern.nnz() * block_rows * block_cols];
        Self {
            pattern,
            block_rows,
            block_cols,
            storage: Placed::Host(Double(values)),
        }
    }

    /// A matrix on `ctx` whose values are `m`'s, without a copy (for device-built matrices such as
    /// an assembled tangent). `m` must have `pattern`'s shape (block rows, columns, stored
    /// blocks); its column indices are taken to be `pattern`'s, and its device pattern becomes
    /// `pattern`'s mirror on this GPU where it has none. [`Bsr::into_device_bsr`] gives `m` back.
    pub fn from_device_bsr(
        ctx: Arc<cuda::CudaContext>,
        pattern: Arc<BlockPattern>,
        m: cuda::DeviceBsr,
    ) -> Result<Self, LinalgError> {
        let p = m.pattern();
        if p.n_block_rows() != pattern.n_block_rows()
            || p.n_block_cols() != pattern.n_block_cols()
            || p.nnz() != pattern.nnz()
        {
            return Err(LinalgError::DimensionMismatch {
                what: "Bsr::from_device_bsr: device matrix against pattern (block rows, columns, blocks)",
                expected: pattern.n_block_rows() * pattern.n_block_cols() * pattern.nnz(),
                found: p.n_block_rows() * p.n_block_cols() * p.nnz(),
            });
        }
        // `m`'s device pattern is `pattern` on this GPU: plans made on the device from the
        // pattern (symbolic products, diagonal slots) then upload nothing
        pattern.device_mirror().install(&ctx, m.pattern().clone());
        Ok(Self {
            pattern,
            block_rows: m.block_rows(),
            block_cols: m.block_cols(),
            storage: Placed::Cuda(ctx, Double(m)),
        })
    }

    /// The device matrix behind a matrix on a GPU, without a copy ([`Bsr::from_device_bsr`]'s
    /// inverse); `NotOnDevice`-style error ([`LinalgError::Unsupported`]) for a host matrix.
    pub fn into_device_bsr(self) -> Result<cuda::DeviceBsr, LinalgError> {
        match self.storage {
            Placed::Cuda(_, Double(m)) => Ok(m),
            _ => Err(unsupported("Bsr::into_device_bsr", &Device::Host)),
        }
    }

    /// The device matrix behind a matrix on a GPU, borrowed; an error for a host matrix.
    pub fn device_bsr(&self) -> Result<&cuda::DeviceBsr, LinalgError> {
        match self.cuda() {
            Some((_, m)) => Ok(m),
            None => Err(unsupported("Bsr::device_bsr", &self.device())),
        }
    }

    /// The device matrix behind a matrix on a GPU, mutably borrowed (values only: its pattern
    /// stays [`Bsr::pattern`]'s); an error for a host matrix.
    pub fn device_bsr_mut(&mut self) -> Result<&mut cuda::DeviceBsr, LinalgError> {
        let device = self.device();
        match self.cuda_mut() {
            Some((_, m)) => Ok(m),
            None => Err(unsupported("Bsr::device_bsr_mut", &device)),
        }
    }

    /// A matrix of zeros on the pattern, block sizes, device and precision of `self`.
    pub fn zeros_like(&self) -> Result<Self, LinalgError> {
        Self::zeros_in(
            &self.device(),
            self.pattern.clone(),
            self.block_rows,
            self.block_cols,
            self.precision(),
        )
    }

    /// [`Bsr::zeros_on`] with values stored in `precision`.
    pub fn zeros_in(
        device: &Device,
        pattern: Arc<BlockPattern>,
        block_rows: usize,
        block_cols: usize,
        precision: Precision,
    ) -> Result<Self, LinalgError> {
        check_block_size(block_rows, block_cols)?;
        let n = pattern.nnz() * block_rows * block_cols;
        let storage = match (device, precision) {
            (_, Precision::Double) => {
                return Self::zeros_on(device, pattern, block_rows, block_cols)
            }
            (Device::Host, Precision::Single) => Placed::Host(Single(vec![0.0; n])),
            (Device::Cuda(ctx), Precision::Single) => {
                let dp = device_pattern(ctx, &pattern)?;
                Placed::Cuda(
                    ctx.clone(),
                    Single(cuda::DeviceBsr::<f32>::zeros_of(
                        ctx, &dp, block_rows, block_cols,
                    )?),
                )
            }
        };
        Ok(Self {
            pattern,
            block_rows,
            block_cols,
            storage,
        })
    }

    /// A matrix of zeros on `device` (the pattern is uploaded once per GPU and cached in it).
    pub fn zeros_on(
        device: &Device,
        pattern: Arc<BlockPattern>,
        block_rows: usize,
        block_cols: usize,
    ) -> Result<Self, LinalgError> {
        check_block_size(block_rows, block_cols)?;
        let storage = match device {
            Device::Host => {
                Placed::Host(Double(vec![0.0; pattern.nnz() * block_rows * block_cols]))
            }
            Device::Cuda(ctx) => {
                let dp = device_pattern(ctx, &pattern)?;
                Placed::Cuda(
                    ctx.clone(),
                    Double(cuda::DeviceBsr::zeros(ctx, &dp, block_rows, block_cols)?),
                )
            }
        };
        Ok(Self {
            pattern,
            block_rows,
            block_cols,
            storage,
        })
    }

    /// A copy on `device` (an upload, a download, or a copy on the same device). The pattern
    /// is shared; on a GPU its device copy is made once and cached in the pattern.
    pub fn to_device(&self, device: &Device) -> Result<Self, LinalgError> {
        if self.precision() == Precision::Single && !device.same_as(&self.device()) {
            return self
                .to_precision(Precision::Double)?
                .to_device(device)?
                .to_precision(Precision::Single);
        }
        if device.same_as(&self.device()) {
            return Ok(Self {
                pattern: self.pattern.clone(),
                block_rows: self.block_rows,
                block_cols: self.block_cols,
                storage: self.storage.try_clone()?,
            });
        }
        let mut out = Self::zeros_on(
            device,
            self.pattern.clone(),
            self.block_rows,
            self.block_cols,
        )?;
        match &self.storage {
            Placed::Host(Double(v)) => out.upload_values_from_slice(v)?,
            _ => out.upload_values_from_slice(&self.storage.to_host_vec()?)?,
        }
        Ok(out)
    }

    /// A host copy (a download for a device matrix).
    pub fn to_host(&self) -> Result<Self, LinalgError> {
        self.to_device(&Device::Host)
    }

    /// Overwrites the values with those of `src` (same pattern and block sizes), a host
    /// matrix or one on this matrix's GPU: an upload of the values alone for a device matrix
    /// (the hot path of a Newton step whose tangent is assembled on the host), a copy on the
    /// host or on the GPU.
    pub fn upload_values_from(&mut self, src: &Bsr) -> Result<(), LinalgError> {
        if !BlockPattern::same(&self.pattern, &src.pattern) {
            return Err(LinalgError::PatternMismatch {
                what: "Bsr::upload_values_from",
            });
        }
        check_same_block_size("Bsr::upload_values_from", self, src)?;
        if let (Placed::Cuda(ctx, Double(m)), Placed::Cuda(_, Double(s))) =
            (&mut self.storage, &src.storage)
        {
            crate::device::check_same_device(
                "Bsr::upload_values_from",
                &Device::Cuda(ctx.clone()),
                &src.device(),
            )?;
            ctx.copy(s.values(), m.values_mut())?;
            return Ok(());
        }
        let v = src.storage.host()?;
        self.upload_values_from_slice(v)
    }

    fn upload_values_from_slice(&mut self, v: &[f64]) -> Result<(), LinalgError> {
        match &mut self.storage {
            Placed::Host(Double(d)) => {
                if d.len() != v.len() {
                    return Err(LinalgError::LengthMismatch {
                        what: "Bsr values",
                        expected: d.len(),
                        found: v.len(),
                    });
                }
                d.copy_from_slice(v)
            }
            Placed::Cuda(ctx, Double(m)) => ctx.upload_into(v, m.values_mut())?,
            // fp32 values are made by `to_precision`, not uploaded
            _ => {
                return Err(unsupported(
                    "Bsr::upload_values_from",
                    &self.storage.device(),
                ))
            }
        }
        Ok(())
    }

    /// The device matrix and its context (crate kernels), or `None` on the host.
    pub(crate) fn cuda(&self) -> Option<(&Arc<cuda::CudaContext>, &cuda::DeviceBsr)> {
        match &self.storage {
            Placed::Cuda(ctx, Double(m)) => Some((ctx, m)),
            _ => None,
        }
    }

    /// The fp32 device matrix and its context (crate kernels), or `None`.
    pub(crate) fn cuda32(&self) -> Option<(&Arc<cuda::CudaContext>, &cuda::DeviceBsr<f32>)> {
        match &self.storage {
            Placed::Cuda(ctx, Single(m)) => Some((ctx, m)),
            _ => None,
        }
    }

    /// Mutable [`Bsr::cuda`].
    pub(crate) fn cuda_mut(&mut self) -> Option<(&Arc<cuda::CudaContext>, &mut cuda::DeviceBsr)> {
        match &mut self.storage {
            Placed::Cuda(ctx, Double(m)) => Some((ctx, m)),
            _ => None,
        }
    }

    /// A host matrix wrapping `values` (block-major, row-major blocks); checks block sizes and the
    /// values length.
    pub fn from_parts(
        pattern: Arc<BlockPattern>,
        block_rows: usize,
        block_cols: usize,
        values: Vec<f64>,
    ) -> Result<Self, LinalgError> {
        check_block_size(block_rows, block_cols)?;
        let expected = pattern.nnz() * block_rows * block_cols;
        if values.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "Bsr values",
                expected,
                found: values.len(),
            });
        }
        Ok(Self {
            pattern,
            block_rows,
            block_cols,
            storage: Placed::Host(Double(values)),
        })
    }

    /// Blocks a row-major dense `n_rows x n_cols` host matrix, keeping every block with a nonzero
    /// (or NaN) entry. The block sizes must divide the dimensions.
    pub fn from_dense(
        a: &[f64],
        n_rows: usize,
        n_cols: usize,
        block_rows: usize,
        block_cols: usize,
    ) -> Result<Self, LinalgError> {
        check_block_size(block_rows, block_cols)?;
        if a.len() != n_rows * n_cols {
            return Err(LinalgError::LengthMismatch {
                what: "dense matrix",
                expected: n_rows * n_cols,
                found: a.len(),
            });
        }
        if !n_rows.is_multiple_of(block_rows) || !n_cols.is_multiple_of(block_cols) {
            return Err(LinalgError::NotDivisible {
                n_rows,
                n_cols,
                block_rows,
                block_cols,
            });
        }
        let (nbr, nbc) = (n_rows / block_rows, n_cols / block_cols);
        let mut row_ptr = Vec::with_capacity(nbr + 1);
        row_ptr.push(0);
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        for bi in 0..nbr {
            for bj in 0..nbc {
                let entry =
                    |r: usize, c: usize| a[(bi * block_rows + r) * n_cols + bj * block_cols + c];
                let any = (0..block_rows).any(|r| (0..block_cols).any(|c| entry(r, c) != 0.0));
                if any {
                    col_idx.push(bj as u32);
                    for r in 0..block_rows {
                        values.extend((0..block_cols).map(|c| entry(r, c)));
                    }
                }
            }
            row_ptr.push(col_idx.len());
        }
        let pattern = BlockPattern::new(nbr, nbc, row_ptr, col_idx)?;
        Ok(Self {
            pattern: Arc::new(pattern),
            block_rows,
            block_cols,
            storage: Placed::Host(Double(values)),
        })
    }

    /// The row-major dense matrix in host memory (`n_rows * n_cols` entries; for tests and small
    /// problems such as the coarsest AMG level).
    pub fn to_dense(&self) -> Result<Vec<f64>, LinalgError> {
        let values: Cow<'_, [f64]> = match &self.storage {
            Placed::Host(Single(v)) => Cow::Owned(widen(v)),
            s => Cow::Borrowed(s.host()?),
        };
        let (n_cols, br, bc) = (self.n_cols(), self.block_rows, self.block_cols);
        let bl = self.block_len();
        let mut d = vec![0.0; self.n_rows() * n_cols];
        for bi in 0..self.pattern.n_block_rows() {
            for k in self.pattern.row_ptr()[bi]..self.pattern.row_ptr()[bi + 1] {
                let bj = self.pattern.col_idx()[k] as usize;
                let block = &values[k * bl..(k + 1) * bl];
                for (r, brow) in block.chunks_exact(bc).enumerate() {
                    let start = (bi * br + r) * n_cols + bj * bc;
                    d[start..start + bc].copy_from_slice(brow);
                }
            }
        }
        Ok(d)
    }

    /// The shared pattern.
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Rows per block.
    pub fn block_rows(&self) -> usize {
        self.block_rows
    }

    /// Columns per block.
    pub fn block_cols(&self) -> usize {
        self.block_cols
    }

    /// Values per block (`block_rows * block_cols`).
    pub fn block_len(&self) -> usize {
        self.block_rows * self.block_cols
    }

    /// Stored values (`nnz * block_len`).
    pub fn n_values(&self) -> usize {
        self.storage.len()
    }

    /// Scalar rows.
    pub fn n_rows(&self) -> usize {
        self.pattern.n_block_rows() * self.block_rows
    }

    /// Scalar columns.
    pub fn n_cols(&self) -> usize {
        self.pattern.n_block_cols() * self.block_cols
    }

    /// The stored precision of the values.
    pub fn precision(&self) -> Precision {
        self.storage.precision()
    }

    /// The same matrix with its values stored in `precision`, on the same device (rounded to
    /// fp32, or widened to fp64); a copy of `self` when it is stored so already. The result is
    /// the only copy of the values a caller needs to keep: the fp32 form is the stored form.
    pub fn to_precision(&self, precision: Precision) -> Result<Bsr, LinalgError> {
        let storage = match &self.storage {
            s if s.precision() == precision => s.try_clone()?,
            Placed::Host(v) => Placed::Host(v.to_precision(precision)),
            Placed::Cuda(ctx, data) => Placed::Cuda(
                ctx.clone(),
                match data {
                    Double(m) => Single(m.with_values(cuda::ops::narrow_to_f32(ctx, m.values())?)?),
                    Single(m) => Double(m.with_values(cuda::ops::widen_to_f64(ctx, m.values())?)?),
                },
            ),
        };
        Ok(Self {
            pattern: self.pattern.clone(),
            block_rows: self.block_rows,
            block_cols: self.block_cols,
            storage,
        })
    }

    /// Where the values live.
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// All values in host memory, block-major; [`LinalgError::NotOnHost`] for a device matrix.
    pub fn host(&self) -> Result<&[f64], LinalgError> {
        self.storage.host()
    }

    /// All values in host memory, mutably (the pattern stays fixed).
    pub fn host_mut(&mut self) -> Result<&mut [f64], LinalgError> {
        self.storage.host_mut()
    }

    /// A host copy of the values (a download for a device matrix).
    pub fn to_host_vec(&self) -> Result<Vec<f64>, LinalgError> {
        self.storage.to_host_vec()
    }

    /// The block in slot `k` (row-major) in host memory.
    pub fn host_block(&self, k: usize) -> Result<&[f64], LinalgError> {
        let (bl, nnz) = (self.block_len(), self.pattern.nnz());
        if k >= nnz {
            return Err(LinalgError::IndexOutOfRange {
                what: "Bsr block slot",
                index: k,
                len: nnz,
            });
        }
        Ok(&self.storage.host()?[k * bl..(k + 1) * bl])
    }

    /// The block in slot `k` in host memory, mutably.
    pub fn host_block_mut(&mut self, k: usize) -> Result<&mut [f64], LinalgError> {
        let (bl, nnz) = (self.block_len(), self.pattern.nnz());
        if k >= nnz {
            return Err(LinalgError::IndexOutOfRange {
                what: "Bsr block slot",
                index: k,
                len: nnz,
            });
        }
        Ok(&mut self.storage.host_mut()?[k * bl..(k + 1) * bl])
    }

    pub(crate) fn storage(&self) -> &BsrStorage {
        &self.storage
    }

    pub(crate) fn storage_mut(&mut self) -> &mut BsrStorage {
        &mut self.storage
    }

    /// `y = A x`. Errors if `x` has not `n_cols()` entries, `y` not `n_rows()`, or the operands
    /// live on different devices.
    pub fn spmv(&self, x: &Vector, y: &mut Vector) -> Result<(), LinalgError> {
        self.spmv_impl(1.0, x, None, y)
    }

    /// `y = alpha A x + beta y`; with `beta == 0` the old `y` is not read.
    pub fn spmv_add(
        &self,
        alpha: f64,
        x: &Vector,
        beta: f64,
        y: &mut Vector,
    ) -> Result<(), LinalgError> {
        self.spmv_impl(alpha, x, (beta != 0.0).then_some(beta), y)
    }

    /// Parallel over fixed chunks of block rows; each row sums its blocks in slot order, so the result
    /// does not depend on the thread count.
    fn spmv_impl(
        &self,
        alpha: f64,
        x: &Vector,
        beta: Option<f64>,
        y: &mut Vector,
    ) -> Result<(), LinalgError> {
        check_len("Bsr::spmv: x", x, self.n_cols())?;
        check_len("Bsr::spmv: y", y, self.n_rows())?;
        let device = self.device();
        check_same_device("Bsr::spmv: x", &device, &x.device())?;
        check_same_device("Bsr::spmv: y", &device, &y.device())?;
        let (br, bc) = (self.block_rows, self.block_cols);
        match (&self.storage, x.storage(), y.storage_mut()) {
            (Placed::Host(a), Placed::Host(x), Placed::Host(y)) => either_precision!(a, a => {
                host::spmv::spmv(&self.pattern, br, bc, a, alpha, x, beta, y)
            }),
            (Placed::Cuda(ctx, m), Placed::Cuda(_, x), Placed::Cuda(_, y)) => {
                either_precision!(m, m => {
                    cuda::spmv(ctx, m, alpha, x, beta.unwrap_or(0.0), y)?
                })
            }
            _ => return Err(unsupported("Bsr::spmv", &device)),
        }
        Ok(())
    }

    /// Multiplies every value by `s`.
    pub fn scale(&mut self, s: f64) -> Result<(), LinalgError> {
        match &mut self.storage {
            Placed::Host(Double(v)) => host::bsr::scale(s, v),
            Placed::Host(Single(v)) => v.iter_mut().for_each(|x| *x = (*x as f64 * s) as f32),
            Placed::Cuda(ctx, Double(m)) => cuda::ops::scale(ctx, s, m.values_mut())?,
            Placed::Cuda(_, Single(_)) => {
                return Err(unsupported("Bsr::scale", &self.storage.device()))
            }
        }
        Ok(())
    }

    /// Copies the values of `src`, which must carry the same pattern (the same object or an equal
    /// one), block sizes and device.
    pub fn copy_values_from(&mut self, src: &Bsr) -> Result<(), LinalgError> {
        if !BlockPattern::same(&self.pattern, &src.pattern) {
            return Err(LinalgError::PatternMismatch {
                what: "Bsr::copy_values_from",
            });
        }
        check_same_block_size("Bsr::copy_values_from", self, src)?;
        check_same_device("Bsr::copy_values_from", &self.device(), &src.device())?;
        match (&src.storage, &mut self.storage) {
            (Placed::Host(Double(s)), Placed::Host(Double(d))) => host::bsr::copy(s, d),
            (Placed::Host(Single(s)), Placed::Host(Single(d))) => d.copy_from_slice(s),
            (Placed::Cuda(_, Double(s)), Placed::Cuda(ctx, Double(d))) => {
                ctx.copy(s.values(), d.values_mut())?
            }
            (Placed::Cuda(_, Single(s)), Placed::Cuda(ctx, Single(d))) => {
                ctx.copy(s.values(), d.values_mut())?
            }
            _ => return Err(unsupported("Bsr::copy_values_from", &src.device())),
        }
        Ok(())
    }

    /// The Frobenius norm of every stored block, in slot order (a vector of `nnz` entries on the
    /// matrix's device).
    pub fn block_norms(&self) -> Result<Vector, LinalgError> {
        let bl = self.block_len();
        match &self.storage {
            Placed::Host(v) => {
                let mut norms = vec![0.0; self.pattern.nnz()];
                match v {
                    Double(v) => host::bsr::block_norms(bl, v, &mut norms),
                    Single(v) => host::bsr::block_norms(bl, &widen(v), &mut norms),
                }
                Ok(Vector::from_vec(norms))
            }
            Placed::Cuda(ctx, Double(m)) => {
                let mut norms = ctx.zeros(self.pattern.nnz())?;
                cuda::ops::block_norms(ctx, m, &mut norms)?;
                Ok(Vector::from_device_buffer(ctx.clone(), norms))
            }
            Placed::Cuda(_, Single(_)) => {
                Err(unsupported("Bsr::block_norms", &self.storage.device()))
            }
        }
    }

    /// The same matrix with 1x1 blocks: every stored block becomes `block_len` stored scalars
    /// (explicit zeros inside blocks are kept). Scalar row `block_rows * i + r` holds row `r` of
    /// block row `i`'s blocks, in slot order; [`Bsr::copy_scalar_blocks_from`] refreshes the
    /// values later without rebuilding the pattern.
    pub fn to_scalar_blocks(&self) -> Result<Bsr, LinalgError> {
        let (br, bc) = (self.block_rows, self.block_cols);
        let p = &*self.pattern;
        let mut row_ptr = Vec::with_capacity(self.n_rows() + 1);
        row_ptr.push(0);
        let mut col_idx = Vec::with_capacity(self.n_values());
        for bi in 0..p.n_block_rows() {
            let cols = p.row(bi);
            for _ in 0..br {
                for &bj in cols {
                    col_idx.extend((0..bc).map(|c| (bj as usize * bc + c) as u32));
                }
                row_ptr.push(col_idx.len());
            }
        }
        let pattern = BlockPattern::new_trusted(self.n_rows(), self.n_cols(), row_ptr, col_idx);
        let mut scalar = Bsr {
            pattern: Arc::new(pattern),
            block_rows: 1,
            block_cols: 1,
            storage: match &self.storage {
                Placed::Host(Double(v)) => Placed::Host(Double(vec![0.0; v.len()])),
                _ => return Err(unsupported("Bsr::to_scalar_blocks", &self.device())),
            },
        };
        scalar.copy_scalar_blocks_from(self)?;
        Ok(scalar)
    }

    /// Writes the values of `blocked` into `self`, its 1x1-block expansion (the pattern of
    /// `blocked.to_scalar_blocks()`, checked by size), without rebuilding the pattern.
    pub fn copy_scalar_blocks_from(&mut self, blocked: &Bsr) -> Result<(), LinalgError> {
        if self.block_len() != 1
            || self.n_rows() != blocked.n_rows()
            || self.n_values() != blocked.n_values()
        {
            return Err(LinalgError::DimensionMismatch {
                what: "Bsr::copy_scalar_blocks_from: stored entries",
                expected: blocked.n_values(),
                found: self.n_values(),
            });
        }
        check_same_device(
            "Bsr::copy_scalar_blocks_from",
            &self.device(),
            &blocked.device(),
        )?;
        let (br, bc) = (blocked.block_rows, blocked.block_cols);
        match (&blocked.storage, &mut self.storage) {
            (Placed::Host(Double(src)), Placed::Host(Double(dst))) => {
                host::bsr::expand_to_scalar(&blocked.pattern, br, bc, src, dst)
            }
            _ => {
                return Err(unsupported(
                    "Bsr::copy_scalar_blocks_from",
                    &blocked.device(),
                ))
            }
        }
        Ok(())
    }
}

pub(crate) fn check_block_size(block_rows: usize, block_cols: usize) -> Result<(), LinalgError> {
    if block_rows == 0 || block_cols == 0 {
        return Err(LinalgError::InvalidBlockSize {
            block_rows,
            block_cols,
        });
    }
    Ok(())
}

/// Errors unless `a` and `b` have the same block sizes.
fn check_same_block_size(what: &'static str, a: &Bsr, b: &Bsr) -> Result<(), LinalgError> {
    if a.block_rows != b.block_rows {
        return Err(LinalgError::DimensionMismatch {
            what,
            expected: a.block_rows,
            found: b.block_rows,
        });
    }
    if a.block_cols != b.block_cols {
        return Err(LinalgError::DimensionMismatch {
            what,
            expected: a.block_cols,
            found: b.block_cols,
        });
    }
    Ok(())
}
