//! Newton's method with backtracking line search, inside a load-stepping loop with automatic
//! cutback.
//!
//! Each iteration assembles and eliminates through [`assembly::DiscreteProblem`] (residual,
//! tangent, Dirichlet lifting: the correction's constrained entries are `u_D(load factor) - u`, so a
//! step's prescribed motion acts through the linearised problem instead of distorting the boundary
//! cells) and solves with the [`LinearSolver`].
//!
//! Convergence of a step needs the constraints met and one of: `||r_free|| <= atol`,
//! `||r_free|| <= rtol * r_ref` (`r_ref`: the norm of the step's first right-hand side, the
//! out-of-balance force the step has to remove, Dirichlet lifting included), or a full (undamped)
//! update with `||du|| <= stol ||u||` (PETSc's `snes_stol`).

use std::time::Instant;

use anyhow::Result;
use assembly::{AssemblyError, NewtonSystem};
use linalg::{ops, Vector};

use crate::linear_solver::{LinearSolveReport, LinearSolver};
use crate::params::{LoadingParams, NewtonParams};
use crate::problem::Problem;

/// Sufficient decrease of the line search: accept `alpha` when
/// `||r(u + alpha du)|| <= (1 - ARMIJO * alpha) ||r(u)||`.
const ARMIJO: f64 = 1e-4;

/// A step that converged in at most this many Newton iterations is easy: the next increment may
/// grow by `loading.growth` (up to the nominal increment `1 / steps`).
const EASY_ITERATIONS: usize = 5;

/// A residual this many times the step's reference norm means divergence.
const DIVERGENCE_FACTOR: f64 = 1e10;

/// An increment that would leave less than this of the load path goes to load factor one
/// exactly (no sliver of a last step from accumulated round-off).
const LOAD_FACTOR_SNAP: f64 = 1e-12;

/// One Newton iteration's record.
#[derive(Clone, Debug, serde::Serialize)]
pub struct IterationRecord {
    /// Norm of the free (unconstrained) residual at the start of the iteration.
    pub residual_norm: f64,
    pub linear: LinearSolveReport,
    /// Accepted line-search step length.
    pub step_length: f64,
}

/// A converged load step.
#[derive(Clone, Debug)]
pub struct ConvergedStep {
    /// 1-based index among converged steps.
    pub index: usize,
    pub load_factor: f64,
    pub iterations: Vec<IterationRecord>,
    /// Final free residual norm.
    pub residual_norm: f64,
    /// Residual at the constrained entries (support reactions), zero elsewhere.
    pub reactions: Vector,
    pub wall_s: f64,
    /// Attempts of this step that failed and were cut back.
    pub cutbacks: usize,
    /// The increment the next step will try (after regrowth); with `load_factor` and `index`
    /// it is the [`PathState`] a restart continues from.
    pub next_increment: f64,
}

/// Where a load path stands between two steps: with the converged displacement, all that the
/// rest of the path depends on (a restart from it repeats the uninterrupted path exactly).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathState {
    /// Load factor of the last converged step (0 at the start).
    pub load_factor: f64,
    /// The increment the next step tries.
    pub increment: f64,
    /// Converged steps so far.
    pub index: usize,
}

impl PathState {
    /// The start of a path: load factor 0, the nominal increment `1 / steps`, no steps.
    pub fn start(loading: &LoadingParams) -> Self {
        PathState {
            load_factor: 0.0,
            increment: 1.0 / loading.steps as f64,
            index: 0,
        }
    }

    /// The state after `step`.
    pub fn after(step: &ConvergedStep) -> Self {
        PathState {
            load_factor: step.load_factor,
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
    #[error("diverged (free residual {0:e})")]
    Diverged(f64),
    #[error("line search found no decrease")]
    LineSearch,
    #[error("linear solver: {0:#}")]
    Linear(anyhow::Error),
    /// A vector or matrix operation failed (a kernel or a message, not the iteration): not a
    /// reason to cut the step back.
    #[error("linear algebra: {0}")]
    Numeric(#[from] linalg::LinalgError),
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

/// Why the load path stopped early.
#[derive(Debug, thiserror::Error)]
#[error("load step to factor {load_factor:.6} failed after {cutbacks} cutbacks (increment {increment:.3e}): {last}")]
pub struct PathFailure {
    pub load_factor: f64,
    pub increment: f64,
    pub cutbacks: usize,
    pub last: StepFailure,
}

/// Load stepping from factor 0 to 1 with cutback and regrowth.
pub struct LoadPath<'a> {
    pub loading: &'a LoadingParams,
    pub newton: &'a NewtonParams,
    /// Print each Newton iteration (residual, linear iterations, step length) on standard error.
    pub verbose: bool,
}

/// Buffers of one Newton solve, allocated once per run.
struct Workspace {
    system: NewtonSystem,
    du: Vector,
    trial: Vector,
    /// The line search's trial residual.
    trial_r: Vector,
    scratch: Vector,
}

impl LoadPath<'_> {
    /// Runs the load path from its start (see [`LoadPath::run_from`]).
    pub fn run(
        &self,
        problem: &mut Problem,
        solver: &mut LinearSolver,
        u: &mut Vector,
        on_step: impl FnMut(&ConvergedStep, &Vector, &mut Problem, &LinearSolver) -> Result<()>,
    ) -> Result<()> {
        self.run_from(PathState::start(self.loading), problem, solver, u, on_step)
    }

    /// Runs the load path from `start` with `u` the converged displacement there; `on_step` sees each converged step and the converged displacement and is
    /// where output is written (so every converged step is on disk before the next begins). A
    /// failure after cutbacks returns [`PathFailure`] with the steps so far already delivered.
    pub fn run_from(
        &self,
        start: PathState,
        problem: &mut Problem,
        solver: &mut LinearSolver,
        u: &mut Vector,
        mut on_step: impl FnMut(&ConvergedStep, &Vector, &mut Problem, &LinearSolver) -> Result<()>,
    ) -> Result<()> {
        let n = problem.n_dofs();
        let mut ws = Workspace {
            system: problem.discrete.new_system(),
            du: Vector::zeros(n),
            trial: Vector::zeros(n),
            trial_r: Vector::zeros(n),
            scratch: Vector::zeros(n),
        };
        let nominal = 1.0 / self.loading.steps as f64;
        let mut increment = start.increment;
        let mut load_factor = start.load_factor;
        let mut index = start.index;
        let mut cutbacks = 0;
        while load_factor < 1.0 {
            let target = if 1.0 - (load_factor + increment) < LOAD_FACTOR_SNAP {
                1.0
            } else {
                load_factor + increment
            };
            let started = Instant::now();
            if self.verbose {
                eprintln!("load factor {load_factor:.4} -> {target:.4}");
            }
            let mut trial_u = u.clone();
            match self.solve_step(problem, solver, &mut trial_u, target, &mut ws) {
                Ok(iterations) => {
                    *u = trial_u;
                    index += 1;
                    load_factor = target;
                    let mut reactions = Vector::zeros(n);
                    let discrete = &problem.discrete;
                    discrete
                        .constraints
                        .copy_constrained(&ws.system.residual, &mut reactions)?;
                    let easy = iterations.len() <= EASY_ITERATIONS;
                    if easy {
                        increment = (increment * self.loading.growth).min(nominal);
                    }
                    increment = increment.min(1.0 - load_factor);
                    let step = ConvergedStep {
                        index,
                        load_factor,
                        residual_norm: discrete.free_norm(&ws.system.residual, &mut ws.trial)?,
                        iterations,
                        reactions,
                        wall_s: started.elapsed().as_secs_f64(),
                        cutbacks,
                        next_increment: increment,
                    };
                    on_step(&step, u, problem, solver)?;
                    cutbacks = 0;
                }
                Err(StepFailure::Numeric(e)) => return Err(e.into()),
                Err(failure) => {
                    let next = increment / 2.0;
                    if self.verbose {
                        eprintln!(
                            "  step failed ({failure}); cutting the increment back to {next:.3e}"
                        );
                    }
                    if cutbacks >= self.loading.max_cutbacks || next < self.loading.min_increment {
                        return Err(PathFailure {
                            load_factor: target,
                            increment,
                            cutbacks,
                            last: failure,
                        }
                        .into());
                    }
                    cutbacks += 1;
                    increment = next;
                }
            }
        }
        Ok(())
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
    ) -> Result<Vec<IterationRecord>, StepFailure> {
        let p = self.newton;
        let mut records = Vec::new();
        let mut r_ref = None;
        let mut last_update = f64::INFINITY;
        for iteration in 0..=p.max_iterations {
            let discrete = &mut problem.discrete;
            discrete.linearize(u, load_factor, &mut ws.system)?;
            let constraints_met = ws.system.constraints_met()?;
            let r_free = discrete.free_norm(&ws.system.residual, &mut ws.trial)?;
            if !r_free.is_finite() || r_ref.is_some_and(|r_ref| r_free > DIVERGENCE_FACTOR * r_ref)
            {
                return Err(StepFailure::Diverged(r_free));
            }
            if let (true, Some(r_ref)) = (constraints_met, r_ref) {
                if r_free <= p.atol
                    || r_free <= p.rtol * r_ref
                    || last_update <= p.stol * ops::norm2(u)?
                {
                    return Ok(records);
                }
            } else if constraints_met && r_free <= p.atol {
                return Ok(records);
            }
            if iteration == p.max_iterations {
                return Err(StepFailure::MaxIterations(p.max_iterations));
            }
            let rhs_free = discrete.eliminate(&mut ws.system)?;
            let r_ref = *r_ref.get_or_insert(rhs_free);
            if r_ref == 0.0 && constraints_met {
                // nothing to remove: the state is in equilibrium and the constraints hold
                return Ok(records);
            }
            let linear = solver
                .solve(&ws.system.tangent, &ws.system.rhs, &mut ws.du)
                .map_err(StepFailure::Linear)?;
            discrete
                .constraints
                .copy_constrained(&ws.system.lift, &mut ws.du)?;
            let step_length =
                self.line_search(problem, u, load_factor, r_free, constraints_met, ws)?;
            let discrete = &mut problem.discrete;
            // only a full step measures Newton's own update; a damped one says little about convergence
            last_update = if step_length == 1.0 {
                ops::norm2(&ws.du)?
            } else {
                f64::INFINITY
            };
            ops::axpy(step_length, &ws.du, u)?;
            if step_length == 1.0 {
                // land exactly on the prescribed values (u + (u_D - u) may differ by an ulp)
                discrete.constraints.write_prescribed(
                    load_factor,
                    discrete.assembler.coords(),
                    u,
                )?;
            }
            if self.verbose {
                eprintln!(
                    "  newton {iteration:>2}  |r| {r_free:.3e}  linear {:>4} its ({:?}, set-up {:.3} s, solve {:.3} s)  step {step_length}",
                    linear.iterations, linear.setup, linear.setup_s, linear.solve_s
                );
            }
            records.push(IterationRecord {
                residual_norm: r_free,
                linear,
                step_length,
            });
        }
        Err(StepFailure::MaxIterations(p.max_iterations))
    }

    /// Backtracking on the free residual norm. While constraints are being lifted the residual of
    /// the old state is no reference, so only admissibility (no inverted element) is required.
    fn line_search(
        &self,
        problem: &mut Problem,
        u: &Vector,
        load_factor: f64,
        r_free: f64,
        constraints_met: bool,
        ws: &mut Workspace,
    ) -> Result<f64, StepFailure> {
        let tries = if self.newton.line_search {
            self.newton.max_line_search.max(1)
        } else {
            1
        };
        let mut alpha = 1.0;
        let mut last_error = None;
        for _ in 0..tries {
            ws.trial.copy_from(u)?;
            ops::axpy(alpha, &ws.du, &mut ws.trial)?;
            match problem
                .discrete
                .residual(&ws.trial, load_factor, &mut ws.trial_r)
            {
                Ok(()) => {
                    if !constraints_met || !self.newton.line_search {
                        return Ok(alpha);
                    }
                    let trial_norm = problem.discrete.free_norm(&ws.trial_r, &mut ws.scratch)?;
                    if trial_norm <= (1.0 - ARMIJO * alpha) * r_free {
                        return Ok(alpha);
                    }
                }
                Err(AssemblyError::Linalg(e)) => return Err(StepFailure::Numeric(e)),
                Err(e) => last_error = Some(e),
            }
            alpha /= 2.0;
        }
        Err(last_error.map_or(StepFailure::LineSearch, StepFailure::Element))
    }
}
