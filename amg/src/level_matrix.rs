//! The one set-up loop of every hierarchy, over a level-matrix abstraction (PETSc's manner:
//! `PCSetUp_GAMG` is one loop over `Mat` operations whatever the `Mat` type).
//!
//! [`LevelMatrix`] is what the loop needs of a level's operator: its global size and the
//! coarsening of one level (the stages graph, aggregation, tentative prolongator, diagonal and
//! eigenvalue estimate, smoothed prolongator, Galerkin product). The serial [`linalg::Bsr`]
//! implements it with the fused serial kernels ([`crate::hierarchy`]), a rank's rows
//! [`linalg::dist::DistBsr`] with the distributed ones ([`crate::dist_cycle`]); one rank is the
//! serial case. [`build_levels`] is the loop and [`stop_before`] / [`coarsening_stalled`] its
//! stop test, written once; [`refresh_smoother`] is the smoother's part of every hot update.

use crate::hierarchy::{build_smoother, checked_emax};
use crate::params::AmgParams;
use crate::report::{MessageReport, SetupTimings};
use crate::smoother::{Smoother, SmoothingOperator};
use crate::vcycle::LevelWork;
use crate::{AmgError, PointBlockJacobi};
use linalg::Vector;
use std::fmt::Debug;

/// A level operator as the set-up loop, the hot update and the V-cycle of the one
/// [`crate::Hierarchy`] see it: the operations that differ between one process and ranks.
/// (Public in a private module: nameable only inside the crate.)
pub trait LevelMatrix: SmoothingOperator + Sized + Sync + Debug {
    /// A level's near-null space (on ranks: the owned rows with their serial ids).
    type NearNull: Debug + Sync;
    /// What coarsening a level builds besides the next operator: `P` (its transpose on ranks)
    /// and its plans.
    type Transfer: Debug + Sync;
    /// The coarsest level's solver (a dense inverse; on ranks gathered in the serial order).
    type Coarse: Debug + Sync;
    /// What a hierarchy of this operator keeps besides its levels (serial: the fine shape,
    /// device and report; nothing on ranks).
    type State: Debug + Sync;
    /// The symbolic part of a transfer a renewal may keep (where the aggregates and patterns
    /// come out unchanged); `()` where nothing is kept.
    type Symbolic;

    /// Unknowns of the level over every rank.
    fn global_unknowns(&self) -> usize;

    /// Coarsens the level `level` of near-null space `near_null` (stages graph, coarsen,
    /// prolongator, smooth, Galerkin); `None` where the set-up stops here (nothing to
    /// aggregate, or [`coarsening_stalled`]). `version` numbers the new prolongator,
    /// `previous` is the level's symbolic transfer before a renewal. Collective on ranks.
    fn coarsen(
        &self,
        near_null: &Self::NearNull,
        level: usize,
        version: u64,
        params: &AmgParams,
        tm: &mut SetupTimings,
        previous: Option<Self::Symbolic>,
    ) -> Result<Option<Coarsened<Self>>, AmgError>;

    /// Unknowns per node of a level of near-null space `near_null` (its vector count).
    fn near_null_vectors(near_null: &Self::NearNull) -> usize;

    /// The version of a transfer's prolongator.
    fn p_version(transfer: &Self::Transfer) -> u64;

    /// `rc = P^T r` through `transfer` (collective on ranks).
    fn restrict(transfer: &Self::Transfer, r: &Vector, rc: &mut Vector) -> Result<(), AmgError>;

    /// `x += P xc` through `transfer` (collective on ranks).
    fn prolong_add(transfer: &Self::Transfer, xc: &Vector, x: &mut Vector) -> Result<(), AmgError>;

    /// The coarsest level's solver for this operator (the coarsest; `near_null`: its
    /// near-null space where the hierarchy keeps one). Collective on ranks.
    fn factor_coarse(&self, near_null: Option<&Self::NearNull>) -> Result<Self::Coarse, AmgError>;

    /// The coarsest level's solver `coarse` made anew for new values of this operator (a hot
    /// update), reusing what does not depend on the values. Collective on ranks.
    fn refactor_coarse(
        &self,
        coarse: &mut Self::Coarse,
        near_null: Option<&Self::NearNull>,
    ) -> Result<(), AmgError> {
        *coarse = self.factor_coarse(near_null)?;
        Ok(())
    }

    /// `x = A^{-1} b` on this, the coarsest operator, with its solver `coarse`.
    fn coarse_solve(
        &self,
        coarse: &Self::Coarse,
        b: &Vector,
        x: &mut Vector,
    ) -> Result<(), AmgError>;

    /// The point-block Jacobi inverses of this operator's new values written into `pbj`
    /// (`bs`: the level's unknowns per node).
    fn refresh_diagonal(&self, pbj: &mut PointBlockJacobi, bs: usize) -> Result<(), AmgError>;

    /// The estimate of `lambda_max(D^{-1} A)` of a hot update, where a cold set-up makes it
    /// (`work`: the level's V-cycle vectors, free between cycles). Collective on ranks.
    fn hot_emax(
        &self,
        pbj: &PointBlockJacobi,
        near_null: Option<&Self::NearNull>,
        level: usize,
        params: &AmgParams,
        work: &mut LevelWork,
    ) -> Result<Option<f64>, AmgError>;

    /// Rebuilds a transfer's Galerkin plan (and the next operator's pattern) where this
    /// level's pattern is no longer the one it was built for; whether it did.
    fn replan_galerkin(
        transfer: &mut Self::Transfer,
        a: &Self,
        next: Option<&mut Self>,
    ) -> Result<bool, AmgError>;

    /// `next = P^T A P` in place (the numeric Galerkin product of a hot update); the
    /// messages it sent are added to `messages`. Collective on ranks.
    fn galerkin_into(
        transfer: &mut Self::Transfer,
        a: &Self,
        next: &mut Self,
        messages: &mut MessageReport,
    ) -> Result<(), AmgError>;

    /// The V-cycle vectors of a level of this operator, where it lives (`finest`: no
    /// right-hand side and iterate of its own).
    fn level_work(&self, finest: bool) -> Result<LevelWork, AmgError>;
}

/// What coarsening one level produced.
pub struct Coarsened<M: LevelMatrix> {
    /// The level's smoother (its diagonal and eigenvalue estimate served the smoothing of `P`).
    pub(crate) smoother: Smoother,
    pub(crate) transfer: M::Transfer,
    /// The next level's operator and near-null space.
    pub(crate) a: M,
    pub(crate) near_null: M::NearNull,
    /// Whether the transfer's symbolic plans were kept from `previous`.
    pub(crate) plans_reused: bool,
}

/// One level as built: the operator (`None` on level 0: the caller's fine operator), the
/// smoother (above the coarsest) and near-null space (`None` on level 0).
pub(crate) struct BuiltLevel<M: LevelMatrix> {
    pub(crate) a: Option<M>,
    pub(crate) smoother: Option<Smoother>,
    pub(crate) near_null: Option<M::NearNull>,
}

/// The levels of a set-up, finest first, with the transfers between them.
pub(crate) struct Built<M: LevelMatrix> {
    pub(crate) levels: Vec<BuiltLevel<M>>,
    pub(crate) transfers: Vec<M::Transfer>,
    /// The version the next prolongator gets.
    pub(crate) next_version: u64,
    /// Transfers whose symbolic plans were kept from `previous`.
    pub(crate) plans_reused: usize,
}

/// The stop test before coarsening a level: it has at most `coarse_eq_limit` unknowns, or the
/// hierarchy has `max_levels` levels already (`n_levels`, this one included).
pub(crate) fn stop_before(unknowns: usize, n_levels: usize, params: &AmgParams) -> bool {
    unknowns <= params.coarse_eq_limit || n_levels >= params.max_levels
}

/// The stop test after aggregating: nothing to aggregate, or the rows shrink by less than
/// `min_coarsening_ratio`.
pub(crate) fn coarsening_stalled(rows: usize, coarse_rows: usize, params: &AmgParams) -> bool {
    coarse_rows == 0 || (rows as f64) < params.min_coarsening_ratio * coarse_rows as f64
}

/// The one set-up loop: coarsens from the fine operator `fine` (near-null space `near_null`)
/// level after level until the stop test; prolongators are numbered from `first_version`.
/// `previous` holds the symbolic transfers of a hierarchy being renewed, finest first (empty
/// for a cold set-up): level `l` offers entry `l` to [`LevelMatrix::coarsen`].
pub(crate) fn build_levels<M: LevelMatrix>(
    fine: &M,
    near_null: &M::NearNull,
    params: &AmgParams,
    first_version: u64,
    mut previous: Vec<Option<M::Symbolic>>,
    tm: &mut SetupTimings,
) -> Result<Built<M>, AmgError> {
    let mut levels = vec![BuiltLevel {
        a: None,
        smoother: None,
        near_null: None,
    }];
    let mut transfers = Vec::new();
    let mut version = first_version;
    let mut plans_reused = 0;
    loop {
        let l = levels.len() - 1;
        let a_l = levels[l].a.as_ref().unwrap_or(fine);
        if stop_before(a_l.global_unknowns(), levels.len(), params) {
            break;
        }
        let b_l = levels[l].near_null.as_ref().unwrap_or(near_null);
        let prev = previous.get_mut(l).and_then(Option::take);
        let Some(next) = a_l.coarsen(b_l, l, version, params, tm, prev)? else {
            break;
        };
        plans_reused += usize::from(next.plans_reused);
        levels[l].smoother = Some(next.smoother);
        transfers.push(next.transfer);
        version += 1;
        levels.push(BuiltLevel {
            a: Some(next.a),
            smoother: None,
            near_null: Some(next.near_null),
        });
    }
    Ok(Built {
        levels,
        transfers,
        next_version: version,
        plans_reused,
    })
}

/// A level's smoother for new values of its operator (a hot update, `reuse: interpolation`):
/// the point-block Jacobi inverses refreshed in place by `refresh`, the estimate of
/// `lambda_max(D^{-1} A)` made anew by `estimate` where `params.recompute_eigs`, else kept.
/// The one smoother refresh of every hierarchy's update (serial, on ranks, on a GPU).
pub(crate) fn refresh_smoother(
    smoother: Option<Smoother>,
    level: usize,
    params: &AmgParams,
    refresh: impl FnOnce(&mut PointBlockJacobi) -> Result<(), AmgError>,
    estimate: impl FnOnce(&PointBlockJacobi) -> Result<Option<f64>, AmgError>,
) -> Result<Smoother, AmgError> {
    let old = smoother.ok_or(AmgError::EigenEstimateFailed { level })?;
    let mut pbj = old.pbj;
    refresh(&mut pbj).map_err(|e| crate::hierarchy::with_level(e, level))?;
    let emax = if params.recompute_eigs {
        checked_emax(estimate(&pbj)?, level)?
    } else {
        old.emax
    };
    Ok(build_smoother(pbj, emax, params))
}
