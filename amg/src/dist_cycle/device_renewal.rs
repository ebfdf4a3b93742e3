//! A renewal that keeps the aggregates (`renewal: keep_aggregates`) on one GPU per rank:
//! [`DeviceDistHierarchy::renew_kept`], the host kept renewal
//! ([`DistHierarchy::set_near_null_space`]) with its numeric phases where the levels live.
//!
//! Per level, through the kept plans (the host hierarchy's; nothing symbolic is made):
//! - the tentative prolongator `P0` on the host (`DistTentativePlan::numeric`: two
//!   all-to-alls of near-null rows and the per-aggregate QR; no operator needed) and `P0`'s
//!   ghost rows gathered there (the smoothing plan's view), its local view (`P_ext`,
//!   `P_owned`: one `bs x k` block per aggregated row) uploaded as values;
//! - the point-block Jacobi inverse and the eigenvalue estimate on the device (as a device
//!   hot update, from the start vector kept there);
//! - `A P0` on the device ([`DeviceSmoothing`]: the local `A` gathered from the device
//!   operator's parts, the product through the smoothing plan's symbolic phase, the smoothing
//!   `P = P0 - omega D^{-1} A P0` in place), and `P`'s `diag` and `offd` values gathered from
//!   the product through the plan's slot map (`SmoothingPlan::p_from_product`);
//! - `P`'s views for the Galerkin product and the restriction on the host: the smoothed
//!   product's values downloaded, `P`'s ghost rows gathered, `P_ext`, `P_owned^T` and the
//!   transposed parts made there and uploaded as values (the first step: see docs/amg.md);
//! - the Galerkin product on the device ([`super::device_update::DeviceGalerkin`], a hot
//!   update's), into the next level's device operator; then the coarsest factor.
//!
//! The fine operator never leaves the device. Every value is the host kept renewal's, bit for
//! bit (the same kernels in the same order as a device hot update, whose results are the host
//! update's; plain copies otherwise). The host hierarchy keeps the near-null rows, `P` and its
//! transpose of the renewal; its operators and smoothers keep their old values (as after a
//! device hot update).

use std::sync::Arc;
use std::time::Instant;

use linalg::dist::{DistBsr, DistPattern};
use linalg::gpu::{gather_blocks, gather_blocks_two, CudaContext, DeviceBuffer, TwoSources};
use linalg::{BlockDiagonal, Bsr, SpgemmPlan};

use super::device::{upload_transpose_values, DeviceDistHierarchy};
use super::{DistHierarchy, DistTranspose};
use crate::dist_prolongator::SmoothingPlan;
use crate::params::Renewal;
use crate::report::{RenewalReport, SetupTimings, TransferReport};
use crate::AmgError;

/// The numeric phase of a level's [`SmoothingPlan`] on a GPU: the plan's gathers, product
/// plan and slot maps uploaded once (the first device renewal), with the value buffers they
/// fill.
///
/// Invariants: `a_gather` indexes `[diag; offd]` blocks of an operator on `a_pattern`
/// (`n_a_diag` in `diag`); `product` multiplies `a_local` by `p_ext0` into `w`;
/// `p_diag_from_w[s]` (`p_offd_from_w[s]`) is the block of `w` that `P.diag` (`P.offd`) holds
/// in slot `s`, `P` on `p_pattern`.
#[derive(Debug)]
pub(super) struct DeviceSmoothing {
    ctx: Arc<CudaContext>,
    a_pattern: Arc<DistPattern>,
    a_gather: DeviceBuffer<u32>,
    n_a_diag: usize,
    a_local: Bsr,
    p_ext0: Bsr,
    p_owned0: Bsr,
    product: SpgemmPlan,
    w: Bsr,
    p_pattern: Arc<DistPattern>,
    p_diag_from_w: DeviceBuffer<u32>,
    p_offd_from_w: DeviceBuffer<u32>,
}

impl DeviceSmoothing {
    /// Uploads `plan` for the device operator `a` (the plan's pattern) to `a`'s GPU; `P0`'s
    /// view as the plan holds it gives the value buffers' patterns. Local.
    fn upload(plan: &SmoothingPlan, a: &DistBsr) -> Result<Self, AmgError> {
        let device = a.device();
        let ctx = device
            .cuda_context()
            .ok_or(AmgError::InvalidParameter {
                name: "device",
                value: device.name(),
                reason: "must be a GPU for the device prolongator smoothing",
            })?
            .clone();
        let (a_local_pattern, a_gather) = plan.a_local_gather();
        let (p_ext0, p_owned0) = plan.p0_view();
        let bs = a.pattern().block_size();
        let k = p_ext0.block_cols();
        let p_pattern = plan.p_pattern().clone();
        let n_diag = p_pattern.diag().nnz();
        let (diag_from, offd_from) = plan.p_from_product().split_at(n_diag);
        Ok(Self {
            a_pattern: a.pattern().clone(),
            a_gather: ctx.upload(a_gather)?,
            n_a_diag: a.pattern().diag().nnz(),
            a_local: Bsr::zeros_on(&device, a_local_pattern.clone(), bs, bs)?,
            p_ext0: p_ext0.to_device(&device)?,
            p_owned0: p_owned0.to_device(&device)?,
            // every renewal repeats the product: its device plan keeps pair lists
            product: plan.product().clone().for_repeated_products(),
            w: Bsr::zeros_on(&device, plan.product().pattern().clone(), bs, k)?,
            p_diag_from_w: ctx.upload(diag_from)?,
            p_offd_from_w: ctx.upload(offd_from)?,
            p_pattern,
            ctx,
        })
    }

    /// `P = P0 - omega D^{-1} A P0` on the device into `p` (a device matrix on the plan's `P`
    /// pattern), for the device operator `a`, `P0`'s view (`p_ext0`, `p_owned0`: host values
    /// uploaded here) and `dinv` (`D^{-1}` of `a`'s diagonal part, on the device); returns the
    /// smoothed product's values (in the order of `P`'s input entries: what
    /// [`DistBsr::from_values`] takes) downloaded for the host views. Local.
    fn numeric(
        &mut self,
        a: &DistBsr,
        (p_ext0, p_owned0): (&Bsr, &Bsr),
        dinv: &BlockDiagonal,
        omega: f64,
        p: &mut DistBsr,
    ) -> Result<Vec<f64>, AmgError> {
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
        gather_blocks_two(
            ctx,
            self.a_local.block_len(),
            &self.a_gather,
            TwoSources {
                n0: self.n_a_diag,
                a: a.diag().device_bsr()?.values(),
                b: a.offd().device_bsr()?.values(),
            },
            self.a_local.device_bsr_mut()?.values_mut(),
        )?;
        linalg::spgemm_numeric(&self.product, &self.a_local, &self.p_ext0, &mut self.w)?;
        if self.w.pattern().nnz() > 0 {
            linalg::smooth_prolongator_in_place(&mut self.w, omega, dinv, &self.p_owned0)?;
        }
        let bl = self.w.block_len();
        let (d, o) = p.parts_mut();
        let w = self.w.device_bsr()?.values();
        gather_blocks(
            ctx,
            bl,
            &self.p_diag_from_w,
            w,
            d.device_bsr_mut()?.values_mut(),
        )?;
        gather_blocks(
            ctx,
            bl,
            &self.p_offd_from_w,
            w,
            o.device_bsr_mut()?.values_mut(),
        )?;
        if self.w.pattern().nnz() == 0 {
            // a rank without rows on this level
            return Ok(Vec::new());
        }
        Ok(self.w.to_host_vec()?)
    }
}

impl DeviceDistHierarchy {
    /// Collective. The renewal of `host` (set up with `renewal: keep_aggregates`, these levels
    /// uploaded from it) for the fine operator `a` (a device matrix on this hierarchy's GPU,
    /// the fine level's pattern) and new near-null rows `nns` of the owned block rows (`bs x
    /// k` each), with its numeric phases where the levels live (see the module doc): the
    /// values of [`DistHierarchy::set_near_null_space`] with these inputs on every level, bit
    /// for bit, without the fine operator crossing to the host. Every pattern and plan is
    /// kept (`plans_reused`: every transfer). The report's transfers are the device's
    /// counters; its timings this rank's phases, each ended by a device synchronisation:
    /// `tentative_s` the host tentative prolongators with `P0`'s ghost rows, `smoother_setup_s`
    /// the inverses and eigenvalue estimates, `smoothing_s` `A P0` with the smoothing and
    /// `P`'s values (and the uploads of `P0`'s view), `galerkin_symbolic_s` `P`'s views on the
    /// host (the download of the smoothed product, `P`'s ghost rows, `P_owned^T`, the
    /// transposed parts, their uploads), `galerkin_numeric_s` the device Galerkin products,
    /// `coarse_factor_s`. On error both hierarchies must be rebuilt by a set-up.
    pub fn renew_kept(
        &mut self,
        host: &mut DistHierarchy,
        a: &DistBsr,
        nns: Vec<f64>,
    ) -> Result<RenewalReport, AmgError> {
        let n = self.levels.len();
        if host.params.renewal != Renewal::KeepAggregates
            || host.levels.len() != n
            || host.transfers.len() + 1 != n
        {
            return Err(AmgError::InvalidParameter {
                name: "renewal",
                value: format!("{:?}", host.params.renewal),
                reason: "on the device needs keep_aggregates and the levels uploaded from the \
                         host hierarchy",
            });
        }
        let started = Instant::now();
        let at = self.device.transfers();
        let mut tm = SetupTimings::default();
        let device = self.device.clone();
        // each phase's seconds up to its device work's end (one synchronisation per phase)
        let phase = |seconds: &mut f64, since: Instant| -> Result<Instant, AmgError> {
            device.synchronize()?;
            let now = Instant::now();
            *seconds += (now - since).as_secs_f64();
            Ok(now)
        };
        // a renewal estimates every eigenvalue anew, as the cold set-up it renews
        let mut params = self.params.clone();
        params.recompute_eigs = true;
        let mut t = started;
        self.levels[0].a.copy_values_from(a)?;
        host.levels[0]
            .near_null
            .as_mut()
            .ok_or(AmgError::MissingFineOperator)?
            .rows = nns;
        t = phase(&mut tm.copy_operator_s, t)?;
        for l in 0..n - 1 {
            let transfer = &mut host.transfers[l];
            let rows = &host.levels[l]
                .near_null
                .as_ref()
                .ok_or(AmgError::MissingFineOperator)?
                .rows;
            let tentative = transfer.kept.tentative.numeric(rows)?;
            if let Some(plan) = &mut transfer.kept.smoothing {
                plan.refresh_p0(&tentative.p)?;
            }
            t = phase(&mut tm.tentative_s, t)?;
            let (head, tail) = self.levels.split_at_mut(l + 1);
            let (level, next) = (&mut head[l], &mut tail[0]);
            level.refresh_smoother(l, &params)?;
            t = phase(&mut tm.smoother_setup_s, t)?;
            let missing = |what: &'static str| AmgError::InvalidParameter {
                name: "device hierarchy",
                value: format!("level {l}"),
                reason: what,
            };
            let smoother = level.smoother.as_ref().ok_or(missing("has no smoother"))?;
            let (dp, dpt) = level.p.as_mut().ok_or(missing("has no prolongator"))?;
            let p = match &transfer.kept.smoothing {
                Some(plan) => {
                    if level.smoothing.is_none() {
                        level.smoothing = Some(DeviceSmoothing::upload(plan, &level.a)?);
                    }
                    let smoothing = level
                        .smoothing
                        .as_mut()
                        .ok_or(missing("has no device smoothing"))?;
                    let omega = params.prolongator_omega_scale / smoother.emax;
                    let w = smoothing.numeric(
                        &level.a,
                        plan.p0_view(),
                        smoother.pbj.inverse(),
                        omega,
                        dp,
                    )?;
                    DistBsr::from_values(plan.p_pattern().clone(), &w)?
                }
                // unsmoothed aggregation: `P` is `P0`
                None => {
                    dp.upload_values_from(&tentative.p)?;
                    tentative.p
                }
            };
            t = phase(&mut tm.smoothing_s, t)?;
            let (plan, p_ext) = transfer.galerkin.refresh_for(&p)?;
            let galerkin = level
                .galerkin
                .as_mut()
                .ok_or(missing("has no device Galerkin plan"))?;
            galerkin.upload_p_values(plan, p_ext)?;
            let pt = DistTranspose::new(&p)?;
            upload_transpose_values(dpt, &pt)?;
            (transfer.p, transfer.pt) = (p, pt);
            t = phase(&mut tm.galerkin_symbolic_s, t)?;
            galerkin.numeric(&level.a, &mut next.a)?;
            t = phase(&mut tm.galerkin_numeric_s, t)?;
            host.levels[l + 1]
                .near_null
                .as_mut()
                .ok_or(AmgError::MissingFineOperator)?
                .rows = tentative.coarse_nns;
        }
        self.coarse
            .refactor(&self.levels[n - 1].a, &self.coarse_serial_ids)?;
        phase(&mut tm.coarse_factor_s, t)?;
        tm.total_s = started.elapsed().as_secs_f64();
        Ok(RenewalReport {
            plans_reused: n - 1,
            plans_built: 0,
            timings: tm,
            transfers: TransferReport::between(at, self.device.transfers()),
        })
    }
}
