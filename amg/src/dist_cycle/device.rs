//! A [`DistHierarchy`] whose levels live on the rank's GPU: the one hierarchy, its fine
//! operator a device [`DistBsr`], each level's operator, prolongator and transpose device
//! matrices, its smoother's inverses made on the device, and per transfer the device part
//! of the numeric phases ([`DeviceTransfer`]: the Galerkin product's plan,
//! [`super::device_update::DeviceGalerkin`], and the prolongator smoothing's,
//! [`super::device_renewal::DeviceSmoothing`], made by a cold set-up with `renewal:
//! keep_aggregates` or else by the first kept renewal).
//!
//! The cold set-up coarsens a device level ([`coarsen`]): the strength graph and aggregation on
//! the GPU ([`crate::dist_aggregation::dist_aggregate_on_device`]), the other symbolic stages on
//! the host for now, from its operator's pattern (the tentative prolongator with its exchange
//! plan, the smoothing's plan, the structure of `P`'s views and the Galerkin product's symbolic
//! phase: issue 26 moves them to the device, one at a time, here), the numeric ones where the level lives, through the
//! device parts a kept renewal uses (the smoother's inverses and eigenvalue estimate, `A P0`
//! with the smoothing and `P`'s values, `P`'s views gathered from them with its ghost rows
//! GPU to GPU, the Galerkin product into the next level's operator). A level without device parts (a copy made
//! by [`DistHierarchy::to_device`]) renews on the host and is placed on the device ([`place`]).
//! The hot update is the one [`crate::Hierarchy`] update on the level operations of a device
//! [`DistBsr`] (the inverses and eigenvalue estimates on the device from a start vector kept
//! there, the Galerkin products through the device plan, the coarsest inverted on its
//! owner's GPU or, where several ranks hold it, downloaded for the redundant dense factor);
//! a renewal that keeps the aggregates runs its numeric phases there
//! ([`super::device_renewal`]). The V-cycle is the one [`crate::vcycle::v_cycle`] on device
//! vectors: halo exchanges GPU to GPU through NCCL where the ranks are connected
//! (`linalg::dist::connect_rank_devices`), else staged through pinned host memory; the
//! restriction through [`transpose_apply`]. Every operation is the host's in the host's
//! order, so every level, smoother and cycle is the host hierarchy's, bit for bit.

use linalg::dist::DistBsr;
use linalg::gpu;
use linalg::{Device, Vector};

use super::device_local_a::DeviceLocalA;
use super::device_renewal::DeviceSmoothing;
use super::device_update::DeviceGalerkin;
use super::{
    dist_emax, Aggregated, DistHierarchy, DistNearNull, DistTransfer, DistTranspose, HostPlans,
    TentativeLevel,
};
use crate::dist_prolongator::{GalerkinPlan, SmoothingPlan};
use crate::dist_tentative::DistTentative;
use crate::hierarchy::build_smoother;
use crate::hierarchy::with_level;
use crate::level_matrix::{Coarsened, LevelMatrix};
use crate::params::{AmgParams, Renewal};
use crate::report::{SetupTimings, TransferReport};
use crate::{AmgError, PointBlockJacobi};
use std::sync::Mutex;
use std::time::Instant;

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
    let ctx = device.cuda_context().ok_or(AmgError::InvalidParameter {
        name: "transpose",
        value: device.name(),
        reason: "must be on a GPU for the device restriction",
    })?;
    let xb = x.device_buffer()?;
    // the ghost rows' contributions first, so that the owned rows' product runs while they
    // travel (into the transpose's own scratch, made at the first call)
    let mut scratch = t.ghost.lock().unwrap_or_else(|p| p.into_inner());
    let ghost = match scratch.as_mut() {
        Some(g) if g.len() == t.offd_t.n_rows() => g,
        _ => scratch.insert(Vector::zeros_on(&device, t.offd_t.n_rows())?),
    };
    gpu::spmv(
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
    let diag_t = t.diag_t.device_bsr()?;
    halo.add_ghost_contributions(ghost.device_buffer()?, y.device_buffer_mut()?, |y| {
        gpu::spmv(ctx, diag_t, 1.0, xb, 0.0, y)
    })?;
    Ok(())
}

impl DistTranspose {
    /// A copy on `device` (local).
    fn to_device(&self, device: &Device) -> Result<Self, AmgError> {
        Ok(Self {
            diag_t: self.diag_t.to_device(device)?,
            offd_t: self.offd_t.to_device(device)?,
            plans: self.plans.clone(),
            ghost: Mutex::new(None),
        })
    }
}

/// The CUDA context of `device`, or [`AmgError::InvalidParameter`] naming `device` with
/// `reason` where it is the host.
pub(super) fn gpu_context(
    device: &Device,
    reason: &'static str,
) -> Result<std::sync::Arc<gpu::CudaContext>, AmgError> {
    device
        .cuda_context()
        .cloned()
        .ok_or(AmgError::InvalidParameter {
            name: "device",
            value: device.name(),
            reason,
        })
}

/// The device part of a transfer on a GPU: the Galerkin product's device plan (uploaded with
/// the level), and the prolongator smoothing's (made by the first kept renewal).
#[derive(Debug)]
pub(super) struct DeviceTransfer {
    pub(super) galerkin: DeviceGalerkin,
    pub(super) smoothing: Option<DeviceSmoothing>,
}

impl DeviceTransfer {
    /// The device part of a transfer of the host plans `plans` on `device` (local).
    fn new(plans: &HostPlans, device: &Device) -> Result<Self, AmgError> {
        let (plan, p_ext) = plans.galerkin.current().ok_or(AmgError::InvalidParameter {
            name: "distributed Galerkin plan",
            value: "missing".into(),
            reason: "must be made by the set-up before the level goes to a GPU",
        })?;
        Ok(Self {
            galerkin: DeviceGalerkin::upload(plan, p_ext, device)?,
            smoothing: None,
        })
    }
}

/// What a kept renewal on a GPU reuses of a level besides its host plans: `P` and its
/// transpose (the new values go into them), the device plans, the next level's operator
/// (its new values computed into it) and near-null space (its device parts: the eigenvalue
/// start vector and the graph's vertex ids, kept on the GPU) and the level's smoother
/// inverses (refreshed in place).
#[derive(Debug)]
pub(super) struct DeviceKept {
    pub(super) p: DistBsr,
    pub(super) pt: DistTranspose,
    pub(super) transfer: DeviceTransfer,
    pub(super) next: DistBsr,
    pub(super) next_near_null: Option<DistNearNull>,
    pub(super) diagonal: Option<PointBlockJacobi>,
}

/// Collective. Coarsens the device level `a` (near-null space `near_null`) cold: the strength
/// graph and aggregation on the GPU, the other symbolic stages on the host from `a`'s pattern
/// (the tentative prolongator with its exchange plan, the smoothing's plan, the
/// structure of `P`'s views and the Galerkin product's symbolic phase) and the numeric ones
/// where the level lives, as a kept renewal runs them ([`super::device_renewal`]): the
/// smoother's inverses and eigenvalue estimate, `A P0` with the smoothing and `P`'s values
/// (`P0` uploaded, its view gathered on the device),
/// `P`'s views (`P_ext`, `P_owned`, `P_owned^T`) gathered from `P`'s values there (its ghost
/// rows GPU to GPU), the Galerkin product into the next level's device operator. The host
/// cold coarsening's values bit for bit (the same kernels as the device kept renewal, whose
/// values are the host's; the views are copies), with no host numeric product, no upload of
/// `P`'s, its views' or the next operator's values and no download of `a`, its block norms or
/// `P` (the owned aggregate labels come down). `aggregated`: the serial ids and
/// aggregates a renewal made already. The smoothing's device part (a local copy of `a` and
/// `A P0`) stays with the transfer only with `renewal: keep_aggregates`. Timings, each phase
/// ended by a device synchronisation: `smoother_setup_s` the inverses and estimate,
/// `smoothing_s` the smoothing's plan and `A P0` with `P`'s values, `galerkin_symbolic_s` `P`'s
/// views (made and gathered), the symbolic product and `P`'s transposed parts (their blocks moved on the device
/// from `P`'s there, [`DistTranspose::new`]), `device_plans_s` the device plans'
/// uploads and the next operator and `P` made on the device, `galerkin_numeric_s` the device
/// product.
pub(super) fn coarsen(
    a: &DistBsr,
    near_null: &DistNearNull,
    level: usize,
    params: &AmgParams,
    tm: &mut SetupTimings,
    aggregated: Option<Aggregated>,
) -> Result<Option<Coarsened<DistBsr>>, AmgError> {
    let Some(TentativeLevel {
        serial_ids,
        t,
        plan: tentative,
    }) = super::tentative_level(a, near_null, level, params, tm, aggregated)?
    else {
        return Ok(None);
    };
    let device = a.device();
    let mut phases = Phases::start(&device);
    let pbj = PointBlockJacobi::new(a.diag()).map_err(|e| with_level(e, level))?;
    let emax = dist_emax(a, &pbj, near_null, params, level)?;
    phases.end(&mut tm.smoother_setup_s, &mut tm.transfers.smoother)?;
    // `P0` on the level's GPU (made there, or one upload of its owned rows): the smoothing
    // plan's view of it (`P_ext`, `P_owned`: each owned row twice) is gathered there, its
    // ghost rows GPU to GPU, and the device smoothing reads it there
    let t = match t.p.device().same_as(&device) {
        true => t,
        false => DistTentative {
            p: t.p.to_device(&device)?,
            ..t
        },
    };
    let smoothing = if params.smooth_prolongator {
        Some(SmoothingPlan::new(a, &serial_ids, &t)?)
    } else {
        None
    };
    let DistTentative {
        p: p0,
        coarse_serial_ids,
        coarse_nns,
        ..
    } = t;
    let (p, device_smoothing, local_a) = match &smoothing {
        Some(plan) => {
            phases.end(&mut tm.smoothing_s, &mut tm.transfers.smoothing)?;
            // the product repeats only in the kept renewals of `keep_aggregates`
            let kept = params.renewal == Renewal::KeepAggregates;
            let mut on_device = DeviceSmoothing::upload(plan, a, kept)?;
            // the level's one local `A` on the device: the Galerkin plan takes it over
            let local_a = DeviceLocalA::new(plan.a_local(), a.pattern().block_size(), &device)?;
            let mut p = DistBsr::zeros_on(plan.p_pattern().clone(), &device)?;
            phases.end(&mut tm.device_plans_s, &mut tm.transfers.smoothing)?;
            let omega = params.prolongator_omega_scale / emax;
            let local_a = local_a.gathered(a)?;
            on_device.numeric(a, &local_a, plan.p0_view(), pbj.inverse(), omega, &mut p)?;
            // its `A P0` is the size of the level operator: kept only for the kept renewals
            // of `keep_aggregates` (a recompute renewal that keeps the level uploads the plan
            // again)
            (p, kept.then_some(on_device), Some(local_a))
        }
        // unsmoothed aggregation: `P` is `P0`
        None => (p0, None, None),
    };
    phases.end(&mut tm.smoothing_s, &mut tm.transfers.smoothing)?;
    // `P`'s views gathered on the device from its values there (its ghost rows GPU to GPU)
    let mut galerkin = GalerkinPlan::new(a, &serial_ids, &p, &coarse_serial_ids)?;
    if let Some(plan) = &smoothing {
        galerkin.share_a_local(plan.a_local());
    }
    let (plan, p_ext) = galerkin.plan_for(a, &p)?;
    // `P`'s transposed parts made on the device from its values there
    let pt = DistTranspose::new(&p)?;
    phases.end(&mut tm.galerkin_symbolic_s, &mut tm.transfers.galerkin)?;
    let gathered = local_a.as_ref().is_some_and(|l| l.is_for(&plan.a_local));
    let mut device_galerkin = DeviceGalerkin::upload_for_product(plan, p_ext, &device, local_a)?;
    let mut next = DistBsr::zeros_on(plan.coarse_pattern().clone(), &device)?;
    let k = p.pattern().block_cols();
    drop(serial_ids);
    phases.end(&mut tm.device_plans_s, &mut tm.transfers.galerkin)?;
    // the smoothing's local `A`, where the plan took it over, holds `a`'s blocks already
    match gathered {
        true => device_galerkin.numeric_gathered(&mut next)?,
        false => device_galerkin.numeric(a, &mut next)?,
    };
    phases.end(&mut tm.galerkin_numeric_s, &mut tm.transfers.galerkin)?;
    Ok(Some(Coarsened {
        smoother: build_smoother(pbj, emax, params),
        transfer: DistTransfer {
            p,
            pt,
            plans: Some(HostPlans {
                galerkin,
                tentative,
                smoothing,
            }),
            device: Some(DeviceTransfer {
                galerkin: device_galerkin,
                smoothing: device_smoothing,
            }),
        },
        a: next,
        near_null: DistNearNull {
            serial_ids: coarse_serial_ids,
            rows: coarse_nns,
            k,
            device: Default::default(),
        },
        plans_reused: false,
    }))
}

/// A coarsening's phases on a GPU (cold or a kept renewal's), one after the other: each timed
/// to the end of the work it queued ([`timed_phase`]) and charged the bytes the device's
/// counters saw move between host and GPU meanwhile.
pub(super) struct Phases {
    device: Device,
    since: Instant,
    at: linalg::Transfers,
}

impl Phases {
    pub(super) fn start(device: &Device) -> Self {
        Self {
            device: device.clone(),
            since: Instant::now(),
            at: device.transfers(),
        }
    }

    /// Ends the phase begun at the last end (or the start): its seconds added to `seconds`,
    /// its bytes to `bytes`.
    pub(super) fn end(
        &mut self,
        seconds: &mut f64,
        bytes: &mut TransferReport,
    ) -> Result<(), AmgError> {
        self.since = timed_phase(&self.device, seconds, self.since)?;
        let now = self.device.transfers();
        bytes.add(TransferReport::between(self.at, now));
        self.at = now;
        Ok(())
    }
}

/// Adds the seconds from `since` to the end of the work queued on `device` to `seconds` (one
/// synchronisation); returns that end: a set-up phase on a GPU timed as its own.
pub(super) fn timed_phase(
    device: &Device,
    seconds: &mut f64,
    since: Instant,
) -> Result<Instant, AmgError> {
    device.synchronize()?;
    let now = Instant::now();
    *seconds += (now - since).as_secs_f64();
    Ok(now)
}

/// Collective. A kept renewal of the device level `a` whose device parts are gone (a level
/// placed without them): the host kept renewal on the host copy of `a`, placed.
pub(super) fn coarsen_kept_on_host(
    a: &DistBsr,
    near_null: &DistNearNull,
    level: usize,
    params: &AmgParams,
    tm: &mut SetupTimings,
    plans: HostPlans,
) -> Result<Coarsened<DistBsr>, AmgError> {
    let host = timed_download(a, tm)?;
    let c = super::coarsen_kept(&host, near_null, level, params, tm, plans)?;
    place(c, a, near_null, params)
}

/// The host copy of the device operator `a` (its download counted as the copy's time).
fn timed_download(a: &DistBsr, tm: &mut SetupTimings) -> Result<DistBsr, AmgError> {
    crate::hierarchy::timed(&mut tm.copy_operator_s, || Ok(a.to_device(&Device::Host)?))
}

/// The coarsening `c` of the host copy of the device level `a` placed on `a`'s GPU: the
/// smoother's inverses made there from `a` (the host's inversion, bit for bit) with the
/// host's eigenvalue estimate, `P`, its transpose and the next operator uploaded, the
/// Galerkin plan's device part made, and the level's eigenvalue start vector uploaded (for
/// the hot updates). Local.
fn place(
    c: Coarsened<DistBsr>,
    a: &DistBsr,
    near_null: &DistNearNull,
    params: &AmgParams,
) -> Result<Coarsened<DistBsr>, AmgError> {
    let device = a.device();
    near_null.start_vector(a)?;
    let pbj = PointBlockJacobi::new(a.diag())?;
    let t = c.transfer;
    let plans = t.plans.ok_or(AmgError::InvalidParameter {
        name: "distributed transfer",
        value: "without host plans".into(),
        reason: "must come from a host coarsening (an internal error)",
    })?;
    Ok(Coarsened {
        smoother: build_smoother(pbj, c.smoother.emax, params),
        transfer: DistTransfer {
            p: t.p.to_device(&device)?,
            pt: t.pt.to_device(&device)?,
            device: Some(DeviceTransfer::new(&plans, &device)?),
            plans: Some(plans),
        },
        a: c.a.to_device(&device)?,
        near_null: c.near_null,
        plans_reused: c.plans_reused,
    })
}

impl DistHierarchy {
    /// Collective (where the coarsest level is solved redundantly). A copy of this host
    /// hierarchy on `device` (a GPU): every level's operator, smoother (inverted there from
    /// the operator, the same bits, with the same eigenvalue estimate), prolongator and
    /// transpose, and the device part of each Galerkin plan; the patterns are this
    /// hierarchy's (`Arc`s). The copy keeps no host plans: its hot updates run on the device,
    /// a renewal sets it up afresh.
    pub fn to_device(&self, device: &Device) -> Result<Self, AmgError> {
        if device.is_host() {
            return Err(AmgError::InvalidParameter {
                name: "device",
                value: device.name(),
                reason: "must be a GPU (a host hierarchy is on the host already)",
            });
        }
        let mut levels = Vec::with_capacity(self.levels.len());
        for (l, lev) in self.levels.iter().enumerate() {
            let a = lev
                .a
                .as_ref()
                .ok_or(AmgError::MissingFineOperator)?
                .to_device(device)?;
            let near_null = lev
                .near_null
                .as_ref()
                .map(|nn| {
                    let copy = DistNearNull {
                        serial_ids: nn.serial_ids.clone(),
                        rows: nn.rows.try_clone()?,
                        k: nn.k,
                        device: Default::default(),
                    };
                    if l < self.transfers.len() {
                        copy.start_vector(&a)?;
                    }
                    Ok::<_, AmgError>(copy)
                })
                .transpose()?;
            let smoother = lev
                .smoother
                .as_ref()
                .map(|s| {
                    Ok::<_, AmgError>(build_smoother(
                        PointBlockJacobi::new(a.diag())?,
                        s.emax,
                        &self.params,
                    ))
                })
                .transpose()?;
            levels.push(crate::hierarchy::Level {
                a: Some(a),
                bs: lev.bs,
                smoother,
                near_null,
            });
        }
        let transfers = self
            .transfers
            .iter()
            .map(|t| {
                let plans = t.plans.as_ref().ok_or(AmgError::InvalidParameter {
                    name: "distributed hierarchy",
                    value: "a device copy".into(),
                    reason: "has no host plans to copy to a device (copy the host hierarchy)",
                })?;
                Ok(DistTransfer {
                    p: t.p.to_device(device)?,
                    pt: t.pt.to_device(device)?,
                    plans: None,
                    device: Some(DeviceTransfer::new(plans, device)?),
                })
            })
            .collect::<Result<Vec<_>, AmgError>>()?;
        let last = levels.last().ok_or(AmgError::MissingFineOperator)?;
        let coarsest = last.a.as_ref().ok_or(AmgError::MissingFineOperator)?;
        let coarse = coarsest.factor_coarse(last.near_null.as_ref())?;
        let fine = levels[0].a.as_ref().ok_or(AmgError::MissingFineOperator)?;
        let work = Mutex::new(Self::new_workspace(&levels, fine)?);
        Ok(Self {
            params: self.params.clone(),
            levels,
            transfers,
            coarse,
            next_version: self.next_version,
            state: self.state.clone(),
            work,
        })
    }
}
