//! [`AmgParams`]: every option of the hierarchy, with documented defaults (serde: unknown fields are
//! rejected, missing fields take their default).

use crate::AmgError;
use serde::{Deserialize, Serialize};

/// Numerator of the default damped-Jacobi weight `omega = JACOBI_OMEGA_SCALE / emax(D^{-1} A)`
/// (and of PyAMG's prolongator damping, the default of `prolongator_omega_scale`).
pub const JACOBI_OMEGA_SCALE: f64 = 4.0 / 3.0;

/// `process_eq_limit` on CPU ranks when unset: PETSc GAMG's default.
pub const PROCESS_EQ_LIMIT_CPU: usize = 50;

/// `process_eq_limit` on GPU ranks when unset ([`AmgParams::on_gpu_ranks`]): a level of fewer
/// unknowns per GPU runs its SpMV in less time than a halo exchange takes between two GPUs
/// (see docs/benchmarks.md, "Small coarse levels on fewer GPUs").
pub const PROCESS_EQ_LIMIT_GPU: usize = 20_000;

/// What [`crate::Hierarchy::update`] keeps when given a new operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reuse {
    /// Rebuild everything (a cold setup on the new operator).
    None,
    /// Keep aggregates and prolongators (and their transposes and Galerkin plans); recompute the
    /// numeric Galerkin products, smoother diagonals, coarse factorisation and, if `recompute_eigs`,
    /// the eigenvalue estimates. The default in Newton runs.
    #[default]
    Interpolation,
    /// Keep the whole preconditioner built for the old operator (modified Newton).
    Full,
}

/// What [`crate::Hierarchy::set_near_null_space`] (a renewal for a new near-null space, e.g.
/// each load step's deformed rigid-body modes) recomputes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Renewal {
    /// Everything from the strength graph on: the values of a cold set-up with the new modes;
    /// plans are kept where the aggregates come out unchanged. The default: a run restarted
    /// from any step gives the uninterrupted run's bits, and the iterations do not depend on
    /// what the aggregates of earlier steps were.
    #[default]
    Recompute,
    /// Keep each level's aggregates (no strength graph, no aggregation, every symbolic plan
    /// kept); recompute the tentative prolongators from the new modes, their smoothing, the
    /// Galerkin products, smoothers and the coarse factor. The values of a cold set-up whose
    /// aggregation had given the kept aggregates. Faster (H200, docs/benchmarks.md: a renewal
    /// of ex56 66^3 in 68 ms against 289 ms, the same 16 CG iterations; neo_hookean_block at
    /// 104^3 spends 5.0 s instead of 9.9 s in its steps on one GPU), but the aggregates of the
    /// first tangent may fit later ones worse (the nearly incompressible rubber block needs 14
    /// Newton iterations in a step instead of at most 12), and a restart, which sets up cold
    /// from its step, gives the uninterrupted run's answer to the solver's tolerance only.
    KeepAggregates,
}

/// Level smoother.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmootherKind {
    /// Chebyshev polynomial preconditioned by point-block Jacobi (default).
    #[default]
    Chebyshev,
    /// Damped point-block Jacobi.
    Jacobi,
}

/// How the hierarchy stores what the solve and the hot update use: the level operators `A_l` and the
/// prolongators `P_l` (restriction applies `P_l^T` on the fly).
///
/// The coarsening path (strength graph, aggregation, tentative and smoothed `P`, the cold Galerkin
/// product) always works on blocks; `scalar` expands its results afterwards, like PETSc's AIJ with a
/// block size next to BAIJ, to measure what the blocks buy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// `bs x bs` operator blocks, `bs x k` prolongator blocks (default).
    #[default]
    Blocked,
    /// Everything expanded to 1x1 blocks: SpMV, restriction, prolongation and the hot Galerkin
    /// product run on scalar patterns; point-block Jacobi still inverts the node blocks, extracted
    /// from the scalar operator. Same iterates as `blocked` up to round-off (benchmark mode).
    Scalar,
}

/// Stored precision of the hierarchy's data (the fine operator, residuals, CG and every vector
/// stay fp64 either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in fp64 (default).
    #[default]
    Double,
    /// Prolongators, coarse operators (levels >= 1) and smoother inverses stored in fp32 (half
    /// their memory and bandwidth), read widened to fp64 with fp64 accumulation; the coarsest
    /// dense solve stays fp64.
    Mixed,
}

impl Precision {
    /// Names of the choices, for messages.
    pub const CHOICES: &'static [&'static str] = &["double", "mixed"];

    /// `double` or `mixed`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Double => "double",
            Precision::Mixed => "mixed",
        }
    }

    /// The stored precision of the hierarchy's coarse data.
    pub fn coarse_values(self) -> linalg::Precision {
        match self {
            Precision::Double => linalg::Precision::Double,
            Precision::Mixed => linalg::Precision::Single,
        }
    }
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "double" => Ok(Precision::Double),
            "mixed" => Ok(Precision::Mixed),
            _ => Err(format!(
                "unknown precision `{s}` (choices: {})",
                Self::CHOICES.join(", ")
            )),
        }
    }
}

/// Options of the smoothed-aggregation hierarchy and its V-cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AmgParams {
    /// Strength threshold on `||A_ij|| / sqrt(||A_ii|| ||A_jj||)`; `0` keeps every nonzero block.
    /// Default `0.0`.
    pub strength_threshold: f64,
    /// Number of levels, from the finest, aggregated by MIS-2 (aggressive); MIS-1 below. Default `1`.
    pub mis2_levels: usize,
    /// Stop coarsening once a level has at most this many unknowns (solved densely). Default
    /// `500` (PETSc GAMG: 50): the coarse levels of slender, bending-dominated parts are chains
    /// of aggregates whose rigid-body modes interpolate bending poorly, and a coarse level of a
    /// few hundred unknowns solved exactly keeps CG iterations flat in the aspect ratio (linear
    /// Q1 cantilever, cross-section 4 x 4 cells, aspect 10 / 25 / 50 / 100: 15 / 24 / 33 / 56
    /// iterations with 50, 15 / 15 / 18 / 22 with 500; see docs/benchmarks.md). The dense factor
    /// of at most 500 unknowns costs about 4e7 flops per set-up.
    pub coarse_eq_limit: usize,
    /// Maximum number of levels, the finest included. Default `10`.
    pub max_levels: usize,
    /// On several MPI ranks: a coarse level of `n` unknowns is held by `max(1, n /
    /// process_eq_limit)` ranks (never more than hold the finer level), gathered onto the first
    /// ranks where that is fewer (PETSc GAMG's option of this name). Default unset: 50 on CPU
    /// ranks (PETSc's default), 20000 on GPU ranks. No effect on one rank.
    pub process_eq_limit: Option<usize>,
    /// Coarsening stalls (and stops) when rows shrink by less than this factor. Default `1.2`.
    pub min_coarsening_ratio: f64,
    /// Smooth the tentative prolongator (`false` gives unsmoothed aggregation). Default `true`.
    pub smooth_prolongator: bool,
    /// Prolongator damping `omega = prolongator_omega_scale / emax(D^{-1} A)` (PyAMG's 4/3; PETSc uses
    /// 1.4). Default `4/3`.
    pub prolongator_omega_scale: f64,
    /// CG/Lanczos steps of the eigenvalue estimate. Default `10`.
    pub eig_steps: usize,
    /// Level smoother. Default `chebyshev`.
    pub smoother: SmootherKind,
    /// Chebyshev polynomial degree, pre and post. Default `2`.
    pub chebyshev_degree: usize,
    /// Chebyshev interval `[lower * emax, upper * emax]`: lower factor. Default `0.1`.
    pub chebyshev_lower: f64,
    /// Chebyshev interval upper factor. Default `1.1`.
    pub chebyshev_upper: f64,
    /// Damped Jacobi sweeps, pre and post. Default `2`.
    pub jacobi_sweeps: usize,
    /// Damped Jacobi weight; `None` uses `(4/3) / emax(D^{-1} A)`. Default `None`.
    pub jacobi_omega: Option<f64>,
    /// What `update` keeps. Default `interpolation`.
    pub reuse: Reuse,
    /// Re-estimate eigenvalues in a hot update (`reuse: interpolation`). Default `true`.
    pub recompute_eigs: bool,
    /// What a renewal for a new near-null space recomputes. Default `recompute`.
    pub renewal: Renewal,
    /// Storage of the operators and prolongators the solve uses. Default `blocked`.
    pub storage: Storage,
    /// Stored precision of prolongators, coarse operators and smoother inverses. Default
    /// `double`.
    pub precision: Precision,
}

impl Default for AmgParams {
    fn default() -> Self {
        Self {
            strength_threshold: 0.0,
            mis2_levels: 1,
            coarse_eq_limit: 500,
            max_levels: 10,
            process_eq_limit: None,
            min_coarsening_ratio: 1.2,
            smooth_prolongator: true,
            prolongator_omega_scale: JACOBI_OMEGA_SCALE,
            eig_steps: 10,
            smoother: SmootherKind::Chebyshev,
            chebyshev_degree: 2,
            chebyshev_lower: 0.1,
            chebyshev_upper: 1.1,
            jacobi_sweeps: 2,
            jacobi_omega: None,
            reuse: Reuse::Interpolation,
            recompute_eigs: true,
            renewal: Renewal::Recompute,
            storage: Storage::Blocked,
            precision: Precision::Double,
        }
    }
}

impl AmgParams {
    /// These options for a hierarchy whose levels run on GPU ranks: `process_eq_limit`, where
    /// unset, becomes [`PROCESS_EQ_LIMIT_GPU`].
    pub fn on_gpu_ranks(&self) -> Self {
        Self {
            process_eq_limit: Some(self.process_eq_limit.unwrap_or(PROCESS_EQ_LIMIT_GPU)),
            ..self.clone()
        }
    }

    /// The `process_eq_limit` in force on CPU ranks (set, or [`PROCESS_EQ_LIMIT_CPU`]).
    pub fn process_eq_limit(&self) -> usize {
        self.process_eq_limit.unwrap_or(PROCESS_EQ_LIMIT_CPU)
    }

    /// Checks ranges; the error names the parameter.
    pub fn validate(&self) -> Result<(), AmgError> {
        let bad = |name: &'static str, value: String, reason: &'static str| {
            Err(AmgError::InvalidParameter {
                name,
                value,
                reason,
            })
        };
        if !(self.strength_threshold >= 0.0 && self.strength_threshold.is_finite()) {
            return bad(
                "strength_threshold",
                self.strength_threshold.to_string(),
                "must be finite and >= 0",
            );
        }
        if self.max_levels == 0 {
            return bad("max_levels", "0".into(), "must be >= 1");
        }
        if self.process_eq_limit == Some(0) {
            return bad("process_eq_limit", "0".into(), "must be >= 1");
        }
        if !(self.min_coarsening_ratio > 1.0) {
            return bad(
                "min_coarsening_ratio",
                self.min_coarsening_ratio.to_string(),
                "must be > 1",
            );
        }
        if !(self.prolongator_omega_scale > 0.0 && self.prolongator_omega_scale < 2.0) {
            return bad(
                "prolongator_omega_scale",
                self.prolongator_omega_scale.to_string(),
                "must lie in (0, 2)",
            );
        }
        if self.eig_steps == 0 {
            return bad("eig_steps", "0".into(), "must be >= 1");
        }
        if self.chebyshev_degree == 0 {
            return bad("chebyshev_degree", "0".into(), "must be >= 1");
        }
        if !(self.chebyshev_lower > 0.0 && self.chebyshev_lower < self.chebyshev_upper) {
            return bad(
                "chebyshev_lower",
                format!("{} (upper {})", self.chebyshev_lower, self.chebyshev_upper),
                "must satisfy 0 < lower < upper",
            );
        }
        if self.jacobi_sweeps == 0 {
            return bad("jacobi_sweeps", "0".into(), "must be >= 1");
        }
        if let Some(w) = self.jacobi_omega {
            if !(w > 0.0 && w.is_finite()) {
                return bad("jacobi_omega", w.to_string(), "must be a positive number");
            }
        }
        Ok(())
    }
}
