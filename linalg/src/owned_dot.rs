//! [`Vector::owned_dot_exact`]: one rank's share of a distributed dot product, unreduced.

use crate::backend::{cuda, host};
use crate::device::check_same_device;
use crate::exact::ExactSum;
use crate::{LinalgError, Vector};

impl Vector {
    /// This rank's exact accumulator of `self . y` over the owned entries, not reduced over the
    /// ranks: what [`crate::ops::dot`] computes on this rank before its one reduction (on a GPU
    /// the device's part alone: the exact-sum kernels and one accumulator downloaded). Every
    /// rank's accumulators added ([`ExactSum::allreduce`]) and rounded once are `ops::dot`'s
    /// bits. Both vectors of one layout and device.
    pub fn owned_dot_exact(&self, y: &Vector) -> Result<ExactSum, LinalgError> {
        const WHAT: &str = "Vector::owned_dot_exact";
        if self.len() != y.len() {
            return Err(LinalgError::LengthMismatch {
                what: WHAT,
                expected: self.len(),
                found: y.len(),
            });
        }
        if !self.layout().matches(y.layout()) {
            return Err(LinalgError::LayoutMismatch { what: WHAT });
        }
        let device = self.device();
        check_same_device(WHAT, &device, &y.device())?;
        let owned = self.layout().owned();
        match device.cuda_context() {
            Some(ctx) => cuda::vector::dot_exact_prefix(
                ctx,
                self.device_buffer()?,
                y.device_buffer()?,
                owned,
            ),
            None => Ok(host::blas1::dot_exact(
                &self.host()?[..owned],
                &y.host()?[..owned],
            )),
        }
    }
}
