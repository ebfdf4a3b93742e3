//! [`DistBsr`]'s product in parts, for the benchmarks that time them: the halo exchange alone
//! ([`DistBsr::exchange_ghosts`]) and the product without the overlap of the exchange and the
//! diagonal part's product ([`DistBsr::apply_without_overlap`]; the bits of
//! [`DistBsr::apply`]). Where the matrix lives (host or GPU), as [`DistBsr::apply`].

use crate::backend::{cuda, host};
use crate::device::check_same_device;
use crate::dist::{DeviceHalo, DistBsr};
use crate::{LinalgError, Vector};

impl DistBsr {
    /// Collective over the halo's neighbours. The halo exchange of [`DistBsr::apply`] alone:
    /// the ghosts of `x` (owned-only, [`crate::dist::DistPattern::owned_layout`]) fetched from
    /// their owners into the matrix's ghost buffer (the device halo's on a GPU, a scratch on the
    /// host), no product.
    pub fn exchange_ghosts(&self, x: &Vector) -> Result<(), LinalgError> {
        self.check_operands("DistBsr::exchange_ghosts", x, None)?;
        if self.device().cuda_context().is_some() {
            let mut halo = self.halo_buffers("DistBsr::exchange_ghosts")?;
            halo.fill_ghosts(x.device_buffer()?, || Ok(()))?;
            return Ok(());
        }
        self.operand_with_ghosts(x).map(drop)
    }

    /// `y = A x` for owned-only vectors, as [`DistBsr::apply`] (the same checks, the same
    /// bits) without its overlap: the halo exchange, then the diagonal part's product, then the
    /// ghost part's. The reference a benchmark measures the overlap against.
    pub fn apply_without_overlap(&self, x: &Vector, y: &mut Vector) -> Result<(), LinalgError> {
        const WHAT: &str = "DistBsr::apply_without_overlap";
        self.check_operands(WHAT, x, Some(y))?;
        let p = self.pattern();
        let has_ghost_blocks = p.offd().nnz() > 0;
        let device = self.device();
        if let Some(ctx) = device.cuda_context() {
            let (diag, offd) = (self.diag().device_bsr()?, self.offd().device_bsr()?);
            let mut halo = self.halo_buffers(WHAT)?;
            let xb = x.device_buffer()?;
            let yb = y.device_buffer_mut()?;
            let ghosts = halo.fill_ghosts(xb, || Ok(()))?;
            cuda::spmv(ctx, diag, 1.0, xb, 0.0, yb)?;
            if has_ghost_blocks {
                cuda::spmv(ctx, offd, 1.0, ghosts, 1.0, yb)?;
            }
            return Ok(());
        }
        let x_full = self.operand_with_ghosts(x)?;
        let (br, bc) = (p.block_rows(), p.block_cols());
        let owned = p.owned_layout().owned();
        let y_owned = &mut y.host_mut()?[..p.row_layout().owned()];
        let (x_owned, x_ghosts) = x_full.split_at(owned);
        host::spmv::spmv(
            p.diag(),
            br,
            bc,
            self.diag().host()?,
            1.0,
            x_owned,
            None,
            y_owned,
        );
        if has_ghost_blocks {
            let offd = self.offd().host()?;
            host::spmv::spmv(p.offd(), br, bc, offd, 1.0, x_ghosts, Some(1.0), y_owned);
        }
        Ok(())
    }

    /// [`DistBsr::apply`]'s checks: `x` owned-only, `y` (when given) of the row layout, both
    /// where the matrix lives.
    fn check_operands(
        &self,
        what: &'static str,
        x: &Vector,
        y: Option<&Vector>,
    ) -> Result<(), LinalgError> {
        let p = self.pattern();
        if !x.layout().matches(p.owned_layout()) {
            return Err(LinalgError::LayoutMismatch { what });
        }
        check_same_device(what, &self.device(), &x.device())?;
        if let Some(y) = y {
            if !y.layout().matches(p.row_layout()) {
                return Err(LinalgError::LayoutMismatch { what });
            }
            check_same_device(what, &self.device(), &y.device())?;
        }
        Ok(())
    }

    /// The halo's device buffers (a GPU matrix has them).
    fn halo_buffers(
        &self,
        what: &'static str,
    ) -> Result<std::sync::MutexGuard<'_, DeviceHalo>, LinalgError> {
        self.device_halo().ok_or(LinalgError::Unsupported {
            what,
            device: self.device().name(),
        })
    }

    /// A host `x` (owned-only) with its ghost tail filled from the owners (the halo plan's
    /// exchange), in a new array of [`crate::dist::DistPattern::layout`]'s length.
    fn operand_with_ghosts(&self, x: &Vector) -> Result<Vec<f64>, LinalgError> {
        let p = self.pattern();
        let mut x_full = vec![0.0; p.layout().len()];
        x_full[..p.owned_layout().owned()].copy_from_slice(x.host()?);
        p.halo().update(&mut x_full)?;
        Ok(x_full)
    }
}
