//! A renewal that keeps the aggregates (`renewal: keep_aggregates`) of a level on a GPU:
//! [`coarsen_kept`], the host kept renewal's coarsening (`super::coarsen_kept`, through
//! [`super::DistHierarchy::set_near_null_space`]) with its numeric phases where the level
//! lives.
//!
//! Per level, through the kept plans (the host plans; nothing symbolic is made):
//! - the tentative prolongator `P0` (two all-to-alls of near-null rows and the per-aggregate
//!   QR; no operator needed) on the device where the near-null rows are there
//!   (`DistTentativePlan::numeric_on_device`: only the rows of members of aggregates owned
//!   elsewhere and their `Q` rows cross to the host), else on the host and uploaded; its
//!   ghost rows gathered GPU to GPU and its local view (`P_ext`, `P_owned`: one `bs x k`
//!   block per aggregated row; the smoothing plan's view) filled there by block gathers;
//! - the point-block Jacobi inverse and the eigenvalue estimate on the device (as a device
//!   hot update, from the start vector kept there);
//! - `A P0` on the device ([`DeviceSmoothing`]: the local `A` gathered from the device
//!   operator's parts, the product through the smoothing plan's symbolic phase, the smoothing
//!   `P = P0 - omega D^{-1} A P0` in place), and `P`'s `diag` and `offd` values gathered from
//!   the product through the plan's slot map (`P`'s pattern's slot entries);
//! - `P`'s views for the Galerkin product gathered on the device from `P`'s values there
//!   (`P`'s ghost rows GPU to GPU, `P_ext`, `P_owned` and `P_owned^T` by block gathers and the
//!   transpose's plan) and copied into the device plan; the restriction's transposed parts
//!   made on the device from `P`'s values there ([`super::DistTranspose::transpose_values_of`]);
//! - the Galerkin product on the device ([`super::device_update::DeviceGalerkin`], a hot
//!   update's), into the next level's device operator; then the coarsest factor.
//!
//! Neither the fine operator nor `P` leaves the device. Every value is the host kept renewal's, bit for
//! bit (the same kernels in the same order as a device hot update, whose results are the host
//! update's; plain copies otherwise).

use std::sync::Arc;

use linalg::dist::{DistBsr, DistPattern};
use linalg::gpu::{gather_blocks, CudaContext};
use linalg::{BlockDiagonal, Bsr, SmoothingMap, SpgemmPlan};

use super::device::{DeviceKept, Phases};
use super::device_local_a::DeviceLocalA;
use super::{dist_emax, DistNearNull, DistTransfer, HostPlans};
use crate::dist_prolongator::{DevicePSlots, SmoothingPlan};
use crate::dist_tentative::DistTentative;
use crate::hierarchy::{build_smoother, with_level};
use crate::level_matrix::Coarsened;
use crate::params::{AmgParams, Renewal};
use crate::report::SetupTimings;
use crate::{AmgError, PointBlockJacobi};

/// The numeric phase of a level's [`SmoothingPlan`] on a GPU: the plan's gathers, product
/// plan and slot maps uploaded once (the first device renewal), with the value buffers they
/// fill.
///
/// Invariants: `product` multiplies the level's local `A` (of an operator on `a_pattern`; the
/// device Galerkin plan's [`DeviceLocalA`], lent to each numeric phase) by `p_ext0` into `w`;
/// `smoothing_map` holds the patterns of `w` and `p_owned0` (the plan's, shared: its device
/// slot maps made once, whichever device smoothing runs);
/// `p_slots.diag[s]` (`p_slots.offd[s]`) is the block of `w` that `P.diag` (`P.offd`) holds
/// in slot `s`, `P` on `p_pattern` (the plan's slots, shared: uploaded once whichever device
/// smoothing runs).
#[derive(Debug)]
pub(super) struct DeviceSmoothing {
    ctx: Arc<CudaContext>,
    a_pattern: Arc<DistPattern>,
    p_ext0: Bsr,
    p_owned0: Bsr,
    product: SpgemmPlan,
    w: Bsr,
    smoothing_map: Arc<SmoothingMap>,
    p_pattern: Arc<DistPattern>,
    p_slots: Arc<DevicePSlots>,
}

impl DeviceSmoothing {
    /// Uploads `plan` for the device operator `a` (the plan's pattern) to `a`'s GPU; `P0`'s
    /// view as the plan holds it gives the value buffers' patterns (its values are copied in
    /// by each [`Self::numeric`]). `repeated`: the product will be made again (kept renewals),
    /// so its device plan lists the block products' operands once (host work and an upload a
    /// single product does without; the same bits either way). Local.
    pub(super) fn upload(
        plan: &SmoothingPlan,
        a: &DistBsr,
        repeated: bool,
    ) -> Result<Self, AmgError> {
        let device = a.device();
        let ctx = super::device::gpu_context(
            &device,
            "must be a GPU for the device prolongator smoothing",
        )?;
        let (p_ext0, p_owned0) = plan.p0_view();
        let bs = a.pattern().block_size();
        let k = p_ext0.block_cols();
        let p_pattern = plan.p_pattern().clone();
        Ok(Self {
            a_pattern: a.pattern().clone(),
            // the patterns only: every numeric phase copies `P0`'s view values in once
            p_ext0: Bsr::zeros_on(&device, p_ext0.pattern().clone(), bs, k)?,
            p_owned0: Bsr::zeros_on(&device, p_owned0.pattern().clone(), bs, k)?,
            product: match repeated {
                true => plan.product().clone().for_repeated_products(),
                // the plan's device form from its symbolic phase, as made
                false => plan.product().clone(),
            },
            w: Bsr::zeros_on(&device, plan.product().pattern().clone(), bs, k)?,
            smoothing_map: plan.smoothing_map().clone(),
            p_slots: plan.device_p_slots(&ctx)?,
            p_pattern,
            ctx,
        })
    }

    /// `P = P0 - omega D^{-1} A P0` on the device into `p` (a device matrix on the plan's `P`
    /// pattern), for the device operator `a` (its local `A` gathered in `local_a`), `P0`'s
    /// view (`p_ext0`, `p_owned0`: values copied here from the plan's view, on this GPU or
    /// the host) and `dinv` (`D^{-1}` of `a`'s diagonal part, on the device). Local.
    pub(super) fn numeric(
        &mut self,
        a: &DistBsr,
        local_a: &DeviceLocalA,
        (p_ext0, p_owned0): (&Bsr, &Bsr),
        dinv: &BlockDiagonal,
        omega: f64,
        p: &mut DistBsr,
    ) -> Result<(), AmgError> {
        if !Arc::ptr_eq(a.pattern(), &self.a_pattern) || !Arc::ptr_eq(p.pattern(), &self.p_pattern)
        {
            return Err(AmgError::InvalidParameter {
                name: "device prolongator smoothing",
                value: "another pattern".into(),
                reason: "must be on the patterns of the kept plan (an internal error)",
            });
        }
        self.p_ext0.upload_values_from(p_ext0)?;
        self.p_owned0.upload_values_from(p_owned0)?;
        let ctx = &*self.ctx;
        linalg::spgemm_numeric(&self.product, local_a.values(), &self.p_ext0, &mut self.w)?;
        if self.w.pattern().nnz() > 0 {
            let map = &self.smoothing_map;
            linalg::smooth_prolongator_mapped(map, &mut self.w, omega, dinv, &self.p_owned0)?;
        }
        let bl = self.w.block_len();
        let (d, o) = p.parts_mut();
        let w = self.w.device_bsr()?.values();
        gather_blocks(
            ctx,
            bl,
            &self.p_slots.diag,
            w,
            d.device_bsr_mut()?.values_mut(),
        )?;
        gather_blocks(
            ctx,
            bl,
            &self.p_slots.offd,
            w,
            o.device_bsr_mut()?.values_mut(),
        )?;
        Ok(())
    }
}

/// Collective. The kept renewal's coarsening of the device level `a` (near-null space
/// `near_null`, the new one) through the kept host `plans` and device parts `kept` (see the
/// module doc): the values of the host kept renewal's coarsening, bit for bit, the next
/// level's operator computed into `kept.next`, every pattern kept, the next level's device
/// parts (eigenvalue start vector, graph ids) kept on the GPU. Timings and bytes between host and GPU
/// ([`Phases`]), each phase ended by a device synchronisation: `tentative_s` the tentative
/// prolongator with `P0`'s ghost rows, `smoother_setup_s` the inverses and eigenvalue estimate, `smoothing_s` `A P0`
/// with the smoothing and `P`'s values (and the uploads of `P0`'s view),
/// `galerkin_symbolic_s` `P`'s views gathered on the device (with `P`'s ghost rows) and the
/// transposed parts made there, `galerkin_numeric_s` the device Galerkin product.
pub(super) fn coarsen_kept(
    a: &DistBsr,
    near_null: &DistNearNull,
    level: usize,
    params: &AmgParams,
    tm: &mut SetupTimings,
    plans: HostPlans,
    kept: DeviceKept,
) -> Result<Coarsened<DistBsr>, AmgError> {
    let HostPlans {
        mut galerkin,
        tentative,
        mut smoothing,
    } = plans;
    let DeviceKept {
        mut p,
        mut pt,
        mut transfer,
        mut next,
        next_near_null,
        diagonal,
    } = kept;
    let device = a.device();
    let mut phases = Phases::start(&device);
    // on the level's GPU, where the smoothing plan's view of `P0` lives (refreshed there):
    // made there from near-null rows there (a GPU renewal's rigid-body modes, a device
    // level's coarse rows), else on the host and uploaded
    let DistTentative {
        p: p0,
        coarse_serial_ids,
        coarse_nns,
        ..
    } = match near_null.rows.device().same_as(&device) {
        true => tentative.numeric_on_device(&near_null.rows)?,
        false => {
            let t = tentative.numeric(&near_null.host_rows()?)?;
            DistTentative {
                p: t.p.to_device(&device)?,
                ..t
            }
        }
    };
    if let Some(plan) = &mut smoothing {
        plan.refresh_p0(&p0)?;
    }
    phases.end(&mut tm.tentative_s, &mut tm.transfers.tentative)?;
    let pbj = match diagonal {
        Some(mut pbj) => {
            pbj.update(a.diag()).map_err(|e| with_level(e, level))?;
            pbj
        }
        None => PointBlockJacobi::new(a.diag()).map_err(|e| with_level(e, level))?,
    };
    let emax = dist_emax(a, &pbj, near_null, params, level)?;
    phases.end(&mut tm.smoother_setup_s, &mut tm.transfers.smoother)?;
    // the level's device local `A` gathered once for both products where the smoothing plan
    // and the Galerkin plan share it (a level coarsened on the device), else the smoothing's own
    let mut gathered = false;
    match &smoothing {
        Some(plan) => {
            let device_smoothing = match &mut transfer.smoothing {
                Some(s) => s,
                None => {
                    let repeated = params.renewal == Renewal::KeepAggregates;
                    transfer
                        .smoothing
                        .insert(DeviceSmoothing::upload(plan, a, repeated)?)
                }
            };
            let omega = params.prolongator_omega_scale / emax;
            let own;
            let local_a = match transfer.galerkin.local_a().is_for(plan.a_local()) {
                true => {
                    transfer.galerkin.gather_local_a(a)?;
                    gathered = true;
                    transfer.galerkin.local_a()
                }
                false => {
                    let bs = a.pattern().block_size();
                    own = DeviceLocalA::new(plan.a_local(), bs, &device)?.gathered(a)?;
                    &own
                }
            };
            device_smoothing.numeric(a, local_a, plan.p0_view(), pbj.inverse(), omega, &mut p)?;
        }
        // unsmoothed aggregation: `P` is `P0`
        None => p.upload_values_from(&p0)?,
    }
    drop(p0);
    phases.end(&mut tm.smoothing_s, &mut tm.transfers.smoothing)?;
    // `P`'s views gathered on the device from its values there
    let (plan, p_ext) = galerkin.refresh_for(&p)?;
    transfer.galerkin.upload_p_values(plan, p_ext)?;
    pt.transpose_values_of(&p)?;
    let k = p.pattern().block_cols();
    phases.end(&mut tm.galerkin_symbolic_s, &mut tm.transfers.galerkin)?;
    match gathered {
        true => transfer.galerkin.numeric_gathered(&mut next)?,
        false => transfer.galerkin.numeric(a, &mut next)?,
    };
    phases.end(&mut tm.galerkin_numeric_s, &mut tm.transfers.galerkin)?;
    Ok(Coarsened {
        smoother: build_smoother(pbj, emax, params),
        transfer: DistTransfer {
            p,
            pt,
            plans: Some(HostPlans {
                galerkin,
                tentative,
                smoothing,
            }),
            device: Some(transfer),
        },
        a: next,
        near_null: DistNearNull {
            serial_ids: coarse_serial_ids,
            rows: coarse_nns,
            k,
            device: Default::default(),
        }
        .keeping_device_parts_of(next_near_null),
        plans_reused: true,
    })
}
