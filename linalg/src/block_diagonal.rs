//! [`BlockDiagonal`]: `n` square blocks on the diagonal of a block matrix (point-block Jacobi's
//! `D` and `D^{-1}`).

use std::sync::Arc;

use crate::backend::{cuda, host};
use crate::device::{check_same_device, unsupported, Storage};
use crate::precision::narrow;
use crate::vector::check_len;
use crate::{Bsr, Device, LinalgError, Precision, Vector};

/// `n_blocks` blocks of `bs x bs`, row-major, block after block, on a [`Device`].
#[derive(Debug, Clone, PartialEq)]
pub struct BlockDiagonal {
    n_blocks: usize,
    bs: usize,
    storage: Storage,
}

impl BlockDiagonal {
    /// A host block diagonal wrapping `values` (`n_blocks * bs * bs`, row-major blocks).
    pub fn from_vec(n_blocks: usize, bs: usize, values: Vec<f64>) -> Result<Self, LinalgError> {
        crate::bsr::check_block_size(bs, bs)?;
        if values.len() != n_blocks * bs * bs {
            return Err(LinalgError::LengthMismatch {
                what: "BlockDiagonal values",
                expected: n_blocks * bs * bs,
                found: values.len(),
            });
        }
        Ok(Self {
            n_blocks,
            bs,
            storage: Storage::Host(values),
        })
    }

    /// The `bs x bs` node blocks on the diagonal of the square matrix `a`, whose stored blocks are
    /// either `bs x bs` (the diagonal blocks; each must be in the pattern) or `1 x 1` (scalar
    /// storage of a matrix with `bs` unknowns per node; entries absent from the pattern are zero).
    /// The result lives on `a`'s device.
    pub fn from_diagonal(a: &Bsr, bs: usize) -> Result<Self, LinalgError> {
        let stored = a.block_rows();
        if a.block_cols() != stored {
            return Err(LinalgError::NonSquareBlocks {
                block_rows: stored,
                block_cols: a.block_cols(),
            });
        }
        if bs == 0 || (stored != bs && stored != 1) {
            return Err(LinalgError::DimensionMismatch {
                what: "BlockDiagonal::from_diagonal: stored block size (bs or 1)",
                expected: bs,
                found: stored,
            });
        }
        let pattern = a.pattern();
        if stored == bs {
            let positions = pattern.diagonal_positions()?;
            match a.storage() {
                Storage::Host(v) => {
                    let mut d = vec![0.0; positions.len() * bs * bs];
                    host::block_diagonal::gather_blocks(&positions, bs * bs, v, &mut d);
                    Self::from_vec(positions.len(), bs, d)
                }
                Storage::Host32(v) => {
                    let mut d = vec![0.0; positions.len() * bs * bs];
                    host::block_diagonal::gather_blocks(&positions, bs * bs, v, &mut d);
                    Self::from_vec(positions.len(), bs, d)
                }
                _ => Err(unsupported(
                    "BlockDiagonal::from_diagonal (use inverse_of_diagonal)",
                    &a.device(),
                )),
            }
        } else {
            if !a.n_rows().is_multiple_of(bs) || pattern.n_block_cols() != pattern.n_block_rows() {
                return Err(LinalgError::DimensionMismatch {
                    what: "BlockDiagonal::from_diagonal: scalar rows (a multiple of the node block size)",
                    expected: a.n_rows().next_multiple_of(bs),
                    found: a.n_rows(),
                });
            }
            let n_blocks = a.n_rows() / bs;
            match a.storage() {
                Storage::Host(v) => {
                    let mut d = vec![0.0; n_blocks * bs * bs];
                    host::block_diagonal::gather_node_blocks(pattern, bs, v, &mut d);
                    Self::from_vec(n_blocks, bs, d)
                }
                _ => Err(unsupported("BlockDiagonal::from_diagonal", &a.device())),
            }
        }
    }

    /// The inverses of the `bs x bs` node blocks on the diagonal of `a` (point-block Jacobi's
    /// `D^{-1}`), on `a`'s device: [`BlockDiagonal::from_diagonal`] then
    /// [`BlockDiagonal::invert`] on the host; on a GPU one fused gather-and-invert kernel reading
    /// the diagonal slots it uploads once (then kept for [`BlockDiagonal::refresh_inverse`]).
    /// Scalar (1x1) storage of node blocks is host-only.
    pub fn inverse_of_diagonal(a: &Bsr, bs: usize) -> Result<Self, LinalgError> {
        match a.cuda() {
            None => {
                let mut d = Self::from_diagonal(a, bs)?;
                d.invert()?;
                Ok(d)
            }
            Some((ctx, m)) => {
                if a.block_rows() != bs || a.block_cols() != bs {
                    return Err(unsupported(
                        "point-block inverse of scalar (1x1) storage",
                        &a.device(),
                    ));
                }
                // the matrix's own device pattern: no upload, whether or not the host
                // pattern has a mirror (a device-assembled operator's may not)
                let mut d = cuda::DeviceBlockDiagonal::on_device_pattern(
                    ctx,
                    a.pattern(),
                    m.pattern(),
                    bs,
                )?;
                d.invert(ctx, m)?;
                Ok(Self {
                    n_blocks: d.n_blocks(),
                    bs,
                    storage: Storage::CudaDiag {
                        ctx: ctx.clone(),
                        d,
                        source: a.pattern().clone(),
                    },
                })
            }
        }
    }

    /// [`BlockDiagonal::inverse_of_diagonal`] stored in `precision`: with
    /// [`Precision::Single`] the blocks are inverted in fp64 and stored in fp32 (`a` may be
    /// stored in either precision).
    pub fn inverse_of_diagonal_in(
        a: &Bsr,
        bs: usize,
        precision: Precision,
    ) -> Result<Self, LinalgError> {
        let device_blocks = |ctx: &Arc<cuda::CudaContext>| {
            if a.block_rows() != bs || a.block_cols() != bs {
                return Err(unsupported(
                    "point-block inverse of scalar (1x1) storage",
                    &a.device(),
                ));
            }
            Ok((ctx.clone(), a.pattern().clone()))
        };
        let storage = match (a.storage(), precision) {
            (Storage::Host(_) | Storage::Host32(_), _) => {
                let mut d = Self::from_diagonal(a, bs)?;
                d.invert()?;
                return d.to_precision(precision);
            }
            (Storage::CudaBsr { .. }, Precision::Double) => {
                return Self::inverse_of_diagonal(a, bs)
            }
            (Storage::CudaBsr { ctx, m }, Precision::Single) => {
                let (ctx, source) = device_blocks(ctx)?;
                let mut d = cuda::DeviceBlockDiagonal::<f32>::on_device_pattern(
                    &ctx,
                    &source,
                    m.pattern(),
                    bs,
                )?;
                d.invert(&ctx, m)?;
                Storage::CudaDiag32 { ctx, d, source }
            }
            (Storage::CudaBsr32 { ctx, m }, Precision::Single) => {
                let (ctx, source) = device_blocks(ctx)?;
                let mut d = cuda::DeviceBlockDiagonal::<f32>::on_device_pattern(
                    &ctx,
                    &source,
                    m.pattern(),
                    bs,
                )?;
                d.invert(&ctx, m)?;
                Storage::CudaDiag32 { ctx, d, source }
            }
            (Storage::CudaBsr32 { ctx, m }, Precision::Double) => {
                let (ctx, source) = device_blocks(ctx)?;
                let mut d = cuda::DeviceBlockDiagonal::<f64>::on_device_pattern(
                    &ctx,
                    &source,
                    m.pattern(),
                    bs,
                )?;
                d.invert(&ctx, m)?;
                Storage::CudaDiag { ctx, d, source }
            }
            (s, _) => {
                return Err(unsupported(
                    "BlockDiagonal::inverse_of_diagonal",
                    &s.device(),
                ))
            }
        };
        Ok(Self {
            n_blocks: a.n_rows() / bs,
            bs,
            storage,
        })
    }

    /// The stored precision of the blocks.
    pub fn precision(&self) -> Precision {
        self.storage.precision()
    }

    /// The same blocks stored in `precision` on the same device (a copy if stored so already).
    pub fn to_precision(&self, precision: Precision) -> Result<Self, LinalgError> {
        let storage = match (&self.storage, precision) {
            (s, p) if s.precision() == p => s.try_clone()?,
            (Storage::Host(v), Precision::Single) => Storage::Host32(narrow(v)),
            (Storage::Host32(v), Precision::Double) => Storage::Host(crate::precision::widen(v)),
            (Storage::CudaDiag { ctx, d, source }, Precision::Single) => {
                let inv = cuda::ops::narrow_to_f32(ctx, d.inverse())?;
                Storage::CudaDiag32 {
                    ctx: ctx.clone(),
                    d: d.duplicate(ctx)?.with_inverse(inv)?,
                    source: source.clone(),
                }
            }
            (Storage::CudaDiag32 { ctx, d, source }, Precision::Double) => {
                let inv = cuda::ops::widen_to_f64(ctx, d.inverse())?;
                Storage::CudaDiag {
                    ctx: ctx.clone(),
                    d: d.duplicate(ctx)?.with_inverse(inv)?,
                    source: source.clone(),
                }
            }
            (s, _) => return Err(unsupported("BlockDiagonal::to_precision", &s.device())),
        };
        Ok(Self {
            n_blocks: self.n_blocks,
            bs: self.bs,
            storage,
        })
    }

    /// Recomputes [`BlockDiagonal::inverse_of_diagonal`] from new values of `a`, keeping the
    /// stored precision; on a GPU with the pattern of the last call nothing is uploaded (one
    /// `u64`, the singular-block flag, comes back). On error `self` is unspecified.
    pub fn refresh_inverse(&mut self, a: &Bsr) -> Result<(), LinalgError> {
        let bs = self.bs;
        let precision = self.precision();
        let same = a.block_rows() == bs && a.block_cols() == bs;
        let reuse = |source: &Arc<crate::BlockPattern>| same && Arc::ptr_eq(source, a.pattern());
        match (&mut self.storage, a.storage()) {
            (Storage::CudaDiag { d, source, .. }, Storage::CudaBsr { ctx, m }) if reuse(source) => {
                return d.invert(ctx, m)
            }
            (Storage::CudaDiag { d, source, .. }, Storage::CudaBsr32 { ctx, m })
                if reuse(source) =>
            {
                return d.invert(ctx, m)
            }
            (Storage::CudaDiag32 { d, source, .. }, Storage::CudaBsr { ctx, m })
                if reuse(source) =>
            {
                return d.invert(ctx, m)
            }
            (Storage::CudaDiag32 { d, source, .. }, Storage::CudaBsr32 { ctx, m })
                if reuse(source) =>
            {
                return d.invert(ctx, m)
            }
            _ => {}
        }
        *self = Self::inverse_of_diagonal_in(a, bs, precision)?;
        Ok(())
    }

    /// Number of blocks.
    pub fn n_blocks(&self) -> usize {
        self.n_blocks
    }

    /// Rows (and columns) per block.
    pub fn block_size(&self) -> usize {
        self.bs
    }

    /// Scalar rows: `n_blocks * block_size`.
    pub fn n_rows(&self) -> usize {
        self.n_blocks * self.bs
    }

    /// Where the values live.
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// The blocks in host memory; [`LinalgError::NotOnHost`] on a device.
    pub fn host(&self) -> Result<&[f64], LinalgError> {
        self.storage.host()
    }

    /// The inverses on the device, if this is a GPU block diagonal (crate kernels).
    pub(crate) fn cuda_values(&self) -> Option<&cuda::DeviceBuffer<f64>> {
        match &self.storage {
            Storage::CudaDiag { d, .. } => Some(d.inverse()),
            _ => None,
        }
    }

    /// A host copy of the blocks.
    pub fn to_host_vec(&self) -> Result<Vec<f64>, LinalgError> {
        self.storage.to_host_vec()
    }

    /// Inverts every block in place (Gauss-Jordan with partial pivoting). A singular block (a
    /// pivot below [`crate::dense::PIVOT_RTOL`] times the block's largest entry) is an error
    /// naming the first such block; the values are then unspecified.
    pub fn invert(&mut self) -> Result<(), LinalgError> {
        let bs = self.bs;
        let failure = match &mut self.storage {
            Storage::Host(v) => host::block_diagonal::invert_blocks(bs, v),
            _ => {
                return Err(unsupported(
                    "BlockDiagonal::invert (use inverse_of_diagonal)",
                    &self.storage.device(),
                ))
            }
        };
        match failure {
            Some((block, z)) => Err(LinalgError::SingularBlock {
                block,
                column: z.column,
                pivot: z.pivot,
            }),
            None => Ok(()),
        }
    }

    /// `x = omega D r + beta x`, block by block (with `beta == 0` the old `x` is not read).
    pub fn apply(
        &self,
        omega: f64,
        r: &Vector,
        beta: f64,
        x: &mut Vector,
    ) -> Result<(), LinalgError> {
        check_len("BlockDiagonal::apply: r", r, self.n_rows())?;
        check_len("BlockDiagonal::apply: x", x, self.n_rows())?;
        let device = self.device();
        check_same_device("BlockDiagonal::apply: r", &device, &r.device())?;
        check_same_device("BlockDiagonal::apply: x", &device, &x.device())?;
        match (&self.storage, r.storage(), x.storage_mut()) {
            (Storage::Host(d), Storage::Host(r), Storage::Host(x)) => {
                host::block_diagonal::apply(self.bs, d, omega, r, beta, x)
            }
            (Storage::Host32(d), Storage::Host(r), Storage::Host(x)) => {
                host::block_diagonal::apply(self.bs, d, omega, r, beta, x)
            }
            (
                Storage::CudaDiag { ctx, d, .. },
                Storage::Cuda { buf: r, .. },
                Storage::Cuda { buf: x, .. },
            ) => d.apply(ctx, omega, r, beta, x)?,
            (
                Storage::CudaDiag32 { ctx, d, .. },
                Storage::Cuda { buf: r, .. },
                Storage::Cuda { buf: x, .. },
            ) => d.apply(ctx, omega, r, beta, x)?,
            _ => return Err(unsupported("BlockDiagonal::apply", &device)),
        }
        Ok(())
    }
}
