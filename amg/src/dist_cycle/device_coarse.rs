//! The coarsest level of a [`super::DistHierarchy`] on GPUs solved on its owner's GPU, where one
//! rank holds all of it (`process_eq_limit` gathered it there): no host round trip and no
//! collective per V-cycle, and no host inversion per hot update; the ranks without rows do
//! nothing.
//!
//! The owner keeps the coarsest operator's blocks permuted into the serial order (a block
//! gather through a slot map built once), inverts that matrix on the device (the Gauss-Jordan
//! inverse the host's `gather_factor` computes, the same bits) and solves with the right-hand
//! side and the solution permuted between its own (global) order and the serial order: the
//! host's redundant coarse solve, bit for bit.
//!
//! Calling order: [`CoarsestOnOwner::new`] (after the levels are on the device) ->
//! [`CoarsestOnOwner::factor`] (after each change of the coarsest operator's values) ->
//! [`CoarsestOnOwner::solve`] (each V-cycle).

use std::sync::Arc;

use linalg::dense::DenseFactor;
use linalg::dist::DistBsr;
use linalg::gpu::{self, CudaContext, DeviceBuffer};
use linalg::{BlockPattern, Bsr, Device, Vector};

use crate::AmgError;

/// The owner's device copy of the coarsest level in the serial order and its inverse.
#[derive(Debug)]
pub(super) struct CoarsestOnOwner {
    ctx: Arc<CudaContext>,
    k: usize,
    /// Serial block `s` -> this rank's block `global_of_serial[s]`.
    global_of_serial: DeviceBuffer<u32>,
    /// This rank's block `g` -> serial block `serial_of_global[g]`.
    serial_of_global: DeviceBuffer<u32>,
    /// Slot of the operator's diagonal part holding each block of `serial`.
    slots: DeviceBuffer<u32>,
    /// The operator in the serial order (values gathered by [`Self::factor`]).
    serial: Bsr,
    inverse: Option<DenseFactor>,
    /// The right-hand side and the solution in the serial order (made at the first solve,
    /// reused by every later one).
    work: std::sync::Mutex<Option<(Vector, Vector)>>,
}

impl CoarsestOnOwner {
    /// The owner's solver of the coarsest operator `a` (a device matrix whose rows this rank
    /// owns entirely: no off-diagonal part); `serial_of_global[g]`: the serial block of global
    /// block `g`. Local. Factor before solving.
    pub(super) fn new(a: &DistBsr, serial_of_global: &[usize]) -> Result<Self, AmgError> {
        let device = a.device();
        let ctx = device.cuda_context().ok_or(AmgError::InvalidParameter {
            name: "coarsest level",
            value: device.name(),
            reason: "must be on a GPU",
        })?;
        let pattern = a.pattern();
        let k = pattern.block_size();
        let n = pattern.partition().n_owned();
        if n != pattern.partition().global_len() as usize
            || a.offd().pattern().nnz() != 0
            || serial_of_global.len() != n
        {
            return Err(AmgError::DimensionMismatch {
                what: "coarsest level on one rank: owned block rows",
                expected: pattern.partition().global_len() as usize,
                found: n,
            });
        }
        let diag = a.diag().pattern();
        let mut global_of_serial = vec![0u32; n];
        for (g, &s) in serial_of_global.iter().enumerate() {
            global_of_serial[s] = g as u32;
        }
        // Serial row s holds global row g's blocks at serial columns, ascending.
        let mut row_ptr = vec![0usize];
        let (mut col_idx, mut slots) = (Vec::new(), Vec::new());
        let mut row: Vec<(u32, u32)> = Vec::new();
        for &g in &global_of_serial {
            let g = g as usize;
            row.clear();
            row.extend((diag.row_ptr()[g]..diag.row_ptr()[g + 1]).map(|slot| {
                let c = diag.col_idx()[slot] as usize;
                (serial_of_global[c] as u32, slot as u32)
            }));
            row.sort_unstable();
            col_idx.extend(row.iter().map(|&(c, _)| c));
            slots.extend(row.iter().map(|&(_, slot)| slot));
            row_ptr.push(col_idx.len());
        }
        let serial_pattern = Arc::new(BlockPattern::new(n, n, row_ptr, col_idx)?);
        let serial_of_global: Vec<u32> = serial_of_global.iter().map(|&s| s as u32).collect();
        Ok(Self {
            global_of_serial: ctx.upload(&global_of_serial)?,
            serial_of_global: ctx.upload(&serial_of_global)?,
            slots: ctx.upload(&slots)?,
            serial: Bsr::zeros_on(&device, serial_pattern, k, k)?,
            inverse: None,
            work: std::sync::Mutex::new(None),
            ctx: ctx.clone(),
            k,
        })
    }

    /// The inverse of the coarsest operator `a` (the matrix [`Self::new`] was built for, new
    /// values) in the serial order, on the device; errors named as the host's coarse factor
    /// names them.
    pub(super) fn factor(&mut self, a: &DistBsr) -> Result<(), AmgError> {
        let kk = self.k * self.k;
        gpu::gather_blocks(
            &self.ctx,
            kk,
            &self.slots,
            a.diag().device_bsr()?.values(),
            self.serial.device_bsr_mut()?.values_mut(),
        )?;
        let serial = &self.serial;
        self.inverse = Some(crate::hierarchy::coarse_inverse(serial.n_rows(), || {
            DenseFactor::invert(serial)
        })?);
        Ok(())
    }

    /// `x = A^{-1} b` for this rank's (all) coarsest rows, on the device.
    pub(super) fn solve(&self, b: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        let inverse = self.inverse.as_ref().ok_or(AmgError::InvalidParameter {
            name: "coarsest level",
            value: "not factored".into(),
            reason: "factor before solving",
        })?;
        let mut work = self.work.lock().unwrap_or_else(|p| p.into_inner());
        let n = b.len();
        if work.as_ref().is_none_or(|(bs, _)| bs.len() != n) {
            let device = Device::Cuda(self.ctx.clone());
            *work = Some((Vector::zeros_on(&device, n)?, Vector::zeros_on(&device, n)?));
        }
        let (b_serial, y) = work.as_mut().expect("made above");
        gpu::gather_blocks(
            &self.ctx,
            self.k,
            &self.global_of_serial,
            b.device_buffer()?,
            b_serial.device_buffer_mut()?,
        )?;
        inverse.solve(b_serial, y)?;
        gpu::gather_blocks(
            &self.ctx,
            self.k,
            &self.serial_of_global,
            y.device_buffer()?,
            x.device_buffer_mut()?,
        )?;
        Ok(())
    }
}
