//! Newton's method with a line search, inside a load-stepping loop with automatic cutback.
//!
//! Each iteration assembles and eliminates through [`assembly::DiscreteProblem`] (residual,
//! tangent, Dirichlet lifting: the correction's constrained entries are `u_D(load factor) - u`, so a
//! step's prescribed motion acts through the linearised problem instead of distorting the boundary
//! cells) and solves with the [`LinearSolver`], to a tolerance chosen by the forcing term
//! ([`Forcing`]: Eisenstat-Walker by default, so early iterations are solved loosely).
//!
//! The update is damped by the [`LineSearch`]: by default backtracking on the potential energy
//! (which the full Newton step lowers in bending and large rotation while it may raise the
//! residual norm), with the full step where the loads have no potential.
//!
//! Convergence of a step needs the constraints met, at least one Newton update, and one of:
//! `||r_free|| <= rtol * r_ref` (`r_ref`: the norm of the step's first right-hand side, the
//! out-of-balance force the step has to remove, Dirichlet lifting included), a full (undamped)
//! update with `||du|| <= stol ||u||` (PETSc's `snes_stol`), `||r_free|| <= atol` (off by
//! default: an absolute force depends on the unit system), or stagnation at round-off: the
//! residual stopped decreasing (or no step length decreases it) below `ROUNDOFF_RESIDUAL` times
//! the step's force scale (the largest of `r_ref` and the support reactions: the forces actually
//! present) while the update is itself at round-off (`||du|| <= ROUNDOFF_UPDATE ||u||`). Every
//! test is relative to the problem's own forces and displacements, so a problem written in any
//! consistent units takes the same iterations. A step whose first residual is exactly zero has
//! nothing to remove and converges without an update.

use std::fmt;
use std::time::Instant;

use assembly::AssemblyError;
use linalg::{ops, Bsr, DofMask, Vector};
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::linear_solver::{LinearSolveReport, LinearSolver};
use crate::newton_system::IterationSystem;
use crate::params::{Forcing, LineSearch, LoadingParams, NewtonParams, MAX_LOAD_STEPS};
use crate::problem::Problem;

/// Sufficient decrease of the line searches: accept `alpha` when
/// `||r(u + alpha du)|| <= (1 - ARMIJO * alpha) ||r(u)||` (residual) or
/// `Pi(u + alpha du) <= Pi(u) + ARMIJO alpha Pi'(u) du` (energy).
const ARMIJO: f64 = 1e-4;

/// Energy differences below this fraction of the potential's magnitude are round-off (cell
/// energies summed over the mesh): the energy line search accepts them as no increase.
const ENERGY_ROUNDOFF: f64 = 1e-11;

/// A residual that stopped decreasing below this fraction of `r_ref`...
pub const ROUNDOFF_RESIDUAL: f64 = 1e-5;
/// ... with an update below this fraction of `||u||` is converged at round-off.
const ROUNDOFF_UPDATE: f64 = 1e-8;

/// The energy line search's watchdog (Chamberlain et al. 1982): full Newton steps are taken as
/// long as the potential energy reaches a new minimum within this many iterations; otherwise the
/// iteration returns to the state of least energy and backtracks on the energy from there on.
const WATCHDOG_ITERATIONS: usize = 5;

/// A step that converged in at most this many Newton iterations is easy: the next increment may
/// grow by `loading.growth` (up to the nominal increment `1 / steps`).
const EASY_ITERATIONS: usize = 5;

/// A residual stalled below this fraction of the step's force scale is at the round-off of the
/// forces present: a failure there says so rather than asking for smaller steps.
const ROUNDOFF_FLOOR: f64 = 1e-9;

/// A first update whose largest displacement is outside this range of fractions of the body's
/// size suggests loads and moduli in different units: a failure says so.
const PLAUSIBLE_STRAIN: (f64, f64) = (1e-12, 1.0);

/// A residual this many times the step's reference norm means divergence.
const DIVERGENCE_FACTOR: f64 = 1e10;

/// A force-driven path whose last converged step's load-displacement stiffness `|d lambda| /
/// ||du||` is below this fraction of its first step's is near a limit point (where the stiffness
/// vanishes) when its next step fails.
const LIMIT_STIFFNESS_RATIO: f64 = 0.2;

/// An increment that would leave less than this of the load path goes to load factor one
/// exactly (no sliver of a last step from accumulated round-off).
const LOAD_FACTOR_SNAP: f64 = 1e-12;

/// The largest rotation (degrees) of a twisted set in one load step. A prescribed rotation is
/// path-dependent and its end point is only known modulo 360 degrees (a step of 360 degrees would
/// "converge" to the untwisted body): a larger increment is divided into equal sub-steps. 45
/// degrees leaves Newton's start well inside the basin of the rotated state and keeps every
/// shipped input's steps (the twisting column turns by 20 degrees a step, 40 on its load curves).
pub const MAX_TWIST_PER_STEP_DEG: f64 = 45.0;

/// Relative slack of the twist limit, so that an increment of exactly the limit (360 degrees in
/// 8 steps) is not divided further by round-off.
const TWIST_SLACK: f64 = 1e-9;

/// Most divisions of one increment to meet the twist limit (each at least halves it: one suffices
/// without load curves).
const MAX_TWIST_DIVISIONS: usize = 64;

/// Eisenstat-Walker choice 2: first forcing term, cap, `gamma`, and the threshold of the
/// safeguard. PETSc's defaults except the first term and the cap (PETSc: 0.3 and 0.9): in bending
/// the residual norm rises after a good full step, the ratio then asks for no accuracy at all,
/// and solves of one CG iteration make Newton crawl; at least one digit keeps the direction.
const EW_ETA0: f64 = 0.1;
const EW_ETA_MAX: f64 = 0.1;
const EW_GAMMA: f64 = 1.0;
const EW_THRESHOLD: f64 = 0.1;

/// The linear system a Newton iteration hands to the linear solver, as the solver sees it (for
/// [`PathObserver::linear_system`]: exporting it to another solver, PETSc's `-ksp_view_mat`).
pub struct LinearSystem<'a> {
    /// The Newton iteration (0-based) of the current attempt.
    pub iteration: usize,
    /// The tangent after elimination: every constrained row and column zero but its diagonal
    /// entry, which keeps a fixed fraction of its magnitude
    /// (`linalg::ELIMINATED_DIAGONAL_FRACTION`);
    /// 3x3 blocks, one block row per node. On a GPU: the device matrix; on a rank: its local one.
    pub tangent: &'a Bsr,
    /// The right-hand side (zero at the constrained unknowns: the correction's constrained
    /// entries are the lifting, set after the solve); the solve starts from zero.
    pub rhs: &'a Vector,
    /// The constrained unknowns (the eliminated rows and columns).
    pub constrained: &'a DofMask,
    /// The nodes' reference coordinates. The AMG's near-null space is the rigid-body modes
    /// about them in the first load step, about the deformed configuration at the start of
    /// each later step.
    pub reference_coordinates: &'a [[f64; 3]],
    /// The relative tolerance the solve is given (`None`: the configured `linear_solver.rtol`).
    pub rtol: Option<f64>,
}

/// One Newton iteration's record.
#[derive(Clone, Debug, Serialize)]
pub struct IterationRecord {
    /// Norm of the free (unconstrained) residual at the start of the iteration.
    pub residual_norm: f64,
    pub linear: LinearSolveReport,
    /// Accepted line-search step length.
    pub step_length: f64,
    /// What the line search did, where it did more than take the full step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_search: Option<String>,
    /// Where the Newton loop runs on a GPU: bytes moved between host and device during the
    /// iteration, both ways (linear system, solve, line search, update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_bytes: Option<u64>,
    /// Where the Newton loop runs on a GPU: of those, the bytes moved host to device (the
    /// linear solve's share is in `linear.device`; the rest of the iteration moves none up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_bytes: Option<u64>,
}

/// Which test a converged step passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Convergence {
    /// `||r_free|| <= atol`.
    AbsoluteResidual,
    /// `||r_free|| <= rtol r_ref`.
    RelativeResidual,
    /// A full update with `||du|| <= stol ||u||`.
    Update,
    /// The residual stagnated at round-off while the update was at round-off too.
    RoundOff,
}

impl fmt::Display for Convergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Convergence::AbsoluteResidual => "residual below atol",
            Convergence::RelativeResidual => "residual below rtol",
            Convergence::Update => "update below stol",
            Convergence::RoundOff => "stagnated at round-off",
        })
    }
}

/// An attempt at a load step that failed and was cut back.
#[derive(Clone, Debug, Serialize)]
pub struct FailedAttempt {
    /// The pseudo-time the attempt started from and the one it aimed at (the load factors where
    /// there is no `loading.curve`).
    pub from: f64,
    pub to: f64,
    /// Newton iterations it took before failing.
    pub newton_iterations: usize,
    /// Linear iterations of those Newton iterations.
    pub linear_iterations: usize,
    /// Why it failed, for people.
    pub reason: String,
}

impl fmt::Display for FailedAttempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.4} -> {:.4}: {} (after {} Newton updates)",
            self.from, self.to, self.reason, self.newton_iterations
        )
    }
}

/// Strain fields of every cell, each with its measure (full 3x3 row-major per cell, in cell
/// order).
pub type CellStrains = Vec<(fem::StrainMeasure, Vec<[f64; 9]>)>;

/// A converged load step.
#[derive(Clone, Debug)]
pub struct ConvergedStep {
    /// 1-based index among converged steps.
    pub index: usize,
    /// The load factor reached (`loading.curve` at `time`).
    pub load_factor: f64,
    /// The pseudo-time reached (the load factor where there is no curve).
    pub time: f64,
    /// The path position reached: `time / loading.end_time` (see [`PathState::position`]).
    pub position: f64,
    pub iterations: Vec<IterationRecord>,
    /// Final free residual norm.
    pub residual_norm: f64,
    /// Residual at the constrained entries (support reactions), zero elsewhere.
    pub reactions: Vector,
    pub wall_s: f64,
    /// Attempts of this step that failed and were cut back (`failed_attempts.len()`).
    pub cutbacks: usize,
    /// The failed attempts before this step converged, in order.
    pub failed_attempts: Vec<FailedAttempt>,
    pub converged_by: Convergence,
    /// The increment the next step will try (after regrowth); with `load_factor` and `index`
    /// it is the [`PathState`] a restart continues from.
    pub next_increment: f64,
    /// The output fields [`LoadPath::output_cell_fields`] of every cell at the converged state
    /// where the Newton loop ran on a GPU (computed there, in cell order); `None` on the host,
    /// where the caller computes them.
    pub cell_fields: Option<fem::StateCellFields>,
    /// The strains of [`LoadPath::output_strains`] at the converged state that the GPU computed
    /// (where the Newton loop ran there: the host's values bit for bit, in cell order); empty on
    /// the host. The caller computes the others.
    pub cell_strains: CellStrains,
    /// Bytes moved between the GPU and the host for this step's output once it converged
    /// (displacement, reactions, cell fields and strains, the final residual norm); `None` on
    /// the host.
    pub output_transfer_bytes: Option<u64>,
}

/// Where a load path stands between two steps: with the converged displacement, all that the
/// rest of the path depends on (a restart from it repeats the uninterrupted path exactly).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathState {
    /// Path position of the last converged step: its pseudo-time over `loading.end_time` (0 at
    /// the start, 1 at the end; the load factor itself where there is no load curve).
    pub position: f64,
    /// The increment the next step tries.
    pub increment: f64,
    /// Converged steps so far.
    pub index: usize,
}

impl PathState {
    /// The start of a path: position 0, the nominal increment `1 / steps`, no steps.
    pub fn start(loading: &LoadingParams) -> Self {
        PathState {
            position: 0.0,
            increment: 1.0 / loading.steps as f64,
            index: 0,
        }
    }

    /// The state after `step`.
    pub fn after(step: &ConvergedStep) -> Self {
        PathState {
            position: step.position,
            increment: step.next_increment,
            index: step.index,
        }
    }
}

/// Why a Newton solve of one step failed.
#[derive(Debug, thiserror::Error)]
pub enum StepFailure {
    #[error("{0}")]
    Element(AssemblyError),
    #[error("no convergence in {0} Newton iterations")]
    MaxIterations(usize),
    #[error("diverged (free residual {0:.3e})")]
    Diverged(f64),
    #[error("the line search found no step length that decreases the {0}")]
    LineSearch(&'static str),
    /// The linear solve failed (the message gives the error's whole chain of causes).
    #[error("linear solver: {}", .0.chain())]
    Linear(Box<Error>),
    /// A vector or matrix operation failed (a kernel or a message, not the iteration): not a
    /// reason to cut the step back.
    #[error("linear algebra: {0}")]
    Numeric(#[from] linalg::LinalgError),
    /// The observer asked the path to stop ([`PathObserver::stop_requested`]): not a failure.
    #[error("interrupted")]
    Interrupted,
}

impl From<AssemblyError> for StepFailure {
    /// A failed kernel inside an assembly call is a numeric failure; anything else (an inverted
    /// element, a bad material state) is the element's and may be cured by a smaller step.
    fn from(e: AssemblyError) -> Self {
        match e {
            AssemblyError::Linalg(e) => Self::Numeric(e),
            e => Self::Element(e),
        }
    }
}

/// Why the load path stopped early: every attempt at the last step, and why no further one was
/// made.
#[derive(Debug)]
pub struct PathFailure {
    /// The converged load factor the attempts started from.
    pub load_factor: f64,
    /// The failed attempts, in order (the last one's failure is `last`).
    pub attempts: Vec<FailedAttempt>,
    pub last: StepFailure,
    /// Why no smaller increment was tried.
    pub stop: String,
    /// What the last attempt suggests beyond smaller steps (the round-off floor reached, a
    /// displacement scale that suggests wrong units), where it does.
    pub diagnosis: Option<String>,
}

impl fmt::Display for PathFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no load step from load factor {:.4} converged ({} attempt{}, {}): {}",
            self.load_factor,
            self.attempts.len(),
            if self.attempts.len() == 1 { "" } else { "s" },
            self.stop,
            self.last
        )?;
        for a in &self.attempts {
            write!(f, "\n  attempt {a}")?;
        }
        match &self.diagnosis {
            Some(d) => write!(f, "\n  {d}"),
            None => write!(
                f,
                "\n  (more loading.steps or a smaller loading.min_increment may help; `hexfem run -v` shows every Newton iteration)"
            ),
        }
    }
}

impl std::error::Error for PathFailure {}

/// What a load path reports while it runs (PETSc's `SNESMonitorSet`): the library never
/// prints; a front end renders these events. No method has a default body: an observer that
/// passes the events on to another (a decorator) cannot forget one, a new method included;
/// [`Silent`] ignores them all.
pub trait PathObserver {
    /// A step from pseudo-time `from` to `to` (load factor `load_factor`) begins.
    fn step_started(&self, from: f64, to: f64, load_factor: f64);
    /// Newton iteration `iteration` (0-based) of the current attempt finished; `forcing` is the
    /// relative tolerance its linear solve was given, where Eisenstat-Walker chose one.
    fn iteration(&self, iteration: usize, record: &IterationRecord, forcing: Option<f64>);
    /// Something the iteration did beyond its usual course (the energy watchdog's restart).
    fn note(&self, text: &str);
    /// An attempt failed; `next` is the increment tried next (`None`: no further attempt).
    fn attempt_failed(&self, attempt: &FailedAttempt, next: Option<f64>);
    /// The linear system of a Newton iteration, just before it is solved.
    fn linear_system(&self, system: &LinearSystem<'_>);
    /// Whether the path should stop (a signal, a user's request): asked before each load step
    /// and each Newton iteration; where it answers true the path returns [`Interrupted`], the
    /// step under way abandoned (every converged step was delivered). On ranks every rank asks
    /// at the same points and must get the same answer.
    fn stop_requested(&self) -> bool;
    /// `seconds` of `phase` just ended (where the time goes: [`PathPhase`]). The phases are
    /// flat, one after another on this thread; a linear solve's set-up and solve are its
    /// report's own times.
    fn timed(&self, phase: PathPhase<'_>, seconds: f64);
}

/// A part of a load path's time, told to [`PathObserver::timed`] as it ends. The phases do not
/// overlap; with the time between steps (the caller's output) they make up the path's time.
#[derive(Clone, Copy, Debug)]
pub enum PathPhase<'a> {
    /// The Newton loop's buffers made and the starting displacement uploaded, with the problem
    /// where the loop runs on a GPU.
    Upload,
    /// A step's loads at its time, and each Newton iteration up to its linear solve: residual,
    /// tangent, norms, convergence tests, energy, elimination of the constraints.
    Assembly,
    /// The rigid-body modes of the deformed configuration at a step's start.
    NearNullSpace,
    /// One linear solve: its report's `setup_s` and `solve_s`, and the rest of the call's
    /// `seconds` (moving the system to the solver's device, the fallback's bookkeeping).
    LinearSolve(&'a LinearSolveReport),
    /// The line search and the update of the displacement.
    LineSearch,
    /// A converged step's state brought to the host: displacement, reactions, cell fields.
    ConvergedState,
}

/// Reports the seconds since its start as its phase when stopped or dropped (an early return
/// or an error reports too).
struct PhaseTimer<'a> {
    observer: &'a dyn PathObserver,
    phase: PathPhase<'static>,
    started: Instant,
}

impl<'a> PhaseTimer<'a> {
    fn start(observer: &'a dyn PathObserver, phase: PathPhase<'static>) -> Self {
        PhaseTimer {
            observer,
            phase,
            started: Instant::now(),
        }
    }

    /// Reports the phase now.
    fn stop(self) {}
}

impl Drop for PhaseTimer<'_> {
    fn drop(&mut self) {
        self.observer
            .timed(self.phase, self.started.elapsed().as_secs_f64());
    }
}

/// The load path stopped because its observer asked it to ([`PathObserver::stop_requested`]),
/// between steps or at a Newton iteration (that step abandoned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// The observer that reports nothing and never asks to stop.
pub struct Silent;

impl PathObserver for Silent {
    fn step_started(&self, _from: f64, _to: f64, _load_factor: f64) {}
    fn iteration(&self, _iteration: usize, _record: &IterationRecord, _forcing: Option<f64>) {}
    fn note(&self, _text: &str) {}
    fn attempt_failed(&self, _attempt: &FailedAttempt, _next: Option<f64>) {}
    fn linear_system(&self, _system: &LinearSystem<'_>) {}
    fn stop_requested(&self) -> bool {
        false
    }
    fn timed(&self, _phase: PathPhase<'_>, _seconds: f64) {}
}

/// Load stepping from factor 0 to 1 with cutback and regrowth.
pub struct LoadPath<'a> {
    pub loading: &'a LoadingParams,
    pub newton: &'a NewtonParams,
    /// Told of every step, Newton iteration and failed attempt.
    pub observer: &'a dyn PathObserver,
    /// The strain measures a converged step's output needs: those the GPU computes come with
    /// the step ([`ConvergedStep::cell_strains`]) where the Newton loop runs there.
    pub output_strains: &'a [fem::StrainMeasure],
    /// The cell fields a converged step's output needs: those the GPU computes come with the
    /// step ([`ConvergedStep::cell_fields`]; only these come down).
    pub output_cell_fields: fem::CellFieldSet,
}

/// Buffers of one Newton solve, allocated once per run (on the GPU where the loop runs there).
struct Workspace {
    system: IterationSystem,
    du: Vector,
    trial: Vector,
    /// The line search's trial residual.
    trial_r: Vector,
    scratch: Vector,
}

/// A failed step with the work it did.
struct StepError {
    failure: StepFailure,
    newton_iterations: usize,
    linear_iterations: usize,
    trace: Box<Trace>,
}

/// What one attempt at a step saw, for the diagnosis of a failure.
#[derive(Clone, Debug, Default)]
struct Trace {
    /// The largest of the step's first right-hand side and the support reactions so far.
    force_scale: f64,
    /// The free residual norm at the last iteration.
    last_residual: f64,
    /// The relative residual the convergence test asks for (`rtol r_ref`).
    target: f64,
    /// `||du||_inf` of the first update.
    first_update: Option<f64>,
    /// The first evidence of a tangent that is not positive definite (a linear solve's).
    indefinite: Option<String>,
}

impl Trace {
    /// What the failure suggests beyond smaller steps, for a body of size `size`: wrong units,
    /// then `limit_point` (what the load path's steps say, where they say it), then the
    /// round-off floor.
    fn diagnosis(
        &self,
        failure: &StepFailure,
        size: f64,
        limit_point: Option<String>,
    ) -> Option<String> {
        if let Some(du) = self.first_update {
            let strain = du / size;
            if du > 0.0 && (strain < PLAUSIBLE_STRAIN.0 || strain > PLAUSIBLE_STRAIN.1) {
                return Some(format!(
                    "check units: the first Newton update moves the body by {du:.3e}, {strain:.1e} times its size {size:.3e}; loads, moduli and lengths must be in one consistent unit system (e.g. N, Pa, m or N, MPa, mm)"
                ));
            }
        }
        if limit_point.is_some() {
            return limit_point;
        }
        let stalled = matches!(
            failure,
            StepFailure::MaxIterations(_) | StepFailure::LineSearch(_)
        );
        if stalled && self.last_residual <= ROUNDOFF_FLOOR * self.force_scale {
            return Some(format!(
                "the residual stalled at {:.3e}, {:.1e} of the forces present ({:.3e}): the round-off floor of the element forces; the convergence test asks for {:.3e} (newton.rtol times the step's first residual); a larger newton.rtol accepts the floor",
                self.last_residual,
                self.last_residual / self.force_scale,
                self.force_scale,
                self.target
            ));
        }
        None
    }
}

/// The converged steps of a load path and the failed attempts of the current one: the evidence
/// of a limit point (the load beyond what the structure carries).
struct PathEvidence {
    /// Whether the loads are forces alone: every prescribed displacement is zero (a path driven by
    /// displacements has no load-displacement stiffness to watch).
    force_driven: bool,
    /// The converged state the next step starts from (host) and its load factor.
    previous_u: Vector,
    previous_factor: f64,
    /// `|d lambda| / ||du||` of each converged step, in order.
    stiffness: Vec<f64>,
    /// The evidence of an indefinite tangent in the last attempt at the current step.
    indefinite: Option<String>,
}

impl PathEvidence {
    fn new(problem: &Problem, u: &Vector, factor: f64) -> Result<Self> {
        let force_driven = problem.discrete.constraints.prescribed().iter().all(|p| {
            matches!(p, assembly::Prescribed::Components { values, .. }
                if values.iter().flatten().all(|&v| v == 0.0))
        });
        Ok(PathEvidence {
            force_driven,
            previous_u: u.try_clone()?,
            previous_factor: factor,
            stiffness: Vec::new(),
            indefinite: None,
        })
    }

    /// Records a converged step at load factor `factor` with displacement `u` (collective on
    /// ranks: a norm).
    fn converged(&mut self, u: &Vector, factor: f64) -> Result<()> {
        ops::axpy(-1.0, u, &mut self.previous_u)?;
        let du = ops::norm2(&self.previous_u)?;
        if du > 0.0 {
            self.stiffness
                .push((factor - self.previous_factor).abs() / du);
        }
        self.previous_u.copy_from(u)?;
        self.previous_factor = factor;
        self.indefinite = None;
        Ok(())
    }

    /// "limit point: ..." where the evidence says so: the last of `attempts` (at least two: one
    /// cut back, so not merely a step too large) from the last converged state (at `converged`,
    /// aiming at `aimed`) met an indefinite tangent, or, with force loads, the load-displacement
    /// stiffness of the converged steps fell below [`LIMIT_STIFFNESS_RATIO`] of the first step's.
    fn limit_point(&self, converged: f64, aimed: f64, attempts: usize) -> Option<String> {
        let decay = match (self.stiffness.first(), self.stiffness.last()) {
            (Some(&first), Some(&last)) if self.force_driven && self.stiffness.len() >= 2 => {
                (last < LIMIT_STIFFNESS_RATIO * first).then(|| {
                    format!(
                        "the load-displacement stiffness of the converged steps fell to {:.1} % of the first step's",
                        100.0 * last / first
                    )
                })
            }
            _ => None,
        };
        let indefinite = self.indefinite.iter().filter(|_| attempts >= 2).cloned();
        let evidence: Vec<String> = indefinite.chain(decay).collect();
        if evidence.is_empty() {
            return None;
        }
        let advice = if self.force_driven {
            "the load exceeds what the structure carries (snap-through, buckling or a material's limit): the load factor cannot grow past it under force control; prescribe a displacement instead of the force (boundary.dirichlet) to follow the path beyond it, or reduce the load"
        } else {
            "the structure loses stability there (a limit or bifurcation point): smaller loading.steps do not pass it; check the loads, or prescribe the displacement that follows the path beyond it"
        };
        Some(format!(
            "limit point: no equilibrium found beyond load factor {converged:.6} (the last converged step; the last attempt aimed at {aimed:.6}): {}; {advice}",
            evidence.join("; ")
        ))
    }
}

/// The path position a step of `increment` from `position` aims at: one exactly where less than
/// `LOAD_FACTOR_SNAP` would remain.
fn step_target(position: f64, increment: f64) -> f64 {
    if 1.0 - (position + increment) < LOAD_FACTOR_SNAP {
        1.0
    } else {
        position + increment
    }
}

/// The rigid-body modes about the deformed configuration `X + u` (the near-null space of the
/// tangent at `u`).
fn deformed_modes(problem: &Problem, u: &Vector) -> Result<amg::NearNullSpace> {
    let (displacement, _) = u.host()?.as_chunks::<3>();
    let x: Vec<[f64; 3]> = problem
        .mesh
        .coords
        .par_iter()
        .zip(displacement)
        .map(|(x, d)| [x[0] + d[0], x[1] + d[1], x[2] + d[2]])
        .collect();
    if u.layout().comm().size() > 1 {
        return crate::problem::distributed_modes(u.layout(), &x);
    }
    crate::problem::near_null_space(&x)
}

/// What the line search decided.
enum Damping {
    /// Take `u + alpha du`; the note says what was done beyond the full step.
    Step { alpha: f64, note: Option<String> },
    /// No step length decreases the merit function (the name of which is given).
    NoDecrease(&'static str),
}

impl LoadPath<'_> {
    /// Runs the load path from its start (see [`LoadPath::run_from`]).
    pub fn run<E: From<Error>>(
        &self,
        problem: &mut Problem,
        solver: &mut LinearSolver,
        u: &mut Vector,
        on_step: impl FnMut(&ConvergedStep, &Vector, &mut Problem, &LinearSolver) -> Result<(), E>,
    ) -> Result<(), E> {
        self.run_from(PathState::start(self.loading), problem, solver, u, on_step)
    }

    /// Runs the load path from `start` with `u` the converged displacement there; `on_step` sees
    /// each converged step and the converged displacement and is where output is written (so
    /// every converged step is on disk before the next begins). A failure after cutbacks returns
    /// [`PathFailure`] with the steps so far already delivered.
    ///
    /// Where `solver` runs on a GPU, the whole Newton loop does ([`IterationSystem::device`]: the
    /// problem is uploaded once, an error names what the device does not support): `u` (a host
    /// vector) is uploaded at the start and is overwritten by the download of each converged
    /// displacement before `on_step` sees it; the reactions come down with it.
    ///
    /// An error of `on_step` stops the path and is returned as it is (the caller's type `E`);
    /// the path's own errors are converted into it.
    pub fn run_from<E: From<Error>>(
        &self,
        start: PathState,
        problem: &mut Problem,
        solver: &mut LinearSolver,
        u: &mut Vector,
        mut on_step: impl FnMut(&ConvergedStep, &Vector, &mut Problem, &LinearSolver) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut failed = None;
        let path = self.run_path(
            start,
            problem,
            solver,
            u,
            &mut |step, u, problem, solver| {
                on_step(step, u, problem, solver).map_err(|e| {
                    failed = Some(e);
                    Error::StepCallback
                })
            },
        );
        match failed {
            Some(e) => Err(e),
            None => Ok(path?),
        }
    }

    /// [`LoadPath::run_from`] with a step callback whose error is [`Error::StepCallback`].
    fn run_path(
        &self,
        start: PathState,
        problem: &mut Problem,
        solver: &mut LinearSolver,
        u: &mut Vector,
        on_step: &mut dyn FnMut(&ConvergedStep, &Vector, &mut Problem, &LinearSolver) -> Result<()>,
    ) -> Result<()> {
        let upload = PhaseTimer::start(self.observer, PathPhase::Upload);
        let system = match solver.device().and_then(|d| d.cuda_context()) {
            Some(ctx) => {
                let system =
                    IterationSystem::device(ctx, &problem.discrete).map_err(Error::DeviceLoop);
                // on ranks: one rank's failure is every rank's (none waits in a reduction)
                match &problem.discrete.partition {
                    Some(part) => comm::agree(
                        &**part.layout.comm(),
                        system.map_err(|e| e.chain().to_string()),
                    )?,
                    None => system?,
                }
            }
            None => IterationSystem::host(&problem.discrete)?,
        };
        let zeros = || system.zeros(&problem.discrete);
        let mut ws = Workspace {
            du: zeros()?,
            trial: zeros()?,
            trial_r: zeros()?,
            scratch: zeros()?,
            system,
        };
        // the converged state where the iteration runs (`u` is its host copy)
        let mut current = ws.system.upload(u)?;
        upload.stop();
        let nominal = 1.0 / self.loading.steps as f64;
        let mut increment = start.increment;
        // the path runs in s = pseudo-time / end time, from 0 to 1
        let end_time = self.loading.end_time();
        let mut load_factor = start.position;
        let mut index = start.index;
        let mut attempts: Vec<FailedAttempt> = Vec::new();
        let mut evidence = PathEvidence::new(
            problem,
            u,
            self.loading.factor_at(start.position * end_time),
        )?;
        while load_factor < 1.0 {
            if self.observer.stop_requested() {
                return Err(Interrupted.into());
            }
            let step = self.twist_limited(problem, load_factor, increment)?;
            let target = step_target(load_factor, step);
            let started = Instant::now();
            let time = target * end_time;
            let factor = self.loading.factor_at(time);
            let loads = PhaseTimer::start(self.observer, PathPhase::Assembly);
            problem.set_time(time)?;
            ws.system.set_step(&problem.discrete)?;
            loads.stop();
            self.observer
                .step_started(load_factor * end_time, time, factor);
            if solver.uses_amg() && load_factor > 0.0 && attempts.is_empty() {
                let modes = PhaseTimer::start(self.observer, PathPhase::NearNullSpace);
                // on a GPU (one, or each rank's) computed there from the device state (`u` is
                // its host copy)
                let near_null = match ws.system.rigid_body_modes(&current)? {
                    Some(on_device) => on_device,
                    None => deformed_modes(problem, u)?,
                };
                solver.set_near_null_space(near_null);
                modes.stop();
            } else if solver.uses_amg()
                && attempts.is_empty()
                && ws.system.modes_on_device()
                && solver.awaits_first_setup()
            {
                // the first set-up's modes, about `X` as the solver was chosen with: on a GPU
                // (one, or each rank's) computed there (the same bits; the host's modes then
                // never go up)
                let modes = PhaseTimer::start(self.observer, PathPhase::NearNullSpace);
                if let Some(near_null) = ws.system.undeformed_rigid_body_modes(&problem.discrete)? {
                    solver.set_near_null_space(near_null);
                }
                modes.stop();
            }
            let mut trial_u = current.try_clone()?;
            match self.solve_step(problem, solver, &mut trial_u, factor, &mut ws) {
                Ok((iterations, converged_by)) => {
                    let brought = PhaseTimer::start(self.observer, PathPhase::ConvergedState);
                    current = trial_u;
                    let transfers_before = ws.system.transferred_bytes();
                    ws.system.download(&current, u)?;
                    evidence.converged(u, factor)?;
                    index += 1;
                    load_factor = target;
                    let discrete = &problem.discrete;
                    let reactions = ws.system.reactions(discrete)?;
                    let outputs = ws
                        .system
                        .cell_fields(&current, self.output_cell_fields)
                        .and_then(|fields| {
                            Ok((
                                fields,
                                ws.system.cell_strains(&current, self.output_strains)?,
                            ))
                        });
                    // on ranks: one rank's failure is every rank's (none waits in a reduction)
                    let (cell_fields, cell_strains) = match &problem.discrete.partition {
                        Some(part) => {
                            comm::agree(&**part.layout.comm(), outputs.map_err(|e| e.to_string()))?
                        }
                        None => outputs?,
                    };
                    let failed_attempts = std::mem::take(&mut attempts);
                    let easy = iterations.len() <= EASY_ITERATIONS;
                    if easy {
                        increment = (increment * self.loading.growth).min(nominal);
                    }
                    increment = increment.min(1.0 - load_factor);
                    let residual_norm =
                        ws.system
                            .free_norm(discrete, ws.system.residual(), &mut ws.trial)?;
                    // what came down for the output: displacement, reactions, cell fields and
                    // strains, norm
                    let output_transfer_bytes = ws
                        .system
                        .transferred_bytes()
                        .zip(transfers_before)
                        .map(|(after, before)| after - before);
                    let step = ConvergedStep {
                        index,
                        load_factor: factor,
                        time,
                        position: target,
                        residual_norm,
                        iterations,
                        reactions,
                        wall_s: started.elapsed().as_secs_f64(),
                        cutbacks: failed_attempts.len(),
                        failed_attempts,
                        converged_by,
                        next_increment: increment,
                        cell_fields,
                        cell_strains,
                        output_transfer_bytes,
                    };
                    brought.stop();
                    on_step(&step, u, problem, solver)?;
                }
                Err(StepError {
                    failure: StepFailure::Numeric(e),
                    ..
                }) => return Err(e.into()),
                Err(StepError {
                    failure: StepFailure::Interrupted,
                    ..
                }) => return Err(Interrupted.into()),
                Err(error) => {
                    evidence.indefinite = error.trace.indefinite.clone();
                    let attempt = FailedAttempt {
                        from: load_factor * end_time,
                        to: time,
                        newton_iterations: error.newton_iterations,
                        linear_iterations: error.linear_iterations,
                        reason: error.failure.to_string(),
                    };
                    let next = step / 2.0;
                    let stop = if attempts.len() >= self.loading.max_cutbacks {
                        Some(format!(
                            "loading.max_cutbacks = {} reached",
                            self.loading.max_cutbacks
                        ))
                    } else if next < self.loading.min_increment {
                        Some(format!(
                            "half the increment {step:.3e} is below loading.min_increment = {:.3e}",
                            self.loading.min_increment
                        ))
                    } else {
                        None
                    };
                    self.observer
                        .attempt_failed(&attempt, stop.is_none().then_some(next));
                    attempts.push(attempt);
                    if let Some(stop) = stop {
                        let limit =
                            evidence.limit_point(evidence.previous_factor, factor, attempts.len());
                        let diagnosis =
                            error.trace.diagnosis(&error.failure, problem.size(), limit);
                        return Err(PathFailure {
                            load_factor: self.loading.factor_at(load_factor * end_time),
                            attempts,
                            last: error.failure,
                            stop,
                            diagnosis,
                        }
                        .into());
                    }
                    increment = next;
                }
            }
        }
        Ok(())
    }

    /// The increment from path position `position` (in `0..=1`): `increment`, or where some twisted
    /// set would turn by more than [`MAX_TWIST_PER_STEP_DEG`] on the way, `increment` divided
    /// into the fewest equal parts that turn by at most that (repeated where a load curve makes
    /// the turn uneven). Errors where that needs an increment below `1 / MAX_LOAD_STEPS`, or the
    /// turn is not finite.
    fn twist_limited(&self, problem: &Problem, position: f64, increment: f64) -> Result<f64> {
        let limit = MAX_TWIST_PER_STEP_DEG.to_radians();
        let end_time = self.loading.end_time();
        let mut step = increment;
        for _ in 0..MAX_TWIST_DIVISIONS {
            let (t0, t1) = (position * end_time, step_target(position, step) * end_time);
            let Some((turn, set)) = problem.twist_turn(self.loading, t0, t1) else {
                return Ok(step);
            };
            if turn <= limit * (1.0 + TWIST_SLACK) {
                if step < increment {
                    self.observer.note(&format!(
                        "boundary.twist on set '{set}' turns by at most {MAX_TWIST_PER_STEP_DEG} degrees a step: increment {step:.3e} instead of {increment:.3e}"
                    ));
                }
                return Ok(step);
            }
            let parts = (turn / limit * (1.0 - TWIST_SLACK)).ceil().max(2.0);
            let smallest = 1.0 / MAX_LOAD_STEPS as f64;
            if !turn.is_finite() || step / parts < smallest {
                return Err(Error::TwistTooFast {
                    set: set.to_owned(),
                    turn_deg: turn.to_degrees(),
                    from: t0,
                    to: t1,
                    smallest,
                });
            }
            step /= parts;
        }
        Err(Error::TwistUndivided {
            position,
            divisions: MAX_TWIST_DIVISIONS,
        })
    }

    /// Newton iterations at a fixed load factor; on success `ws.system.residual` holds the final
    /// residual.
    fn solve_step(
        &self,
        problem: &mut Problem,
        solver: &mut LinearSolver,
        u: &mut Vector,
        load_factor: f64,
        ws: &mut Workspace,
    ) -> Result<(Vec<IterationRecord>, Convergence), StepError> {
        let mut records = Vec::new();
        let mut trace = Trace::default();
        let result = self.iterate(
            problem,
            solver,
            u,
            load_factor,
            ws,
            &mut records,
            &mut trace,
        );
        result
            .map(|c| (records.clone(), c))
            .map_err(|failure| StepError {
                failure,
                newton_iterations: records.len(),
                linear_iterations: records.iter().map(|r| r.linear.iterations).sum(),
                trace: Box::new(trace),
            })
    }

    #[allow(clippy::too_many_arguments)]
    fn iterate(
        &self,
        problem: &mut Problem,
        solver: &mut LinearSolver,
        u: &mut Vector,
        load_factor: f64,
        ws: &mut Workspace,
        records: &mut Vec<IterationRecord>,
        trace: &mut Trace,
    ) -> Result<Convergence, StepFailure> {
        let p = self.newton;
        let mut r_ref = None;
        // the last update's norm, where it was a full step (a damped one says little)
        let mut last_update = f64::INFINITY;
        let mut previous_r = f64::INFINITY;
        let mut eta_previous = EW_ETA0;
        let watch_energy = p.line_search == LineSearch::Energy && problem.has_potential();
        // the state of least energy so far, its energy, and iterations since it was reached
        let mut best: Option<(Vector, f64, usize)> = None;
        let mut monotone = false;
        let mut watchdog_note = None;
        for iteration in 0..=p.max_iterations {
            if iteration > 0 && self.observer.stop_requested() {
                return Err(StepFailure::Interrupted);
            }
            let assembly = PhaseTimer::start(self.observer, PathPhase::Assembly);
            let transfers_before = ws.system.transferred_bytes();
            let uploads_before = ws.system.uploaded_bytes();
            let discrete = &mut problem.discrete;
            ws.system.linearize(discrete, u, load_factor)?;
            let constraints_met = ws.system.constraints_met()?;
            let r_free = ws
                .system
                .free_norm(discrete, ws.system.residual(), &mut ws.trial)?;
            if !r_free.is_finite() || r_ref.is_some_and(|r_ref| r_free > DIVERGENCE_FACTOR * r_ref)
            {
                return Err(StepFailure::Diverged(r_free));
            }
            // the support reactions: the residual's share on the constrained unknowns
            let r_all = ops::norm2(ws.system.residual())?;
            let reactions = (r_all * r_all - r_free * r_free).max(0.0).sqrt();
            trace.force_scale = trace.force_scale.max(reactions);
            trace.last_residual = r_free;
            // the tests need one update first: a loaded step is never accepted untouched
            if let (true, Some(r_ref)) = (constraints_met, r_ref) {
                let u_norm = ops::norm2(u)?;
                if r_free <= p.rtol * r_ref {
                    return Ok(Convergence::RelativeResidual);
                }
                if last_update <= p.stol * u_norm {
                    return Ok(Convergence::Update);
                }
                if r_free <= p.atol {
                    return Ok(Convergence::AbsoluteResidual);
                }
                if r_free > 0.5 * previous_r
                    && r_free <= ROUNDOFF_RESIDUAL * trace.force_scale
                    && last_update <= ROUNDOFF_UPDATE * u_norm
                {
                    return Ok(Convergence::RoundOff);
                }
            }
            if iteration == p.max_iterations {
                return Err(StepFailure::MaxIterations(p.max_iterations));
            }
            if watch_energy && constraints_met && !monotone {
                let pi = ws.system.potential(&mut problem.discrete, u, load_factor)?;
                match &mut best {
                    Some((best_u, best_pi, since)) => {
                        if pi.value < *best_pi - ENERGY_ROUNDOFF * pi.magnitude {
                            best_u.copy_from(u)?;
                            *best_pi = pi.value;
                            *since = 0;
                        } else {
                            *since += 1;
                            if *since >= WATCHDOG_ITERATIONS {
                                u.copy_from(best_u)?;
                                monotone = true;
                                last_update = f64::INFINITY;
                                previous_r = f64::INFINITY;
                                watchdog_note = Some(format!(
                                    "no lower energy in {WATCHDOG_ITERATIONS} full steps: back to the state of least energy, backtracking from there"
                                ));
                                if let Some(note) = &watchdog_note {
                                    self.observer.note(note);
                                }
                                continue;
                            }
                        }
                    }
                    None => best = Some((u.try_clone()?, pi.value, 0)),
                }
            }
            let rhs_free = ws.system.eliminate(&mut problem.discrete)?;
            let r_ref = *r_ref.get_or_insert(rhs_free);
            trace.force_scale = trace.force_scale.max(r_ref);
            trace.target = p.rtol * r_ref;
            if r_ref == 0.0 && constraints_met {
                // nothing to remove: the state is in equilibrium and the constraints hold
                return Ok(Convergence::AbsoluteResidual);
            }
            let rtol = match (p.forcing, solver.is_iterative() && !problem.is_linear()) {
                (Forcing::EisenstatWalker, true) => {
                    let eta = self.forcing_term(iteration, r_free, previous_r, eta_previous, r_ref);
                    eta_previous = eta;
                    Some(eta)
                }
                _ => None,
            };
            assembly.stop();
            self.observer.linear_system(&LinearSystem {
                iteration,
                tangent: ws.system.tangent(),
                rhs: ws.system.rhs(),
                constrained: problem.discrete.constraints.dof_mask(),
                reference_coordinates: &problem.mesh.coords,
                rtol,
            });
            let solve_started = Instant::now();
            let linear = solver
                .solve_to(ws.system.tangent(), ws.system.rhs(), &mut ws.du, rtol)
                .map_err(|e| StepFailure::Linear(Box::new(e)))?;
            self.observer.timed(
                PathPhase::LinearSolve(&linear),
                solve_started.elapsed().as_secs_f64(),
            );
            let line_search = PhaseTimer::start(self.observer, PathPhase::LineSearch);
            ws.system
                .copy_constrained(&problem.discrete, ws.system.lift(), &mut ws.du)?;
            if trace.first_update.is_none() {
                trace.first_update = Some(ops::norm_inf(&ws.du)?);
            }
            if trace.indefinite.is_none() {
                trace.indefinite = linear.indefinite_tangent();
            }
            let (step_length, note) = match self.line_search(
                problem,
                u,
                load_factor,
                r_free,
                constraints_met,
                monotone,
                ws,
            )? {
                Damping::Step { alpha, note } => match watchdog_note.take() {
                    Some(w) => (alpha, Some(note.map_or(w.clone(), |n| format!("{w}; {n}")))),
                    None => (alpha, note),
                },
                Damping::NoDecrease(merit) => {
                    let update = ops::norm2(&ws.du)?;
                    if constraints_met
                        && r_free <= ROUNDOFF_RESIDUAL * trace.force_scale
                        && update <= ROUNDOFF_UPDATE * ops::norm2(u)?
                    {
                        return Ok(Convergence::RoundOff);
                    }
                    return Err(StepFailure::LineSearch(merit));
                }
            };
            last_update = if step_length == 1.0 {
                ops::norm2(&ws.du)?
            } else {
                f64::INFINITY
            };
            previous_r = r_free;
            ops::axpy(step_length, &ws.du, u)?;
            if step_length == 1.0 {
                // land exactly on the prescribed values (u + (u_D - u) may differ by an ulp)
                ws.system
                    .write_prescribed(&problem.discrete, load_factor, u)?;
            }
            let transfer_bytes = ws
                .system
                .transferred_bytes()
                .zip(transfers_before)
                .map(|(after, before)| after - before);
            let upload_bytes = ws
                .system
                .uploaded_bytes()
                .zip(uploads_before)
                .map(|(after, before)| after - before);
            records.push(IterationRecord {
                residual_norm: r_free,
                linear,
                step_length,
                line_search: note,
                transfer_bytes,
                upload_bytes,
            });
            line_search.stop();
            if let Some(record) = records.last() {
                self.observer.iteration(iteration, record, rtol);
            }
        }
        Err(StepFailure::MaxIterations(p.max_iterations))
    }

    /// Eisenstat-Walker's forcing term (choice 2, PETSc's defaults) for iteration `iteration`,
    /// kept at or above `linear_solver`'s own floor by the solver and never tighter than the
    /// step's convergence test needs (half the residual reduction still missing).
    fn forcing_term(
        &self,
        iteration: usize,
        r_free: f64,
        previous_r: f64,
        eta_previous: f64,
        r_ref: f64,
    ) -> f64 {
        let alpha = (1.0 + 5f64.sqrt()) / 2.0;
        let mut eta = if iteration == 0 || !previous_r.is_finite() || previous_r == 0.0 {
            EW_ETA0
        } else {
            let eta = EW_GAMMA * (r_free / previous_r).powf(alpha);
            let safeguard = EW_GAMMA * eta_previous.powf(alpha);
            if safeguard > EW_THRESHOLD {
                eta.max(safeguard)
            } else {
                eta
            }
        };
        let target = self.newton.rtol * r_ref;
        if r_free > 0.0 {
            eta = eta.max(0.5 * target / r_free);
        }
        eta.min(EW_ETA_MAX)
    }

    /// Chooses the step length along `ws.du`. While constraints are being lifted the old state is
    /// no reference, so only admissibility (no inverted element) is required; so also where the
    /// loads have no potential under [`LineSearch::Energy`], under [`LineSearch::None`], and under
    /// the energy line search until its watchdog turns `monotone` on.
    #[allow(clippy::too_many_arguments)]
    fn line_search(
        &self,
        problem: &mut Problem,
        u: &Vector,
        load_factor: f64,
        r_free: f64,
        constraints_met: bool,
        monotone: bool,
        ws: &mut Workspace,
    ) -> Result<Damping, StepFailure> {
        match self.newton.line_search {
            LineSearch::Energy if constraints_met && monotone && problem.has_potential() => {
                self.energy_search(problem, u, load_factor, ws)
            }
            LineSearch::Residual if constraints_met => {
                self.residual_search(problem, u, load_factor, r_free, ws)
            }
            _ => self.admissible_step(problem, u, load_factor, ws, None),
        }
    }

    /// The full step, halved while it inverts an element.
    fn admissible_step(
        &self,
        problem: &mut Problem,
        u: &Vector,
        load_factor: f64,
        ws: &mut Workspace,
        why: Option<&str>,
    ) -> Result<Damping, StepFailure> {
        let mut alpha = 1.0;
        let mut last_error = None;
        for _ in 0..self.newton.max_line_search.max(1) {
            ws.trial.copy_from(u)?;
            ops::axpy(alpha, &ws.du, &mut ws.trial)?;
            match ws
                .system
                .potential(&mut problem.discrete, &ws.trial, load_factor)
            {
                Ok(_) => {
                    let note = match (why, alpha < 1.0) {
                        (None, false) => None,
                        (None, true) => Some("shortened: an element inverted".to_string()),
                        (Some(w), false) => Some(w.to_string()),
                        (Some(w), true) => Some(format!("{w}; shortened: an element inverted")),
                    };
                    return Ok(Damping::Step { alpha, note });
                }
                Err(AssemblyError::Linalg(e)) => return Err(StepFailure::Numeric(e)),
                Err(e) => last_error = Some(e),
            }
            alpha /= 2.0;
        }
        Err(last_error.map_or(
            StepFailure::LineSearch("number of inverted elements"),
            StepFailure::Element,
        ))
    }

    /// Backtracking on the potential energy with Armijo's condition and a safeguarded quadratic
    /// model (`0.1 alpha <= next <= 0.5 alpha`). Differences below round-off of the energy count
    /// as no increase. Where `du` is no descent direction of the energy (an indefinite tangent),
    /// the full step is taken (as far as it is admissible).
    fn energy_search(
        &self,
        problem: &mut Problem,
        u: &Vector,
        load_factor: f64,
        ws: &mut Workspace,
    ) -> Result<Damping, StepFailure> {
        // the slope of Pi along du: the residual is Pi's gradient (du is zero where constrained)
        let slope = ops::dot(ws.system.residual(), &ws.du)?;
        // not a descent direction (NaN included)
        if slope.partial_cmp(&0.0) != Some(std::cmp::Ordering::Less) {
            return self.admissible_step(
                problem,
                u,
                load_factor,
                ws,
                Some("no descent direction of the energy: full step"),
            );
        }
        let pi0 = ws.system.potential(&mut problem.discrete, u, load_factor)?;
        let mut alpha = 1.0;
        for _ in 0..self.newton.max_line_search.max(1) {
            ws.trial.copy_from(u)?;
            ops::axpy(alpha, &ws.du, &mut ws.trial)?;
            let next = match ws
                .system
                .potential(&mut problem.discrete, &ws.trial, load_factor)
            {
                Ok(pi) => {
                    let slack = ENERGY_ROUNDOFF * pi0.magnitude.max(pi.magnitude);
                    if pi.value <= pi0.value + ARMIJO * alpha * slope + slack {
                        let note =
                            (alpha < 1.0).then(|| format!("energy backtracking to {alpha:.3}"));
                        return Ok(Damping::Step { alpha, note });
                    }
                    let curvature = (pi.value - pi0.value - slope * alpha) / (alpha * alpha);
                    let minimum = if curvature > 0.0 {
                        -slope / (2.0 * curvature)
                    } else {
                        0.5 * alpha
                    };
                    minimum.clamp(0.1 * alpha, 0.5 * alpha)
                }
                Err(AssemblyError::Linalg(e)) => return Err(StepFailure::Numeric(e)),
                Err(_) => 0.5 * alpha, // an inverted element: shorter
            };
            alpha = next;
        }
        Ok(Damping::NoDecrease("energy"))
    }

    /// Backtracking (halving) on the free residual norm.
    fn residual_search(
        &self,
        problem: &mut Problem,
        u: &Vector,
        load_factor: f64,
        r_free: f64,
        ws: &mut Workspace,
    ) -> Result<Damping, StepFailure> {
        let mut alpha = 1.0;
        for _ in 0..self.newton.max_line_search.max(1) {
            ws.trial.copy_from(u)?;
            ops::axpy(alpha, &ws.du, &mut ws.trial)?;
            match ws.system.residual_at(
                &mut problem.discrete,
                &ws.trial,
                load_factor,
                &mut ws.trial_r,
            ) {
                Ok(()) => {
                    let trial_norm =
                        ws.system
                            .free_norm(&problem.discrete, &ws.trial_r, &mut ws.scratch)?;
                    if trial_norm <= (1.0 - ARMIJO * alpha) * r_free {
                        let note =
                            (alpha < 1.0).then(|| format!("residual backtracking to {alpha:.3}"));
                        return Ok(Damping::Step { alpha, note });
                    }
                }
                Err(AssemblyError::Linalg(e)) => return Err(StepFailure::Numeric(e)),
                Err(_) => {}
            }
            alpha /= 2.0;
        }
        Ok(Damping::NoDecrease("residual norm"))
    }
}
