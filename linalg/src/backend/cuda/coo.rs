//! COO scatter-sum on the device through an uploaded [`CooPlan`] (`linalg/cuda/coo.cu`).

use cudarc::driver::PushKernelArg;
use rayon::prelude::*;

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, COO};
use super::matrix::{offsets_u32, DevicePattern};
use super::{CudaContext, DeviceBsr, DeviceBuffer};
use crate::{CooPlan, LinalgError, SlotOrder};
use std::sync::Arc;

/// A [`CooPlan`] regrouped by slot for owner-computes sums: slot `s` owns the (absolute)
/// contributions `contrib[slot_ptr[s]..slot_ptr[s + 1]]`, ascending, which is the order in
/// which the host adds them whatever its segmentation. Uploaded once per plan.
#[derive(Debug)]
pub struct DeviceCooPlan {
    n_block_rows: usize,
    n_block_cols: usize,
    nnz: usize,
    n_contributions: usize,
    slot_ptr: DeviceBuffer<u32>,
    contrib: DeviceBuffer<u32>,
}

impl DeviceCooPlan {
    /// Uploads the plan's contributions grouped by slot ([`CooPlan::with_slot_order`]: as the
    /// plan's construction left them where no host sum has run, else regrouped in parallel).
    pub fn upload(ctx: &CudaContext, plan: &CooPlan) -> Result<Self, LinalgError> {
        let nnz = plan.pattern().nnz();
        let n = plan.n_contributions();
        let (slot_ptr, contrib) = plan.with_slot_order(|order: &SlotOrder| {
            Ok::<_, LinalgError>((
                ctx.upload(&order.slot_ptr)?,
                ctx.upload(&order.contributions)?,
            ))
        })?;
        Ok(Self {
            n_block_rows: plan.pattern().n_block_rows(),
            n_block_cols: plan.pattern().n_block_cols(),
            nnz,
            n_contributions: n,
            slot_ptr,
            contrib,
        })
    }

    /// The device twin of [`CooPlan::of_cell_blocks`]: the plan of the element blocks of `cells`
    /// (`nodes_per_cell` nodes a cell) made on the GPU, with the tangent's pattern there, from
    /// the incidence plan `incidence` and its upload `incidence_up` ([`Self::upload`]): no host
    /// plan of the blocks is made or moved (the cells and the incidence plan's row offsets go
    /// up). Entry for entry the host plan's pattern, slots and contributions (tested). Errors as
    /// the host's, and where `incidence_up` is not `incidence`'s upload.
    pub fn of_cell_blocks(
        ctx: &CudaContext,
        incidence: &CooPlan,
        incidence_up: &Self,
        cells: &[usize],
        nodes_per_cell: usize,
    ) -> Result<(Arc<DevicePattern>, Self), LinalgError> {
        let npc = nodes_per_cell.max(1);
        let n = crate::coo::check_cell_blocks(incidence, cells, npc)?;
        let rows = incidence.pattern().n_block_rows();
        if rows >= u32::MAX as usize {
            return Err(LinalgError::DimensionTooLarge {
                what: "DeviceCooPlan::of_cell_blocks: nodes",
                value: rows,
            });
        }
        if (
            incidence_up.n_block_rows,
            incidence_up.nnz,
            incidence_up.n_contributions,
        ) != (rows, incidence.pattern().nnz(), incidence.n_contributions())
        {
            return Err(LinalgError::PatternMismatch {
                what: "DeviceCooPlan::of_cell_blocks: the uploaded incidence plan",
            });
        }
        let inc_rows = ctx.upload(&offsets_u32(
            "DeviceCooPlan::of_cell_blocks: incidences",
            incidence.pattern().row_ptr(),
        )?)?;
        // every node id is below the rows (checked): it fits u32 where the rows do
        let cells_u32: Vec<u32> = cells.par_iter().map(|&c| c as u32).collect();
        let cells_up = ctx.upload(&cells_u32)?;
        let (pattern, slot_ptr, contrib) = super::symbolic::cell_block_plan(
            ctx,
            rows,
            (&inc_rows, &incidence_up.slot_ptr, &incidence_up.contrib),
            &cells_up,
            npc,
            n,
        )?;
        let plan = Self {
            n_block_rows: rows,
            n_block_cols: rows,
            nnz: pattern.nnz(),
            n_contributions: n,
            slot_ptr,
            contrib,
        };
        Ok((Arc::new(pattern), plan))
    }

    /// The slot offsets and the contributions, downloaded (tests compare them with the host's).
    #[cfg(test)]
    pub(crate) fn download_slot_order(&self, ctx: &CudaContext) -> (Vec<u32>, Vec<u32>) {
        let slot_ptr = ctx.download(&self.slot_ptr).expect("download");
        let mut contrib = ctx.download(&self.contrib).expect("download");
        contrib.truncate(self.n_contributions);
        (slot_ptr, contrib)
    }

    /// Device bytes of the plan.
    pub fn bytes(&self) -> usize {
        self.slot_ptr.bytes() + self.contrib.bytes()
    }

    /// Overwrites `out`'s values with the sums of `values` (contribution-major, `block_len`
    /// values per contribution): bit-identical to [`CooPlan::assemble`]. `out` must carry the
    /// plan's pattern.
    pub fn assemble(
        &self,
        ctx: &CudaContext,
        values: &DeviceBuffer<f64>,
        out: &mut DeviceBsr,
    ) -> Result<(), LinalgError> {
        let p = out.pattern();
        if (p.n_block_rows(), p.n_block_cols(), p.nnz())
            != (self.n_block_rows, self.n_block_cols, self.nnz)
        {
            return Err(LinalgError::PatternMismatch {
                what: "DeviceCooPlan::assemble: output",
            });
        }
        let bl = out.block_rows() * out.block_cols();
        self.assemble_slots(ctx, values, bl, out.values_mut())
    }

    /// [`Self::assemble`] into a plain buffer of `nnz * block_len` values.
    pub fn assemble_slots(
        &self,
        ctx: &CudaContext,
        values: &DeviceBuffer<f64>,
        block_len: usize,
        out: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        crate::bsr::check_block_size(block_len, 1)?;
        check_len(
            "DeviceCooPlan values",
            self.n_contributions * block_len,
            values.len(),
        )?;
        check_len("DeviceCooPlan output", self.nnz * block_len, out.len())?;
        let f = ctx.function(&COO, &[("BL", block_len as i64)], "coo_sum")?;
        let nnz = self.nnz as u32;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nnz)
            .arg(&self.slot_ptr)
            .arg(&self.contrib)
            .arg(values)
            .arg(&mut *out);
        // SAFETY: arguments match `coo_sum`; lengths checked.
        unsafe { l.launch(grid_1d((self.nnz * block_len) as u64, 256)) }
            .map_err(driver_err("coo_sum"))?;
        Ok(())
    }
}
