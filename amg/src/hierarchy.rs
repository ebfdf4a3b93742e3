//! The smoothed-aggregation hierarchy: cold setup, hot update with explicit reuse state, and the
//! symmetric V-cycle that preconditions CG.
//!
//! Calling order: one setup, then [`Hierarchy::update`] for every new operator of the same size
//! (Newton steps); use the hierarchy as a preconditioner in between. Three setups, by who keeps the
//! fine operator `A_0`:
//! - [`Hierarchy::setup_external`]: the caller keeps `A_0` (no copy); the preconditioner is
//!   [`Hierarchy::with_operator`]`(&a)`, and `update(&a)` copies nothing. The memory-lean choice.
//! - [`Hierarchy::setup`] copies `A_0`, [`Hierarchy::setup_owned`] takes it: the hierarchy is then
//!   itself a [`Preconditioner`].
//!
//! Reuse state is explicit: each transfer records the version of its prolongator `P` and the
//! version its Galerkin plan (which also holds the `P^T` pattern the restriction reads) was built
//! from. P-side data is rebuilt only when these differ (or the operator's pattern changed under a
//! plan).
//!
//! Memory: the hierarchy keeps per level the operator (none on level 0 of an external one), the
//! smoother's block-diagonal inverses, and per transfer the aggregates, `P` and its Galerkin plan
//! (whose `P^T` pattern and slot map also serve the restriction); no transpose of `P`, no `P0`,
//! no strength graph, and no copy of the fine near-null space except with `reuse: none`. Setup
//! temporaries are freed as soon as their stage ends.
//!
//! Storage ([`Storage`]): the coarsening path always works on blocks; with `scalar` the operators and
//! prolongators the solve and the hot update use are expanded to 1x1 blocks after the cold setup.

use crate::aggregation::{aggregate, Aggregates, MisDistance};
use crate::dense::DenseFactor;
use crate::eig::{estimate_emax, estimate_emax_in};
use crate::params::{AmgParams, Reuse, SmootherKind, Storage};
use crate::prolongator::smooth_prolongator;
use crate::report::{HierarchyReport, LevelReport, SetupTimings, UpdateReport};
use crate::restriction::restrict;
use crate::smoother::{Smoother, SmootherWork};
use crate::storage::expand_values;
use crate::strength::strength_graph;
use crate::tentative::tentative_prolongator;
use crate::{AmgError, NearNullSpace, PointBlockJacobi, Preconditioner};
use linalg::{ptap_numeric, BlockPattern, Bsr, PtapPlan, Vector};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::Instant;

/// Largest coarsest level factored densely (`n^2` doubles): beyond it setup fails instead of
/// allocating gigabytes. Raise `max_levels` or `coarse_eq_limit` consistency if hit.
pub const MAX_DENSE_COARSE: usize = 12_000;

/// One level: its operator and (except on the coarsest) its smoother.
#[derive(Debug)]
struct Level {
    /// The operator in the hierarchy's storage. `None` only on level 0 of an external, blocked
    /// hierarchy (the caller's operator is used).
    a: Option<Bsr>,
    /// Unknowns per node (aggregate): the logical block size, whatever the storage.
    bs: usize,
    smoother: Option<Smoother>,
    /// Near-null space of the level. On level 0 only with `reuse: none` (whose update rebuilds
    /// from it); otherwise the caller holds it and the hierarchy keeps no copy.
    near_null: Option<NearNullSpace>,
}

/// Interpolation between level `l` and `l + 1`, with its P-side cache.
#[derive(Debug)]
struct Transfer {
    aggregates: Aggregates,
    /// Prolongator in the hierarchy's storage.
    p: Bsr,
    p_version: u64,
    /// Galerkin plan of `p` on the level's operator; its `P^T` pattern and slot map also drive the
    /// restriction (no separate transpose of `p` is kept).
    galerkin: PtapPlan,
    galerkin_from: u64,
    /// Pattern of the fine operator the Galerkin plan was built for.
    galerkin_a_pattern: Arc<BlockPattern>,
}

/// Per-level vectors of one V-cycle.
#[derive(Debug)]
struct LevelWork {
    b: Vector,
    x: Vector,
    sw: SmootherWork,
}

/// Smoothed-aggregation AMG hierarchy. A [`Preconditioner`] (one symmetric V-cycle per apply) when
/// it holds the fine operator; see [`Hierarchy::with_operator`] otherwise.
#[derive(Debug)]
pub struct Hierarchy {
    params: AmgParams,
    levels: Vec<Level>,
    transfers: Vec<Transfer>,
    coarse: DenseFactor,
    report: HierarchyReport,
    next_version: u64,
    /// True if the hierarchy keeps its own blocked `A_0` (`setup`, `setup_owned`).
    owns_fine: bool,
    /// Pattern of the (blocked) fine operator of the last setup or update.
    fine_pattern: Arc<BlockPattern>,
    /// Block size of the fine operator.
    fine_bs: usize,
    work: Mutex<Vec<LevelWork>>,
}

/// The V-cycle of a hierarchy on the caller's fine operator (see [`Hierarchy::with_operator`]).
#[derive(Debug, Clone, Copy)]
pub struct VCycle<'a> {
    hierarchy: &'a Hierarchy,
    fine: &'a Bsr,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn with_level(e: AmgError, level: usize) -> AmgError {
    match e {
        AmgError::SingularDiagonalBlock {
            row, column, pivot, ..
        } => AmgError::SingularDiagonalBlock {
            level,
            row,
            column,
            pivot,
        },
        e => e,
    }
}

/// Smoother of a level from its inverses and eigenvalue estimate.
fn build_smoother(pbj: PointBlockJacobi, emax: f64, params: &AmgParams) -> Smoother {
    match params.smoother {
        SmootherKind::Chebyshev => Smoother::chebyshev(
            pbj,
            emax,
            params.chebyshev_degree,
            params.chebyshev_lower,
            params.chebyshev_upper,
        ),
        SmootherKind::Jacobi => {
            let omega = params.jacobi_omega.unwrap_or(4.0 / 3.0 / emax);
            Smoother::jacobi(pbj, emax, params.jacobi_sweeps, omega)
        }
    }
}

/// The estimate of `lambda_max(D^{-1} A)` of level `level`, or an error if it was impossible.
fn checked_emax(estimate: Option<f64>, level: usize) -> Result<f64, AmgError> {
    estimate
        .filter(|e| e.is_finite() && *e > 0.0)
        .ok_or(AmgError::EigenEstimateFailed { level })
}

/// `lambda_max(D^{-1} A_l)` in the V-cycle's scratch of the level (free between cycles), plus one
/// temporary vector on level 0, which keeps no `b`, `x` of its own.
fn hot_emax(a: &Bsr, pbj: &PointBlockJacobi, steps: usize, w: &mut LevelWork) -> Option<f64> {
    if w.b.len() == a.n_rows() {
        estimate_emax_in(a, pbj, steps, [&mut w.b, &mut w.x, &mut w.sw.r])
    } else {
        let mut spare = Vector::zeros(a.n_rows());
        estimate_emax_in(a, pbj, steps, [&mut w.sw.r, &mut w.sw.d, &mut spare])
    }
}

fn same_pattern(a: &Arc<BlockPattern>, b: &Arc<BlockPattern>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

/// Copies `src`'s values into `dst` when both carry the same pattern; otherwise clones `src`.
fn copy_operator(dst: &mut Bsr, src: &Bsr) {
    if same_pattern(dst.pattern(), src.pattern())
        && dst.block_rows() == src.block_rows()
        && dst.block_cols() == src.block_cols()
    {
        dst.values_mut()
            .par_chunks_mut(1 << 16)
            .zip(src.values().par_chunks(1 << 16))
            .for_each(|(d, s)| d.copy_from_slice(s));
    } else {
        *dst = src.clone();
    }
}

/// Dense factorisation of the coarsest operator.
fn factor_coarse(a: &Bsr) -> Result<DenseFactor, AmgError> {
    let n = a.n_rows();
    if n > MAX_DENSE_COARSE {
        return Err(AmgError::CoarseTooLarge {
            n,
            limit: MAX_DENSE_COARSE,
        });
    }
    DenseFactor::factor(&a.to_dense(), n).map_err(|z| AmgError::SingularCoarseMatrix {
        n,
        row: z.column,
        pivot: z.pivot,
    })
}

impl Hierarchy {
    /// Builds the hierarchy of the SPD operator `a` (square `bs x bs` blocks) with near-null space
    /// `near_null` (`a.n_rows()` rows; its `k` vectors set the coarse block size). Keeps a copy of
    /// `a`, so the hierarchy is a self-contained [`Preconditioner`].
    pub fn setup(a: &Bsr, near_null: &NearNullSpace, params: &AmgParams) -> Result<Self, AmgError> {
        let mut h = Self::setup_impl(a, Cow::Borrowed(near_null), params, 1)?;
        h.own_fine(a.clone());
        Ok(h)
    }

    /// [`Hierarchy::setup`] taking ownership of `a` (no copy); [`Hierarchy::operator`]`(0)` lends
    /// it back (in blocked storage).
    pub fn setup_owned(
        a: Bsr,
        near_null: &NearNullSpace,
        params: &AmgParams,
    ) -> Result<Self, AmgError> {
        let mut h = Self::setup_impl(&a, Cow::Borrowed(near_null), params, 1)?;
        h.own_fine(a);
        Ok(h)
    }

    /// [`Hierarchy::setup`] without keeping `a`: the caller keeps the fine operator and passes it to
    /// [`Hierarchy::with_operator`] for every solve and to [`Hierarchy::update`] when its values
    /// change. With [`Storage::Scalar`] the hierarchy still holds the scalar expansion of `a`.
    pub fn setup_external(
        a: &Bsr,
        near_null: &NearNullSpace,
        params: &AmgParams,
    ) -> Result<Self, AmgError> {
        Self::setup_impl(a, Cow::Borrowed(near_null), params, 1)
    }

    /// Makes `a` (the operator of the setup) the hierarchy's own fine operator (blocked storage).
    fn own_fine(&mut self, a: Bsr) {
        self.owns_fine = true;
        if self.params.storage == Storage::Blocked {
            self.levels[0].a = Some(a);
        }
    }

    /// Validates the fine operator and the near-null space against each other.
    fn check_input(a: &Bsr, near_null: &NearNullSpace) -> Result<(), AmgError> {
        if a.block_rows() != a.block_cols() {
            return Err(AmgError::NonSquareBlocks {
                what: "AMG operator",
                block_rows: a.block_rows(),
                block_cols: a.block_cols(),
            });
        }
        if a.pattern().n_block_rows() != a.pattern().n_block_cols() {
            return Err(AmgError::DimensionMismatch {
                what: "AMG operator block columns",
                expected: a.pattern().n_block_rows(),
                found: a.pattern().n_block_cols(),
            });
        }
        if near_null.n_rows() != a.n_rows() {
            return Err(AmgError::DimensionMismatch {
                what: "near-null space rows",
                expected: a.n_rows(),
                found: near_null.n_rows(),
            });
        }
        Ok(())
    }

    /// Cold setup on `a` without keeping it; prolongator versions start at `first_version`. Keeps
    /// `near_null` (moved if owned, else copied) only for `reuse: none`.
    ///
    /// Memory: each level's temporaries (strength graph, `P0`) are freed as soon as their stage is
    /// done, so the peak is the finished levels plus the current stage's working set.
    fn setup_impl(
        a: &Bsr,
        near_null: Cow<'_, NearNullSpace>,
        params: &AmgParams,
        first_version: u64,
    ) -> Result<Self, AmgError> {
        let t_total = Instant::now();
        params.validate()?;
        Self::check_input(a, &near_null)?;
        let k = near_null.n_vectors();
        let mut tm = SetupTimings::default();
        let mut levels = vec![Level {
            a: None,
            bs: a.block_rows(),
            smoother: None,
            near_null: None,
        }];
        let mut transfers = Vec::new();
        let mut version = first_version;
        loop {
            let l = levels.len() - 1;
            let a_l = levels[l].a.as_ref().unwrap_or(a);
            let bs = a_l.block_rows();
            if a_l.n_rows() <= params.coarse_eq_limit || levels.len() >= params.max_levels {
                break;
            }
            let t = Instant::now();
            let graph = strength_graph(a_l, params.strength_threshold)?;
            tm.graph_s += secs(t);
            let t = Instant::now();
            let distance = if l < params.mis2_levels {
                MisDistance::Two
            } else {
                MisDistance::One
            };
            let aggregates = aggregate(&graph, distance, bs, k);
            drop(graph);
            tm.aggregation_s += secs(t);
            let coarse_rows = aggregates.n_aggregates() * k;
            if coarse_rows == 0
                || (a_l.n_rows() as f64) < params.min_coarsening_ratio * coarse_rows as f64
            {
                break; // nothing to aggregate, or coarsening stalled
            }
            let t = Instant::now();
            let pbj = PointBlockJacobi::new(a_l).map_err(|e| with_level(e, l))?;
            let emax = checked_emax(estimate_emax(a_l, &pbj, params.eig_steps), l)?;
            tm.smoother_setup_s += secs(t);
            let t = Instant::now();
            let b_l = levels[l].near_null.as_ref().unwrap_or(&near_null);
            let (p0, coarse_nns) = tentative_prolongator(&aggregates, b_l, bs)?;
            tm.tentative_s += secs(t);
            let t = Instant::now();
            let p = if params.smooth_prolongator {
                let p = smooth_prolongator(a_l, &pbj, &p0, params.prolongator_omega_scale / emax)?;
                drop(p0); // before the Galerkin stages, not at the end of the level
                p
            } else {
                p0
            };
            tm.smoothing_s += secs(t);
            let t = Instant::now();
            let galerkin = PtapPlan::new(a_l.pattern(), p.pattern())?;
            tm.galerkin_symbolic_s += secs(t);
            let t = Instant::now();
            let mut ac = Bsr::zeros(galerkin.pattern().clone(), k, k);
            ptap_numeric(&galerkin, a_l, &p, &mut ac)?;
            tm.galerkin_numeric_s += secs(t);
            let galerkin_a_pattern = a_l.pattern().clone();
            levels[l].smoother = Some(build_smoother(pbj, emax, params));
            transfers.push(Transfer {
                aggregates,
                p,
                p_version: version,
                galerkin,
                galerkin_from: version,
                galerkin_a_pattern,
            });
            version += 1;
            levels.push(Level {
                a: Some(ac),
                bs: k,
                smoother: None,
                near_null: Some(coarse_nns),
            });
        }
        let t = Instant::now();
        let coarse = factor_coarse(levels[levels.len() - 1].a.as_ref().unwrap_or(a))?;
        tm.coarse_factor_s = secs(t);
        if params.storage == Storage::Scalar {
            Self::expand_to_scalar(a, &mut levels, &mut transfers, &mut tm)?;
        }
        tm.total_s = secs(t_total);
        if params.reuse == Reuse::None {
            levels[0].near_null = Some(near_null.into_owned());
        }
        let report = HierarchyReport::new(Self::level_reports(&levels, a), tm);
        let work = Mutex::new(Self::new_work(&levels, a.n_rows()));
        Ok(Self {
            params: params.clone(),
            levels,
            transfers,
            coarse,
            report,
            next_version: version,
            owns_fine: false,
            fine_pattern: a.pattern().clone(),
            fine_bs: a.block_rows(),
            work,
        })
    }

    /// [`Storage::Scalar`]: replaces every operator and prolongator by its 1x1-block expansion and
    /// rebuilds the Galerkin plans (which also serve the restriction) on the scalar patterns.
    fn expand_to_scalar(
        a: &Bsr,
        levels: &mut [Level],
        transfers: &mut [Transfer],
        tm: &mut SetupTimings,
    ) -> Result<(), AmgError> {
        let t = Instant::now();
        for (l, lev) in levels.iter_mut().enumerate() {
            lev.a = Some(lev.a.as_ref().unwrap_or(a).to_scalar_blocks());
            if let Some(tr) = transfers.get_mut(l) {
                tr.p = tr.p.to_scalar_blocks();
            }
        }
        tm.expansion_s += secs(t);
        let t = Instant::now();
        for (tr, lev) in transfers.iter_mut().zip(levels.iter()) {
            let a_l = lev.a.as_ref().unwrap_or(a);
            tr.galerkin = PtapPlan::new(a_l.pattern(), tr.p.pattern())?;
            tr.galerkin_a_pattern = a_l.pattern().clone();
        }
        tm.galerkin_symbolic_s += secs(t);
        Ok(())
    }

    fn level_reports(levels: &[Level], fine: &Bsr) -> Vec<LevelReport> {
        levels
            .iter()
            .map(|l| {
                let emax = l.smoother.as_ref().map(|s| s.emax);
                LevelReport::with_block_size(l.a.as_ref().unwrap_or(fine), l.bs, emax)
            })
            .collect()
    }

    fn new_work(levels: &[Level], n_fine: usize) -> Vec<LevelWork> {
        levels
            .iter()
            .enumerate()
            .map(|(l, lev)| {
                let n = lev.a.as_ref().map_or(n_fine, Bsr::n_rows);
                let m = if l == 0 { 0 } else { n };
                LevelWork {
                    b: Vector::zeros(m),
                    x: Vector::zeros(m),
                    sw: SmootherWork::new(n),
                }
            })
            .collect()
    }

    /// Errors unless `a` has the block rows and block size of the hierarchy's fine operator.
    fn check_shape(&self, a: &Bsr) -> Result<(), AmgError> {
        if a.pattern().n_block_rows() != self.fine_pattern.n_block_rows()
            || a.pattern().n_block_cols() != self.fine_pattern.n_block_cols()
            || a.block_rows() != self.fine_bs
            || a.block_cols() != self.fine_bs
        {
            return Err(AmgError::OperatorChanged {
                expected: self.fine_pattern.n_block_rows(),
                expected_bs: self.fine_bs,
                found: a.pattern().n_block_rows(),
                found_bs: a.block_rows(),
            });
        }
        Ok(())
    }

    /// Takes a new operator of the same block structure and updates the hierarchy as `params.reuse`
    /// says (see [`Reuse`]). An owning hierarchy copies `a`'s values; an external one copies
    /// nothing (with `reuse: full` its V-cycle then smooths with the new `a` and the old diagonals).
    /// On error the hierarchy must be rebuilt by a setup.
    pub fn update(&mut self, a: &Bsr) -> Result<UpdateReport, AmgError> {
        let t_total = Instant::now();
        self.check_shape(a)?;
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
                *self = Self::setup_impl(a, Cow::Owned(nns), &self.params, self.next_version)?;
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
                (transposes_rebuilt, galerkin_plans_rebuilt) = self.hot_levels(a, &mut tm)?;
                let t = Instant::now();
                let last = self.levels.len() - 1;
                self.coarse = factor_coarse(self.levels[last].a.as_ref().unwrap_or(a))?;
                tm.coarse_factor_s = secs(t);
                let levels = Self::level_reports(&self.levels, a);
                self.report = HierarchyReport::new(levels, self.report.setup.clone());
            }
        }
        tm.total_s = secs(t_total);
        Ok(UpdateReport {
            reuse: self.params.reuse,
            p_versions: self.transfers.iter().map(|t| t.p_version).collect(),
            transposes_rebuilt,
            galerkin_plans_rebuilt,
            timings: tm,
        })
    }

    /// Brings the stored fine operator (own copy or scalar expansion) to `a`'s values.
    fn refresh_fine(&mut self, a: &Bsr, tm: &mut SetupTimings) -> Result<(), AmgError> {
        let same = same_pattern(&self.fine_pattern, a.pattern());
        match (self.params.storage, self.levels[0].a.as_mut()) {
            (Storage::Blocked, Some(own)) => {
                let t = Instant::now();
                copy_operator(own, a);
                tm.copy_operator_s = secs(t);
            }
            (Storage::Scalar, Some(scalar)) => {
                let t = Instant::now();
                if same {
                    expand_values(a, scalar)?;
                } else {
                    *scalar = a.to_scalar_blocks();
                }
                tm.expansion_s = secs(t);
            }
            (_, None) => {}
        }
        self.fine_pattern = a.pattern().clone();
        Ok(())
    }

    /// The hot levels of `reuse: interpolation`: per level, P-side plans if stale, smoother
    /// diagonals (and eigenvalue estimates), numeric Galerkin product. `fine` is the caller's
    /// operator, used on level 0 when the hierarchy holds none.
    fn hot_levels(
        &mut self,
        fine: &Bsr,
        tm: &mut SetupTimings,
    ) -> Result<(usize, usize), AmgError> {
        let (mut transposes_rebuilt, mut galerkin_plans_rebuilt) = (0, 0);
        let work = self.work.get_mut().unwrap_or_else(PoisonError::into_inner);
        for l in 0..self.transfers.len() {
            let (upper, lower) = self.levels.split_at_mut(l + 1);
            let (lev, next) = (&mut upper[l], &mut lower[0]);
            let a_l = lev.a.as_ref().unwrap_or(fine);
            let tr = &mut self.transfers[l];
            let t = Instant::now();
            if tr.galerkin_from != tr.p_version
                || !same_pattern(&tr.galerkin_a_pattern, a_l.pattern())
            {
                tr.galerkin = PtapPlan::new(a_l.pattern(), tr.p.pattern())?;
                tr.galerkin_from = tr.p_version;
                tr.galerkin_a_pattern = a_l.pattern().clone();
                if let Some(next_a) = next.a.as_mut() {
                    *next_a = Bsr::zeros(
                        tr.galerkin.pattern().clone(),
                        next_a.block_rows(),
                        next_a.block_cols(),
                    );
                }
                galerkin_plans_rebuilt += 1;
                transposes_rebuilt += 1; // the plan's P^T pattern and slot map (restriction)
            }
            tm.galerkin_symbolic_s += secs(t);
            let t = Instant::now();
            let smoother = lev
                .smoother
                .take()
                .ok_or(AmgError::EigenEstimateFailed { level: l })?;
            let old_emax = smoother.emax;
            let mut pbj = smoother.pbj;
            pbj.update_with_block_size(a_l, lev.bs)
                .map_err(|e| with_level(e, l))?;
            let emax = if self.params.recompute_eigs {
                let estimate = hot_emax(a_l, &pbj, self.params.eig_steps, &mut work[l]);
                checked_emax(estimate, l)?
            } else {
                old_emax
            };
            lev.smoother = Some(build_smoother(pbj, emax, &self.params));
            tm.smoother_setup_s += secs(t);
            let t = Instant::now();
            if let Some(next_a) = next.a.as_mut() {
                ptap_numeric(&tr.galerkin, a_l, &tr.p, next_a)?;
            }
            tm.galerkin_numeric_s += secs(t);
        }
        Ok((transposes_rebuilt, galerkin_plans_rebuilt))
    }

    /// The V-cycle on the caller's fine operator `a`, which must carry the pattern and block size
    /// of the last setup or update (its values are those `update` last saw, or `reuse: full`
    /// semantics apply). Required for [`Hierarchy::setup_external`]; with scalar storage the
    /// hierarchy's own expansion is used and `a` is only checked.
    pub fn with_operator<'a>(&'a self, a: &'a Bsr) -> Result<VCycle<'a>, AmgError> {
        self.check_shape(a)?;
        if !same_pattern(&self.fine_pattern, a.pattern()) {
            return Err(AmgError::OperatorPatternChanged);
        }
        Ok(VCycle {
            hierarchy: self,
            fine: a,
        })
    }

    /// Storage of the operators and prolongators.
    pub fn storage(&self) -> Storage {
        self.params.storage
    }

    /// Sizes, complexities and the cold-setup timings.
    pub fn report(&self) -> &HierarchyReport {
        &self.report
    }

    /// The parameters the hierarchy was built with.
    pub fn params(&self) -> &AmgParams {
        &self.params
    }

    /// Number of levels, the finest included.
    pub fn n_levels(&self) -> usize {
        self.levels.len()
    }

    /// Operator of level `l` (0 = finest) in the hierarchy's storage; `None` for level 0 of an
    /// external blocked hierarchy (the caller holds it).
    pub fn operator(&self, l: usize) -> Option<&Bsr> {
        self.levels.get(l).and_then(|lev| lev.a.as_ref())
    }

    /// Near-null space of level `l` (the coarse ones are the `R` factors of the tentative QR).
    /// Level 0's is kept only with `reuse: none` (its update rebuilds from it): otherwise
    /// `near_null(0)` is `None` and the caller's space is the fine one.
    pub fn near_null(&self, l: usize) -> Option<&NearNullSpace> {
        self.levels.get(l).and_then(|lev| lev.near_null.as_ref())
    }

    /// Aggregates of level `l` (absent on the coarsest).
    pub fn aggregates(&self, l: usize) -> Option<&Aggregates> {
        self.transfers.get(l).map(|t| &t.aggregates)
    }

    /// Prolongator from level `l + 1` to level `l`, in the hierarchy's storage.
    pub fn prolongator(&self, l: usize) -> Option<&Bsr> {
        self.transfers.get(l).map(|t| &t.p)
    }

    /// Versions of the prolongators, finest first.
    pub fn p_versions(&self) -> Vec<u64> {
        self.transfers.iter().map(|t| t.p_version).collect()
    }

    /// One V-cycle from a zero initial guess on the fine operator `fine` (used on level 0 when the
    /// hierarchy holds none), with the hierarchy's work vectors (a temporary set if they are busy).
    fn v_cycle(&self, fine: &Bsr, r: &Vector, z: &mut Vector) {
        let mut guard = match self.work.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        let mut temporary;
        let work: &mut Vec<LevelWork> = match guard.as_deref_mut() {
            Some(w) => w,
            None => {
                temporary = Self::new_work(&self.levels, fine.n_rows());
                &mut temporary
            }
        };
        let (first, rest) = work
            .split_first_mut()
            .expect("a hierarchy has at least one level");
        self.cycle(fine, 0, r, z, &mut first.sw, rest);
    }

    /// One V-cycle on level `l`: `x` (overwritten) approximates `A_l^{-1} b`.
    fn cycle(
        &self,
        fine: &Bsr,
        l: usize,
        b: &Vector,
        x: &mut Vector,
        sw: &mut SmootherWork,
        rest: &mut [LevelWork],
    ) {
        let lev = &self.levels[l];
        let (Some(smoother), Some(tr)) = (lev.smoother.as_ref(), self.transfers.get(l)) else {
            x.copy_from(b);
            self.coarse.solve_in_place(x.as_mut_slice());
            return;
        };
        let a = lev.a.as_ref().unwrap_or(fine);
        smoother.smooth(a, b, x, true, sw);
        sw.r.copy_from(b);
        a.spmv_add(-1.0, x, 1.0, &mut sw.r);
        let Some((c, deeper)) = rest.split_first_mut() else {
            return; // unreachable: every non-coarsest level has a work entry below it
        };
        restrict(&tr.p, &tr.galerkin, &sw.r, &mut c.b);
        self.cycle(fine, l + 1, &c.b, &mut c.x, &mut c.sw, deeper);
        tr.p.spmv_add(1.0, &c.x, 1.0, x);
        smoother.smooth(a, b, x, false, sw);
    }
}

impl Preconditioner for Hierarchy {
    /// One V(d, d) cycle from a zero initial guess (symmetric: the same smoother before and after).
    ///
    /// # Panics
    /// If the hierarchy holds no fine operator (blocked [`Hierarchy::setup_external`]): use
    /// [`Hierarchy::with_operator`].
    fn apply(&self, r: &Vector, z: &mut Vector) {
        let fine = self.levels[0]
            .a
            .as_ref()
            .expect("Hierarchy::apply: built by setup_external, use with_operator(&a)");
        self.v_cycle(fine, r, z);
    }
}

impl Preconditioner for VCycle<'_> {
    /// One V(d, d) cycle from a zero initial guess on the bound fine operator.
    fn apply(&self, r: &Vector, z: &mut Vector) {
        self.hierarchy.v_cycle(self.fine, r, z);
    }
}
