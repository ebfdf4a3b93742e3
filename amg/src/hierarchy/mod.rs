//! The smoothed-aggregation hierarchy: cold setup in named per-level stages, hot update with
//! explicit reuse state, and the symmetric V-cycle that preconditions CG.
//!
//! Calling order: one setup, then [`Hierarchy::update`] for every new operator of the same size
//! (Newton steps); use the hierarchy as a preconditioner in between. Three setups, by who keeps the
//! fine operator `A_0`:
//! - [`Hierarchy::setup_external`]: the caller keeps `A_0` (no copy); the preconditioner is
//!   [`Hierarchy::with_operator`]`(&a)`, and `update(&a)` copies nothing. The memory-lean choice.
//! - [`Hierarchy::setup`] copies `A_0`, [`Hierarchy::setup_owned`] takes it: the hierarchy is then
//!   itself a [`crate::Preconditioner`].
//!
//! Setup, level by level (module `setup`, the stages of PETSc's GAMG): graph (strength graph),
//! coarsen (MIS aggregation), prolongator (tentative `P0` by QR), smooth (`P = (I - omega D^{-1} A)
//! P0`), Galerkin (`A_c = P^T A P`: symbolic plan, then numeric product); then the coarsest level's
//! dense factorisation.
//!
//! Reuse state is explicit: `P` changes only in a cold setup, which numbers each prolongator with a
//! fresh version ([`Hierarchy::p_versions`]). A hot update (`reuse: interpolation`) keeps every
//! `P`, and rebuilds a level's Galerkin plan (which also holds the `P^T` pattern the restriction
//! reads) only when the level operator's pattern is no longer the one the plan was built for.
//!
//! A new near-null space (Newton's deformed rigid-body modes at each load step) goes through
//! [`Hierarchy::set_near_null_space`] (module `renew`): a cold set-up's values, bit for bit, that
//! keeps a transfer's symbolic plans (`A P0`, Galerkin) where its recomputed aggregates and
//! operator pattern are unchanged.
//!
//! Memory: the hierarchy keeps per level the operator (none on level 0 of an external one), the
//! smoother's block-diagonal inverses, and per transfer the aggregates, `P`, the symbolic product
//! `A P0` of the smoothing (`P0`'s pattern, `P`'s shared, and on a GPU `P`'s pattern uploaded
//! once more), its Galerkin plan (whose `P^T` pattern and slot map also serve the restriction) and
//! the plan's workspace; no transpose of `P`, no `P0` values, no strength graph, and no copy of
//! the fine near-null space except with `reuse: none`. Setup temporaries are freed as soon as
//! their stage ends.
//!
//! Storage ([`Storage`]): the coarsening path always works on blocks; with `scalar` the operators and
//! prolongators the solve and the hot update use are expanded to 1x1 blocks after the cold setup.

mod cycle;
mod renew;
mod setup;
mod update;

pub use cycle::{CycleWorkspace, VCycle};
pub(crate) use setup::timed_moving;

use crate::aggregation::Aggregates;
use crate::level_matrix::{BuiltLevel, LevelMatrix};
use crate::params::{AmgParams, SmootherKind, Storage, JACOBI_OMEGA_SCALE};
use crate::report::HierarchyReport;
use crate::smoother::Smoother;
use crate::tentative::TentativePlan;
use crate::{AmgError, NearNullSpace, PointBlockJacobi};
use linalg::dense::DenseFactor;
use linalg::{BlockPattern, Bsr, Device, LinalgError, PtapPlan, PtapWorkspace, SpgemmPlan};
use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Largest coarsest level factored densely (`n^2` doubles): beyond it setup fails instead of
/// allocating gigabytes. Raise `max_levels` or `coarse_eq_limit` consistency if hit.
pub const MAX_DENSE_COARSE: usize = 12_000;

/// Device memory of a device hierarchy, per byte of its fine operator (values and pattern),
/// besides the operator itself: the high-water mark measured with `hexfem bench gamg --device
/// cuda` on ex56 Q1 on an H100 was 1.52 (66^3), 1.49 (99^3) and 1.47 (230^3) operator bytes (the
/// prolongators, the coarse operators, the finest Galerkin product's `W = A P` while it runs,
/// the uploaded plans, the cycle and CG vectors); 1.6 leaves a margin.
pub const DEVICE_BYTES_PER_OPERATOR_BYTE: f64 = 1.6;

/// The device memory a hierarchy of the fine operator `a` needs besides `a` itself (an estimate,
/// [`DEVICE_BYTES_PER_OPERATOR_BYTE`]), and the bytes of `a` on the device.
pub fn device_memory_estimate(a: &Bsr) -> (u64, u64) {
    let p = a.pattern();
    let operator = (p.nnz() * a.block_len() * 8 + p.nnz() * 4 + (p.n_block_rows() + 1) * 4) as u64;
    let hierarchy = (DEVICE_BYTES_PER_OPERATOR_BYTE * operator as f64) as u64;
    (hierarchy, operator)
}

/// Errors with [`AmgError::DeviceOutOfMemory`] unless `device` has `need` bytes free (always
/// fine on the host).
pub fn check_device_memory(device: &Device, need: u64) -> Result<(), AmgError> {
    let Some(ctx) = device.cuda_context() else {
        return Ok(());
    };
    let (free, _) = ctx.memory_info()?;
    if need > free as u64 {
        return Err(AmgError::DeviceOutOfMemory {
            device: device.name(),
            need_mib: need >> 20,
            free_mib: (free as u64) >> 20,
        });
    }
    Ok(())
}

/// One level: its operator and (except on the coarsest) its smoother.
#[derive(Debug)]
pub(crate) struct Level<M: LevelMatrix> {
    /// The operator in the hierarchy's storage. `None` only on level 0 of an external, blocked
    /// serial hierarchy (the caller's operator is used) and during a hot update on ranks.
    pub(crate) a: Option<M>,
    /// Unknowns per node (aggregate): the logical block size, whatever the storage.
    pub(crate) bs: usize,
    pub(crate) smoother: Option<Smoother>,
    /// Near-null space of the level. Serial, on level 0 only with `reuse: none` (whose update
    /// rebuilds from it): otherwise the caller holds it and the hierarchy keeps no copy. On
    /// ranks always (its serial ids place the eigenvalue start vectors and the coarse rows).
    pub(crate) near_null: Option<M::NearNull>,
}

impl<M: LevelMatrix> Level<M> {
    /// The levels of a set-up as [`crate::level_matrix::build_levels`] built them (`fine_bs`:
    /// the fine operator's unknowns per node).
    pub(crate) fn from_built(built: Vec<BuiltLevel<M>>, fine_bs: usize) -> Vec<Self> {
        built
            .into_iter()
            .map(|l| Level {
                bs: l.near_null.as_ref().map_or(fine_bs, M::near_null_vectors),
                a: l.a,
                smoother: l.smoother,
                near_null: l.near_null,
            })
            .collect()
    }
}

/// Interpolation between level `l` and `l + 1`, with its P-side plans.
#[derive(Debug)]
pub struct Transfer {
    aggregates: Aggregates,
    /// `P0`'s pattern and QR plan for these aggregates (kept for a renewal).
    tentative: TentativePlan,
    /// Prolongator in the hierarchy's storage.
    p: Bsr,
    /// Version of `p` (set by the cold setup that built it; reported by updates).
    p_version: u64,
    /// Symbolic product `A P0` of the prolongator smoothing (its pattern is `p`'s blocked one;
    /// `None` for unsmoothed aggregation), kept for [`Hierarchy::set_near_null_space`].
    smoothing: Option<SpgemmPlan>,
    /// Galerkin plan of `p` on the level's operator; its `P^T` pattern and slot map also drive the
    /// restriction (no separate transpose of `p` is kept).
    galerkin: PtapPlan,
    /// Scratch of the plan's numeric product, reused by every hot update.
    galerkin_ws: PtapWorkspace,
    /// Pattern of the fine operator the Galerkin plan was built for.
    galerkin_a_pattern: Arc<BlockPattern>,
}

/// What a transfer's symbolic phase built: its aggregates and the plans made from them and the
/// level operator's pattern alone (no value, no near-null space). A renewal keeps the plans
/// where the aggregates (recomputed, or kept with `renewal: keep_aggregates`) and the pattern
/// are those they were made for.
#[derive(Debug)]
pub struct SymbolicTransfer {
    aggregates: Aggregates,
    plans: TransferPlans,
    /// The level's smoother diagonal before the renewal, whose storage (on a GPU: the inverses
    /// and the diagonal slots) a new one reuses where the level operator's pattern is the same
    /// object; its values are always recomputed.
    diagonal: Option<PointBlockJacobi>,
}

/// A transfer's plans for fixed aggregates and level pattern `galerkin_a_pattern`.
#[derive(Debug)]
pub struct TransferPlans {
    tentative: TentativePlan,
    smoothing: Option<SpgemmPlan>,
    galerkin: PtapPlan,
    galerkin_ws: PtapWorkspace,
    galerkin_a_pattern: Arc<BlockPattern>,
}

impl Transfer {
    /// The transfer's symbolic part, its prolongator's values dropped; `diagonal`: the level's
    /// smoother diagonal, for its storage.
    fn into_symbolic(self, diagonal: Option<PointBlockJacobi>) -> SymbolicTransfer {
        SymbolicTransfer {
            diagonal,
            aggregates: self.aggregates,
            plans: TransferPlans {
                tentative: self.tentative,
                smoothing: self.smoothing,
                galerkin: self.galerkin,
                galerkin_ws: self.galerkin_ws,
                galerkin_a_pattern: self.galerkin_a_pattern,
            },
        }
    }

    /// (Re)builds the Galerkin plan of `p` on `a`'s pattern, with its workspace.
    fn plan_galerkin(&mut self, a: &Bsr) -> Result<(), AmgError> {
        self.galerkin = PtapPlan::new_on(&a.device(), a.pattern(), self.p.pattern())?;
        self.galerkin_ws = self.galerkin.workspace();
        self.galerkin_a_pattern = a.pattern().clone();
        Ok(())
    }
}

/// What a serial hierarchy keeps besides its levels: who owns the fine operator, its shape and
/// device, and the report.
#[derive(Debug)]
pub struct SerialState {
    report: HierarchyReport,
    /// True if the hierarchy keeps its own blocked `A_0` (`setup`, `setup_owned`).
    owns_fine: bool,
    /// Pattern of the (blocked) fine operator of the last setup or update.
    fine_pattern: Arc<BlockPattern>,
    /// Block size of the fine operator.
    fine_bs: usize,
    /// Where every operator, prolongator, smoother and cycle vector lives (the fine operator's
    /// device at setup).
    device: Device,
}

/// Smoothed-aggregation AMG hierarchy, one type for one process and for ranks: `M` is the level
/// operator, [`Bsr`] (the default: the fused serial kernels) or a rank's rows
/// [`linalg::dist::DistBsr`] ([`crate::dist_cycle::DistHierarchy`]). One set-up loop, one hot
/// update, one V-cycle; only the level operations of `M` differ. A
/// [`crate::Preconditioner`] (one symmetric V-cycle per apply) when it holds the fine operator;
/// see [`Hierarchy::with_operator`] otherwise.
#[derive(Debug)]
pub struct Hierarchy<M: LevelMatrix = Bsr> {
    pub(crate) params: AmgParams,
    pub(crate) levels: Vec<Level<M>>,
    pub(crate) transfers: Vec<M::Transfer>,
    pub(crate) coarse: M::Coarse,
    pub(crate) next_version: u64,
    pub(crate) state: M::State,
    /// The workspace of [`crate::Preconditioner::apply`] (callers running concurrent cycles bring
    /// their own, see [`Hierarchy::workspace`]).
    pub(crate) work: Mutex<CycleWorkspace>,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Runs `f` and adds its wall-clock seconds to `acc`.
pub(crate) fn timed<T>(acc: &mut f64, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    *acc += secs(t);
    out
}

pub(crate) fn with_level(e: AmgError, level: usize) -> AmgError {
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
pub(crate) fn build_smoother(pbj: PointBlockJacobi, emax: f64, params: &AmgParams) -> Smoother {
    match params.smoother {
        SmootherKind::Chebyshev => Smoother::chebyshev(
            pbj,
            emax,
            params.chebyshev_degree,
            params.chebyshev_lower,
            params.chebyshev_upper,
        ),
        SmootherKind::Jacobi => {
            let omega = params.jacobi_omega.unwrap_or(JACOBI_OMEGA_SCALE / emax);
            Smoother::jacobi(pbj, emax, params.jacobi_sweeps, omega)
        }
    }
}

/// The estimate of `lambda_max(D^{-1} A)` of level `level`, or an error if it was impossible.
pub(crate) fn checked_emax(estimate: Option<f64>, level: usize) -> Result<f64, AmgError> {
    estimate
        .filter(|e| e.is_finite() && *e > 0.0)
        .ok_or(AmgError::EigenEstimateFailed { level })
}

/// The coarsest operator's explicit inverse ([`DenseFactor::invert`]): the same bits on the host
/// and on a GPU, so that host and GPU cycles agree bit for bit.
fn factor_coarse(a: &Bsr) -> Result<DenseFactor, AmgError> {
    coarse_inverse(a.n_rows(), || DenseFactor::invert(a))
}

/// The one coarse factorisation of every hierarchy (serial, on ranks, on a rank's GPU): the
/// explicit inverse `invert` makes of the `n`-row coarsest operator; an error above
/// [`MAX_DENSE_COARSE`] rows (before `invert` runs), a zero pivot named as the coarse matrix's.
pub(crate) fn coarse_inverse(
    n: usize,
    invert: impl FnOnce() -> Result<DenseFactor, LinalgError>,
) -> Result<DenseFactor, AmgError> {
    if n > MAX_DENSE_COARSE {
        return Err(AmgError::CoarseTooLarge {
            n,
            limit: MAX_DENSE_COARSE,
        });
    }
    invert().map_err(|e| match e {
        LinalgError::SingularMatrix { n, column, pivot } => AmgError::SingularCoarseMatrix {
            n,
            row: column,
            pivot,
        },
        e => e.into(),
    })
}

impl Hierarchy {
    /// Builds the hierarchy of the SPD operator `a` (square `bs x bs` blocks) with near-null space
    /// `near_null` (`a.n_rows()` rows; its `k` vectors set the coarse block size). Keeps a copy of
    /// `a`, so the hierarchy is a self-contained [`crate::Preconditioner`].
    pub fn setup(a: &Bsr, near_null: &NearNullSpace, params: &AmgParams) -> Result<Self, AmgError> {
        let mut h = Self::setup_impl(a, Cow::Borrowed(near_null), params, 1, Vec::new())?;
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
        let mut h = Self::setup_impl(&a, Cow::Borrowed(near_null), params, 1, Vec::new())?;
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
        Self::setup_impl(a, Cow::Borrowed(near_null), params, 1, Vec::new())
    }

    /// Makes `a` (the operator of the setup) the hierarchy's own fine operator (blocked storage).
    fn own_fine(&mut self, a: Bsr) {
        self.state.owns_fine = true;
        if self.params.storage == Storage::Blocked {
            self.levels[0].a = Some(a);
        }
    }

    /// Errors unless `a` has the block rows and block size of the hierarchy's fine operator.
    fn check_shape(&self, a: &Bsr) -> Result<(), AmgError> {
        if !a.device().same_as(&self.state.device) {
            return Err(LinalgError::DeviceMismatch {
                what: "AMG operator (the hierarchy's device)",
                expected: self.state.device.name(),
                found: a.device().name(),
            }
            .into());
        }
        if a.pattern().n_block_rows() != self.state.fine_pattern.n_block_rows()
            || a.pattern().n_block_cols() != self.state.fine_pattern.n_block_cols()
            || a.block_rows() != self.state.fine_bs
            || a.block_cols() != self.state.fine_bs
        {
            return Err(AmgError::OperatorChanged {
                expected: self.state.fine_pattern.n_block_rows(),
                expected_bs: self.state.fine_bs,
                found: a.pattern().n_block_rows(),
                found_bs: a.block_rows(),
            });
        }
        Ok(())
    }

    /// The V-cycle on the caller's fine operator `a`, which must carry the pattern and block size
    /// of the last setup or update (its values are those `update` last saw, or `reuse: full`
    /// semantics apply). Required for [`Hierarchy::setup_external`]; with scalar storage the
    /// hierarchy's own expansion is used and `a` is only checked.
    pub fn with_operator<'a>(&'a self, a: &'a Bsr) -> Result<VCycle<'a>, AmgError> {
        self.check_shape(a)?;
        if !BlockPattern::same(&self.state.fine_pattern, a.pattern()) {
            return Err(AmgError::OperatorPatternChanged);
        }
        Ok(VCycle::new(self, a))
    }

    /// The device the hierarchy lives on (its setup operator's).
    pub fn device(&self) -> &Device {
        &self.state.device
    }

    /// Storage of the operators and prolongators.
    pub fn storage(&self) -> Storage {
        self.params.storage
    }

    /// Sizes, complexities and the cold-setup timings.
    pub fn report(&self) -> &HierarchyReport {
        &self.state.report
    }

    /// Near-null space of level `l` (the coarse ones are the `R` factors of the tentative QR).
    /// Level 0's is kept only with `reuse: none` (its update rebuilds from it): otherwise
    /// `near_null(0)` is `None` and the caller's space is the fine one.
    pub fn near_null(&self, l: usize) -> Option<&NearNullSpace> {
        self.levels.get(l).and_then(|lev| lev.near_null.as_ref())
    }

    /// Bytes of the values the hierarchy stores: its operators (the fine one only where it keeps
    /// its own), prolongators and smoother inverses, each in its stored precision (patterns,
    /// plans and the coarsest dense factor not counted). What `precision: mixed` halves.
    pub fn value_bytes(&self) -> usize {
        let bsr = |m: &Bsr| m.n_values() * m.precision().bytes();
        let levels: usize = self
            .levels
            .iter()
            .map(|lev| {
                let inv = lev.smoother.as_ref().map_or(0, |s| {
                    let d = s.pbj.inverse();
                    d.n_rows() * d.block_size() * d.precision().bytes()
                });
                lev.a.as_ref().map_or(0, bsr) + inv
            })
            .sum();
        levels + self.transfers.iter().map(|t| bsr(&t.p)).sum::<usize>()
    }

    /// Aggregates of level `l` (absent on the coarsest).
    pub fn aggregates(&self, l: usize) -> Option<&Aggregates> {
        self.transfers.get(l).map(|t| &t.aggregates)
    }

    /// Prolongator from level `l + 1` to level `l`, in the hierarchy's storage.
    pub fn prolongator(&self, l: usize) -> Option<&Bsr> {
        self.transfers.get(l).map(|t| &t.p)
    }
}

impl<M: LevelMatrix> Hierarchy<M> {
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
    pub fn operator(&self, l: usize) -> Option<&M> {
        self.levels.get(l).and_then(|lev| lev.a.as_ref())
    }

    /// Smoother of level `l` (absent on the coarsest).
    pub fn smoother(&self, l: usize) -> Option<&Smoother> {
        self.levels.get(l).and_then(|lev| lev.smoother.as_ref())
    }

    /// Versions of the prolongators, finest first.
    pub fn p_versions(&self) -> Vec<u64> {
        self.transfers.iter().map(M::p_version).collect()
    }

    /// The estimates of `lambda_max(D^{-1} A)` of the levels above the coarsest.
    pub fn emax(&self) -> Vec<f64> {
        self.levels
            .iter()
            .filter_map(|l| l.smoother.as_ref().map(|s| s.emax))
            .collect()
    }
}
