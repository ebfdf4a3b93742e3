//! The hot update: a new operator of the same block structure, handled as `reuse` says.

use super::{secs, Hierarchy};
use crate::level_matrix::{refresh_smoother, LevelMatrix};
use crate::params::{Reuse, Storage};
use crate::report::{HierarchyReport, MessageReport, SetupTimings, TransferReport, UpdateReport};
use crate::AmgError;
use linalg::{ptap_numeric, BlockPattern, Bsr};
use std::borrow::Cow;
use std::sync::PoisonError;
use std::time::Instant;

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
        let device = self.state.device.clone();
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
                let owns = self.state.owns_fine;
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
                    self.state.report.setup.copy_operator_s = secs(t);
                }
                tm = self.state.report.setup.clone();
                transposes_rebuilt = self.transfers.len();
                galerkin_plans_rebuilt = self.transfers.len();
            }
            Reuse::Interpolation => {
                self.refresh_fine(a, &mut tm)?;
                let mut messages = MessageReport::default();
                galerkin_plans_rebuilt = self.hot_update(a, &mut tm, &mut messages)?;
                // The plan's P^T pattern and slot map are the restriction's transpose.
                transposes_rebuilt = galerkin_plans_rebuilt;
                let levels = Self::level_reports(&self.levels, a);
                let plans_reused = self.state.report.plans_reused;
                self.state.report = HierarchyReport::new(levels, self.state.report.setup.clone());
                self.state.report.plans_reused = plans_reused;
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
        let same = BlockPattern::same(&self.state.fine_pattern, a.pattern());
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
        self.state.fine_pattern = a.pattern().clone();
        Ok(())
    }
}

impl<M: LevelMatrix> Hierarchy<M> {
    /// The hot update of `reuse: interpolation` (the stored fine operator already replaced;
    /// `fine` is the caller's, used on level 0 where the hierarchy holds none): per level, the
    /// Galerkin plan if the operator's pattern changed under it, smoother diagonals (and
    /// eigenvalue estimates, [`refresh_smoother`]), numeric Galerkin product; then the coarsest
    /// factor. Returns the number of Galerkin plans rebuilt. Collective on ranks.
    pub(crate) fn hot_update(
        &mut self,
        fine: &M,
        tm: &mut SetupTimings,
        messages: &mut MessageReport,
    ) -> Result<usize, AmgError> {
        let mut plans_rebuilt = 0;
        let work = self.work.get_mut().unwrap_or_else(PoisonError::into_inner);
        for l in 0..self.transfers.len() {
            let (upper, lower) = self.levels.split_at_mut(l + 1);
            let (lev, next) = (&mut upper[l], &mut lower[0]);
            let a_l = lev.a.as_ref().unwrap_or(fine);
            let tr = &mut self.transfers[l];
            let t = Instant::now();
            if M::replan_galerkin(tr, a_l, next.a.as_mut())? {
                plans_rebuilt += 1;
            }
            tm.galerkin_symbolic_s += secs(t);
            let t = Instant::now();
            let (bs, near_null, params) = (lev.bs, lev.near_null.as_ref(), &self.params);
            lev.smoother = Some(refresh_smoother(
                lev.smoother.take(),
                l,
                params,
                |pbj| a_l.refresh_diagonal(pbj, bs),
                |pbj| a_l.hot_emax(pbj, near_null, l, params, &mut work.levels[l]),
            )?);
            tm.smoother_setup_s += secs(t);
            let t = Instant::now();
            if let Some(next_a) = next.a.as_mut() {
                M::galerkin_into(tr, a_l, next_a, messages)?;
            }
            tm.galerkin_numeric_s += secs(t);
        }
        let t = Instant::now();
        let last = self.levels.last().ok_or(AmgError::MissingFineOperator)?;
        last.a
            .as_ref()
            .unwrap_or(fine)
            .refactor_coarse(&mut self.coarse, last.near_null.as_ref())?;
        tm.coarse_factor_s = secs(t);
        Ok(plans_rebuilt)
    }
}
