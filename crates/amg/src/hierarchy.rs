//! The smoothed-aggregation hierarchy: cold setup, hot update with explicit reuse state, and the
//! symmetric V-cycle that preconditions CG.
//!
//! Calling order: [`Hierarchy::setup`] once; [`Hierarchy::update`] for every new operator of the same
//! size (Newton steps); use the hierarchy as a [`Preconditioner`] in between.
//!
//! Reuse state is explicit: each transfer records the version of its prolongator `P`, and the
//! version its transpose `R = P^T` and Galerkin plan were built from. P-side data is rebuilt only
//! when these differ (or the operator's pattern changed under a plan).

use crate::aggregation::{aggregate, Aggregates, MisDistance};
use crate::dense::DenseFactor;
use crate::eig::estimate_emax;
use crate::params::{AmgParams, Reuse, SmootherKind};
use crate::prolongator::smooth_prolongator;
use crate::report::{HierarchyReport, LevelReport, SetupTimings, UpdateReport};
use crate::smoother::{Smoother, SmootherWork};
use crate::strength::strength_graph;
use crate::tentative::tentative_prolongator;
use crate::{AmgError, NearNullSpace, PointBlockJacobi, Preconditioner};
use linalg::{ptap_numeric, transpose, BlockPattern, Bsr, PtapPlan, Vector};
use rayon::prelude::*;
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Instant;

/// Largest coarsest level factored densely (`n^2` doubles): beyond it setup fails instead of
/// allocating gigabytes. Raise `max_levels` or `coarse_eq_limit` consistency if hit.
pub const MAX_DENSE_COARSE: usize = 12_000;

/// One level: its operator and (except on the coarsest) its smoother.
#[derive(Debug)]
struct Level {
    a: Bsr,
    smoother: Option<Smoother>,
    near_null: NearNullSpace,
}

/// Interpolation between level `l` and `l + 1`, with its P-side cache.
#[derive(Debug)]
struct Transfer {
    aggregates: Aggregates,
    p: Bsr,
    p_version: u64,
    r: Bsr,
    r_from: u64,
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

/// Smoothed-aggregation AMG hierarchy; a [`Preconditioner`] (one symmetric V-cycle per apply).
#[derive(Debug)]
pub struct Hierarchy {
    params: AmgParams,
    levels: Vec<Level>,
    transfers: Vec<Transfer>,
    coarse: DenseFactor,
    report: HierarchyReport,
    next_version: u64,
    work: Mutex<Vec<LevelWork>>,
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

/// `lambda_max(D^{-1} A)` of level `level`, or an error if the estimate is impossible.
fn emax_of(a: &Bsr, pbj: &PointBlockJacobi, steps: usize, level: usize) -> Result<f64, AmgError> {
    estimate_emax(a, pbj, steps)
        .filter(|e| e.is_finite() && *e > 0.0)
        .ok_or(AmgError::EigenEstimateFailed { level })
}

/// Copies `src`'s values into `dst` when both carry the same pattern; otherwise clones `src`.
/// Returns true if the pattern changed.
fn copy_operator(dst: &mut Bsr, src: &Bsr) -> bool {
    let same = Arc::ptr_eq(dst.pattern(), src.pattern()) || **dst.pattern() == **src.pattern();
    if same && dst.block_rows() == src.block_rows() && dst.block_cols() == src.block_cols() {
        dst.values_mut()
            .par_chunks_mut(1 << 16)
            .zip(src.values().par_chunks(1 << 16))
            .for_each(|(d, s)| {
                d.copy_from_slice(s);
            });
        false
    } else {
        *dst = src.clone();
        true
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
    /// `near_null` (`a.n_rows()` rows; its `k` vectors set the coarse block size).
    pub fn setup(a: &Bsr, near_null: &NearNullSpace, params: &AmgParams) -> Result<Self, AmgError> {
        Self::setup_from(a.clone(), near_null, params, 1, 0.0)
    }

    fn setup_from(
        a: Bsr,
        near_null: &NearNullSpace,
        params: &AmgParams,
        first_version: u64,
        copy_s: f64,
    ) -> Result<Self, AmgError> {
        let t_total = Instant::now();
        params.validate()?;
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
        let k = near_null.n_vectors();
        let mut tm = SetupTimings {
            copy_operator_s: copy_s,
            ..Default::default()
        };
        let mut levels = vec![Level {
            a,
            smoother: None,
            near_null: near_null.clone(),
        }];
        let mut transfers = Vec::new();
        let mut version = first_version;
        loop {
            let l = levels.len() - 1;
            let a_l = &levels[l].a;
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
            tm.aggregation_s += secs(t);
            let coarse_rows = aggregates.n_aggregates() * k;
            if coarse_rows == 0
                || (a_l.n_rows() as f64) < params.min_coarsening_ratio * coarse_rows as f64
            {
                break; // nothing to aggregate, or coarsening stalled
            }
            let t = Instant::now();
            let pbj = PointBlockJacobi::new(a_l).map_err(|e| with_level(e, l))?;
            let emax = emax_of(a_l, &pbj, params.eig_steps, l)?;
            tm.smoother_setup_s += secs(t);
            let t = Instant::now();
            let (p0, coarse_nns) = tentative_prolongator(&aggregates, &levels[l].near_null, bs)?;
            tm.tentative_s += secs(t);
            let t = Instant::now();
            let p = if params.smooth_prolongator {
                smooth_prolongator(a_l, &pbj, &p0, params.prolongator_omega_scale / emax)?
            } else {
                p0
            };
            tm.smoothing_s += secs(t);
            let t = Instant::now();
            let r = transpose(&p);
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
                r,
                r_from: version,
                galerkin,
                galerkin_from: version,
                galerkin_a_pattern,
            });
            version += 1;
            levels.push(Level {
                a: ac,
                smoother: None,
                near_null: coarse_nns,
            });
        }
        let t = Instant::now();
        let coarse = factor_coarse(&levels[levels.len() - 1].a)?;
        tm.coarse_factor_s = secs(t);
        tm.total_s = secs(t_total) + copy_s;
        let report = HierarchyReport::new(Self::level_reports(&levels), tm);
        let work = Mutex::new(Self::new_work(&levels));
        Ok(Self {
            params: params.clone(),
            levels,
            transfers,
            coarse,
            report,
            next_version: version,
            work,
        })
    }

    fn level_reports(levels: &[Level]) -> Vec<LevelReport> {
        levels
            .iter()
            .map(|l| LevelReport::of(&l.a, l.smoother.as_ref().map(|s| s.emax)))
            .collect()
    }

    fn new_work(levels: &[Level]) -> Vec<LevelWork> {
        levels
            .iter()
            .enumerate()
            .map(|(l, lev)| {
                let n = lev.a.n_rows();
                let m = if l == 0 { 0 } else { n };
                LevelWork {
                    b: Vector::zeros(m),
                    x: Vector::zeros(m),
                    sw: SmootherWork::new(n),
                }
            })
            .collect()
    }

    /// Takes a new operator of the same block structure and updates the hierarchy as `params.reuse`
    /// says (see [`Reuse`]). On error the hierarchy must be rebuilt with [`Hierarchy::setup`].
    pub fn update(&mut self, a: &Bsr) -> Result<UpdateReport, AmgError> {
        let t_total = Instant::now();
        let fine = &self.levels[0].a;
        if a.pattern().n_block_rows() != fine.pattern().n_block_rows()
            || a.pattern().n_block_cols() != fine.pattern().n_block_cols()
            || a.block_rows() != fine.block_rows()
            || a.block_cols() != fine.block_cols()
        {
            return Err(AmgError::OperatorChanged {
                expected: fine.pattern().n_block_rows(),
                expected_bs: fine.block_rows(),
                found: a.pattern().n_block_rows(),
                found_bs: a.block_rows(),
            });
        }
        let mut tm = SetupTimings::default();
        let (mut transposes_rebuilt, mut galerkin_plans_rebuilt) = (0, 0);
        match self.params.reuse {
            Reuse::Full => {}
            Reuse::None => {
                let t = Instant::now();
                let a = a.clone();
                let copy_s = secs(t);
                let nns = self.levels[0].near_null.clone();
                *self = Self::setup_from(a, &nns, &self.params, self.next_version, copy_s)?;
                tm = self.report.setup.clone();
                transposes_rebuilt = self.transfers.len();
                galerkin_plans_rebuilt = self.transfers.len();
            }
            Reuse::Interpolation => {
                let t = Instant::now();
                copy_operator(&mut self.levels[0].a, a);
                tm.copy_operator_s = secs(t);
                for l in 0..self.transfers.len() {
                    let (fine, coarse) = self.levels.split_at_mut(l + 1);
                    let (lev, next) = (&mut fine[l], &mut coarse[0]);
                    let tr = &mut self.transfers[l];
                    let t = Instant::now();
                    if tr.r_from != tr.p_version {
                        tr.r = transpose(&tr.p);
                        tr.r_from = tr.p_version;
                        transposes_rebuilt += 1;
                    }
                    let a_pattern_same = Arc::ptr_eq(&tr.galerkin_a_pattern, lev.a.pattern())
                        || *tr.galerkin_a_pattern == **lev.a.pattern();
                    if tr.galerkin_from != tr.p_version || !a_pattern_same {
                        tr.galerkin = PtapPlan::new(lev.a.pattern(), tr.p.pattern())?;
                        tr.galerkin_from = tr.p_version;
                        tr.galerkin_a_pattern = lev.a.pattern().clone();
                        next.a = Bsr::zeros(
                            tr.galerkin.pattern().clone(),
                            next.a.block_rows(),
                            next.a.block_cols(),
                        );
                        galerkin_plans_rebuilt += 1;
                    }
                    tm.galerkin_symbolic_s += secs(t);
                    let t = Instant::now();
                    let smoother = lev
                        .smoother
                        .take()
                        .ok_or(AmgError::EigenEstimateFailed { level: l })?;
                    let old_emax = smoother.emax;
                    let mut pbj = smoother.pbj;
                    pbj.update(&lev.a).map_err(|e| with_level(e, l))?;
                    let emax = if self.params.recompute_eigs {
                        emax_of(&lev.a, &pbj, self.params.eig_steps, l)?
                    } else {
                        old_emax
                    };
                    lev.smoother = Some(build_smoother(pbj, emax, &self.params));
                    tm.smoother_setup_s += secs(t);
                    let t = Instant::now();
                    ptap_numeric(&tr.galerkin, &lev.a, &tr.p, &mut next.a)?;
                    tm.galerkin_numeric_s += secs(t);
                }
                let t = Instant::now();
                self.coarse = factor_coarse(&self.levels[self.levels.len() - 1].a)?;
                tm.coarse_factor_s = secs(t);
                let levels = Self::level_reports(&self.levels);
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

    /// Operator of level `l` (0 = finest).
    pub fn operator(&self, l: usize) -> Option<&Bsr> {
        self.levels.get(l).map(|lev| &lev.a)
    }

    /// Near-null space of level `l` (the coarse ones are the `R` factors of the tentative QR).
    pub fn near_null(&self, l: usize) -> Option<&NearNullSpace> {
        self.levels.get(l).map(|lev| &lev.near_null)
    }

    /// Aggregates of level `l` (absent on the coarsest).
    pub fn aggregates(&self, l: usize) -> Option<&Aggregates> {
        self.transfers.get(l).map(|t| &t.aggregates)
    }

    /// Prolongator from level `l + 1` to level `l`.
    pub fn prolongator(&self, l: usize) -> Option<&Bsr> {
        self.transfers.get(l).map(|t| &t.p)
    }

    /// Versions of the prolongators, finest first.
    pub fn p_versions(&self) -> Vec<u64> {
        self.transfers.iter().map(|t| t.p_version).collect()
    }

    /// One V-cycle on level `l`: `x` (overwritten) approximates `A_l^{-1} b`.
    fn cycle(
        &self,
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
        smoother.smooth(&lev.a, b, x, true, sw);
        sw.r.copy_from(b);
        lev.a.spmv_add(-1.0, x, 1.0, &mut sw.r);
        let Some((c, deeper)) = rest.split_first_mut() else {
            return; // unreachable: every non-coarsest level has a work entry below it
        };
        tr.r.spmv(&sw.r, &mut c.b);
        self.cycle(l + 1, &c.b, &mut c.x, &mut c.sw, deeper);
        tr.p.spmv_add(1.0, &c.x, 1.0, x);
        smoother.smooth(&lev.a, b, x, false, sw);
    }
}

impl Preconditioner for Hierarchy {
    /// One V(d, d) cycle from a zero initial guess (symmetric: the same smoother before and after).
    fn apply(&self, r: &Vector, z: &mut Vector) {
        let mut guard = match self.work.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        let mut temporary;
        let work: &mut Vec<LevelWork> = match guard.as_deref_mut() {
            Some(w) => w,
            None => {
                temporary = Self::new_work(&self.levels);
                &mut temporary
            }
        };
        let (first, rest) = work
            .split_first_mut()
            .expect("a hierarchy has at least one level");
        self.cycle(0, r, z, &mut first.sw, rest);
    }
}
