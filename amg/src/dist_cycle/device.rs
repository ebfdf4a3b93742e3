//! The distributed V-cycle on one GPU per rank: [`DeviceDistHierarchy`], the levels of a
//! [`DistHierarchy`] uploaded (operators, prolongators and their transposes as device
//! [`DistBsr`] parts, point-block Jacobi inverted on the device), and the restriction's device
//! path ([`transpose_apply`]).
//!
//! The set-up and the hot update (Galerkin products, eigenvalue estimates, the coarse factor)
//! stay on the host [`DistHierarchy`]; [`DeviceDistHierarchy::refresh`] then uploads what
//! changed: the operators' values, and a prolongator only when its version changed (a hot
//! update of `reuse: interpolation` sends no `P` bytes at all, counted). The V-cycle is the
//! host's ([`super::v_cycle`]) on device vectors: halo exchanges staged through pinned host
//! memory, the coarsest level solved redundantly on every rank's host (it has at most
//! `coarse_eq_limit` unknowns: a download of the owned right-hand side, an all-gather, a dense
//! solve and an upload of the owned solution cost less than launching a device solve). Every
//! operation is the host's in the host's order, so the cycle's results are the host cycle's bits.

use linalg::backend::cuda;
use linalg::dist::DistBsr;
use linalg::{Device, Vector};

use super::{v_cycle, CoarseSolve, CycleLevel, DistHierarchy, DistTranspose};
use crate::hierarchy::build_smoother;
use crate::params::Reuse;
use crate::smoother::Smoother;
use crate::{AmgError, PointBlockJacobi, Preconditioner};

/// `y = P^T x` for a GPU prolongator (see [`DistTranspose::apply`]): the transposed parts'
/// products on the device, then the ghost rows' contributions sent to their owners, which add
/// them rank after rank.
pub(super) fn transpose_apply(
    t: &DistTranspose,
    p: &DistBsr,
    x: &Vector,
    y: &mut Vector,
) -> Result<(), AmgError> {
    let device = t.diag_t.device();
    let ctx = device.cuda_context().expect("a device transpose");
    let xb = x.device_buffer()?;
    cuda::spmv(
        ctx,
        t.diag_t.device_bsr()?,
        1.0,
        xb,
        0.0,
        y.device_buffer_mut()?,
    )?;
    let mut ghost = Vector::zeros_on(&device, t.offd_t.n_rows())?;
    cuda::spmv(
        ctx,
        t.offd_t.device_bsr()?,
        1.0,
        xb,
        0.0,
        ghost.device_buffer_mut()?,
    )?;
    let mut halo = p.device_halo().ok_or(AmgError::InvalidParameter {
        name: "prolongator",
        value: p.device().name(),
        reason: "must be on the transpose's GPU",
    })?;
    halo.add_ghost_contributions(ghost.device_buffer()?, y.device_buffer_mut()?)?;
    Ok(())
}

/// One uploaded level.
#[derive(Debug)]
struct DeviceLevel {
    a: DistBsr,
    smoother: Option<Smoother>,
    p: Option<(DistBsr, DistTranspose)>,
}

impl CycleLevel for DeviceLevel {
    fn operator(&self) -> &DistBsr {
        &self.a
    }
    fn smoother(&self) -> Option<&Smoother> {
        self.smoother.as_ref()
    }
    fn transfer(&self) -> Option<(&DistBsr, &DistTranspose)> {
        self.p.as_ref().map(|(p, pt)| (p, pt))
    }
}

/// A [`DistHierarchy`]'s levels on this rank's GPU (see the module doc); a [`Preconditioner`]
/// for device vectors of the fine operator's owned layout.
#[derive(Debug)]
pub struct DeviceDistHierarchy {
    device: Device,
    levels: Vec<DeviceLevel>,
    coarse: CoarseSolve,
}

/// Bytes [`DeviceDistHierarchy::refresh`] uploaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefreshBytes {
    /// Operators' values (every level).
    pub operators: u64,
    /// Prolongators and their transposes (zero when no `P` changed).
    pub prolongators: u64,
}

impl DeviceDistHierarchy {
    /// Uploads every level of `host` to `device` (a GPU; local: no messages).
    pub fn upload(host: &DistHierarchy, device: &Device) -> Result<Self, AmgError> {
        if device.is_host() {
            return Err(AmgError::InvalidParameter {
                name: "device",
                value: device.name(),
                reason: "must be a GPU (the host hierarchy runs on the host)",
            });
        }
        let mut levels = Vec::with_capacity(host.levels.len());
        for l in &host.levels {
            let a = l.a.to_device(device)?;
            let smoother = device_smoother(l.smoother.as_ref(), &a, host)?;
            let p = match &l.p {
                Some((p, pt, _)) => Some((p.to_device(device)?, transpose_to(pt, device)?)),
                None => None,
            };
            levels.push(DeviceLevel { a, smoother, p });
        }
        Ok(Self {
            device: device.clone(),
            levels,
            coarse: host.coarse.clone(),
        })
    }

    /// After `host` was updated ([`DistHierarchy::update`]): the new operators' values uploaded
    /// (values alone where the pattern is the uploaded one), the smoothers' inverses recomputed
    /// on the device with the host's eigenvalue estimates, the coarse factor copied; a
    /// prolongator (and its transpose) uploaded only if its version changed. Under `reuse:
    /// full` only the fine operator's values (the host keeps the rest too). Local.
    pub fn refresh(&mut self, host: &DistHierarchy) -> Result<RefreshBytes, AmgError> {
        if host.levels.len() != self.levels.len() {
            *self = Self::upload(host, &self.device)?;
            return Ok(RefreshBytes::default());
        }
        let mut bytes = RefreshBytes::default();
        if host.params.reuse == Reuse::Full {
            // Only the fine operator changed; the smoothers are the old operator's, as on the
            // host.
            let at = self.device.transfers().host_to_device;
            self.levels[0].a.upload_values_from(&host.levels[0].a)?;
            bytes.operators = self.device.transfers().host_to_device - at;
            return Ok(bytes);
        }
        for (d, h) in self.levels.iter_mut().zip(&host.levels) {
            let at = self.device.transfers().host_to_device;
            if std::sync::Arc::ptr_eq(d.a.pattern(), h.a.pattern()) {
                d.a.upload_values_from(&h.a)?;
            } else {
                d.a = h.a.to_device(&self.device)?;
            }
            d.smoother = device_smoother(h.smoother.as_ref(), &d.a, host)?;
            bytes.operators += self.device.transfers().host_to_device - at;
            if let (Some((dp, dpt)), Some((hp, hpt, _))) = (&mut d.p, &h.p) {
                if dp.version() != hp.version() {
                    let at = self.device.transfers().host_to_device;
                    *dp = hp.to_device(&self.device)?;
                    *dpt = transpose_to(hpt, &self.device)?;
                    bytes.prolongators += self.device.transfers().host_to_device - at;
                }
            }
        }
        self.coarse = host.coarse.clone();
        Ok(bytes)
    }

    /// The GPU of the levels.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

impl Preconditioner for DeviceDistHierarchy {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        v_cycle(&self.levels, 0, r, z, &|a, b, x| self.coarse.solve(a, b, x))
    }
}

/// The host smoother's polynomial and eigenvalue estimate with `D^{-1}` inverted from the
/// device operator `a` (the host's inversion, bit for bit).
fn device_smoother(
    host: Option<&Smoother>,
    a: &DistBsr,
    h: &DistHierarchy,
) -> Result<Option<Smoother>, AmgError> {
    host.map(|s| {
        Ok(build_smoother(
            PointBlockJacobi::new(a.diag())?,
            s.emax,
            &h.params,
        ))
    })
    .transpose()
}

fn transpose_to(t: &DistTranspose, device: &Device) -> Result<DistTranspose, AmgError> {
    Ok(DistTranspose {
        diag_t: t.diag_t.to_device(device)?,
        offd_t: t.offd_t.to_device(device)?,
    })
}
