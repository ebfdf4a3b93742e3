//! Smoothed-aggregation preconditioners on several ranks, from the distributed pieces: fine
//! operator `A` ([`DistBsr`]), prolongator `P` (rectangular [`DistBsr`]), the Galerkin coarse
//! operator, restriction `P^T r` ([`DistTranspose`]: the transposed parts; contributions to
//! other ranks' coarse entries sent back through `P`'s halo plan), and a redundant dense coarse
//! solve (the coarse operator gathered on every rank).
//!
//! [`DistHierarchy`] is the serial [`crate::Hierarchy`] on ranks: the same set-up stages and
//! [`AmgParams`], the same V-cycle (the configured smoother before and after the coarse
//! correction: symmetric, so CG may use it). Its levels live where its fine operator does: on
//! the host, or on the rank's GPU (`dist_cycle/device.rs`: the same hierarchy, its operators, prolongators
//! and transposes on the device, one update and one renewal whose numerics run there).
//! [`DistTwoLevel`] is a fixed two-level special case
//! with damped Jacobi smoothing: `z = 0`, `nu` sweeps `z += omega D^{-1} (r - A z)`, coarse
//! correction `z += P A_c^{-1} P^T (r - A z)`, `nu` sweeps again.

use crate::aggregation::MisDistance;
use crate::dist_prolongator::{GalerkinPlan, SmoothingPlan};
use crate::dist_tentative::{DistTentative, DistTentativePlan};
use crate::eig::estimate_emax_from;
use crate::hierarchy::{build_smoother, checked_emax, coarse_inverse, with_level};
use crate::hierarchy::{timed, timed_moving, Hierarchy, Level};
use crate::level_matrix::{build_levels, coarsening_stalled, Coarsened, LevelMatrix};
use crate::params::{AmgParams, Renewal, Reuse, Storage};
use crate::report::{MessageReport, RenewalReport, SetupTimings, TransferReport, UpdateReport};
use crate::smoother::{Smoother, SmootherWork};
use crate::vcycle::LevelWork;
use linalg::dense::DenseFactor;
use linalg::dist::{DeviceSerialIds, DistBsr};
use linalg::{ops, Bsr, Device, Vector};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use crate::{AmgError, PointBlockJacobi, Preconditioner};

mod device;
mod device_coarse;
mod device_local_a;
mod device_renewal;
mod device_update;
use device::{DeviceKept, DeviceTransfer};
use device_coarse::CoarsestOnOwner;

/// `P^T` of a rectangular distributed matrix: its parts transposed once (set-up), applied as
/// `y = diag^T x` plus the other ranks' `offd^T x` contributions to this rank's columns.
/// Invariant: `plans` are the transposes' plans of `diag_t` and `offd_t` (for new values of a
/// `P` on the same pattern, [`DistTranspose::transpose_values_of`]).
#[derive(Debug)]
pub struct DistTranspose {
    diag_t: Bsr,
    offd_t: Bsr,
    plans: Box<[linalg::TransposePlan; 2]>,
    /// The ghost rows' contributions of a GPU transpose (made at its first apply, reused).
    ghost: std::sync::Mutex<Option<Vector>>,
}

impl DistTranspose {
    /// Transposes the parts of `p` where they live (on a GPU the transposed patterns and slot
    /// maps are made there, [`linalg::TransposePlan::new_on`], and the blocks moved there;
    /// local).
    pub fn new(p: &DistBsr) -> Result<Self, AmgError> {
        let device = p.device();
        let plans = [
            linalg::TransposePlan::new_on(&device, p.diag().pattern())?,
            linalg::TransposePlan::new_on(&device, p.offd().pattern())?,
        ];
        let (br, bc) = (p.diag().block_rows(), p.diag().block_cols());
        let transposed = |m: &Bsr, plan: &linalg::TransposePlan| -> Result<Bsr, AmgError> {
            let mut t = Bsr::zeros_on(&device, plan.pattern().clone(), bc, br)?;
            linalg::transpose_numeric(plan, m, &mut t)?;
            Ok(t)
        };
        Ok(Self {
            diag_t: transposed(p.diag(), &plans[0])?,
            offd_t: transposed(p.offd(), &plans[1])?,
            plans: Box::new(plans),
            ghost: std::sync::Mutex::new(None),
        })
    }

    /// New values of `p` (on the pattern this transpose was made of) transposed into it, where
    /// both live (local).
    pub(crate) fn transpose_values_of(&mut self, p: &DistBsr) -> Result<(), AmgError> {
        linalg::transpose_numeric(&self.plans[0], p.diag(), &mut self.diag_t)?;
        linalg::transpose_numeric(&self.plans[1], p.offd(), &mut self.offd_t)?;
        Ok(())
    }

    /// Collective. `y = P^T x` (`x`: `p`'s row layout, `y`: its owned column layout). The
    /// contributions received from other ranks are added in rank order: bit-identical for a
    /// fixed rank count.
    pub fn apply(&self, p: &DistBsr, x: &Vector, y: &mut Vector) -> Result<(), AmgError> {
        if !self.diag_t.device().is_host() {
            return device::transpose_apply(self, p, x, y);
        }
        let pattern = p.pattern();
        let halo = pattern.halo();
        let bc = pattern.block_cols();
        // Local parts on plain host vectors (serial layouts), then the exchange.
        let xv = Vector::from_vec(x.host()?.to_vec());
        let mut own = Vector::zeros(self.diag_t.n_rows());
        self.diag_t.spmv(&xv, &mut own)?;
        let mut ghost = Vector::zeros(self.offd_t.n_rows());
        self.offd_t.spmv(&xv, &mut ghost)?;
        let ghost = ghost.to_host_vec()?;
        // Reverse halo: ghost contributions go to their owners; owned blocks receive from the
        // ranks that hold them as ghosts.
        let sends: Vec<(usize, &[f64])> = halo
            .receives()
            .iter()
            .map(|(r, range)| (*r, &ghost[range.start * bc..range.end * bc]))
            .collect();
        let mut buffers: Vec<Vec<f64>> = halo
            .sends()
            .iter()
            .map(|(_, blocks)| vec![0.0; blocks.len() * bc])
            .collect();
        {
            let mut recvs: Vec<(usize, &mut [f64])> = halo
                .sends()
                .iter()
                .zip(buffers.iter_mut())
                .map(|((r, _), b)| (*r, b.as_mut_slice()))
                .collect();
            halo.comm()
                .exchange(&sends, &mut recvs, &mut || ())
                .map_err(linalg::LinalgError::from)?;
        }
        let mut out = own.to_host_vec()?;
        for ((_, blocks), buf) in halo.sends().iter().zip(&buffers) {
            for (i, &b) in blocks.iter().enumerate() {
                let b = b as usize;
                for c in 0..bc {
                    out[b * bc + c] += buf[i * bc + c];
                }
            }
        }
        y.host_mut()?.copy_from_slice(&out);
        Ok(())
    }
}

/// The two-level Jacobi preconditioner (see the module doc). Borrowed operators; built once.
#[derive(Debug)]
pub struct DistTwoLevel<'a> {
    a: &'a DistBsr,
    p: &'a DistBsr,
    pt: DistTranspose,
    pbj: PointBlockJacobi,
    omega: f64,
    sweeps: usize,
    coarse: DenseFactor,
    /// First global coarse entry of this rank and its count.
    coarse_owned: std::ops::Range<usize>,
}

impl<'a> DistTwoLevel<'a> {
    /// Collective. `a`: the fine operator, `p`: the prolongator, `ac`: the Galerkin coarse
    /// operator (`P^T A P`, gathered here onto every rank and factored densely), `omega` and
    /// `sweeps`: the Jacobi smoothing.
    pub fn new(
        a: &'a DistBsr,
        p: &'a DistBsr,
        ac: &DistBsr,
        omega: f64,
        sweeps: usize,
    ) -> Result<Self, AmgError> {
        let cp = ac.pattern();
        let k = cp.block_size();
        let owned = cp.partition().owned_range();
        // rows in the global (rank) order: this preconditioner knows no serial ids
        let global_ids: Vec<u64> = (owned.start..owned.end).collect();
        let coarse = gather_factor(ac, &global_ids)?.factor;
        Ok(Self {
            a,
            p,
            pt: DistTranspose::new(p)?,
            pbj: PointBlockJacobi::new(a.diag())?,
            omega,
            sweeps,
            coarse,
            coarse_owned: owned.start as usize * k..owned.end as usize * k,
        })
    }

    /// `sweeps` of `z += omega D^{-1} (r - A z)`.
    fn smooth(&self, r: &Vector, z: &mut Vector, t: &mut Vector) -> Result<(), AmgError> {
        for _ in 0..self.sweeps {
            self.a.apply(z, t)?;
            ops::axpby(1.0, r, -1.0, t)?;
            self.pbj.apply_scaled(self.omega, t, 1.0, z)?;
        }
        Ok(())
    }
}

impl Preconditioner for DistTwoLevel<'_> {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        z.fill(0.0)?;
        let mut t = r.zeros_like()?;
        self.smooth(r, z, &mut t)?;
        // Coarse correction.
        self.a.apply(z, &mut t)?;
        ops::axpby(1.0, r, -1.0, &mut t)?;
        let mut rc = self.p.new_owned_vector();
        self.pt.apply(self.p, &t, &mut rc)?;
        let comm = self.p.pattern().partition().comm().clone();
        let whole: Vec<f64> = comm
            .allgatherv_f64(rc.host()?)
            .map_err(linalg::LinalgError::from)?
            .concat();
        let mut xc = Vector::from_vec(whole);
        self.coarse.solve_in_place(&mut xc)?;
        let mut xc_owned = self.p.new_owned_vector();
        xc_owned
            .host_mut()?
            .copy_from_slice(&xc.host()?[self.coarse_owned.clone()]);
        let mut correction = self.p.new_row_vector();
        self.p.apply(&xc_owned, &mut correction)?;
        ops::axpy(1.0, &correction, z)?;
        self.smooth(r, z, &mut t)
    }
}

/// The coarsest level's solver on ranks: redundant (the coarsest operator gathered on every
/// rank's host and factored in the serial order), or, where the level lives on GPUs and one
/// rank holds all of it (`process_eq_limit` gathered it there), inverted on its owner's GPU
/// (the other ranks have no rows of it and skip it). The same bits either way.
#[derive(Debug)]
pub struct CoarseSolve(Coarsest);

#[derive(Debug)]
enum Coarsest {
    Redundant(RedundantSolve),
    OnOwner(Box<CoarsestOnOwner>),
    Elsewhere,
}

/// The coarsest operator gathered on every rank and factored, its rows in the serial order.
#[derive(Debug)]
struct RedundantSolve {
    factor: DenseFactor,
    /// Serial position of each global (rank-order) coarse unknown.
    serial_of_global: Vec<usize>,
}

impl CoarseSolve {
    /// Collective. The solver of the coarsest operator `a` (`serial_ids`: of its owned block
    /// rows): redundant on the host, and on GPUs where several ranks hold the level (the
    /// operator downloaded for the gather); on its owner's GPU where one rank holds it.
    fn new(a: &DistBsr, serial_ids: &[u64]) -> Result<Self, AmgError> {
        let partition = a.pattern().partition();
        Ok(Self(if a.device().is_host() {
            Coarsest::Redundant(gather_factor(a, serial_ids)?)
        } else if partition.active_ranks() > 1 {
            Coarsest::Redundant(gather_factor(&a.to_device(&Device::Host)?, serial_ids)?)
        } else if partition.n_owned() == 0 {
            Coarsest::Elsewhere
        } else {
            // one rank owns every row: the global order is its owned order
            let serial_of_global: Vec<usize> = serial_ids.iter().map(|&s| s as usize).collect();
            let mut owner = CoarsestOnOwner::new(a, &serial_of_global)?;
            owner.factor(a)?;
            Coarsest::OnOwner(Box::new(owner))
        }))
    }

    /// Collective where redundant. After new values of the coarsest operator `a`: factored
    /// anew (on the owner's GPU in place: its maps stay).
    fn refactor(&mut self, a: &DistBsr, serial_ids: &[u64]) -> Result<(), AmgError> {
        match &mut self.0 {
            Coarsest::OnOwner(owner) => owner.factor(a),
            _ => {
                *self = Self::new(a, serial_ids)?;
                Ok(())
            }
        }
    }

    /// `x = A^{-1} b` on the coarsest level `a`.
    fn solve(&self, a: &DistBsr, b: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        match &self.0 {
            Coarsest::Redundant(solve) => solve.solve(a, b, x),
            Coarsest::OnOwner(owner) => owner.solve(b, x),
            Coarsest::Elsewhere => Ok(()),
        }
    }
}

/// The distributed smoothed-aggregation hierarchy: the one [`crate::Hierarchy`] on a rank's
/// rows, its algorithm and [`AmgParams`] on ranks. Built level after level from the
/// distributed pieces (strength graph with `strength_threshold`, MIS-2 aggregation on the first
/// `mis2_levels` levels and MIS-1 below, tentative prolongator, the eigenvalue estimate of
/// `D^{-1} A`, prolongator smoothing with `prolongator_omega_scale / emax`, Galerkin product),
/// stopping where the serial set-up stops (`coarse_eq_limit`, `max_levels`,
/// `min_coarsening_ratio`); the coarsest operator is gathered on every rank and factored densely
/// in the serial order. Its V-cycle and hot update are the serial hierarchy's (one code), on the
/// level operations of [`DistBsr`]; it is a [`Preconditioner`].
///
/// Aggregates, tentative prolongators and eigenvalue start vectors are the serial ones for any
/// rank count, and every reduction is exact (`linalg::exact`), so the hierarchy equals the
/// serial one up to the rounding of sums of products inside SpMV and the Galerkin product.
/// `storage: scalar` and `precision: mixed` are not available here (errors).
pub type DistHierarchy = Hierarchy<DistBsr>;

impl Hierarchy<DistBsr> {
    /// Collective. `a`: the fine operator, on the host or on this rank's GPU (the levels live
    /// where it does); `owned_serial_ids`: the serial ids of its owned block rows; `nns`: the
    /// owned block rows' near-null rows (`bs x k` each, row-major; a host `Vec` or a
    /// [`Vector`] on the host or on `a`'s GPU, where a renewal's tentative prolongator is then
    /// made: `DistTentativePlan::numeric_on_device`); `params`: the serial
    /// hierarchy's options (validated; `storage: scalar` and `precision: mixed` are errors).
    /// On a GPU each level's symbolic stages run on the host copy of its operator for now and
    /// its numeric ones on the device (the smoother's inverses and eigenvalue estimate, `P`'s
    /// values, the Galerkin product: `dist_cycle/device.rs`), the host set-up's values bit for
    /// bit.
    pub fn new(
        a: DistBsr,
        owned_serial_ids: &[u64],
        nns: impl Into<Vector>,
        k: usize,
        params: &AmgParams,
    ) -> Result<Self, AmgError> {
        let fine_nn = DistNearNull {
            serial_ids: owned_serial_ids.to_vec(),
            rows: nns.into(),
            k,
            device: LevelIds::default(),
        };
        Ok(Self::set_up(a, fine_nn, params, Vec::new())?.0)
    }

    /// [`Self::new`] offering level `l` the plans `kept[l]` of a hierarchy being renewed; with
    /// the number of levels that took them.
    fn set_up(
        a: DistBsr,
        fine_nn: DistNearNull,
        params: &AmgParams,
        kept: Vec<Option<KeptTransfer>>,
    ) -> Result<(Self, usize), AmgError> {
        params.validate()?;
        if params.storage == Storage::Scalar {
            return Err(AmgError::InvalidParameter {
                name: "storage",
                value: "scalar".into(),
                reason: "is not available on several MPI ranks (valid there: blocked)",
            });
        }
        if params.precision != crate::params::Precision::Double {
            return Err(AmgError::InvalidParameter {
                name: "precision",
                value: params.precision.name().into(),
                reason: "is not available on several MPI ranks (valid there: double)",
            });
        }
        let mut tm = SetupTimings::default();
        let built = build_levels(&a, &fine_nn, params, 0, kept, &mut tm)?;
        let mut levels = Level::from_built(built.levels, a.pattern().block_size());
        levels[0].a = Some(a);
        levels[0].near_null = Some(fine_nn);
        let last = levels.last().ok_or(AmgError::MissingFineOperator)?;
        let coarsest = last.a.as_ref().ok_or(AmgError::MissingFineOperator)?;
        let device = coarsest.device();
        let coarse = timed_moving(
            &mut tm.coarse_factor_s,
            &mut tm.transfers.coarse_factor,
            &device,
            || coarsest.factor_coarse(last.near_null.as_ref()),
        )?;
        let fine = levels[0].a.as_ref().ok_or(AmgError::MissingFineOperator)?;
        let work = std::sync::Mutex::new(Self::new_workspace(&levels, fine)?);
        let hierarchy = Self {
            params: params.clone(),
            levels,
            transfers: built.transfers,
            coarse,
            next_version: built.next_version,
            state: tm,
            work,
        };
        Ok((hierarchy, built.plans_reused))
    }

    /// This rank's stage timings of the last cold set-up or renewal (`total_s` unset: the
    /// caller times the whole call).
    pub fn setup_timings(&self) -> &SetupTimings {
        &self.state
    }

    /// Where the levels live (the fine operator's device).
    pub fn device(&self) -> Device {
        self.levels[0]
            .a
            .as_ref()
            .map_or(Device::Host, DistBsr::device)
    }

    /// The fine operator `a` of an update or renewal made the hierarchy's: on a GPU, where
    /// the hierarchy holds a fine operator on `a`'s pattern, `a`'s values are copied into it
    /// (the device plans bound to it, its halo's among them, stay); else `a` itself. Level 0
    /// holds none until the caller puts the result back.
    fn install_fine(&mut self, a: DistBsr) -> Result<DistBsr, AmgError> {
        match self.levels[0].a.take() {
            Some(mut held)
                if !held.device().is_host() && Arc::ptr_eq(held.pattern(), a.pattern()) =>
            {
                held.copy_values_from(&a)?;
                Ok(held)
            }
            _ => Ok(a),
        }
    }

    /// Where an update or renewal with the fine operator `a` moves its bytes (whose counters its
    /// report reads): the held fine operator's device (`a`'s values are copied there), else
    /// `a`'s.
    fn transfer_device(&self, a: &DistBsr) -> Device {
        self.levels[0]
            .a
            .as_ref()
            .map_or_else(|| a.device(), DistBsr::device)
    }

    /// The fine operator handed back to the caller (the hierarchy holds none until the next
    /// [`Self::update`] or [`Self::set_near_null_space`] gives it one): for a caller that
    /// refills the operator where it lives, as a rank's GPU solve does, without a second copy.
    pub fn take_operator(&mut self) -> Option<DistBsr> {
        self.levels[0].a.take()
    }

    /// Collective. New values of the fine operator (the same pattern; on a GPU `a` may be a
    /// host or device matrix: its values are copied into the hierarchy's, see
    /// [`Self::take_operator`] to avoid the copy), handled as `params.reuse` says:
    /// `interpolation` keeps the prolongators and recomputes, level after level, the smoother
    /// diagonals, eigenvalue estimates (if `recompute_eigs`), the Galerkin products and the
    /// coarse factor (the serial hierarchy's hot update; where the levels live: on a GPU only
    /// the off-rank coarse blocks and scalars cross, the coarsest is inverted on its owner's
    /// GPU where one rank holds it); `full` only replaces the fine operator (the smoothers and
    /// coarse levels stay); `none` sets up afresh. The report's prolongator values sent are 0
    /// for `interpolation` and `full`, since no `P` changed (the `P_oth` copies are reused); its
    /// transfers are the device's counters, its timings this rank's. On a GPU the result is
    /// the host update's, bit for bit.
    pub fn update(&mut self, a: DistBsr) -> Result<UpdateReport, AmgError> {
        let started = Instant::now();
        let device = self.transfer_device(&a);
        let at = device.transfers();
        let mut tm = SetupTimings::default();
        let mut messages = MessageReport::default();
        let mut rebuilt = 0;
        match self.params.reuse {
            Reuse::None => {
                let nn = self.levels[0]
                    .near_null
                    .take()
                    .ok_or(AmgError::MissingFineOperator)?;
                self.levels.clear();
                let params = self.params.clone();
                *self = Self::new(a, &nn.serial_ids, nn.rows, nn.k, &params)?;
                rebuilt = self.levels.len() - 1;
            }
            Reuse::Full => {
                let fine = timed(&mut tm.copy_operator_s, || self.install_fine(a))?;
                self.levels[0].a = Some(fine);
            }
            Reuse::Interpolation => {
                let fine = timed(&mut tm.copy_operator_s, || self.install_fine(a))?;
                let hot = self.hot_update(&fine, &mut tm, &mut messages);
                self.levels[0].a = Some(fine);
                hot?;
            }
        }
        tm.total_s = started.elapsed().as_secs_f64();
        Ok(UpdateReport {
            reuse: self.params.reuse,
            p_versions: self.p_versions(),
            transposes_rebuilt: rebuilt,
            galerkin_plans_rebuilt: rebuilt,
            timings: tm,
            transfers: TransferReport::between(at, device.transfers()),
            messages,
        })
    }

    /// Collective. Rebuilds the hierarchy for the fine operator `a` (the last set-up's pattern;
    /// on a GPU as [`Self::update`] takes it) and new near-null rows `nns` of the owned block
    /// rows (`bs x k` each, the set-up's serial ids and `k`): the values of a cold set-up with
    /// these inputs, bit for bit, through the one set-up loop, as
    /// [`crate::Hierarchy::set_near_null_space`] renews the serial hierarchy. With `renewal:
    /// keep_aggregates` each level keeps its aggregates and every plan (counted in
    /// `plans_reused`): the tentative prolongator's exchange, the smoothing's and the Galerkin
    /// product's symbolic phases, so every level's patterns (the same `Arc`s) and only values
    /// are made (two all-to-alls of near-null rows, `P0`'s ghost rows, the products' numeric
    /// phases); on a GPU those numeric phases run where the levels live and the fine operator
    /// never comes down (`dist_cycle/device_renewal.rs`). With `recompute` each level's graph and
    /// aggregates are made anew (on a GPU from the host copy of its operator) and the level
    /// takes that same kept path where every rank's aggregates came out as before (for the
    /// operator pattern its plans were made for: a level below one made afresh is made afresh
    /// too), the serial renewal's rule; else it is coarsened afresh. `plans_reused` counts the
    /// levels that kept their plans. A level's old values go before its new ones are built.
    /// The report's transfers are the device's counters. On error the hierarchy must be
    /// rebuilt by a set-up.
    pub fn set_near_null_space(
        &mut self,
        a: DistBsr,
        nns: impl Into<Vector>,
    ) -> Result<RenewalReport, AmgError> {
        let nns = nns.into();
        let started = Instant::now();
        let device = self.transfer_device(&a);
        let at = device.transfers();
        let fine = self.install_fine(a)?;
        let nn = self.levels[0]
            .near_null
            .take()
            .ok_or(AmgError::MissingFineOperator)?;
        let mut kept = Vec::with_capacity(self.transfers.len());
        for (l, t) in std::mem::take(&mut self.transfers).into_iter().enumerate() {
            let (next, next_near_null) = match self.levels.get_mut(l + 1) {
                Some(lev) => (lev.a.take(), lev.near_null.take()),
                None => (None, None),
            };
            let diagonal = self.levels[l].smoother.take().map(|s| s.pbj);
            kept.push(t.into_kept(next, next_near_null, diagonal));
        }
        self.levels.clear();
        let params = self.params.clone();
        // the same serial ids: the fine level's device parts (the eigenvalue start vector, the
        // graph's ids) are kept where they live
        let fine_nn = DistNearNull { rows: nns, ..nn };
        let (renewed, reused) = Self::set_up(fine, fine_nn, &params, kept)?;
        *self = renewed;
        Ok(RenewalReport {
            plans_reused: reused,
            plans_built: self.levels.len() - 1 - reused,
            timings: SetupTimings {
                total_s: started.elapsed().as_secs_f64(),
                ..self.state.clone()
            },
            transfers: TransferReport::between(at, device.transfers()),
        })
    }

    /// Global unknowns of each level, finest first.
    pub fn level_unknowns(&self) -> Vec<usize> {
        self.levels
            .iter()
            .filter_map(|l| l.a.as_ref().map(LevelMatrix::global_unknowns))
            .collect()
    }

    /// Ranks holding rows of each level, finest first (fewer below where `process_eq_limit`
    /// gathered a level).
    pub fn level_ranks(&self) -> Vec<usize> {
        self.levels
            .iter()
            .filter_map(|l| l.a.as_ref().map(|a| a.pattern().partition().active_ranks()))
            .collect()
    }

    /// The operator of level `level`.
    pub fn level_operator(&self, level: usize) -> Option<&DistBsr> {
        self.operator(level)
    }

    /// The smoother of level `level` (above the coarsest).
    pub fn level_smoother(&self, level: usize) -> Option<&Smoother> {
        self.smoother(level)
    }
}

impl RedundantSolve {
    /// The coarsest level `a`: the right-hand side gathered (downloaded from a GPU), put in the
    /// serial order, solved on the host; the owned entries of the solution written into `x`
    /// where it lives. Where one rank holds the whole level, it solves alone (no collective)
    /// and the others, without rows, do nothing.
    fn solve(&self, a: &DistBsr, b: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        let partition = a.pattern().partition();
        let whole: Vec<f64> = if partition.active_ranks() == 1 {
            if partition.n_owned() == 0 {
                return Ok(());
            }
            b.to_host_vec()?
        } else {
            partition
                .comm()
                .allgatherv_f64(&b.to_host_vec()?)
                .map_err(linalg::LinalgError::from)?
                .concat()
        };
        let bs = a.pattern().block_size();
        let order = &self.serial_of_global;
        let mut in_serial = vec![0.0; whole.len()];
        for (g, &s) in order.iter().enumerate() {
            in_serial[s * bs..(s + 1) * bs].copy_from_slice(&whole[g * bs..(g + 1) * bs]);
        }
        let mut y = Vector::from_vec(in_serial);
        self.factor.solve_in_place(&mut y)?;
        let y = y.host()?;
        let first = a.pattern().partition().owned_range().start as usize;
        let mut xs = vec![0.0; x.len()];
        for i in 0..xs.len() / bs {
            let s = order[first + i];
            xs[i * bs..(i + 1) * bs].copy_from_slice(&y[s * bs..(s + 1) * bs]);
        }
        Ok(x.copy_from_host(&xs)?)
    }
}

/// A level's near-null space on ranks: the owned block rows' serial ids and their near-null
/// rows (`bs x k` per block row, row-major).
#[derive(Debug)]
pub struct DistNearNull {
    serial_ids: Vec<u64>,
    /// The owned vertices' rows (`bs x k` each, row-major), on the host or on the level's GPU.
    rows: Vector,
    k: usize,
    /// What a level on a GPU keeps of these serial ids there (none on the host).
    device: LevelIds,
}

/// A device level's data that depends only on its serial ids (and its operator's pattern):
/// made at its first use there and kept by a renewal whose level has the same ids
/// ([`DistNearNull::keeping_device_parts_of`]).
#[derive(Debug, Default)]
struct LevelIds {
    /// The eigenvalue estimate's start vector (uploaded once, by the first estimate there: a
    /// hot update moves none).
    start: OnceLock<Vector>,
    /// The strength graph's local vertex ids on the GPU (owned, ghosts), for the operator
    /// pattern they were made for.
    graph: Mutex<Option<Arc<DeviceSerialIds>>>,
}

impl DistNearNull {
    /// The rows on the host (downloaded where they live on a GPU).
    fn host_rows(&self) -> Result<std::borrow::Cow<'_, [f64]>, AmgError> {
        Ok(match self.rows.host() {
            Ok(host) => std::borrow::Cow::Borrowed(host),
            Err(_) => std::borrow::Cow::Owned(self.rows.to_host_vec()?),
        })
    }

    /// This level's near-null space keeping the device parts of `old` (the renewed level's
    /// previous one: the eigenvalue start vector, the graph's vertex ids) where their serial
    /// ids are the same, so the same entries: a GPU renewal moves none. `old` is dropped
    /// otherwise.
    pub(super) fn keeping_device_parts_of(mut self, old: Option<DistNearNull>) -> Self {
        if let Some(old) = old {
            if old.serial_ids == self.serial_ids {
                self.device = old.device;
            }
        }
        self
    }

    /// Collective. The vertex ids of the device strength graph of this level's operator `a`:
    /// those kept where they serve `a` on every rank, else made (and kept for the next).
    fn graph_ids(&self, a: &DistBsr) -> Result<Arc<DeviceSerialIds>, AmgError> {
        let mut kept = self
            .device
            .graph
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(ids) = kept.as_ref() {
            if DeviceSerialIds::serve(Some(ids), a, &self.serial_ids)? {
                return Ok(ids.clone());
            }
        } else {
            // every rank answers the same collective question
            DeviceSerialIds::serve(None, a, &self.serial_ids)?;
        }
        let ids = Arc::new(DeviceSerialIds::new(a, &self.serial_ids)?);
        *kept = Some(ids.clone());
        Ok(ids)
    }

    /// The start vector of the eigenvalue estimate of the level `a` (the serial one, hashed
    /// at the serial index of each owned unknown), a vector of its own where `a` lives.
    fn start_vector(&self, a: &DistBsr) -> Result<Vector, AmgError> {
        use rayon::prelude::*;
        // the entries are written only where a vector takes them: a GPU level's later
        // estimates (each hot update's) copy the vector kept there and list nothing
        let bs = a.pattern().block_size();
        let fill = |out: &mut [f64]| {
            out.par_chunks_mut(bs.max(1))
                .zip(self.serial_ids.par_iter())
                .for_each(|(row, &s)| {
                    for (c, v) in row.iter_mut().enumerate() {
                        *v = crate::eig::start_entry(bs as u64 * s + c as u64);
                    }
                });
        };
        if a.device().is_host() {
            let mut r = a.new_owned_vector();
            fill(r.host_mut()?);
            return Ok(r);
        }
        // the vector on `a`'s GPU, its entries uploaded
        let uploaded = || -> Result<Vector, AmgError> {
            let mut start = a.owned_zeros()?;
            let mut entries = vec![0.0; start.len()];
            fill(&mut entries);
            start.copy_from_host(&entries)?;
            Ok(start)
        };
        let start = match self.device.start.get() {
            Some(start) if start.device().same_as(&a.device()) => start,
            // kept from a level that lived elsewhere: a vector of its own here
            Some(_) => return uploaded(),
            None => {
                let start = uploaded()?;
                self.device.start.get_or_init(|| start)
            }
        };
        let mut r = start.zeros_like()?;
        r.copy_from(start)?;
        Ok(r)
    }
}

/// The transfer of a distributed level: `P` and its transpose where the level lives, the host
/// plans that made `P` and its Galerkin product (kept for a renewal with `renewal:
/// keep_aggregates`; `None` in a copy made by [`DistHierarchy::to_device`]), and on a GPU
/// the device parts of the numeric phases.
#[derive(Debug)]
pub struct DistTransfer {
    pub(crate) p: DistBsr,
    pub(crate) pt: DistTranspose,
    plans: Option<HostPlans>,
    device: Option<DeviceTransfer>,
}

/// The host plans of a level's transfer: the Galerkin product's (the host hot update's, and
/// `P`'s views of a kept renewal), the tentative prolongator's (which holds the aggregates)
/// and the prolongator smoothing's (`None` for unsmoothed aggregation).
#[derive(Debug)]
struct HostPlans {
    galerkin: GalerkinPlan,
    tentative: DistTentativePlan,
    smoothing: Option<SmoothingPlan>,
}

impl HostPlans {
    /// True when the plans were made for `a`'s pattern (local): on a GPU the same object
    /// (the level's device plans are bound to it, and a level below one made afresh has a new
    /// one), on the host the same blocks.
    fn made_for(&self, a: &DistBsr) -> bool {
        let Some((plan, _)) = self.galerkin.current() else {
            return false;
        };
        if a.device().is_host() {
            return plan.fits(a);
        }
        let (diag, offd) = plan.a_patterns();
        Arc::ptr_eq(a.pattern().diag(), diag) && Arc::ptr_eq(a.pattern().offd(), offd)
    }
}

/// What a renewal keeps of a level on ranks: every symbolic phase (aggregates, the tentative
/// prolongator's exchange, the smoothing's and the Galerkin product's plans); on a GPU also
/// the device storage the new values go into (`DeviceKept`). The host `P` and its transpose
/// go. With `renewal: keep_aggregates` it is used as it is; with `recompute` only where every
/// rank's recomputed aggregates came out as the kept ones (for the level operator the plans
/// were made for).
#[derive(Debug)]
pub struct KeptTransfer {
    plans: HostPlans,
    device: Option<DeviceKept>,
}

/// A transfer's host plans (an error in a device copy, which has none).
fn plans_of(plans: &mut Option<HostPlans>) -> Result<&mut HostPlans, AmgError> {
    plans.as_mut().ok_or(AmgError::InvalidParameter {
        name: "distributed transfer",
        value: "a device copy".into(),
        reason: "has no host plans (its hot update runs on the device)",
    })
}

impl DistTransfer {
    /// What a kept renewal reuses of this transfer (`None` without host plans); on a GPU
    /// `next`, the next level's operator, and `diagonal`, the level's smoother inverses, give
    /// their device storage to the new values, and `next_near_null`, the next level's
    /// near-null space, its device parts (the eigenvalue start vector, the graph's ids).
    fn into_kept(
        self,
        next: Option<DistBsr>,
        next_near_null: Option<DistNearNull>,
        diagonal: Option<PointBlockJacobi>,
    ) -> Option<KeptTransfer> {
        let plans = self.plans?;
        let device = match (self.device, next) {
            (Some(transfer), Some(next)) => Some(DeviceKept {
                p: self.p,
                pt: self.pt,
                transfer,
                next,
                next_near_null,
                diagonal,
            }),
            _ => None,
        };
        Some(KeptTransfer { plans, device })
    }
}

/// A rank's rows: the stages on the distributed kernels, as the serial level's (the same
/// aggregates, tentative prolongators and eigenvalue start vectors for any rank count); the
/// coarse level is telescoped onto fewer ranks by `process_eq_limit`. A renewal keeps the
/// aggregates and every plan with `renewal: keep_aggregates` (`coarsen_kept`); with
/// `recompute` it keeps them where the recomputed aggregates are the same on every rank
/// ([`recompute_aggregates`]). Where the operator lives on a GPU, each stage decides where it runs
/// (`device::coarsen`, `device_renewal::coarsen_kept`); the hot update's numerics, the
/// eigenvalue estimates, the V-cycle and the coarsest solve run there.
impl LevelMatrix for DistBsr {
    type NearNull = DistNearNull;
    type Transfer = DistTransfer;
    type Coarse = CoarseSolve;
    /// This rank's stage timings of the last cold set-up or renewal.
    type State = SetupTimings;
    type Symbolic = KeptTransfer;

    fn global_unknowns(&self) -> usize {
        self.pattern().partition().global_len() as usize * self.pattern().block_size()
    }

    fn coarsen(
        &self,
        near_null: &DistNearNull,
        level: usize,
        _version: u64,
        params: &AmgParams,
        tm: &mut SetupTimings,
        previous: Option<KeptTransfer>,
    ) -> Result<Option<Coarsened<DistBsr>>, AmgError> {
        let (kept, aggregated) = match (previous, params.renewal) {
            (None, _) => (None, None),
            (Some(kept), Renewal::KeepAggregates) => (Some(kept), None),
            (Some(kept), Renewal::Recompute) => {
                match recompute_aggregates(self, near_null, level, params, tm, kept)? {
                    Recomputed::Unchanged(kept) => (Some(*kept), None),
                    Recomputed::Changed(aggregated) => (None, Some(*aggregated)),
                }
            }
        };
        if self.device().is_host() {
            return match kept {
                Some(kept) => {
                    coarsen_kept(self, near_null, level, params, tm, kept.plans).map(Some)
                }
                None => coarsen(self, near_null, level, params, tm, aggregated),
            };
        }
        match kept {
            Some(KeptTransfer {
                plans,
                device: Some(device),
            }) => device_renewal::coarsen_kept(self, near_null, level, params, tm, plans, device)
                .map(Some),
            Some(KeptTransfer { plans, .. }) => {
                device::coarsen_kept_on_host(self, near_null, level, params, tm, plans).map(Some)
            }
            None => device::coarsen(self, near_null, level, params, tm, aggregated),
        }
    }

    fn near_null_vectors(near_null: &DistNearNull) -> usize {
        near_null.k
    }

    fn p_version(transfer: &DistTransfer) -> u64 {
        transfer.p.version()
    }

    fn restrict(transfer: &DistTransfer, r: &Vector, rc: &mut Vector) -> Result<(), AmgError> {
        transfer.pt.apply(&transfer.p, r, rc)
    }

    /// The product into `P`'s scratch, then added (the bits of apply and axpy).
    fn prolong_add(transfer: &DistTransfer, xc: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        Ok(transfer.p.add_scaled_product(1.0, xc, x)?)
    }

    /// See [`CoarseSolve`]: in the serial order of the level's rows.
    fn factor_coarse(&self, near_null: Option<&DistNearNull>) -> Result<CoarseSolve, AmgError> {
        let nn = near_null.ok_or(AmgError::MissingFineOperator)?;
        CoarseSolve::new(self, &nn.serial_ids)
    }

    fn refactor_coarse(
        &self,
        coarse: &mut CoarseSolve,
        near_null: Option<&DistNearNull>,
    ) -> Result<(), AmgError> {
        let nn = near_null.ok_or(AmgError::MissingFineOperator)?;
        coarse.refactor(self, &nn.serial_ids)
    }

    fn coarse_solve(
        &self,
        coarse: &CoarseSolve,
        b: &Vector,
        x: &mut Vector,
    ) -> Result<(), AmgError> {
        coarse.solve(self, b, x)
    }

    /// In place, where the operator lives.
    fn refresh_diagonal(&self, pbj: &mut PointBlockJacobi, _bs: usize) -> Result<(), AmgError> {
        pbj.update(self.diag())
    }

    /// From the serial start vector (hashed at the serial index of each owned unknown; kept
    /// on a GPU), in vectors of its own.
    fn hot_emax(
        &self,
        pbj: &PointBlockJacobi,
        near_null: Option<&DistNearNull>,
        level: usize,
        params: &AmgParams,
        _work: &mut LevelWork,
    ) -> Result<Option<f64>, AmgError> {
        let nn = near_null.ok_or(AmgError::MissingFineOperator)?;
        dist_emax(self, pbj, nn, params, level).map(Some)
    }

    /// The Galerkin plan holds for the level's pattern (fixed on ranks).
    fn replan_galerkin(
        _transfer: &mut DistTransfer,
        _a: &DistBsr,
        _next: Option<&mut DistBsr>,
    ) -> Result<bool, AmgError> {
        Ok(false)
    }

    /// The coarse operator's values overwritten in place (no allocation per update): on a
    /// GPU through the device plan (only the off-rank partial blocks cross; ended by a
    /// device synchronisation, so that the phase's time is its work's), else the host's.
    fn galerkin_into(
        tr: &mut DistTransfer,
        a: &DistBsr,
        next: &mut DistBsr,
        messages: &mut MessageReport,
    ) -> Result<(), AmgError> {
        if let Some(device) = &mut tr.device {
            messages.sent_bytes += device.galerkin.numeric(a, next)?;
            messages.received_bytes += device.galerkin.bytes_received();
            a.device().synchronize()?;
            return Ok(());
        }
        let p = &tr.p;
        let galerkin = &mut plans_of(&mut tr.plans)?.galerkin;
        messages.prolongator_values += galerkin.product_into(a, p, next)? as u64;
        messages.sent_bytes += galerkin.last_sent_bytes();
        Ok(())
    }

    fn level_work(&self, finest: bool) -> Result<LevelWork, AmgError> {
        let (b, x) = if finest {
            (Vector::zeros(0), Vector::zeros(0))
        } else {
            (self.owned_zeros()?, self.owned_zeros()?)
        };
        Ok(LevelWork {
            b,
            x,
            sw: SmootherWork {
                r: self.owned_zeros()?,
                d: self.owned_zeros()?,
            },
        })
    }
}

/// Collective. The stages graph and coarsen of a level: `a`'s strength graph and the
/// aggregate label of each owned vertex (MIS-2 on the first `mis2_levels` levels, MIS-1 below).
fn aggregate(
    a: &DistBsr,
    near_null: &DistNearNull,
    level: usize,
    params: &AmgParams,
    tm: &mut SetupTimings,
) -> Result<Aggregated, AmgError> {
    use crate::dist_aggregation::{
        dist_aggregate, dist_aggregate_on_device, dist_strength_graph,
        dist_strength_graph_on_device,
    };

    let bs = a.pattern().block_size();
    let (threshold, ids) = (params.strength_threshold, &near_null.serial_ids[..]);
    let distance = if level < params.mis2_levels {
        MisDistance::Two
    } else {
        MisDistance::One
    };
    let device = a.device();
    if device.is_host() {
        let graph = timed_moving(&mut tm.graph_s, &mut tm.transfers.coarsen, &device, || {
            dist_strength_graph(a, threshold, ids)
        })?;
        let labels = timed_moving(
            &mut tm.aggregation_s,
            &mut tm.transfers.coarsen,
            &device,
            || dist_aggregate(&graph, distance, bs, near_null.k),
        )?;
        return Ok(Aggregated {
            serial_ids: graph.serial_ids,
            labels,
        });
    }
    // on the rank's GPU: the graph stays there, its ghosts' states exchanged GPU to GPU
    let mut graph = timed_moving(&mut tm.graph_s, &mut tm.transfers.coarsen, &device, || {
        let ids = near_null.graph_ids(a)?;
        let g = dist_strength_graph_on_device(a, threshold, &ids)?;
        device.synchronize()?;
        Ok::<_, AmgError>(g)
    })?;
    let labels = timed_moving(
        &mut tm.aggregation_s,
        &mut tm.transfers.coarsen,
        &device,
        || dist_aggregate_on_device(&mut graph, distance, bs, near_null.k),
    )?;
    Ok(Aggregated {
        serial_ids: graph.serial_ids().to_vec(),
        labels,
    })
}

/// The serial ids of a level's local vertices (owned, then its strength graph's ghosts) and
/// the aggregate labels of its owned vertices (what [`aggregate`] makes and [`coarsen`]
/// coarsens by).
#[derive(Debug)]
struct Aggregated {
    serial_ids: Vec<u64>,
    labels: Vec<u32>,
}

/// What a renewal that recomputes the aggregates found on a level ([`recompute_aggregates`]).
enum Recomputed {
    /// Every rank's aggregates are the kept ones: the kept plans give the cold values.
    Unchanged(Box<KeptTransfer>),
    /// Some rank's differ (or the plans were made for another operator pattern): the level is
    /// coarsened afresh by these.
    Changed(Box<Aggregated>),
}

/// Collective. A renewal with `renewal: recompute` of the level `a` that kept `kept`: the
/// level's strength graph and aggregates made anew (of a device level: on its GPU) and
/// compared with the kept ones on every rank. Where they are the same
/// everywhere, the kept plans give a cold set-up's values bit for bit (the symbolic phases
/// depend on the aggregates and the patterns only), so the level takes the kept renewal's path
/// (on a GPU its numeric phases run there); the serial renewal's rule
/// ([`crate::Hierarchy::set_near_null_space`]).
fn recompute_aggregates(
    a: &DistBsr,
    near_null: &DistNearNull,
    level: usize,
    params: &AmgParams,
    tm: &mut SetupTimings,
    kept: KeptTransfer,
) -> Result<Recomputed, AmgError> {
    let aggregated = aggregate(a, near_null, level, params, tm)?;
    let same = kept.plans.tentative.made_from(&aggregated.labels) && kept.plans.made_for(a);
    let mut changed = [f64::from(u8::from(!same))];
    a.pattern()
        .partition()
        .comm()
        .allreduce_max(&mut changed)
        .map_err(linalg::LinalgError::from)?;
    Ok(if changed[0] > 0.0 {
        Recomputed::Changed(Box::new(aggregated))
    } else {
        Recomputed::Unchanged(Box::new(kept))
    })
}

/// Coarsens one level as the serial set-up's `coarsen_level` does; `None` where the serial
/// set-up stops (nothing to aggregate, or rows shrinking by less than `min_coarsening_ratio`).
/// `aggregated`: the level's graph and aggregates where a renewal made them already.
fn coarsen(
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
    }) = tentative_level(a, near_null, level, params, tm, aggregated)?
    else {
        return Ok(None);
    };
    let (pbj, emax) = timed(&mut tm.smoother_setup_s, || {
        level_diagonal(a, near_null, params, level)
    })?;
    let mut smoothing = if params.smooth_prolongator {
        Some(timed(&mut tm.smoothing_s, || {
            SmoothingPlan::new(a, &serial_ids, &t)
        })?)
    } else {
        None
    };
    let (p, coarse) = smooth(a, t, &pbj, emax, &mut smoothing, params, tm)?;
    let mut galerkin = timed(&mut tm.galerkin_symbolic_s, || {
        GalerkinPlan::new(a, &serial_ids, &p, &coarse.serial_ids)
    })?;
    if let Some(plan) = &smoothing {
        galerkin.share_a_local(plan.a_local());
    }
    let (ac, _) = timed(&mut tm.galerkin_numeric_s, || galerkin.product(a, &p))?;
    let plans = HostPlans {
        galerkin,
        tentative,
        smoothing,
    };
    finish_level(p, ac, coarse, plans, (pbj, emax), params, tm, false).map(Some)
}

/// A level's local serial ids (owned, then ghosts) with its tentative prolongator and the plan
/// that made it (telescoped onto fewer ranks where `process_eq_limit` says so): the stages of a
/// cold coarsening before the smoothing.
struct TentativeLevel {
    serial_ids: Vec<u64>,
    /// `P0` and the coarse near-null rows, on the level's GPU where they were made there.
    t: DistTentative,
    plan: DistTentativePlan,
}

/// Collective. The stages graph, coarsen and prolongator of a cold coarsening of `a` (where it
/// lives: the graph needs its block norms only, on the host); `None` where the set-up stops here
/// ([`coarsening_stalled`]). `aggregated`: the graph and aggregates a renewal made already.
fn tentative_level(
    a: &DistBsr,
    near_null: &DistNearNull,
    level: usize,
    params: &AmgParams,
    tm: &mut SetupTimings,
    aggregated: Option<Aggregated>,
) -> Result<Option<TentativeLevel>, AmgError> {
    use crate::dist_telescope::{coarse_ranks, onto_first_ranks};
    use crate::dist_tentative::{dist_tentative_plan, dist_tentative_planned};

    let k = near_null.k;
    let bs = a.pattern().block_size();
    let Aggregated { serial_ids, labels } = match aggregated {
        Some(done) => done,
        None => aggregate(a, near_null, level, params, tm)?,
    };
    let fine = a.pattern().partition().clone();
    let device = a.device();
    let active = fine.active_ranks();
    let ranks_for =
        |coarse_rows: usize| coarse_ranks(coarse_rows, params.process_eq_limit(), active);
    // near-null rows on the level's GPU: the plan on the host (no rows travel), `P0` made
    // there (`numeric_on_device`) unless the coarse level moves onto fewer ranks (`P0`'s
    // columns move on the host then)
    let on_device = !device.is_host() && near_null.rows.device().same_as(&device);
    let (made, mut tentative) = timed_moving(
        &mut tm.tentative_s,
        &mut tm.transfers.tentative,
        &device,
        || {
            if !on_device {
                let rows = near_null.host_rows()?;
                let (t, plan) = dist_tentative_planned(&serial_ids, &labels, &rows, bs, k, &fine)?;
                return Ok::<_, AmgError>((Some(t), plan));
            }
            Ok((
                None,
                dist_tentative_plan(&serial_ids, &labels, bs, k, &fine)?,
            ))
        },
    )?;
    let coarse_rows = tentative.coarse_partition().global_len() as usize * k;
    if coarsening_stalled(a.global_unknowns(), coarse_rows, params) {
        return Ok(None);
    }
    let ranks = ranks_for(coarse_rows);
    let t = match made {
        Some(t) => t,
        // `P0` made on the GPU, unless its columns move onto fewer ranks (on the host)
        None => timed_moving(
            &mut tm.tentative_s,
            &mut tm.transfers.tentative,
            &device,
            || match ranks == active {
                true => tentative.numeric_on_device(&near_null.rows),
                false => tentative.numeric(&near_null.host_rows()?),
            },
        )?,
    };
    let t = if ranks < active {
        let t = timed(&mut tm.tentative_s, || onto_first_ranks(t, ranks, k))?;
        tentative.telescoped(&t);
        t
    } else {
        t
    };
    Ok(Some(TentativeLevel {
        serial_ids,
        t,
        plan: tentative,
    }))
}

/// [`coarsen`] for a renewal that keeps the level's aggregates: the values of a cold
/// coarsening whose aggregation had given the kept aggregates, through the kept plans (the
/// tentative prolongator's two all-to-alls of values, the smoothing and Galerkin numeric
/// phases); every pattern, the coarse operator's included, is the kept one (`Arc`).
fn coarsen_kept(
    a: &DistBsr,
    near_null: &DistNearNull,
    level: usize,
    params: &AmgParams,
    tm: &mut SetupTimings,
    mut plans: HostPlans,
) -> Result<Coarsened<DistBsr>, AmgError> {
    let t = timed(&mut tm.tentative_s, || {
        plans.tentative.numeric(&near_null.host_rows()?)
    })?;
    let (pbj, emax) = timed(&mut tm.smoother_setup_s, || {
        level_diagonal(a, near_null, params, level)
    })?;
    let (p, coarse) = smooth(a, t, &pbj, emax, &mut plans.smoothing, params, tm)?;
    let ac = timed(&mut tm.galerkin_numeric_s, || plans.galerkin.renew(a, &p))?;
    finish_level(p, ac, coarse, plans, (pbj, emax), params, tm, true)
}

/// Collective. The point-block Jacobi of `a`'s diagonal part and the estimate of
/// `lambda_max(D^{-1} A)` (the serial start vector of the level of near-null space
/// `near_null`).
fn level_diagonal(
    a: &DistBsr,
    near_null: &DistNearNull,
    params: &AmgParams,
    level: usize,
) -> Result<(PointBlockJacobi, f64), AmgError> {
    let pbj = PointBlockJacobi::new(a.diag()).map_err(|e| with_level(e, level))?;
    let emax = dist_emax(a, &pbj, near_null, params, level)?;
    Ok((pbj, emax))
}

/// Collective. `P`: the tentative prolongator `t` smoothed through the level's plan
/// `smoothing` with `omega = prolongator_omega_scale / emax`, or `t`'s itself (unsmoothed
/// aggregation); and the coarse level's near-null space (`t`'s coarse vertices).
fn smooth(
    a: &DistBsr,
    t: DistTentative,
    pbj: &PointBlockJacobi,
    emax: f64,
    smoothing: &mut Option<SmoothingPlan>,
    params: &AmgParams,
    tm: &mut SetupTimings,
) -> Result<(DistBsr, DistNearNull), AmgError> {
    let p = match smoothing {
        Some(plan) => {
            let omega = params.prolongator_omega_scale / emax;
            timed(&mut tm.smoothing_s, || plan.numeric(a, &t, pbj, omega))?
        }
        None => t.p,
    };
    let k = p.pattern().block_cols();
    let coarse = DistNearNull {
        serial_ids: t.coarse_serial_ids,
        rows: t.coarse_nns,
        k,
        device: LevelIds::default(),
    };
    Ok((p, coarse))
}

/// The coarsened level from its pieces (`diagonal`: the level's point-block Jacobi and
/// eigenvalue estimate; the Galerkin plan's host buffers released: a hot update on the host
/// makes them again, on a GPU they live on the device).
#[allow(clippy::too_many_arguments)]
fn finish_level(
    p: DistBsr,
    ac: DistBsr,
    near_null: DistNearNull,
    mut plans: HostPlans,
    diagonal: (PointBlockJacobi, f64),
    params: &AmgParams,
    tm: &mut SetupTimings,
    plans_reused: bool,
) -> Result<Coarsened<DistBsr>, AmgError> {
    plans.galerkin.release_values();
    Ok(Coarsened {
        smoother: build_smoother(diagonal.0, diagonal.1, params),
        transfer: DistTransfer {
            pt: timed(&mut tm.galerkin_symbolic_s, || DistTranspose::new(&p))?,
            p,
            plans: Some(plans),
            device: None,
        },
        a: ac,
        near_null,
        plans_reused,
    })
}

/// Collective. The serial estimate of `lambda_max(D^{-1} A)` of level `level` on ranks: the
/// serial start vector of the level's near-null space `near_null` and exact reductions.
fn dist_emax(
    a: &DistBsr,
    pbj: &PointBlockJacobi,
    near_null: &DistNearNull,
    params: &AmgParams,
    level: usize,
) -> Result<f64, AmgError> {
    let mut r = near_null.start_vector(a)?;
    let (mut p, mut w) = (r.zeros_like()?, r.zeros_like()?);
    let estimate = estimate_emax_from(a, pbj, params.eig_steps, [&mut r, &mut p, &mut w])?;
    checked_emax(estimate, level)
}

/// Collective: the whole of a (small) distributed square operator on every rank, its block
/// rows and columns placed at their serial ids (`owned_serial_ids` of this rank's block rows),
/// factored; the same dense matrix, so the same factor, as the serial coarse level's.
fn gather_factor(ac: &DistBsr, owned_serial_ids: &[u64]) -> Result<RedundantSolve, AmgError> {
    let cp = ac.pattern();
    let k = cp.block_size();
    let kk = k * k;
    let comm = cp.partition().comm().clone();
    let serial_of_global: Vec<usize> = comm
        .allgatherv_u64(owned_serial_ids)
        .map_err(linalg::LinalgError::from)?
        .concat()
        .into_iter()
        .map(|s| s as usize)
        .collect();
    let nb = cp.partition().global_len() as usize;
    if serial_of_global.len() != nb || serial_of_global.iter().any(|&s| s >= nb) {
        return Err(AmgError::DimensionMismatch {
            what: "distributed coarse level: serial ids of the block rows",
            expected: nb,
            found: serial_of_global.len(),
        });
    }
    let first = cp.partition().owned_range().start;
    let ghosts = cp.halo().ghosts();
    let mut mine = Vec::new();
    for (m, ghost_cols) in [(ac.diag(), None), (ac.offd(), Some(ghosts))] {
        let pat = m.pattern();
        for r in 0..pat.n_block_rows() {
            for s in pat.row_ptr()[r]..pat.row_ptr()[r + 1] {
                let c = u64::from(pat.col_idx()[s]);
                let gc = ghost_cols.map_or(first + c, |g: &[u64]| g[c as usize]);
                mine.extend([(first + r as u64) as f64, gc as f64]);
                mine.extend_from_slice(m.host_block(s)?);
            }
        }
    }
    let all = comm
        .allgatherv_f64(&mine)
        .map_err(linalg::LinalgError::from)?;
    let n = nb * k;
    let mut dense = vec![0.0; n * n];
    for msg in &all {
        for rec in msg.chunks(2 + kk) {
            let (r, c) = (
                serial_of_global[rec[0] as usize],
                serial_of_global[rec[1] as usize],
            );
            for i in 0..k {
                for j in 0..k {
                    dense[(r * k + i) * n + c * k + j] = rec[2 + i * k + j];
                }
            }
        }
    }
    Ok(RedundantSolve {
        // as the serial set-up's ([`DenseFactor::invert`]), errors named alike
        factor: coarse_inverse(n, || DenseFactor::invert_dense(dense, n))?,
        serial_of_global,
    })
}
