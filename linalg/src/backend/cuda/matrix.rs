//! Device mirrors of [`BlockPattern`] and [`Bsr`]: `u32` row offsets and column indices, `f64`
//! (or, for [`crate::Precision::Single`], `f32`) block values in the host layout (block-major in
//! slot order, each block row-major).

use std::sync::Arc;

use super::context::check_len;
use super::{CudaContext, DeviceBuffer, DeviceValue};
use crate::{BlockPattern, Bsr, LinalgError};

/// A [`BlockPattern`] in device memory, uploaded once and shared by every matrix on it.
/// Invariants are the host pattern's; offsets fit `u32` (checked at upload).
#[derive(Debug)]
pub struct DevicePattern {
    n_block_rows: usize,
    n_block_cols: usize,
    nnz: usize,
    pub(crate) row_ptr: DeviceBuffer<u32>,
    pub(crate) col_idx: DeviceBuffer<u32>,
}

/// Host `usize` offsets as `u32`, or an error naming `what`.
pub(crate) fn offsets_u32(what: &'static str, v: &[usize]) -> Result<Vec<u32>, LinalgError> {
    match v.last() {
        Some(&last) if last > u32::MAX as usize => {
            Err(LinalgError::DimensionTooLarge { what, value: last })
        }
        _ => Ok(v.iter().map(|&x| x as u32).collect()),
    }
}

impl DevicePattern {
    /// Uploads `p` (row offsets converted to `u32`; errors if `nnz` exceeds the `u32` range).
    pub fn upload(ctx: &CudaContext, p: &BlockPattern) -> Result<Arc<Self>, LinalgError> {
        Ok(Arc::new(Self::upload_plain(ctx, p)?))
    }

    /// [`Self::upload`] without the `Arc`.
    pub(crate) fn upload_plain(ctx: &CudaContext, p: &BlockPattern) -> Result<Self, LinalgError> {
        let row_ptr = offsets_u32("device pattern: number of blocks", p.row_ptr())?;
        Ok(Self {
            n_block_rows: p.n_block_rows(),
            n_block_cols: p.n_block_cols(),
            nnz: p.nnz(),
            row_ptr: ctx.upload(&row_ptr)?,
            col_idx: ctx.upload(p.col_idx())?,
        })
    }

    /// A pattern built on the device (`row_ptr`: `n_block_rows + 1` offsets ending at `nnz`,
    /// `col_idx`: `nnz` columns, ascending and unique per row, below `n_block_cols`).
    pub(crate) fn from_parts(
        n_block_rows: usize,
        n_block_cols: usize,
        nnz: usize,
        row_ptr: DeviceBuffer<u32>,
        col_idx: DeviceBuffer<u32>,
    ) -> Self {
        Self {
            n_block_rows,
            n_block_cols,
            nnz,
            row_ptr,
            col_idx,
        }
    }

    /// The pattern downloaded (tests compare device-built patterns with the host's; checked).
    #[cfg(test)]
    pub(crate) fn download(&self, ctx: &CudaContext) -> Result<BlockPattern, LinalgError> {
        let (row_ptr, col_idx) = self.download_parts(ctx)?;
        BlockPattern::new(self.n_block_rows, self.n_block_cols, row_ptr, col_idx)
    }

    /// The host copy of this pattern (valid by construction: every device pattern is an upload
    /// of a host one or made by the crate's kernels; checked in debug builds only), its device
    /// mirror set to `self` (so that matrices on it upload nothing). Two downloads: the offsets
    /// and the columns.
    pub fn download_trusted(
        self: &Arc<Self>,
        ctx: &CudaContext,
    ) -> Result<BlockPattern, LinalgError> {
        let (row_ptr, col_idx) = self.download_parts(ctx)?;
        let host =
            BlockPattern::new_trusted(self.n_block_rows, self.n_block_cols, row_ptr, col_idx);
        host.device_mirror().install(ctx, self.clone());
        Ok(host)
    }

    fn download_parts(&self, ctx: &CudaContext) -> Result<(Vec<usize>, Vec<u32>), LinalgError> {
        let row_ptr = ctx.download(&self.row_ptr)?;
        let mut col_idx = ctx.download(&self.col_idx)?;
        col_idx.truncate(self.nnz);
        Ok((row_ptr.iter().map(|&o| o as usize).collect(), col_idx))
    }

    /// Number of block rows.
    pub fn n_block_rows(&self) -> usize {
        self.n_block_rows
    }

    /// Number of block columns.
    pub fn n_block_cols(&self) -> usize {
        self.n_block_cols
    }

    /// Number of stored blocks.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// Device bytes of the pattern.
    pub fn bytes(&self) -> usize {
        self.row_ptr.bytes() + self.col_idx.bytes()
    }
}

/// A [`Bsr`] in device memory: a shared [`DevicePattern`] and `block_rows x block_cols` blocks
/// of `T` (`f64`, or `f32` for fp32 storage).
#[derive(Debug)]
pub struct DeviceBsr<T = f64> {
    pattern: Arc<DevicePattern>,
    block_rows: usize,
    block_cols: usize,
    values: DeviceBuffer<T>,
}

impl DeviceBsr {
    /// Uploads `a`'s pattern and values.
    pub fn upload(ctx: &CudaContext, a: &Bsr) -> Result<Self, LinalgError> {
        let pattern = DevicePattern::upload(ctx, a.pattern())?;
        Self::upload_on(ctx, &pattern, a)
    }

    /// Uploads `a`'s values onto an uploaded pattern, which must be `a`'s (dimensions and block
    /// count are checked; the caller vouches for the columns).
    pub fn upload_on(
        ctx: &CudaContext,
        pattern: &Arc<DevicePattern>,
        a: &Bsr,
    ) -> Result<Self, LinalgError> {
        check_pattern("DeviceBsr::upload_on", pattern, a.pattern())?;
        Ok(Self {
            pattern: pattern.clone(),
            block_rows: a.block_rows(),
            block_cols: a.block_cols(),
            values: ctx.upload(a.host()?)?,
        })
    }

    /// Overwrites the values from the host matrix `a`, which must have this pattern and shape.
    pub fn update_values(&mut self, ctx: &CudaContext, a: &Bsr) -> Result<(), LinalgError> {
        check_pattern("DeviceBsr::update_values", &self.pattern, a.pattern())?;
        check_shape(
            "DeviceBsr::update_values",
            self,
            a.block_rows(),
            a.block_cols(),
        )?;
        ctx.upload_into(a.host()?, &mut self.values)
    }

    /// Downloads into a host matrix on `pattern` (the host twin of this matrix's pattern).
    pub fn download(
        &self,
        ctx: &CudaContext,
        pattern: &Arc<BlockPattern>,
    ) -> Result<Bsr, LinalgError> {
        check_pattern("DeviceBsr::download", &self.pattern, pattern)?;
        Bsr::from_parts(
            pattern.clone(),
            self.block_rows,
            self.block_cols,
            ctx.download(&self.values)?,
        )
    }
}

impl DeviceBsr {
    /// An fp64 matrix of zeros on `pattern` ([`DeviceBsr::zeros_of`] for another value type).
    pub fn zeros(
        ctx: &CudaContext,
        pattern: &Arc<DevicePattern>,
        block_rows: usize,
        block_cols: usize,
    ) -> Result<Self, LinalgError> {
        Self::zeros_of(ctx, pattern, block_rows, block_cols)
    }
}

impl<T: DeviceValue> DeviceBsr<T> {
    /// A matrix of `T` zeros on `pattern`.
    pub fn zeros_of(
        ctx: &CudaContext,
        pattern: &Arc<DevicePattern>,
        block_rows: usize,
        block_cols: usize,
    ) -> Result<Self, LinalgError> {
        crate::bsr::check_block_size(block_rows, block_cols)?;
        Ok(Self {
            pattern: pattern.clone(),
            block_rows,
            block_cols,
            values: ctx.zeros::<T>(pattern.nnz * block_rows * block_cols)?,
        })
    }

    /// A copy on the same pattern (values copied device to device).
    pub fn duplicate(&self, ctx: &CudaContext) -> Result<Self, LinalgError> {
        Ok(Self {
            pattern: self.pattern.clone(),
            block_rows: self.block_rows,
            block_cols: self.block_cols,
            values: ctx.duplicate(&self.values)?,
        })
    }

    /// The shared pattern.
    pub fn pattern(&self) -> &Arc<DevicePattern> {
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

    /// Scalar rows.
    pub fn n_rows(&self) -> usize {
        self.pattern.n_block_rows * self.block_rows
    }

    /// Scalar columns.
    pub fn n_cols(&self) -> usize {
        self.pattern.n_block_cols * self.block_cols
    }

    /// The values (block-major, row-major blocks).
    pub fn values(&self) -> &DeviceBuffer<T> {
        &self.values
    }

    /// The values, mutably.
    pub fn values_mut(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.values
    }

    /// A matrix on the same pattern with the given values (`len` = stored blocks x block size).
    pub(crate) fn with_values<U: DeviceValue>(
        &self,
        values: DeviceBuffer<U>,
    ) -> Result<DeviceBsr<U>, LinalgError> {
        check_len("DeviceBsr::with_values", self.values.len(), values.len())?;
        Ok(DeviceBsr {
            pattern: self.pattern.clone(),
            block_rows: self.block_rows,
            block_cols: self.block_cols,
            values,
        })
    }
}

pub(crate) fn check_pattern(
    what: &'static str,
    d: &DevicePattern,
    h: &BlockPattern,
) -> Result<(), LinalgError> {
    if d.n_block_rows != h.n_block_rows() || d.n_block_cols != h.n_block_cols() || d.nnz != h.nnz()
    {
        return Err(LinalgError::PatternMismatch { what });
    }
    Ok(())
}

pub(crate) fn check_shape<T>(
    what: &'static str,
    a: &DeviceBsr<T>,
    block_rows: usize,
    block_cols: usize,
) -> Result<(), LinalgError> {
    if a.block_rows != block_rows {
        return Err(LinalgError::DimensionMismatch {
            what,
            expected: block_rows,
            found: a.block_rows,
        });
    }
    if a.block_cols != block_cols {
        return Err(LinalgError::DimensionMismatch {
            what,
            expected: block_cols,
            found: a.block_cols,
        });
    }
    Ok(())
}
