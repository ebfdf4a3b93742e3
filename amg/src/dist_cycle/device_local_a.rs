//! A level's local `A` on a GPU ([`DeviceLocalA`]): the owned rows of the device operator with
//! its `diag` and `offd` blocks joined in one matrix whose columns are the local vertices'
//! serial positions ([`crate::dist_galerkin::ALocal`]), the left operand of both device
//! products of a level (`A P0` of the prolongator smoothing, `A P` of the Galerkin product).
//!
//! One per level: the device Galerkin plan owns it (every hot update gathers into it) and lends
//! it to the device smoothing, which runs on the same operator values before the Galerkin
//! product (a cold set-up, a kept renewal): the size of the level operator once, not twice.

use std::sync::Arc;

use linalg::dist::DistBsr;
use linalg::gpu::{gather_blocks_two, CudaContext, DeviceBuffer, TwoSources};
use linalg::{BlockPattern, Bsr, Device};

use crate::dist_galerkin::ALocal;
use crate::AmgError;

/// The local `A`'s values on a GPU with the gather that fills them.
///
/// Invariants: `gather` indexes `[diag; offd]` blocks of an operator on the patterns
/// `a_patterns` (`n_diag` in `diag`), one entry per block of `values`, whose pattern is the
/// [`ALocal`]'s; `values` holds the blocks of the operator last passed to [`Self::gather`].
#[derive(Debug)]
pub(super) struct DeviceLocalA {
    ctx: Arc<CudaContext>,
    a_patterns: (Arc<BlockPattern>, Arc<BlockPattern>),
    gather: Arc<DeviceBuffer<u32>>,
    n_diag: usize,
    values: Bsr,
}

impl DeviceLocalA {
    /// The value buffer (`bs x bs` blocks) of `local` on `device` (a GPU) with its gather list
    /// there; the values are those of no operator until [`Self::gather`]. Local.
    pub(super) fn new(local: &ALocal, bs: usize, device: &Device) -> Result<Self, AmgError> {
        let ctx = super::device::gpu_context(device, "must be a GPU for the device local A")?;
        let (diag, offd) = local.a_patterns();
        Ok(Self {
            a_patterns: (diag.clone(), offd.clone()),
            gather: local.device_gather(&ctx)?,
            n_diag: diag.nnz(),
            values: Bsr::zeros_on(device, local.pattern.clone(), bs, bs)?,
            ctx,
        })
    }

    /// Whether this is the local `A` of `local` (its pattern and operator patterns, shared).
    pub(super) fn is_for(&self, local: &ALocal) -> bool {
        let (d, o) = local.a_patterns();
        Arc::ptr_eq(self.values.pattern(), &local.pattern)
            && Arc::ptr_eq(&self.a_patterns.0, d)
            && Arc::ptr_eq(&self.a_patterns.1, o)
    }

    fn fits(&self, a: &DistBsr) -> bool {
        let (d, o) = &self.a_patterns;
        BlockPattern::same(a.pattern().diag(), d) && BlockPattern::same(a.pattern().offd(), o)
    }

    /// Gathers the local `A` of the device operator `a` (on the patterns this was made for).
    pub(super) fn gather(&mut self, a: &DistBsr) -> Result<(), AmgError> {
        if !self.fits(a) {
            return Err(AmgError::InvalidParameter {
                name: "operator",
                value: "another pattern".into(),
                reason: "must be on the pattern the local A was made for",
            });
        }
        gather_blocks_two(
            &self.ctx,
            self.values.block_len(),
            &self.gather,
            TwoSources {
                n0: self.n_diag,
                a: a.diag().device_bsr()?.values(),
                b: a.offd().device_bsr()?.values(),
            },
            self.values.device_bsr_mut()?.values_mut(),
        )?;
        Ok(())
    }

    /// [`Self::gather`] of `a`, by value.
    pub(super) fn gathered(mut self, a: &DistBsr) -> Result<Self, AmgError> {
        self.gather(a)?;
        Ok(self)
    }

    /// The values of the last gathered operator.
    pub(super) fn values(&self) -> &Bsr {
        &self.values
    }
}
