//! The cold setup, level by level, in the stages of PETSc's GAMG: graph, coarsen, prolongator,
//! smooth, Galerkin. Each stage is one call into its own module and is timed on its own; its
//! temporaries are dropped as soon as the next stage no longer needs them.

use super::cycle::serial_level_work;
use super::{
    build_smoother, checked_emax, factor_coarse, secs, timed, with_level, Hierarchy, Level,
    SerialState, SymbolicTransfer, Transfer, TransferPlans,
};
use crate::aggregation::{aggregate_level, Aggregates, MisDistance};
use crate::eig::{estimate_emax, estimate_emax_in};
use crate::level_matrix::{build_levels, coarsening_stalled, Coarsened, LevelMatrix};
use crate::params::{AmgParams, Precision, Renewal, Reuse, Storage};
use crate::prolongator::{smooth_prolongator_planned, smoothing_plan};
use crate::report::MessageReport;
use crate::report::{HierarchyReport, LevelReport, SetupTimings, TransferReport};
use crate::strength::{level_strength_graph, LevelGraph};
use crate::tentative::TentativePlan;
use crate::vcycle::LevelWork;
use crate::{AmgError, NearNullSpace, PointBlockJacobi};
use linalg::dense::DenseFactor;
use linalg::{
    prolong_add, ptap_numeric, restrict, BlockPattern, Bsr, Device, PtapPlan, SpgemmPlan, Vector,
};
use std::borrow::Cow;
use std::sync::Mutex;
use std::time::Instant;

/// [`timed`], adding the bytes `device` moved during `f` to `bytes`.
pub(crate) fn timed_moving<T>(
    acc: &mut f64,
    bytes: &mut TransferReport,
    device: &Device,
    f: impl FnOnce() -> T,
) -> T {
    let before = device.transfers();
    let out = timed(acc, f);
    bytes.add(TransferReport::between(before, device.transfers()));
    out
}

/// Stage "graph": the strength graph of the level operator, where it lives (on a GPU it stays
/// there). Ends with a device synchronisation (the stage's time is its own).
fn stage_graph(a: &Bsr, params: &AmgParams) -> Result<LevelGraph, AmgError> {
    let graph = level_strength_graph(a, params.strength_threshold)?;
    a.device().synchronize()?;
    Ok(graph)
}

/// Stage "coarsen": MIS-2 aggregation on the first `mis2_levels` levels, MIS-1 below, where
/// the graph lives (on a GPU: MIS and aggregation there, the assignment downloaded; the same
/// aggregates as the host's).
fn stage_coarsen(
    graph: &LevelGraph,
    level: usize,
    bs: usize,
    k: usize,
    params: &AmgParams,
) -> Result<Aggregates, AmgError> {
    let distance = if level < params.mis2_levels {
        MisDistance::Two
    } else {
        MisDistance::One
    };
    aggregate_level(graph, distance, bs, k)
}

/// The smoother's diagonal inverses and the estimate of `lambda_max(D^{-1} A)` (the prolongator
/// smoothing uses both, the level's smoother keeps them). `kept`: a diagonal of a renewed
/// hierarchy's level, whose storage takes the new inverses where it is fp64 and of `a`'s
/// pattern (on a GPU: no host scan of the pattern, no upload of the diagonal slots, no
/// allocation); the same bits as a new one.
fn stage_diagonal(
    a: &Bsr,
    level: usize,
    params: &AmgParams,
    kept: Option<PointBlockJacobi>,
) -> Result<(PointBlockJacobi, f64), AmgError> {
    let reusable = |p: &PointBlockJacobi| {
        p.inverse().precision() == linalg::Precision::Double
            && p.block_size() == a.block_rows()
            && p.n_blocks() == a.pattern().n_block_rows()
    };
    let pbj = match kept.filter(reusable) {
        Some(mut pbj) => pbj.update(a).map(|()| pbj),
        None => PointBlockJacobi::new(a),
    }
    .map_err(|e| with_level(e, level))?;
    let emax = checked_emax(estimate_emax(a, &pbj, params.eig_steps)?, level)?;
    Ok((pbj, emax))
}

/// Stage "smooth": `P = (I - omega D^{-1} A) P0` with `omega = prolongator_omega_scale / emax`
/// on the symbolic product `plan` of `A P0` (returned for reuse), or `P0` itself for unsmoothed
/// aggregation. `P0` is dropped before the Galerkin stages.
fn stage_smooth(
    a: &Bsr,
    pbj: &PointBlockJacobi,
    p0: Bsr,
    emax: f64,
    plan: Option<SpgemmPlan>,
    params: &AmgParams,
) -> Result<(Bsr, Option<SpgemmPlan>), AmgError> {
    if !params.smooth_prolongator {
        return Ok((p0, None));
    }
    let plan = match plan {
        Some(plan) => plan,
        None => smoothing_plan(a, &p0)?,
    };
    let omega = params.prolongator_omega_scale / emax;
    let p = smooth_prolongator_planned(&plan, a, pbj, &p0, omega)?;
    Ok((p, Some(plan)))
}

/// The aggregates of a level and the plans of `previous` that still hold for them and the level
/// operator `a`. With `renewal: keep_aggregates` and a `previous`, its aggregates (moved, not
/// recomputed) and its plans where `a`'s pattern is the one they were made for; otherwise the
/// aggregates of stage "coarsen" and the plans of `previous` where both its aggregates and the
/// pattern are the same (then `P0` and `P` have their old patterns too), none otherwise.
fn aggregates_and_plans(
    a: &Bsr,
    level: usize,
    k: usize,
    params: &AmgParams,
    tm: &mut SetupTimings,
    previous: Option<SymbolicTransfer>,
) -> Result<(Aggregates, Option<TransferPlans>), AmgError> {
    let fits = |plans: &TransferPlans| BlockPattern::same(&plans.galerkin_a_pattern, a.pattern());
    match previous {
        Some(prev) if params.renewal == Renewal::KeepAggregates => {
            Ok((prev.aggregates, Some(prev.plans).filter(fits)))
        }
        previous => {
            let device = a.device();
            let bytes = &mut tm.transfers.coarsen;
            let graph = timed_moving(&mut tm.graph_s, bytes, &device, || stage_graph(a, params))?;
            let aggregates = timed_moving(&mut tm.aggregation_s, bytes, &device, || {
                stage_coarsen(&graph, level, a.block_rows(), k, params)
            })?;
            let plans = previous
                .filter(|prev| prev.aggregates == aggregates)
                .map(|prev| prev.plans)
                .filter(fits);
            Ok((aggregates, plans))
        }
    }
}

/// The serial level: the stages on the fused serial kernels. With `previous` (the transfer
/// of this level before a renewal, [`Hierarchy::set_near_null_space`]) the symbolic products
/// `A P0` and `P^T A P` are taken from it where the aggregates and patterns are the same, and
/// built afresh otherwise: the values are the same either way, bit for bit.
impl LevelMatrix for Bsr {
    type NearNull = NearNullSpace;
    type Transfer = Transfer;
    type Coarse = DenseFactor;
    type State = SerialState;
    type Symbolic = SymbolicTransfer;

    fn global_unknowns(&self) -> usize {
        self.n_rows()
    }

    fn coarsen(
        &self,
        near_null: &NearNullSpace,
        level: usize,
        version: u64,
        params: &AmgParams,
        tm: &mut SetupTimings,
        previous: Option<SymbolicTransfer>,
    ) -> Result<Option<Coarsened<Bsr>>, AmgError> {
        coarsen_level(self, near_null, level, version, params, tm, previous)
    }

    fn near_null_vectors(near_null: &NearNullSpace) -> usize {
        near_null.n_vectors()
    }

    fn p_version(transfer: &Transfer) -> u64 {
        transfer.p_version
    }

    fn restrict(transfer: &Transfer, r: &Vector, rc: &mut Vector) -> Result<(), AmgError> {
        Ok(restrict(&transfer.galerkin, &transfer.p, r, rc)?)
    }

    fn prolong_add(transfer: &Transfer, xc: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        Ok(prolong_add(&transfer.p, xc, x)?)
    }

    fn factor_coarse(&self, _near_null: Option<&NearNullSpace>) -> Result<DenseFactor, AmgError> {
        factor_coarse(self)
    }

    fn coarse_solve(
        &self,
        coarse: &DenseFactor,
        b: &Vector,
        x: &mut Vector,
    ) -> Result<(), AmgError> {
        Ok(coarse.solve(b, x)?)
    }

    fn refresh_diagonal(&self, pbj: &mut PointBlockJacobi, bs: usize) -> Result<(), AmgError> {
        pbj.update_with_block_size(self, bs)
    }

    /// In the V-cycle's scratch of the level (free between cycles), plus one temporary vector
    /// on level 0, which keeps no `b`, `x` of its own.
    fn hot_emax(
        &self,
        pbj: &PointBlockJacobi,
        _near_null: Option<&NearNullSpace>,
        _level: usize,
        params: &AmgParams,
        w: &mut LevelWork,
    ) -> Result<Option<f64>, AmgError> {
        let steps = params.eig_steps;
        if w.b.len() == self.n_rows() {
            estimate_emax_in(self, pbj, steps, [&mut w.b, &mut w.x, &mut w.sw.r])
        } else {
            let mut spare = Vector::zeros_on(&self.device(), self.n_rows())?;
            estimate_emax_in(self, pbj, steps, [&mut w.sw.r, &mut w.sw.d, &mut spare])
        }
    }

    fn replan_galerkin(
        tr: &mut Transfer,
        a: &Bsr,
        next: Option<&mut Bsr>,
    ) -> Result<bool, AmgError> {
        if BlockPattern::same(&tr.galerkin_a_pattern, a.pattern()) {
            return Ok(false);
        }
        tr.plan_galerkin(a)?;
        if let Some(next_a) = next {
            *next_a = Bsr::zeros_in(
                &a.device(),
                tr.galerkin.pattern().clone(),
                next_a.block_rows(),
                next_a.block_cols(),
                next_a.precision(),
            )?;
        }
        Ok(true)
    }

    /// Ends with a device synchronisation (kernels are asynchronous: the stage's time is its
    /// own).
    fn galerkin_into(
        tr: &mut Transfer,
        a: &Bsr,
        next: &mut Bsr,
        _messages: &mut MessageReport,
    ) -> Result<(), AmgError> {
        ptap_numeric(&tr.galerkin, a, &tr.p, next, &mut tr.galerkin_ws)?;
        Ok(a.device().synchronize()?)
    }

    fn level_work(&self, finest: bool) -> Result<LevelWork, AmgError> {
        serial_level_work(&self.device(), self.n_rows(), finest)
    }
}

fn coarsen_level(
    a: &Bsr,
    near_null: &NearNullSpace,
    level: usize,
    version: u64,
    params: &AmgParams,
    tm: &mut SetupTimings,
    previous: Option<SymbolicTransfer>,
) -> Result<Option<Coarsened<Bsr>>, AmgError> {
    let (bs, k) = (a.block_rows(), near_null.n_vectors());
    let (previous, kept_diagonal) = match previous {
        Some(mut prev) => {
            let diagonal = prev.diagonal.take();
            (Some(prev), diagonal)
        }
        None => (None, None),
    };
    let (aggregates, previous) = aggregates_and_plans(a, level, k, params, tm, previous)?;
    let coarse_rows = aggregates.n_aggregates() * k;
    if coarsening_stalled(a.n_rows(), coarse_rows, params) {
        return Ok(None);
    }
    let device = a.device();
    let bytes = &mut tm.transfers;
    let (pbj, emax) = timed_moving(
        &mut tm.smoother_setup_s,
        &mut bytes.smoother,
        &device,
        || stage_diagonal(a, level, params, kept_diagonal),
    )?;
    let (tentative, old_smoothing, old_galerkin) = match previous {
        Some(prev) => (
            Some(prev.tentative),
            Some(prev.smoothing),
            Some((prev.galerkin, prev.galerkin_ws)),
        ),
        None => (None, None, None),
    };
    // P0's values computed where the operator lives (the same bits on the host and a GPU);
    // on a GPU its pattern and QR plan are built there from the assignment
    let (tentative, p0, coarse_near_null) =
        timed_moving(&mut tm.tentative_s, &mut bytes.tentative, &device, || {
            let plan = match tentative {
                Some(plan) => plan,
                None => TentativePlan::new_on(&aggregates, bs, k, &device)?,
            };
            let (p0, coarse) = plan.build(near_null, &a.device())?;
            // the QR's kernels in this stage's time (see below)
            device.synchronize()?;
            Ok::<_, AmgError>((plan, p0, coarse))
        })?;
    let old_smoothing = old_smoothing
        .flatten()
        .filter(|plan| BlockPattern::same(plan.b(), p0.pattern()));
    let reused_smoothing = old_smoothing.is_some() || !params.smooth_prolongator;
    // the stages below end with a device synchronisation: each stage's time is its own (the
    // kernels are asynchronous; the next stage's first wait would take them otherwise)
    let (p, smoothing) = timed_moving(&mut tm.smoothing_s, &mut bytes.smoothing, &device, || {
        let smoothed = stage_smooth(a, &pbj, p0, emax, old_smoothing, params)?;
        device.synchronize()?;
        Ok::<_, AmgError>(smoothed)
    })?;
    let old_galerkin = old_galerkin.filter(|(plan, _)| {
        BlockPattern::same(plan.a_pattern(), a.pattern())
            && BlockPattern::same(plan.p_pattern(), p.pattern())
    });
    let reused = reused_smoothing && old_galerkin.is_some();
    let (galerkin, mut galerkin_ws) = match old_galerkin {
        Some(kept) => kept,
        None => {
            let plan = timed_moving(
                &mut tm.galerkin_symbolic_s,
                &mut bytes.galerkin,
                &device,
                || PtapPlan::new_on(&device, a.pattern(), p.pattern()),
            )?;
            let ws = plan.workspace();
            (plan, ws)
        }
    };
    let ac = timed_moving(
        &mut tm.galerkin_numeric_s,
        &mut bytes.galerkin,
        &device,
        || {
            let mut ac = Bsr::zeros_on(&a.device(), galerkin.pattern().clone(), k, k)?;
            ptap_numeric(&galerkin, a, &p, &mut ac, &mut galerkin_ws)?;
            device.synchronize()?;
            Ok::<_, AmgError>(ac)
        },
    )?;
    let coarsened = Coarsened {
        smoother: build_smoother(pbj, emax, params),
        transfer: Transfer {
            aggregates,
            tentative,
            p,
            p_version: version,
            smoothing,
            galerkin,
            galerkin_ws,
            galerkin_a_pattern: a.pattern().clone(),
        },
        a: ac,
        near_null: coarse_near_null,
        plans_reused: reused,
    };
    Ok(Some(coarsened))
}

impl Hierarchy {
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
    /// `near_null` (moved if owned, else copied) only for `reuse: none`. `previous` holds the
    /// symbolic plans of a hierarchy being renewed, finest transfer first (empty for a cold
    /// set-up): level `l` reuses entry `l` where it still holds (see `coarsen_level`), which
    /// changes no value.
    ///
    /// Memory: each level's temporaries (strength graph, `P0`) are freed as soon as their stage is
    /// done, so the peak is the finished levels plus the current stage's working set.
    pub(super) fn setup_impl(
        a: &Bsr,
        near_null: Cow<'_, NearNullSpace>,
        params: &AmgParams,
        first_version: u64,
        previous: Vec<Option<SymbolicTransfer>>,
    ) -> Result<Self, AmgError> {
        let t_total = Instant::now();
        params.validate()?;
        Self::check_input(a, &near_null)?;
        // on a GPU: fail before the first allocation if the hierarchy cannot fit
        super::check_device_memory(&a.device(), super::device_memory_estimate(a).0)?;
        let mut tm = SetupTimings::default();
        let fine_bs = a.block_rows();
        let built = build_levels(a, &near_null, params, first_version, previous, &mut tm)?;
        let (version, plans_reused) = (built.next_version, built.plans_reused);
        let mut transfers = built.transfers;
        let mut levels = Level::from_built(built.levels, fine_bs);
        if params.storage == Storage::Scalar {
            Self::expand_to_scalar(a, &mut levels, &mut transfers, &mut tm)?;
        }
        if params.precision != Precision::Double {
            let t = Instant::now();
            Self::store_coarse_values(params.precision, &mut levels, &mut transfers)?;
            tm.expansion_s += secs(t);
        }
        let coarsest = levels[levels.len() - 1].a.as_ref().unwrap_or(a);
        let device = a.device();
        let mut factor_s = 0.0;
        let coarse = timed_moving(
            &mut factor_s,
            &mut tm.transfers.coarse_factor,
            &device,
            || factor_coarse(coarsest),
        )?;
        tm.coarse_factor_s = factor_s;
        tm.total_s = secs(t_total);
        if params.reuse == Reuse::None {
            levels[0].near_null = Some(near_null.into_owned());
        }
        let mut report = HierarchyReport::new(Self::level_reports(&levels, a), tm);
        report.plans_reused = plans_reused;
        let work = Mutex::new(Self::new_workspace(&levels, a)?);
        Ok(Self {
            params: params.clone(),
            levels,
            transfers,
            coarse,
            next_version: version,
            state: SerialState {
                report,
                owns_fine: false,
                fine_pattern: a.pattern().clone(),
                fine_bs: a.block_rows(),
                device: a.device(),
            },
            work,
        })
    }

    /// [`Storage::Scalar`]: replaces every operator and prolongator by its 1x1-block expansion and
    /// rebuilds the Galerkin plans (which also serve the restriction) on the scalar patterns.
    fn expand_to_scalar(
        a: &Bsr,
        levels: &mut [Level<Bsr>],
        transfers: &mut [Transfer],
        tm: &mut SetupTimings,
    ) -> Result<(), AmgError> {
        let t = Instant::now();
        for (l, lev) in levels.iter_mut().enumerate() {
            lev.a = Some(lev.a.as_ref().unwrap_or(a).to_scalar_blocks()?);
            if let Some(tr) = transfers.get_mut(l) {
                tr.p = tr.p.to_scalar_blocks()?;
            }
        }
        tm.expansion_s += secs(t);
        let t = Instant::now();
        for (tr, lev) in transfers.iter_mut().zip(levels.iter()) {
            tr.plan_galerkin(lev.a.as_ref().unwrap_or(a))?;
        }
        tm.galerkin_symbolic_s += secs(t);
        Ok(())
    }

    /// [`Precision::Mixed`]: stores every prolongator, every operator below the finest and every
    /// smoother's inverses in fp32, one matrix at a time (each fp64 original is dropped as soon
    /// as its fp32 form exists). Later hot updates write these fp32 forms in place.
    fn store_coarse_values(
        precision: Precision,
        levels: &mut [Level<Bsr>],
        transfers: &mut [Transfer],
    ) -> Result<(), AmgError> {
        let values = precision.coarse_values();
        for (l, lev) in levels.iter_mut().enumerate() {
            if let (true, Some(a)) = (l > 0, lev.a.as_mut()) {
                *a = a.to_precision(values)?;
            }
            if let Some(s) = lev.smoother.as_mut() {
                s.pbj.set_precision(values)?;
            }
        }
        for tr in transfers {
            tr.p = tr.p.to_precision(values)?;
        }
        Ok(())
    }

    pub(super) fn level_reports(levels: &[Level<Bsr>], fine: &Bsr) -> Vec<LevelReport> {
        levels
            .iter()
            .map(|l| {
                let emax = l.smoother.as_ref().map(|s| s.emax);
                LevelReport::with_block_size(l.a.as_ref().unwrap_or(fine), l.bs, emax)
            })
            .collect()
    }
}
