//! The run driver, one for any rank count (one process is the one-rank case, as in PETSc): the
//! state a restart continues from, the linear solver, the summary, the results and the probes'
//! log with the first state, then the load path with the output of every converged step, and
//! the end of the run (completed, failed or interrupted). What differs with the ranks is a
//! [`Layout`]: where the mesh is (the whole mesh in one process, a part on each rank), how the
//! linear solver is chosen (one process may reuse an earlier run's, [`crate::run::Warm`]) and
//! how the output reaches the writer, a thread that writes a state while the next step
//! computes ([`crate::writer`]; one process: handed over whole; on ranks: gathered to rank 0's
//! writer window by window, [`crate::dist_output`]). A state's records (summary, probes' log,
//! `step_written`) follow its write.
//!
//! Every fallible phase ends in [`agreed`]: on ranks one rank's error is every rank's, so all
//! stop together; on one rank it is the error itself.

use std::cell::RefCell;
use std::time::Instant;

use comm::Comm;
use config::Config;
use io::{MeshInfo, RanksInfo, RunStatus, StepRecord, SummaryWriter};
use linalg::Vector;
use rayon::prelude::*;
use solve::linear_solver::{Choice, LinearSolver};
use solve::newton::{LoadPath, PathState};
use solve::params::{LoadingParams, NewtonParams};
use solve::problem::Problem;

use crate::dist_output::StateFigures;
use crate::distributed::{agreed, is_agreed};
use crate::observer::{Placement, RunStart};
use crate::plausibility::InvertedCells;
use crate::restart::Restart;
use crate::run::{Case, CellOutputs, RunFigures, RunOutcome, StepStamp};
use crate::stages::{RunStages, Timed, OUTPUT, OUTPUT_WRITER, RESTART, SOLVER};
use crate::writer::StepOutput;
use crate::{Error, Result, WriterFailure};

/// What a run does differently on one rank and on many (see the module doc). Methods marked
/// collective are called by every rank, in the same order; their errors are the same on every
/// rank (agreed) where they are marked so.
pub(crate) trait Layout {
    /// The displacement of the step `restart` continues from, at this layout's nodes of
    /// `problem` (checked against the file's mesh).
    fn restart_displacement(&self, restart: &Restart, problem: &Problem) -> Result<Vector>;

    /// Collective, agreed: the linear solver of `problem`, what was chosen, and whether it was
    /// reused from an earlier run.
    fn solver(
        &mut self,
        config: &Config,
        problem: &Problem,
    ) -> Result<(LinearSolver, Choice, bool)>;

    /// Keeps the run's linear solver for a later run (where one can reuse it).
    fn keep_solver(&mut self, solver: LinearSolver, choice: Choice);

    /// The whole mesh's figures (summary and header).
    fn mesh_info(&self, problem: &Problem) -> MeshInfo;

    /// The summary's section on the ranks (their loads and devices), where there are ranks.
    fn ranks_info(&self) -> Option<RanksInfo>;

    /// Where the run computes, for the header.
    fn placement<'a>(&'a self, solver: &'a LinearSolver) -> Placement<'a>;

    /// Collective: creates the results files with the mesh and where the states are written
    /// (by the writer of the one process, or of rank 0).
    fn create_results(
        &mut self,
        config: &Config,
        problem: &Problem,
        case: &Case,
    ) -> Result<StepOutput>;

    /// Collective: hands the state `u` (with `reactions` and the outputs `cells` of this
    /// layout's cells) as step `stamp.index` to `output`'s writer (written once
    /// [`StepOutput::wait`] returns); returns the state's figures on rank 0.
    #[allow(clippy::too_many_arguments)]
    fn write_state(
        &mut self,
        config: &Config,
        problem: &Problem,
        u: &Vector,
        reactions: &Vector,
        cells: CellOutputs,
        stamp: StepStamp,
        output: &mut StepOutput,
    ) -> Result<Option<StateFigures>>;

    /// Collective: [`crate::run::check_state`] of the whole body's converged state `u` of step
    /// `index` (this layout's part of it, with the outputs `cells` of its cells): an error for
    /// a state that is not finite, naming what and the serial mesh's cell as one process does;
    /// else the warnings of an implausible linear answer where [`Layout::inverted_cells`] is
    /// [`InvertedScope::Own`].
    fn check_state(
        &self,
        index: usize,
        u: &Vector,
        cells: &CellOutputs,
        size: f64,
        linear: bool,
    ) -> Result<Vec<String>>;

    /// Collective: whose inverted cells a step's plausibility warnings name.
    fn inverted_cells(&self, cells: &CellOutputs) -> Result<InvertedScope>;

    /// The outputs of the cells of the first state `u` (the undeformed state, or the one a
    /// restart continues from): [`CellOutputs::compute`] here, or, where the layout's writer
    /// can and no probe reads them, left to the writer ([`CellOutputs::fields_later`]); on
    /// ranks the undeformed state's are computed while the mesh is gathered.
    fn first_cells(&self, problem: &Problem, u: &Vector, config: &Config) -> Result<CellOutputs> {
        CellOutputs::compute(problem, u, config, self.defers_strains())
    }

    /// Whether a converged step's strains that no probe reads are left to the output writer
    /// ([`CellOutputs::later`]: one process; on ranks they travel in the cells' records).
    fn defers_strains(&self) -> bool {
        false
    }

    /// Collective, after the load path: adds each rank's figures (output memory, peak memory,
    /// seconds in Newton and in output) to rank 0's `summary`.
    fn finish_summary(
        &self,
        summary: Option<&mut SummaryWriter>,
        newton_s: f64,
        output_s: f64,
    ) -> Result<()>;
}

/// Whose inverted cells a step's plausibility warnings name.
pub(crate) enum InvertedScope {
    /// This process holds the whole body: its own warnings ([`crate::run::check_state`]) are
    /// the step's.
    Own,
    /// The whole body's over the ranks, the same figures as on one process (`None`: no cell is
    /// inverted).
    WholeBody(Option<InvertedCells>),
}

/// What rank 0 writes besides the results: the summary, the probes' log, the figures.
struct Records {
    summary: SummaryWriter,
    probe_log: Option<io::ProbeLog>,
    figures: RunFigures,
}

/// Runs `case` on `problem` (built on `layout`'s mesh) over the ranks of `comm`: every rank
/// returns; rank 0's outcome names the files and holds the figures. On a failed load path the
/// files written so far are kept (every converged step) and the summary records the failure.
/// Where the time goes is added to `stages`; once the load path ends, the summary records
/// their table (merged over the ranks).
pub(crate) fn drive(
    comm: &dyn Comm,
    case: &Case,
    layout: &mut dyn Layout,
    problem: &mut Problem,
    started: Instant,
    stages: &mut RunStages,
) -> Result<RunOutcome> {
    let config = case.config;
    let restart_started = Instant::now();
    let loading: LoadingParams = (&config.loading).into();
    let newton: NewtonParams = (&config.newton).into();
    // the state a restart continues from: its displacement, its place on the path, the loads
    // at its time, then its reactions (collective on ranks)
    let restart = match &case.restart {
        Some(r) => {
            let local = (|| -> Result<(Vector, PathState)> {
                let u = layout.restart_displacement(r, problem)?;
                let path = r.path_state(&loading)?;
                problem.set_time(r.time)?;
                Ok((u, path))
            })();
            let (u, path) = agreed(comm, local)?;
            let reactions = agreed(comm, r.reactions_in_equilibrium(problem, &u, &newton))?;
            Some((r, u, path, reactions))
        }
        None => None,
    };
    if restart.is_some() {
        stages.since(RESTART, restart_started);
    }
    // before any file is written: the linear solver (`device: cuda` needs its GPU)
    let (mut solver, choice, reused_solver) =
        stages.time(SOLVER, || layout.solver(config, problem))?;
    let files_started = Instant::now();
    let mesh_info = layout.mesh_info(problem);
    // rank 0: the summary first, then the results and the probes' log
    let records = (comm.rank() == 0)
        .then(|| {
            let summary = create_summary(case, problem, &mesh_info, layout.ranks_info())?;
            Ok::<_, Error>(Records {
                summary,
                probe_log: None,
                figures: RunFigures {
                    reused_solver,
                    ..RunFigures::default()
                },
            })
        })
        .transpose();
    let mut records = agreed(comm, records)?;
    // an error from here on is recorded in the summary (where it can be)
    let fail = |records: &mut Option<Records>, e: Error| {
        if let Some(r) = records {
            let message = e.chain_text();
            let wall = started.elapsed().as_secs_f64();
            let _ = r.summary.finish(RunStatus::Failed { message }, wall);
        }
        e
    };
    let mut output = match agreed(comm, layout.create_results(config, problem, case)) {
        Ok(output) => output,
        Err(e) => return Err(fail(&mut records, e)),
    };
    let columns = crate::probes::columns(config);
    let log = match &mut records {
        Some(r) if !columns.is_empty() => {
            io::ProbeLog::create(&case.dir, &case.name, &columns).map(|log| r.probe_log = Some(log))
        }
        _ => Ok(()),
    };
    if let Err(e) = agreed(comm, log) {
        return Err(fail(&mut records, e));
    }
    stages.since(OUTPUT, files_started);

    // the first state written: the undeformed one (step 0, load factor 0, no reactions), or
    // the one a restart continues from
    let (mut u, start, reactions, stamp) = match restart {
        Some((r, u, path, reactions)) => {
            let stamp = StepStamp {
                index: path.index,
                load_factor: r.load_factor,
                next_increment: Some(path.increment),
                time: Some(r.time),
            };
            (u, path, reactions, stamp)
        }
        None => {
            let start = PathState::start(&loading);
            let stamp = StepStamp {
                index: start.index,
                load_factor: 0.0,
                next_increment: Some(start.increment),
                time: Some(0.0),
            };
            (
                problem.discrete.zeros()?,
                start,
                problem.discrete.zeros()?,
                stamp,
            )
        }
    };
    let output_started = Instant::now();
    // the states handed to the output whose records wait for their write (at most one)
    let mut pending: Option<Pending> = None;
    let defer = layout.defers_strains();
    let first = agreed(comm, layout.first_cells(problem, &u, config))
        .and_then(|cells| {
            let state =
                layout.write_state(config, problem, &u, &reactions, cells, stamp, &mut output);
            agreed(comm, state)
        })
        .map(|state| {
            // its records follow its write (taken before the next hand-off)
            pending = state.map(|state| Pending {
                stamp,
                state,
                step: None,
            });
        });
    if let Err(e) = first {
        return Err(fail(&mut records, e));
    }
    drop(reactions);
    let first_output_s = output_started.elapsed().as_secs_f64();
    stages.add(OUTPUT, first_output_s);

    let observer = case.observer;
    let header_started = Instant::now();
    observer.run_started(&RunStart {
        config,
        problem,
        mesh: &mesh_info,
        placement: layout.placement(&solver),
        solver: &choice,
        newton: &newton,
    });
    let size = body_size(comm, &problem.mesh.coords)?;
    stages.since(OUTPUT, header_started);
    let timed = Timed {
        inner: observer,
        stages: RefCell::new(&mut *stages),
    };
    let output_strains = crate::fields::strain_measures(config);
    let path = LoadPath {
        loading: &loading,
        newton: &newton,
        observer: &timed,
        output_strains: &output_strains,
        output_cell_fields: crate::fields::cell_field_set(config),
    };
    let mut step_output_s = 0.0;
    let newton_started = Instant::now();
    let outcome: Result<()> = path.run_from(
        start,
        problem,
        &mut solver,
        &mut u,
        |step, u, problem, solver| {
            let step_started = Instant::now();
            // this rank's cells' outputs; a state that is not finite fails the step on every
            // rank, before it is written
            let cells = agreed(comm, CellOutputs::of_step(problem, step, u, config, defer))?;
            let linear = problem.is_linear();
            let local = layout.check_state(step.index, u, &cells, size, linear);
            let local_warnings = agreed(comm, local)?;
            let inverted = layout.inverted_cells(&cells)?;
            let stamp = StepStamp {
                index: step.index,
                load_factor: step.load_factor,
                next_increment: Some(step.next_increment),
                time: Some(step.time),
            };
            // the state before this one is written (the writer's error, if any, is this
            // step's), and its records follow it; then this state is handed over
            let written = settle(
                &mut output,
                &mut pending,
                &mut records,
                &columns,
                observer,
                started,
            );
            agreed(comm, written)?;
            let state = layout.write_state(
                config,
                problem,
                u,
                &step.reactions,
                cells,
                stamp,
                &mut output,
            );
            let written = match (&mut records, state) {
                (Some(r), Ok(Some(state))) => (|| -> Result<()> {
                    let mut record = crate::run::step_record(
                        step,
                        state.strain_energy,
                        state.max_displacement,
                        &state.reaction_totals,
                    )?;
                    record.warnings = match &inverted {
                        InvertedScope::Own => local_warnings,
                        InvertedScope::WholeBody(inverted) => crate::plausibility::warnings(
                            linear,
                            state.max_displacement,
                            size,
                            inverted.as_ref(),
                        ),
                    };
                    record.probes = columns.iter().cloned().zip(state.probes.clone()).collect();
                    r.figures.count_step(step, &record);
                    let preconditioner = solver
                        .hierarchy_report()
                        .map(serde_json::to_value)
                        .transpose()?;
                    observer.step_finished(step, &record);
                    pending = Some(Pending {
                        stamp,
                        state,
                        step: Some((record, preconditioner)),
                    });
                    Ok(())
                })(),
                (_, Err(e)) => Err(e),
                _ => Ok(()),
            };
            let output_s = step_started.elapsed().as_secs_f64();
            step_output_s += output_s;
            timed.stages.borrow_mut().add(OUTPUT, output_s);
            agreed(comm, written)
        },
    );
    let end_started = Instant::now();
    // the load path's seconds without the output's
    let newton_s = newton_started.elapsed().as_secs_f64() - step_output_s;
    // the last state handed to the writer is written, and its records follow it (whatever
    // ended the path); the writer's error is the run's unless the path failed first
    let settled = settle(
        &mut output,
        &mut pending,
        &mut records,
        &columns,
        observer,
        started,
    );
    let (writer_s, writes) = output.busy();
    let (finished, results) = output.finish();
    let settled = settled.and(finished);
    let outcome = match (outcome, settled) {
        (outcome, Ok(())) => outcome,
        (Err(e), Err(w)) if !e.is::<solve::newton::Interrupted>() => {
            Err(e.context(format!("the output also failed: {}", w.chain_text())))
        }
        (_, Err(w)) => Err(w),
    };
    let output_s = first_output_s + step_output_s + end_started.elapsed().as_secs_f64();
    let outcome = match outcome {
        // every rank stopped at the same point (an agreed error or request)
        Err(e) if is_agreed(&e) || e.is::<solve::newton::Interrupted>() => Err(e),
        other => agreed(comm, other),
    };
    layout.keep_solver(solver, choice);
    let ranks = layout.finish_summary(records.as_mut().map(|r| &mut r.summary), newton_s, output_s);
    stages.since(OUTPUT, end_started);
    if writes > 0 {
        stages.add_overlapped(OUTPUT_WRITER, writer_s, writes);
    }
    // collective: where the time went on every rank (a table that cannot be merged is left
    // out of the summary; the run's outcome stands)
    if let (Ok(table), Some(r)) = (stages.table(comm), &mut records) {
        r.summary.set_stages(table.clone());
        r.figures.stages = Some(table);
    }
    let wall = started.elapsed().as_secs_f64();
    match (records, results) {
        (Some(r), Some(results)) => {
            crate::run::finish_run(outcome, r.summary, results, r.probe_log, r.figures, wall)
        }
        (Some(mut r), None) => {
            // the writer's thread ended without its file (the outcome is then its error)
            let e = match outcome {
                Err(e) => e,
                Ok(()) => WriterFailure::Stopped.into(),
            };
            let message = e.chain_text();
            let _ = r.summary.finish(RunStatus::Failed { message }, wall);
            Err(e)
        }
        // the other ranks: rank 0 reports the files
        _ => {
            ranks?;
            outcome?;
            let file = |suffix: &str| case.dir.join(format!("{}{suffix}", case.name));
            Ok(RunOutcome {
                h5: file(".h5"),
                xdmf: file(".xdmf"),
                summary: file(".summary.json"),
                probes_csv: None,
                steps: 0,
                figures: RunFigures::default(),
            })
        }
    }
}

/// A state handed to the output whose records are taken once it is written: its figures and,
/// for a converged step, the step's summary record with the preconditioner's report.
struct Pending {
    stamp: StepStamp,
    state: StateFigures,
    step: Option<(StepRecord, Option<serde_json::Value>)>,
}

/// Waits until the state handed to `output` last is written, then takes its records on rank 0
/// (`records`): the figures and the probes' log line, and for a converged step its summary
/// record, after which `observer` is told the step is written. The write's error is returned
/// (the records not taken).
fn settle(
    output: &mut StepOutput,
    pending: &mut Option<Pending>,
    records: &mut Option<Records>,
    columns: &[String],
    observer: &dyn crate::observer::RunObserver,
    started: Instant,
) -> Result<()> {
    if let Err(e) = output.wait() {
        // not written: no record of it
        *pending = None;
        return Err(e);
    }
    let (Some(p), Some(r)) = (pending.take(), records.as_mut()) else {
        return Ok(());
    };
    r.take(columns, &p.state, p.stamp)?;
    if let Some((record, preconditioner)) = p.step {
        if let Some(report) = preconditioner {
            r.summary.set_preconditioner(report);
        }
        r.summary
            .record_step(record, started.elapsed().as_secs_f64())?;
        observer.step_written(p.stamp.index);
    }
    Ok(())
}

impl Records {
    /// Takes a written state's figures (at `stamp`) and appends its probes to the log.
    fn take(&mut self, columns: &[String], state: &StateFigures, stamp: StepStamp) -> Result<()> {
        let figures = &mut self.figures;
        figures.load_factor = stamp.load_factor;
        figures.strain_energy = state.written_strain_energy();
        figures.max_displacement = state.max_displacement;
        figures.reactions = state.reactions.clone();
        figures.probes = columns.iter().cloned().zip(state.probes.clone()).collect();
        if let Some(log) = &mut self.probe_log {
            log.append(stamp.index, stamp.load_factor, &state.probes)?;
        }
        Ok(())
    }
}

/// Rank 0's summary of `case` (its directory created), with the ranks' section where given.
fn create_summary(
    case: &Case,
    problem: &Problem,
    mesh_info: &MeshInfo,
    ranks: Option<RanksInfo>,
) -> Result<SummaryWriter> {
    let dir = &case.dir;
    std::fs::create_dir_all(dir).map_err(|error| Error::OutputDirectory {
        dir: dir.clone(),
        error,
    })?;
    let mut summary = SummaryWriter::create(
        dir,
        &case.name,
        io::RunInfo {
            restart: case
                .restart
                .as_ref()
                .map(|r| format!("{}:{}", r.file.display(), r.step)),
            formulations: crate::run::formulation_names(problem),
            ..crate::run::run_info(case.config, case.input)?
        },
        mesh_info.clone(),
        &case.faults,
    )?;
    if let Some(ranks) = ranks {
        summary.set_ranks(ranks);
    }
    Ok(summary)
}

/// Collective: the whole body's size (the diagonal of its bounding box), for the plausibility
/// warnings; `coords` are this rank's nodes.
fn body_size(comm: &dyn Comm, coords: &[[f64; 3]]) -> Result<f64> {
    // in parallel: the least and largest coordinates are the same in any order
    let empty = || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    let join = |(lo, hi): ([f64; 3], [f64; 3]), (a, b): ([f64; 3], [f64; 3])| {
        (
            std::array::from_fn(|d| lo[d].min(a[d])),
            std::array::from_fn(|d| hi[d].max(b[d])),
        )
    };
    let (lo, hi) = coords
        .par_iter()
        .fold(empty, |bounds, x| join(bounds, (*x, *x)))
        .reduce(empty, join);
    let mut extent = [-lo[0], -lo[1], -lo[2], hi[0], hi[1], hi[2]];
    comm.allreduce_max(&mut extent)?;
    Ok(crate::run::length(&std::array::from_fn(|d| {
        extent[3 + d] + extent[d]
    })))
}
