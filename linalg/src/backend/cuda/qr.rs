//! The grouped Householder QR on the device (`linalg/cuda/qr.cu`): the plan's groups uploaded
//! once ([`DeviceGroupedQr::upload`]), then one factorisation per input, bit-identical to the
//! host's [`crate::grouped_qr::GroupedQrPlan`] (the kernel mirrors `thin_qr` without FMA; one
//! lane per column of a group, each running its column's operations in the host's order; the
//! groups' rows in shared memory where the largest group's fit, else in global scratch).
//! [`DeviceGroupedQr::from_assignment`] builds the groups and `Q`'s pattern on the device from
//! a row -> group map instead (4 bytes a row go up; two totals and the largest group's size come
//! down).

use cudarc::driver::PushKernelArg;

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, QR};
use super::matrix::DevicePattern;
use super::symbolic::{exclusive_scan, transpose_pattern};
use super::{CudaContext, DeviceBuffer};
use crate::LinalgError;

/// Threads per block of `grouped_qr_lanes` (`LANE_BLOCK / K` groups of `K` lanes each) where
/// the groups are factored in global memory.
const LANE_BLOCK: u32 = 128;
/// The shared memory a block of `grouped_qr_lanes` may take (the limit without opting in):
/// its groups' rows and Householder vectors, where the largest group's fit.
const SHARED_BYTES: usize = 48 * 1024;
/// Threads per block of the one-thread-per-row kernels of the plan.
const ROW_BLOCK: u32 = 128;

/// A grouped QR's groups on the device (see [`crate::grouped_qr::GroupedQrPlan`]).
#[derive(Debug)]
pub struct DeviceGroupedQr {
    n_groups: usize,
    n_members: usize,
    /// Members of the largest group (what a group's rows need in shared memory).
    largest: usize,
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
        let largest = offsets.windows(2).map(|w| w[1].saturating_sub(w[0])).max();
        Ok(Self {
            n_groups: offsets.len().saturating_sub(1),
            n_members: members.len(),
            largest: largest.unwrap_or(0) as usize,
            bs,
            k,
            offsets: ctx.upload(offsets)?,
            members: ctx.upload(members)?,
            slots: ctx.upload(slots)?,
        })
    }

    /// The groups of the row -> group map `assignment` (`u32::MAX`: a row in no group), built
    /// on the device from the map (uploaded: 4 bytes a row; the two prefix sums' totals and the
    /// largest group's size come down): `Q`'s pattern (`assignment.len()` block rows, `n_groups` block columns, one
    /// block in each grouped row, in its group's column) and the groups (each group's rows
    /// ascending, their blocks' slots in that pattern), the host's
    /// [`crate::grouped_qr::GroupedQrPlan::from_assignment`] entry for entry (a prefix sum of
    /// the grouped rows, then the pattern's transpose: a counting sort by group, each group
    /// ordered by slot, hence by row). The caller checks the map (every group below
    /// `n_groups`, as the host pattern's validation does) and that every group has a row.
    pub fn from_assignment(
        ctx: &CudaContext,
        assignment: &[u32],
        n_groups: usize,
        bs: usize,
        k: usize,
    ) -> Result<(DevicePattern, Self), LinalgError> {
        let uploaded = ctx.upload(assignment)?;
        Self::from_device_assignment(ctx, &uploaded, n_groups, bs, k)
    }

    /// [`Self::from_assignment`] of a map already on the device (nothing goes up): for an
    /// aggregation that leaves its map there.
    pub fn from_device_assignment(
        ctx: &CudaContext,
        assignment: &DeviceBuffer<u32>,
        n_groups: usize,
        bs: usize,
        k: usize,
    ) -> Result<(DevicePattern, Self), LinalgError> {
        let rows = assignment.len();
        if rows >= u32::MAX as usize {
            return Err(LinalgError::DimensionTooLarge {
                what: "device grouped QR: rows",
                value: rows,
            });
        }
        let n = rows as u32;
        let config = grid_1d(rows as u64, ROW_BLOCK);
        let defines = [("BS", bs as i64), ("K", k as i64)];
        let mut count = ctx.zeros::<u32>(rows.max(1))?;
        let f = ctx.function(&QR, &defines, "grouped_rows_count")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n).arg(assignment).arg(&mut count);
        // SAFETY: `assignment` and `count` hold `rows` values (`count` at least one).
        unsafe { l.launch(config) }.map_err(driver_err("grouped_rows_count"))?;
        let (row_ptr, nnz) = exclusive_scan(ctx, &count, rows, "device grouped QR: members")?;
        drop(count);
        let mut col_idx = ctx.zeros::<u32>((nnz as usize).max(1))?;
        let f = ctx.function(&QR, &defines, "grouped_rows_fill")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n).arg(assignment).arg(&row_ptr).arg(&mut col_idx);
        // SAFETY: `row_ptr` holds `rows + 1` offsets of the grouped rows, `col_idx` a value
        // per grouped row (at least one).
        unsafe { l.launch(config) }.map_err(driver_err("grouped_rows_fill"))?;
        if nnz == 0 {
            // an empty buffer, as an uploaded empty pattern has
            col_idx = ctx.upload(&[])?;
        }
        let pattern = DevicePattern::from_parts(rows, n_groups, nnz as usize, row_ptr, col_idx);
        let (groups, slots) = transpose_pattern(ctx, &pattern)?;
        let largest = largest_group(ctx, &groups.row_ptr, n_groups, &defines)?;
        let plan = Self {
            n_groups,
            n_members: nnz as usize,
            largest,
            bs,
            k,
            offsets: groups.row_ptr,
            members: groups.col_idx,
            slots,
        };
        Ok((pattern, plan))
    }

    /// The offsets, members and slots downloaded (tests compare them with the host plan's).
    #[cfg(test)]
    pub(crate) fn download(&self, ctx: &CudaContext) -> Result<[Vec<u32>; 3], LinalgError> {
        Ok([
            ctx.download(&self.offsets)?,
            ctx.download(&self.members)?,
            ctx.download(&self.slots)?,
        ])
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
        // K lanes per group (one per column) where a block holds a group; else one thread
        let lanes = self.k <= LANE_BLOCK as usize;
        // the lanes' groups in shared memory where the largest fits (rows and Householder
        // vectors, `cap x k` values each), else in global scratch
        let cap = self.largest * self.bs;
        let group_bytes = 2 * cap * self.k * std::mem::size_of::<f64>();
        let shared = lanes && group_bytes > 0 && group_bytes <= SHARED_BYTES;
        let global_rows = match shared {
            true => 1,
            false => (self.n_members * slab).max(1),
        };
        let mut v = ctx.zeros::<f64>(global_rows)?;
        let name = if lanes {
            "grouped_qr_lanes"
        } else {
            "grouped_qr"
        };
        let f = ctx.function(&QR, &[("BS", self.bs as i64), ("K", self.k as i64)], name)?;
        let n = self.n_groups as u32;
        let config = if shared {
            let per_block = (LANE_BLOCK as usize / self.k).min(SHARED_BYTES / group_bytes);
            let mut c = grid_1d(self.n_groups as u64, per_block as u32);
            c.block_dim.0 = (per_block * self.k) as u32;
            c.shared_mem_bytes = (per_block * group_bytes) as u32;
            c
        } else if lanes {
            let per_block = (LANE_BLOCK as usize / self.k) as u64;
            grid_1d(
                (self.n_groups as u64).div_ceil(per_block) * LANE_BLOCK as u64,
                LANE_BLOCK,
            )
        } else {
            grid_1d(self.n_groups as u64, 64)
        };
        // the lanes factor each group in contiguous rows of their own (written before read)
        let mut w = match lanes {
            true => Some(ctx.uninit(global_rows)?),
            false => None,
        };
        let cap_arg = if shared { cap as u32 } else { 0 };
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n)
            .arg(&self.offsets)
            .arg(&self.members)
            .arg(&self.slots)
            .arg(b)
            .arg(&mut *q)
            .arg(&mut v);
        if let Some(w) = &mut w {
            l.arg(w);
        }
        l.arg(&mut *r);
        if lanes {
            l.arg(&cap_arg);
        }
        // SAFETY: arguments match `grouped_qr` (`grouped_qr_lanes`: `w` after `v`, `cap` last);
        // `q` holds every member's slab, `v` and `w` too unless the groups are in shared memory
        // (`cap` rows a group, the largest's, `per_block` groups a block in its shared bytes),
        // `r` every group's k x k factor, `b` every member's input rows (checked by the
        // caller's plan).
        unsafe { l.launch(config) }.map_err(driver_err("grouped_qr"))?;
        Ok(())
    }
}

/// Members of the largest of the `n_groups` groups whose offsets `offsets` are on the device
/// (one kernel, one value down).
fn largest_group(
    ctx: &CudaContext,
    offsets: &DeviceBuffer<u32>,
    n_groups: usize,
    defines: &[(&'static str, i64)],
) -> Result<usize, LinalgError> {
    if n_groups == 0 {
        return Ok(0);
    }
    let mut largest = ctx.zeros::<u32>(1)?;
    let f = ctx.function(&QR, defines, "largest_group")?;
    let n = n_groups as u32;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(offsets).arg(&mut largest);
    // SAFETY: `offsets` holds `n_groups + 1` offsets; `largest` one value.
    unsafe { l.launch(grid_1d(n_groups as u64, ROW_BLOCK)) }
        .map_err(driver_err("largest_group"))?;
    Ok(ctx.download(&largest)?[0] as usize)
}
