//! The operator of one process: the tangent itself (a `Bsr`), on the host, or on a GPU where the
//! solver runs there ([`DeviceSide`]: the device copies kept between calls, so later calls
//! upload values only).

use std::time::Instant;

use amg::{CgParams, Hierarchy, TransferReport};
use linalg::{Bsr, Device, Vector};

use super::krylov::Krylov;
use super::preconditioner::{FactorPreconditioner, Preconditioning, SerialReady};
use super::report::{DeviceSolveReport, LinearSolveReport};
use crate::error::{Error, Result};
use crate::params::DeviceChoice;

/// The GPU copies of the tangent, right-hand side and solution a device solver keeps between
/// calls (so later calls upload values only).
pub(crate) struct DeviceSide {
    pub(crate) device: Device,
    k: Option<Bsr>,
    b: Option<Vector>,
    x: Option<Vector>,
}

impl DeviceSide {
    /// The device a [`DeviceChoice`] names: `None` for the CPU; an error if `cuda` finds no GPU.
    pub(crate) fn open(choice: DeviceChoice) -> Result<Option<Self>> {
        let device = match choice {
            DeviceChoice::Cpu => return Ok(None),
            DeviceChoice::Auto => Device::auto(),
            DeviceChoice::Cuda => Device::cuda(Device::thread_gpu()).map_err(Error::NoGpu)?,
        };
        Ok((!device.is_host()).then_some(Self {
            device,
            k: None,
            b: None,
            x: None,
        }))
    }

    /// Brings `k` and `b` to the device (values only when the pattern is the last call's);
    /// returns the bytes uploaded.
    fn upload(&mut self, k: &Bsr, b: &Vector) -> Result<u64> {
        let before = self.device.transfers();
        match &mut self.k {
            Some(dk) if linalg::BlockPattern::same(dk.pattern(), k.pattern()) => {
                dk.upload_values_from(k)?
            }
            slot => {
                // the tangent and its hierarchy must fit before anything is uploaded
                let (hierarchy, operator) = amg::device_memory_estimate(k);
                amg::check_device_memory(&self.device, hierarchy + operator)?;
                *slot = Some(k.to_device(&self.device)?)
            }
        }
        match &mut self.b {
            Some(db) if db.len() == b.len() => db.copy_from_host(b.host()?)?,
            slot => *slot = Some(b.to_device(&self.device)?),
        }
        match &mut self.x {
            Some(dx) if dx.len() == b.len() => dx.fill(0.0)?,
            slot => *slot = Some(Vector::zeros_on(&self.device, b.len())?),
        }
        Ok(self.device.transfers().host_to_device - before.host_to_device)
    }
}

/// Solves `k x = b` from `x = 0` on one process: where the operands, or the solver's GPU
/// (`gpu`), are. A host tangent given to a GPU solver is uploaded into the kept device copies
/// and the solution downloaded into `x`; a device tangent is solved where it is.
pub(crate) fn solve(
    gpu: &mut Option<DeviceSide>,
    preconditioner: &mut Preconditioning<Box<Hierarchy>>,
    krylov: Krylov,
    k: &Bsr,
    b: &Vector,
    x: &mut Vector,
    params: &CgParams,
) -> Result<LinearSolveReport> {
    let side = match gpu {
        Some(side) if k.device().is_host() => side,
        // the operands already live where the solver runs (the Newton loop on the GPU), or the
        // solver runs on the host
        _ => return solve_here(preconditioner, krylov, k, b, x, params),
    };
    // the same solve on the device copies; the solution comes back to `x`
    let upload_bytes = side.upload(k, b)?;
    let device = side.device.clone();
    let (dk, db, mut dx) = (side.k.take(), side.b.take(), side.x.take());
    let result = match (&dk, &db, &mut dx) {
        (Some(dk), Some(db), Some(dx)) => solve_here(preconditioner, krylov, dk, db, dx, params),
        _ => Err(Error::Missing("device copies missing")),
    };
    let download = (|| -> Result<u64> {
        let before = device.transfers();
        if let (Ok(_), Some(dx)) = (&result, &dx) {
            x.host_mut()?.copy_from_slice(&dx.to_host_vec()?);
        }
        Ok(device.transfers().device_to_host - before.device_to_host)
    })();
    (side.k, side.b, side.x) = (dk, db, dx);
    let mut report = result?;
    if let Some(d) = report.device.as_mut() {
        d.upload_bytes = upload_bytes;
        d.download_bytes = download?;
    }
    Ok(report)
}

/// [`solve`] with every operand where the solver runs: the preconditioner's set-up, then the
/// Krylov method on `k` (or, for AMG in scalar storage, on the hierarchy's own finest level).
fn solve_here(
    preconditioner: &mut Preconditioning<Box<Hierarchy>>,
    krylov: Krylov,
    k: &Bsr,
    b: &Vector,
    x: &mut Vector,
    params: &CgParams,
) -> Result<LinearSolveReport> {
    let device = k.device();
    let count = |t0: linalg::Transfers| TransferReport::between(t0, device.transfers());
    let t0 = device.transfers();
    let start = Instant::now();
    let (ready, done) = preconditioner.set_up_serial(k)?;
    let setup_s = start.elapsed().as_secs_f64();
    let setup_moved = count(t0);
    let start = Instant::now();
    let t0 = device.transfers();
    let outcome = match &ready {
        SerialReady::Jacobi(jacobi) => krylov.solve(k, b, x, jacobi, params)?,
        SerialReady::Factor(factor) => {
            krylov.solve(k, b, x, &FactorPreconditioner(factor), params)?
        }
        SerialReady::Amg(h) => {
            // the hierarchy keeps no copy of k (blocked storage) or its own expansion (scalar)
            let vcycle = h.with_operator(k)?;
            let operator = h.operator(0).unwrap_or(k);
            krylov.solve(operator, b, x, &vcycle, params)?
        }
    };
    let rtol = match krylov {
        Krylov::PreOnly => 0.0,
        _ => params.rtol,
    };
    let solve_s = start.elapsed().as_secs_f64();
    let mut report = LinearSolveReport::of(outcome, done.kind, setup_s, solve_s, rtol);
    if let SerialReady::Factor(factor) = &ready {
        report.negative_eigenvalues = Some(factor.negative_pivots());
    }
    report.hierarchy = done.hierarchy;
    report.device = (!device.is_host()).then(|| DeviceSolveReport {
        name: device.name(),
        upload_bytes: 0,
        setup: setup_moved,
        solve: count(t0),
        download_bytes: 0,
    });
    Ok(report)
}
