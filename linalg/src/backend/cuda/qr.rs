//! The grouped Householder QR on the device (`linalg/cuda/qr.cu`): the plan's groups uploaded
//! once ([`DeviceGroupedQr::upload`]), then one factorisation per input, bit-identical to the
//! host's [`crate::grouped_qr::GroupedQrPlan`] (the kernel mirrors `thin_qr` without FMA; one
//! lane per column of a group, each running its column's operations in the host's order).

use cudarc::driver::PushKernelArg;

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, QR};
use super::{CudaContext, DeviceBuffer};
use crate::LinalgError;

/// Threads per block of `grouped_qr_lanes` (`LANE_BLOCK / K` groups of `K` lanes each).
const LANE_BLOCK: u32 = 128;

/// A grouped QR's groups on the device (see [`crate::grouped_qr::GroupedQrPlan`]).
#[derive(Debug)]
pub struct DeviceGroupedQr {
    n_groups: usize,
    n_members: usize,
    bs: usize,
    k: usize,
    offsets: DeviceBuffer<u32>,
    members: DeviceBuffer<u32>,
    slots: DeviceBuffer<u32>,
}

impl DeviceGroupedQr {
    /// Uploads the groups: `offsets` (`n_groups + 1`, ascending from 0), the members' input
    /// block rows and their output block rows (`slots`).
    pub fn upload(
        ctx: &CudaContext,
        offsets: &[u32],
        members: &[u32],
        slots: &[u32],
        bs: usize,
        k: usize,
    ) -> Result<Self, LinalgError> {
        check_len("device grouped QR: slots", members.len(), slots.len())?;
        Ok(Self {
            n_groups: offsets.len().saturating_sub(1),
            n_members: members.len(),
            bs,
            k,
            offsets: ctx.upload(offsets)?,
            members: ctx.upload(members)?,
            slots: ctx.upload(slots)?,
        })
    }

    /// Factors the groups of the host input `b` (uploaded here): `Q` into `q` (one `bs x k`
    /// block per output block row), the `R` factors returned (downloaded), group after group.
    pub fn factor(
        &self,
        ctx: &CudaContext,
        b: &[f64],
        q: &mut DeviceBuffer<f64>,
    ) -> Result<Vec<f64>, LinalgError> {
        let b = ctx.upload(b)?;
        let mut r = ctx.zeros::<f64>((self.n_groups * self.k * self.k).max(1))?;
        self.factor_into(ctx, &b, q, &mut r)?;
        let mut r = ctx.download(&r)?;
        r.truncate(self.n_groups * self.k * self.k);
        Ok(r)
    }

    /// Factors the groups of the device input `b`: `Q` into `q`, the `R` factors into `r`
    /// (`k x k` per group, group after group; at least that long). Queued on the context's
    /// stream: no transfer, no wait.
    pub fn factor_into(
        &self,
        ctx: &CudaContext,
        b: &DeviceBuffer<f64>,
        q: &mut DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        let slab = self.bs * self.k;
        check_len("device grouped QR: Q", self.n_members * slab, q.len())?;
        let r_len = self.n_groups * self.k * self.k;
        if r.len() < r_len {
            return Err(LinalgError::LengthMismatch {
                what: "device grouped QR: R",
                expected: r_len,
                found: r.len(),
            });
        }
        if self.n_groups == 0 {
            return Ok(());
        }
        let mut v = ctx.zeros::<f64>((self.n_members * slab).max(1))?;
        // K lanes per group (one per column) where a block holds a group; else one thread
        let lanes = self.k <= LANE_BLOCK as usize;
        let name = if lanes {
            "grouped_qr_lanes"
        } else {
            "grouped_qr"
        };
        let f = ctx.function(&QR, &[("BS", self.bs as i64), ("K", self.k as i64)], name)?;
        let n = self.n_groups as u32;
        let config = if lanes {
            let per_block = (LANE_BLOCK as usize / self.k) as u64;
            grid_1d(
                (self.n_groups as u64).div_ceil(per_block) * LANE_BLOCK as u64,
                LANE_BLOCK,
            )
        } else {
            grid_1d(self.n_groups as u64, 64)
        };
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n)
            .arg(&self.offsets)
            .arg(&self.members)
            .arg(&self.slots)
            .arg(b)
            .arg(&mut *q)
            .arg(&mut v)
            .arg(&mut *r);
        // SAFETY: arguments match `grouped_qr`; `q` and `v` hold every member's slab, `r` every
        // group's k x k factor, `b` every member's input rows (checked by the caller's plan).
        unsafe { l.launch(config) }.map_err(driver_err("grouped_qr"))?;
        Ok(())
    }
}
