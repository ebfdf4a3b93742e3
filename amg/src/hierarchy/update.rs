//! The hot update: a new operator of the same block structure, handled as `reuse` says.

use super::{factor_coarse, secs, Hierarchy};
use crate::eig::estimate_emax_in;
use crate::level_matrix::refresh_smoother;
use crate::params::{Reuse, Storage};
use crate::report::{HierarchyReport, MessageReport, SetupTimings, TransferReport, UpdateReport};
use crate::vcycle::LevelWork;
use crate::{AmgError, PointBlockJacobi};
use linalg::{ptap_numeric, BlockPattern, Bsr, Vector};
use std::borrow::Cow;
use std::sync::PoisonError;
use std::time::Instant;

/// `lambda_max(D^{-1} A_l)` in the V-cycle's scratch of the level (free between cycles), plus one
/// temporary vector on level 0, which keeps no `b`, `x` of its own.
fn hot_emax(
    a: &Bsr,
    pbj: &PointBlockJacobi,
    steps: usize,
    w: &mut LevelWork,
) -> Result<Option<f64>, AmgError> {
    if w.b.len() == a.n_rows() {
        estimate_emax_in(a, pbj, steps, [&mut w.b, &mut w.x, &mut w.sw.r])
    } else {
        let mut spare = Vector::zeros_on(&a.device(), a.n_rows())?;
        estimate_emax_in(a, pbj, steps, [&mut w.sw.r, &mut w.sw.d, &mut spare])
    }
}

/// Copies `src`'s values into `dst` when both carry the same pattern and block sizes; otherwise
/// replaces `dst` by a copy of `src`.
fn copy_operator(dst: &mut Bsr, src: &Bsr) -> Result<(), AmgError> {
    if BlockPattern::same(dst.pattern(), src.pattern())
        && dst.block_rows() == src.block_rows()
        && dst.block_cols() == src.block_cols()
    {
        dst.copy_values_from(src)?;
    } else {
        *dst = src.clone();
    }
    Ok(())
}

impl Hierarchy {
    /// Takes a new operator of the same block structure and updates the hierarchy as `params.reuse`
    /// says (see [`Reuse`]). An owning hierarchy copies `a`'s values; an external one copies
    /// nothing (with `reuse: full` its V-cycle then smooths with the new `a` and the old diagonals).
    /// On error the hierarchy must be rebuilt by a setup.
    pub fn update(&mut self, a: &Bsr) -> Result<UpdateReport, AmgError> {
        let t_total = Instant::now();
        self.check_shape(a)?;
        let device = self.device.clone();
        let before = device.transfers();
        let mut tm = SetupTimings::default();
        let (mut transposes_rebuilt, mut galerkin_plans_rebuilt) = (0, 0);
        match self.params.reuse {
            Reuse::Full => {}
            Reuse::None => {
                let nns = self.levels[0].near_null.take().ok_or_else(|| {
                    AmgError::InvalidNearNullSpace {
                        reason: "reuse: none, but the hierarchy holds no fine near-null space"
                            .into(),
                    }
                })?;
                let owns = self.owns_fine;
                *self = Self::setup_impl(
                    a,
                    Cow::Owned(nns),
                    &self.params,
                    self.next_version,
                    Vec::new(),
                )?;
                if owns {
                    let t = Instant::now();
                    self.own_fine(a.clone());
                    self.report.setup.copy_operator_s = secs(t);
                }
                tm = self.report.setup.clone();
                transposes_rebuilt = self.transfers.len();
                galerkin_plans_rebuilt = self.transfers.len();
            }
            Reuse::Interpolation => {
                self.refresh_fine(a, &mut tm)?;
                galerkin_plans_rebuilt = self.hot_levels(a, &mut tm)?;
                // The plan's P^T pattern and slot map are the restriction's transpose.
                transposes_rebuilt = galerkin_plans_rebuilt;
                let t = Instant::now();
                let last = self.levels.len() - 1;
                self.coarse = factor_coarse(self.levels[last].a.as_ref().unwrap_or(a))?;
                tm.coarse_factor_s = secs(t);
                let levels = Self::level_reports(&self.levels, a);
                let plans_reused = self.report.plans_reused;
                self.report = HierarchyReport::new(levels, self.report.setup.clone());
                self.report.plans_reused = plans_reused;
            }
        }
        tm.total_s = secs(t_total);
        Ok(UpdateReport {
            reuse: self.params.reuse,
            p_versions: self.p_versions(),
            transposes_rebuilt,
            galerkin_plans_rebuilt,
            timings: tm,
            transfers: TransferReport::between(before, device.transfers()),
            messages: MessageReport::default(),
        })
    }

    /// Recomputes the numeric Galerkin product of transfer `l`, `A_{l+1} = P_l^T A_l P_l`, from
    /// the current operators, as a hot update does level by level (benchmarks time each level
    /// with device events). `fine` is the caller's operator where the hierarchy holds none.
    pub fn galerkin_level(&mut self, fine: &Bsr, l: usize) -> Result<(), AmgError> {
        self.check_shape(fine)?;
        let n = self.transfers.len();
        let tr = self
            .transfers
            .get_mut(l)
            .ok_or(AmgError::DimensionMismatch {
                what: "Galerkin level (transfers)",
                expected: n,
                found: l,
            })?;
        let (upper, lower) = self.levels.split_at_mut(l + 1);
        let a_l = upper[l].a.as_ref().unwrap_or(fine);
        if let Some(next_a) = lower[0].a.as_mut() {
            ptap_numeric(&tr.galerkin, a_l, &tr.p, next_a, &mut tr.galerkin_ws)?;
        }
        Ok(())
    }

    /// Brings the stored fine operator (own copy or scalar expansion) to `a`'s values.
    fn refresh_fine(&mut self, a: &Bsr, tm: &mut SetupTimings) -> Result<(), AmgError> {
        let same = BlockPattern::same(&self.fine_pattern, a.pattern());
        match (self.params.storage, self.levels[0].a.as_mut()) {
            (Storage::Blocked, Some(own)) => {
                let t = Instant::now();
                copy_operator(own, a)?;
                tm.copy_operator_s = secs(t);
            }
            (Storage::Scalar, Some(scalar)) => {
                let t = Instant::now();
                if same {
                    scalar.copy_scalar_blocks_from(a)?;
                } else {
                    *scalar = a.to_scalar_blocks()?;
                }
                tm.expansion_s = secs(t);
            }
            (_, None) => {}
        }
        self.fine_pattern = a.pattern().clone();
        Ok(())
    }

    /// The hot levels of `reuse: interpolation`: per level, the Galerkin plan if the operator's
    /// pattern changed under it, smoother diagonals (and eigenvalue estimates), numeric Galerkin
    /// product. `fine` is the caller's operator, used on level 0 when the hierarchy holds none.
    /// Returns the number of Galerkin plans rebuilt.
    fn hot_levels(&mut self, fine: &Bsr, tm: &mut SetupTimings) -> Result<usize, AmgError> {
        let mut plans_rebuilt = 0;
        let work = self.work.get_mut().unwrap_or_else(PoisonError::into_inner);
        for l in 0..self.transfers.len() {
            let (upper, lower) = self.levels.split_at_mut(l + 1);
            let (lev, next) = (&mut upper[l], &mut lower[0]);
            let a_l = lev.a.as_ref().unwrap_or(fine);
            let tr = &mut self.transfers[l];
            let t = Instant::now();
            if !BlockPattern::same(&tr.galerkin_a_pattern, a_l.pattern()) {
                tr.plan_galerkin(a_l)?;
                if let Some(next_a) = next.a.as_mut() {
                    *next_a = Bsr::zeros_in(
                        &a_l.device(),
                        tr.galerkin.pattern().clone(),
                        next_a.block_rows(),
                        next_a.block_cols(),
                        next_a.precision(),
                    )?;
                }
                plans_rebuilt += 1;
            }
            tm.galerkin_symbolic_s += secs(t);
            let t = Instant::now();
            let bs = lev.bs;
            let steps = self.params.eig_steps;
            lev.smoother = Some(refresh_smoother(
                lev.smoother.take(),
                l,
                &self.params,
                |pbj| pbj.update_with_block_size(a_l, bs),
                |pbj| hot_emax(a_l, pbj, steps, &mut work.levels[l]),
            )?);
            tm.smoother_setup_s += secs(t);
            let t = Instant::now();
            if let Some(next_a) = next.a.as_mut() {
                ptap_numeric(&tr.galerkin, a_l, &tr.p, next_a, &mut tr.galerkin_ws)?;
            }
            // device kernels are asynchronous: wait, so that the stage's time is its own
            self.device.synchronize()?;
            tm.galerkin_numeric_s += secs(t);
        }
        Ok(plans_rebuilt)
    }
}
