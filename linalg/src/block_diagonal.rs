//! [`BlockDiagonal`]: `n` square blocks on the diagonal of a block matrix (point-block Jacobi's
//! `D` and `D^{-1}`).

use std::sync::Arc;

use crate::backend::{cuda, host};
use crate::device::{
    check_same_device, either_precision, unsupported, ByPrecision, DeviceValues, HostByPrecision,
    Placed,
};
use crate::vector::check_len;
use crate::{BlockPattern, Bsr, Device, LinalgError, Precision, Vector};
use ByPrecision::{Double, Single};

/// Inverted diagonal blocks on a GPU, in fp64 or fp32, with the pattern of the operator whose
/// diagonal slots they read ([`BlockDiagonal::refresh_inverse`] reuses the slots while the
/// operator keeps that pattern).
#[derive(Debug)]
pub(crate) struct DeviceInverses {
    blocks: ByPrecision<cuda::DeviceBlockDiagonal, cuda::DeviceBlockDiagonal<f32>>,
    source: Arc<BlockPattern>,
}

impl DeviceValues for DeviceInverses {
    fn len(&self) -> usize {
        self.blocks.len()
    }

    fn duplicate(&self, ctx: &cuda::CudaContext) -> Result<Self, LinalgError> {
        Ok(Self {
            blocks: self.blocks.duplicate(ctx)?,
            source: self.source.clone(),
        })
    }

    fn download(&self, ctx: &cuda::CudaContext) -> Result<Vec<f64>, LinalgError> {
        self.blocks.download(ctx)
    }
}

/// A block diagonal's values: in host memory or on a GPU, in fp64 or fp32.
type DiagonalStorage = Placed<HostByPrecision, DeviceInverses>;

/// `n_blocks` blocks of `bs x bs`, row-major, block after block, on a [`Device`].
#[derive(Debug, Clone, PartialEq)]
pub struct BlockDiagonal {
    n_blocks: usize,
    bs: usize,
    storage: DiagonalStorage,
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
            storage: Placed::Host(Double(values)),
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
                Placed::Host(v) => {
                    let mut d = vec![0.0; positions.len() * bs * bs];
                    either_precision!(v, v => {
                        host::block_diagonal::gather_blocks(&positions, bs * bs, v, &mut d)
                    });
                    Self::from_vec(positions.len(), bs, d)
                }
                Placed::Cuda(..) => Err(unsupported(
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
                Placed::Host(Double(v)) => {
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
        Self::inverse_of_diagonal_in(a, bs, Precision::Double)
    }

    /// [`BlockDiagonal::inverse_of_diagonal`] stored in `precision`: with
    /// [`Precision::Single`] the blocks are inverted in fp64 and stored in fp32 (`a` may be
    /// stored in either precision).
    pub fn inverse_of_diagonal_in(
        a: &Bsr,
        bs: usize,
        precision: Precision,
    ) -> Result<Self, LinalgError> {
        let Placed::Cuda(ctx, m) = a.storage() else {
            let mut d = Self::from_diagonal(a, bs)?;
            d.invert()?;
            return if precision == Precision::Double {
                Ok(d)
            } else {
                d.to_precision(precision)
            };
        };
        if a.block_rows() != bs || a.block_cols() != bs {
            return Err(unsupported(
                "point-block inverse of scalar (1x1) storage",
                &a.device(),
            ));
        }
        let blocks = match precision {
            Precision::Double => Double(invert_on_device(ctx, a.pattern(), m, bs)?),
            Precision::Single => Single(invert_on_device(ctx, a.pattern(), m, bs)?),
        };
        Ok(Self {
            n_blocks: either_precision!(&blocks, d => d.n_blocks()),
            bs,
            storage: Placed::Cuda(
                ctx.clone(),
                DeviceInverses {
                    blocks,
                    source: a.pattern().clone(),
                },
            ),
        })
    }

    /// The stored precision of the blocks.
    pub fn precision(&self) -> Precision {
        match &self.storage {
            Placed::Host(v) => v.precision(),
            Placed::Cuda(_, data) => data.blocks.precision(),
        }
    }

    /// The same blocks stored in `precision` on the same device (a copy if stored so already).
    pub fn to_precision(&self, precision: Precision) -> Result<Self, LinalgError> {
        let storage = match &self.storage {
            s if self.precision() == precision => s.try_clone()?,
            Placed::Host(v) => Placed::Host(v.to_precision(precision)),
            Placed::Cuda(ctx, data) => Placed::Cuda(
                ctx.clone(),
                DeviceInverses {
                    blocks: match &data.blocks {
                        Double(d) => {
                            let inv = cuda::ops::narrow_to_f32(ctx, d.inverse())?;
                            Single(d.duplicate(ctx)?.with_inverse(inv)?)
                        }
                        Single(d) => {
                            let inv = cuda::ops::widen_to_f64(ctx, d.inverse())?;
                            Double(d.duplicate(ctx)?.with_inverse(inv)?)
                        }
                    },
                    source: data.source.clone(),
                },
            ),
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
        if let (Placed::Cuda(_, inverses), Placed::Cuda(ctx, m)) = (&mut self.storage, a.storage())
        {
            if same && Arc::ptr_eq(&inverses.source, a.pattern()) {
                return either_precision!(&mut inverses.blocks, d => {
                    either_precision!(m, m => d.invert(ctx, m))
                });
            }
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
        let Placed::Cuda(_, inverses) = &self.storage else {
            return None;
        };
        match &inverses.blocks {
            Double(d) => Some(d.inverse()),
            Single(_) => None,
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
            Placed::Host(Double(v)) => host::block_diagonal::invert_blocks(bs, v),
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
            (Placed::Host(d), Placed::Host(r), Placed::Host(x)) => either_precision!(d, d => {
                host::block_diagonal::apply(self.bs, d, omega, r, beta, x)
            }),
            (Placed::Cuda(ctx, data), Placed::Cuda(_, r), Placed::Cuda(_, x)) => {
                either_precision!(&data.blocks, d => d.apply(ctx, omega, r, beta, x)?)
            }
            _ => return Err(unsupported("BlockDiagonal::apply", &device)),
        }
        Ok(())
    }
}

/// The inverses, stored as `T`, of the `bs x bs` diagonal blocks of the device matrix `m`
/// (whose host pattern is `pattern`): one fused gather-and-invert kernel on `m`'s own device
/// pattern, so nothing is uploaded whether or not `pattern` has a mirror (a device-assembled
/// operator's may not).
fn invert_on_device<T: cuda::DeviceValue>(
    ctx: &cuda::CudaContext,
    pattern: &BlockPattern,
    m: &ByPrecision<cuda::DeviceBsr, cuda::DeviceBsr<f32>>,
    bs: usize,
) -> Result<cuda::DeviceBlockDiagonal<T>, LinalgError> {
    let device_pattern = either_precision!(m, m => m.pattern());
    let mut d =
        cuda::DeviceBlockDiagonal::<T>::on_device_pattern(ctx, pattern, device_pattern, bs)?;
    either_precision!(m, m => d.invert(ctx, m))?;
    Ok(d)
}
