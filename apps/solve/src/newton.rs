//! Newton's method with backtracking line search, inside a load-stepping loop with automatic
//! cutback.
//!
//! Dirichlet values enter by lifting: each iteration solves for the correction whose constrained
//! entries are `u_D(load factor) - u`, so a step's prescribed motion is applied through the
//! linearised problem (the tangent's constrained columns carry it into the right-hand side) instead
//! of being pushed onto the boundary nodes alone, which would distort the boundary cells.
//!
//! Convergence of a step needs the constraints met and one of: `||r_free|| <= atol`,
//! `||r_free|| <= rtol * r_ref` (`r_ref`: the norm of the step's first right-hand side, the
//! out-of-balance force the step has to remove, Dirichlet lifting included), or a full (undamped)
//! update with `||du|| <= stol ||u||` (PETSc's `snes_stol`).

use std::time::Instant;

use anyhow::Result;
use assembly::AssemblyError;
use linalg::{ops, Bsr, Vector};

use config::{LoadingParams, NewtonParams};
use crate::linear_solver::{LinearSolveReport, LinearSolver};
use crate::problem::Problem;

/// Sufficient decrease of the line search: accept `alpha` when
/// `||r(u + alpha du)|| <= (1 - ARMIJO * alpha) ||r(u)||`.
const ARMIJO: f64 = 1e-4;

/// A step that converged in at most this many Newton iterations is easy: the next increment may
/// grow by `loading.growth` (up to the nominal increment `1 / steps`).
const EASY_ITERATIONS: usize = 5;

/// A residual this many times the step's reference norm means divergence.
const DIVERGENCE_FACTOR: f64 = 1e10;

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
    r: Vector,
    rhs: Vector,
    du: Vector,
    lift: Vector,
    trial: Vector,
    scratch: Vector,
    k: Bsr,
}

impl LoadPath<'_> {
    /// Runs the load path; `on_step` sees each converged step and the converged displacement and is
    /// where output is written (so every converged step is on disk before the next begins). A
    /// failure after cutbacks returns [`PathFailure`] with the steps so far already delivered.
    pub fn run(
        &self,
        problem: &mut Problem,
        solver: &mut LinearSolver,
        u: &mut Vector,
        mut on_step: impl FnMut(&ConvergedStep, &Vector, &mut Problem, &LinearSolver) -> Result<()>,
    ) -> Result<()> {
        let n = problem.n_dofs();
        let mut ws = Workspace {
            r: Vector::zeros(n),
            rhs: Vector::zeros(n),
            du: Vector::zeros(n),
            lift: Vector::zeros(n),
            trial: Vector::zeros(n),
            scratch: Vector::zeros(n),
            k: problem.assembler.new_matrix(),
        };
        let nominal = 1.0 / self.loading.steps as f64;
        let mut increment = nominal;
        let mut load_factor = 0.0;
        let mut index = 0;
        let mut cutbacks = 0;
        while load_factor < 1.0 {
            let target = if 1.0 - (load_factor + increment) < 1e-12 {
                1.0
            } else {
                load_factor + increment
            };
            let start = Instant::now();
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
                    problem.constraints.copy_constrained(&ws.r, &mut reactions);
                    let step = ConvergedStep {
                        index,
                        load_factor,
                        residual_norm: free_norm(problem, &ws.r, &mut ws.trial),
                        iterations,
                        reactions,
                        wall_s: start.elapsed().as_secs_f64(),
                        cutbacks,
                    };
                    let easy = step.iterations.len() <= EASY_ITERATIONS;
                    on_step(&step, u, problem, solver)?;
                    cutbacks = 0;
                    if easy {
                        increment = (increment * self.loading.growth).min(nominal);
                    }
                    increment = increment.min(1.0 - load_factor);
                }
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

    /// Newton iterations at a fixed load factor; on success `ws.r` holds the final residual.
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
            problem
                .residual_tangent(u, load_factor, &mut ws.r, &mut ws.k)
                .map_err(StepFailure::Element)?;
            // lift = u_D - u on constrained entries, zero elsewhere
            ws.lift.fill(0.0);
            ws.trial.copy_from(u);
            problem.constraints.write_prescribed(
                load_factor,
                problem.assembler.coords(),
                &mut ws.trial,
            );
            ops::axpy(-1.0, u, &mut ws.trial);
            problem
                .constraints
                .copy_constrained(&ws.trial, &mut ws.lift);
            let constraints_met = ws.lift.as_slice().iter().all(|&v| v == 0.0);
            let r_free = free_norm(problem, &ws.r, &mut ws.trial);
            if !r_free.is_finite() || r_ref.is_some_and(|r_ref| r_free > DIVERGENCE_FACTOR * r_ref)
            {
                return Err(StepFailure::Diverged(r_free));
            }
            if let (true, Some(r_ref)) = (constraints_met, r_ref) {
                if r_free <= p.atol
                    || r_free <= p.rtol * r_ref
                    || last_update <= p.stol * ops::norm2(u)
                {
                    return Ok(records);
                }
            } else if constraints_met && r_free <= p.atol {
                return Ok(records);
            }
            if iteration == p.max_iterations {
                return Err(StepFailure::MaxIterations(p.max_iterations));
            }
            // rhs = -r - K lift on free entries, lift on constrained ones
            ws.k.spmv(&ws.lift, &mut ws.rhs);
            ops::axpby(-1.0, &ws.r, -1.0, &mut ws.rhs);
            problem.constraints.zero_constrained(&mut ws.rhs);
            let r_ref = *r_ref.get_or_insert_with(|| ops::norm2(&ws.rhs));
            if r_ref == 0.0 && constraints_met {
                // nothing to remove: the state is in equilibrium and the constraints hold
                return Ok(records);
            }
            ops::axpy(1.0, &ws.lift, &mut ws.rhs);
            problem
                .constraints
                .eliminate_in_matrix(&mut ws.k)
                .map_err(StepFailure::Element)?;
            let linear = solver
                .solve(&ws.k, &ws.rhs, &mut ws.du)
                .map_err(StepFailure::Linear)?;
            problem.constraints.copy_constrained(&ws.lift, &mut ws.du);
            let step_length =
                self.line_search(problem, u, load_factor, r_free, constraints_met, ws)?;
            // only a full step measures Newton's own update; a damped one says little about convergence
            last_update = if step_length == 1.0 {
                ops::norm2(&ws.du)
            } else {
                f64::INFINITY
            };
            ops::axpy(step_length, &ws.du, u);
            if step_length == 1.0 {
                // land exactly on the prescribed values (u + (u_D - u) may differ by an ulp)
                problem
                    .constraints
                    .write_prescribed(load_factor, problem.assembler.coords(), u);
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
            ws.trial.copy_from(u);
            ops::axpy(alpha, &ws.du, &mut ws.trial);
            match problem.residual(&ws.trial, load_factor, &mut ws.rhs) {
                Ok(()) => {
                    if !constraints_met || !self.newton.line_search {
                        return Ok(alpha);
                    }
                    let trial_norm = free_norm(problem, &ws.rhs, &mut ws.scratch);
                    if trial_norm <= (1.0 - ARMIJO * alpha) * r_free {
                        return Ok(alpha);
                    }
                }
                Err(e) => last_error = Some(e),
            }
            alpha /= 2.0;
        }
        Err(last_error.map_or(StepFailure::LineSearch, StepFailure::Element))
    }
}

/// Norm of `r` restricted to the free entries (`scratch` is overwritten).
fn free_norm(problem: &Problem, r: &Vector, scratch: &mut Vector) -> f64 {
    scratch.copy_from(r);
    problem.constraints.zero_constrained(scratch);
    ops::norm2(scratch)
}
