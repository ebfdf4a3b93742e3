//! Commands on more than one MPI rank. Every fallible phase ends in a collective error
//! agreement ([`agreed`]): one rank's error becomes every rank's, so all ranks stop together
//! with the first failing rank's message and none waits in a collective.
//!
//! `check` and `run` run distributed: each rank builds and checks only its part of the mesh,
//! solves on it, and computes the output of what it owns; rank 0 writes the run's files from
//! windows of serial ids the ranks send it ([`crate::dist_output`]), never holding the mesh.

use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, Result};
use comm::{agree, Comm, CommError};
use linalg::Vector;

/// `result`, agreed on by every rank: an error on any rank is the same error everywhere (the
/// lowest failing rank's, with its whole chain of causes).
pub fn agreed<T>(comm: &dyn Comm, result: Result<T>) -> Result<T> {
    Ok(agree(comm, result.map_err(|e| format!("{e:#}")))?)
}

/// True for an error that came out of [`agreed`] (every rank holds the same one).
pub fn is_agreed(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<CommError>(),
        Some(CommError::Failed { .. })
    )
}

use crate::observer::{Placement, RanksDevice, RunObserver, RunStart};

/// Collective. Each rank's device for `config.device` (see `linalg::dist::select_rank_devices`):
/// `cpu` the host; `cuda` this rank's GPU, or every rank's located error; `auto` the GPUs where
/// every rank has one, else the host on every rank.
fn rank_devices(comm: &std::sync::Arc<dyn Comm>, config: &config::Config) -> Result<RanksDevice> {
    use linalg::dist::{select_rank_devices, RankDeviceRequest};
    let size = comm.size();
    let host = |why: Option<String>| RanksDevice {
        device: linalg::Device::Host,
        names: vec!["host".into(); size],
        why_host: why,
        exchange: (linalg::dist::DeviceExchange::Staged, None),
    };
    let request = match config.device {
        config::ComputeDevice::Cpu => return Ok(host(None)),
        config::ComputeDevice::Auto => RankDeviceRequest::Auto,
        config::ComputeDevice::Cuda => RankDeviceRequest::Cuda,
    };
    let chosen = select_rank_devices(comm, request).map_err(|e| {
        let why = match e {
            linalg::LinalgError::CudaUnavailable { reason } => reason,
            e => e.to_string(),
        };
        // the same error on every rank (the selection agreed on it)
        anyhow::Error::from(config.error_at("device", why))
    })?;
    // peer writes between the GPUs where every rank can (one node, peer access), else NCCL
    // where every rank has it, else staged, saying why (each measured faster than the next:
    // docs/benchmarks.md)
    let exchange = linalg::dist::connect_rank_devices(
        comm,
        &chosen.device,
        linalg::dist::DeviceExchange::Auto,
    )?;
    Ok(RanksDevice {
        device: chosen.device,
        names: chosen.names,
        why_host: chosen.fallback,
        exchange,
    })
}

/// `hexfem check` on the ranks of `comm`: the configuration (every rank), the output files
/// (rank 0), then each rank's part of the mesh (generated or partitioned by METIS) and the
/// geometry of its cells. Returns the summary with the partition's load balance (to be printed
/// by rank 0).
pub fn check_on_ranks(
    world: &std::sync::Arc<dyn Comm>,
    source: &crate::Input,
    overrides: &[String],
    output_dir: Option<&Path>,
) -> Result<String> {
    let comm = &**world;
    let (rank, size) = (comm.rank(), comm.size());
    let input = source.path();
    let config = agreed(comm, source.load(overrides).map_err(anyhow::Error::from))?;
    let dir = crate::run::output_dir(&config, output_dir);
    let name = crate::run::output_name(&config, input);
    let output = if rank == 0 {
        crate::run::check_output(&config, output_dir, &dir, &name)
    } else {
        Ok(())
    };
    agreed(comm, output)?;
    let params = agreed(comm, config.problem_params().map_err(anyhow::Error::from))?;
    let part = agreed(
        comm,
        crate::locate::located(
            &config,
            solve::partition::build_problem_mesh_part(&params, rank, size),
        ),
    )?;
    agreed(
        comm,
        crate::locate::located(
            &config,
            solve::partition::check_part_geometry(&part, &params),
        ),
    )?;
    check_problem_on_part(world, &config, &params, &part)?;

    let owned_cells = part.cell_owned.iter().filter(|&&o| o).count() as u64;
    let counts = comm.allgatherv_u64(&[
        part.n_owned_nodes() as u64,
        part.n_ghost_nodes() as u64,
        owned_cells,
        part.mesh.n_cells() as u64 - owned_cells,
    ])?;
    let mut s = String::new();
    writeln!(s, "{}: valid on {size} MPI ranks", input.display())?;
    writeln!(
        s,
        "  mesh       Q{} hexahedra: {} cells, {} nodes, {} unknowns",
        part.mesh.order(),
        part.n_global_cells,
        part.n_global_nodes(),
        3 * part.n_global_nodes()
    )?;
    writeln!(
        s,
        "  rank   owned nodes   ghost nodes   owned cells   ghost cells"
    )?;
    for (r, c) in counts.iter().enumerate() {
        writeln!(
            s,
            "  {r:>4}   {:>11}   {:>11}   {:>11}   {:>11}",
            c[0], c[1], c[2], c[3]
        )?;
    }
    let imbalance = |k: usize| {
        let max = counts.iter().map(|c| c[k]).max().unwrap_or(0) as f64;
        let mean = counts.iter().map(|c| c[k]).sum::<u64>() as f64 / size as f64;
        if mean > 0.0 {
            max / mean
        } else {
            1.0
        }
    };
    writeln!(
        s,
        "  balance    max/mean owned nodes {:.3}, owned cells {:.3}",
        imbalance(0),
        imbalance(2)
    )?;
    writeln!(
        s,
        "  output     {}",
        dir.join(format!("{name}.h5")).display()
    )?;
    Ok(s)
}

/// The problem on this rank's part (materials, constraints, loads), then whether the
/// constraints hold the whole body: what `check` verifies beyond the mesh, agreed on by every rank.
fn check_problem_on_part(
    world: &std::sync::Arc<dyn Comm>,
    config: &config::Config,
    params: &solve::params::ProblemParams,
    part: &mesh::MeshPart,
) -> Result<()> {
    let comm = &**world;
    let problem = agreed(
        comm,
        crate::locate::located(
            config,
            solve::problem::Problem::on_part(params, part, world.clone()),
        ),
    )?;
    agreed(comm, crate::locate::located(config, problem.check_held()))
}

/// `hexfem run` on the ranks of `comm`: each rank builds its part of the mesh (box: generated
/// distributed; Gmsh: read by every rank and partitioned by METIS) and the problem on it, Newton
/// runs with distributed vectors (reductions over the ranks) and the distributed linear solver;
/// after every converged step each rank computes its cells' outputs, and rank 0 writes the
/// mesh and each step window by window from what the ranks send ([`crate::dist_output`], at
/// most `window` values a window): no rank holds the whole mesh or a whole field, and the files
/// are those of a serial run. Every phase is agreed: one rank's error ends every rank with it.
/// `observer` is told on every rank: give the ranks but 0 a quiet one ([`crate::run`] does).
pub fn run_on_ranks(
    comm: &std::sync::Arc<dyn Comm>,
    options: &crate::run::RunOptions,
    observer: &dyn RunObserver,
) -> Result<crate::run::RunOutcome> {
    use crate::run::{self as serial, StepStamp};
    use solve::linear_solver::{LinearSolver, OperatorKind};
    use solve::newton::{LoadPath, PathState};
    use solve::problem::distributed_modes;
    use std::time::Instant;

    let started = Instant::now();
    let (rank, size) = (comm.rank(), comm.size());
    let c: &dyn Comm = &**comm;
    let config = agreed(
        c,
        options
            .source()
            .load(&options.overrides)
            .map_err(anyhow::Error::from),
    )?;
    // every rank opens the step it continues from (its nodes' displacements: read below,
    // window by window)
    let restart = agreed(
        c,
        options
            .restart
            .as_deref()
            .map(crate::restart::Restart::open)
            .transpose(),
    )?;
    let dir = serial::output_dir(&config, options.output_dir.as_deref());
    let name = serial::output_name(&config, &options.input);
    let output = if rank == 0 {
        serial::check_output(&config, options.output_dir.as_deref(), &dir, &name).and_then(|()| {
            serial::keep_earlier_results(
                &dir,
                &name,
                options.overwrite,
                restart.as_ref().map(|r| r.file.as_path()),
            )
        })
    } else {
        Ok(())
    };
    agreed(c, output)?;
    let params = agreed(c, config.problem_params().map_err(anyhow::Error::from))?;
    let part = agreed(
        c,
        crate::locate::located(
            &config,
            solve::partition::build_problem_mesh_part(&params, rank, size),
        ),
    )?;
    agreed(
        c,
        crate::locate::located(
            &config,
            solve::partition::check_part_geometry(&part, &params),
        ),
    )?;
    let mut problem = agreed(
        c,
        crate::locate::located(
            &config,
            solve::problem::Problem::on_part(&params, &part, comm.clone()),
        ),
    )?;
    // collective: the whole body's free rigid motions, the same error on every rank
    agreed(c, crate::locate::located(&config, problem.check_held()))?;
    // a point load must find its node on some rank
    let mut found: Vec<f64> = problem
        .point_loads_found()
        .iter()
        .map(|&f| if f { 1.0 } else { 0.0 })
        .collect();
    comm.allreduce_max(&mut found)?;
    if let Some(i) = found.iter().position(|&f| f == 0.0) {
        let p = &params.point_loads[i];
        let missing = anyhow::anyhow!(
            "boundary.point_load[{i}].at: no mesh node at [{}, {}, {}]",
            p.at[0],
            p.at[1],
            p.at[2]
        );
        return Err(crate::locate::locate(&config, missing));
    }
    // a restart: this part's displacement from the file, the problem at the step's time
    let start = match &restart {
        Some(r) => {
            let local = (|| -> Result<(Vector, PathState)> {
                let path = r.path_state(&(&config.loading).into())?;
                let mut u = problem.discrete.zeros();
                r.displacement_of_part(
                    &part.node_serial_ids,
                    &problem.mesh.coords,
                    part.n_global_nodes(),
                    options.output_window,
                    u.host_mut()?,
                )?;
                problem.set_time(r.time)?;
                Ok((u, path))
            })();
            Some(agreed(c, local)?)
        }
        None => None,
    };
    let linear: solve::params::LinearSolverParams = (&config.linear_solver).into();
    let ranks_device = rank_devices(comm, &config)?;
    let modes = agreed(
        c,
        distributed_modes(problem.discrete.external.layout(), &problem.mesh.coords),
    )?;
    // the same choice as one process's, on this rank's rows: every rank refuses the same
    // options (the direct solver, AMG's scalar storage and mixed precision) at their key
    let (mut solver, choice) = crate::locate::located(
        &config,
        LinearSolver::choose(
            &linear,
            modes,
            OperatorKind::Ranks {
                comm: comm.clone(),
                part: &part,
                device: ranks_device.device.clone(),
            },
            problem.discrete.tangent_is_symmetric(),
        ),
    )?;

    // the output: every dataset gathered to rank 0 window by window (dist_output)
    let n_owned = part.n_owned_nodes();
    let owned_constrained: u64 = (0..n_owned)
        .map(|n| u64::from(problem.discrete.constraints.mask(n).count_ones()))
        .sum();
    let loads = comm.allgatherv_u64(&[
        n_owned as u64,
        part.cell_owned.iter().filter(|&&o| o).count() as u64,
        owned_constrained,
    ])?;
    let constrained_dofs = loads.iter().map(|l| l[2] as usize).sum::<usize>();
    let mut output = agreed(
        c,
        crate::dist_output::RankOutput::new(c, &config, &part, options.output_window),
    )?;
    let mesh_info = output.mesh_info(constrained_dofs);
    let columns = crate::probes::columns(&config);

    struct Output {
        summary: io::SummaryWriter,
        results: io::ResultsWriter,
        probe_log: Option<io::ProbeLog>,
        figures: crate::run::RunFigures,
    }
    // rank 0's figures of a state
    let take = |figures: &mut crate::run::RunFigures,
                state: &crate::dist_output::StateFigures,
                load_factor: f64| {
        figures.load_factor = load_factor;
        figures.strain_energy = state.strain_energy;
        figures.max_displacement = state.max_displacement;
        figures.reactions = state.reactions.clone();
        figures.probes = columns.iter().cloned().zip(state.probes.clone()).collect();
    };
    // the first step: the undeformed state, or the state the restart continues from (its
    // reactions: the constrained entries of this part's residual, complete on owned rows)
    let (first_u, first_reactions, first_stamp) = match (&restart, &start) {
        (Some(r), Some((u, path))) => {
            let reactions = agreed(
                c,
                r.reactions_in_equilibrium(&mut problem, u, &(&config.newton).into()),
            )?;
            let stamp = StepStamp {
                index: path.index,
                load_factor: r.load_factor,
                next_increment: Some(path.increment),
                time: Some(r.time),
            };
            (u.clone(), reactions, stamp)
        }
        _ => (
            problem.discrete.zeros(),
            problem.discrete.zeros(),
            StepStamp {
                index: 0,
                load_factor: 0.0,
                next_increment: Some(PathState::start(&(&config.loading).into()).increment),
                time: Some(0.0),
            },
        ),
    };
    let output_started = Instant::now();
    // rank 0: the summary first, then the results (the serial run's order)
    let summary = if rank == 0 {
        (|| -> Result<Option<io::SummaryWriter>> {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating output directory {}", dir.display()))?;
            let mut summary = io::SummaryWriter::create(
                &dir,
                &name,
                io::RunInfo {
                    restart: restart
                        .as_ref()
                        .map(|r| format!("{}:{}", r.file.display(), r.step)),
                    formulations: serial::formulation_names(&problem),
                    ..serial::run_info(&config, &options.input)?
                },
                mesh_info.clone(),
                &options.faults,
            )?;
            let owned_rows: Vec<u64> = loads.iter().map(|l| 3 * l[0]).collect();
            let mean = owned_rows.iter().sum::<u64>() as f64 / size as f64;
            let max = owned_rows.iter().copied().max().unwrap_or(0) as f64;
            summary.set_ranks(io::RanksInfo {
                ranks: size,
                owned_rows,
                owned_cells: loads.iter().map(|l| l[1]).collect(),
                row_imbalance: if mean > 0.0 { max / mean } else { 1.0 },
                output_bytes: Vec::new(),
                peak_resident_bytes: Vec::new(),
                newton_s: Vec::new(),
                output_s: Vec::new(),
                devices: ranks_device.names.clone(),
                exchange: ranks_device.exchange.0.name().to_string(),
                exchange_fallback: ranks_device.exchange.1.clone(),
            });
            Ok(Some(summary))
        })()
    } else {
        Ok(None)
    };
    let summary = agreed(c, summary)?;
    let results = output.create(c, &config, &part, &dir, &name, &options.faults);
    let mut results = agreed(c, results)?;
    let first_cells = agreed(c, serial::CellOutputs::compute(&problem, &first_u, &config))?;
    let first = output.write_state(
        c,
        &config,
        &part,
        &first_u,
        &first_reactions,
        &first_cells,
        first_stamp,
        results.as_mut(),
    );
    let first = agreed(c, first)?;
    drop((first_u, first_reactions, first_cells));
    let out = match (summary, results, first) {
        (Some(summary), Some(results), Some(first)) => Some((|| -> Result<Output> {
            let mut figures = crate::run::RunFigures::default();
            take(&mut figures, &first, first_stamp.load_factor);
            let mut probe_log = if columns.is_empty() {
                None
            } else {
                Some(io::ProbeLog::create(&dir, &name, &columns)?)
            };
            if let Some(log) = &mut probe_log {
                log.append(first_stamp.index, first_stamp.load_factor, &first.probes)?;
            }
            Ok(Output {
                summary,
                results,
                probe_log,
                figures,
            })
        })()),
        _ => None,
    };
    let mut out = agreed(c, out.transpose())?;
    let first_output_s = output_started.elapsed().as_secs_f64();
    let mut step_output_s = 0.0;

    let newton: solve::params::NewtonParams = (&config.newton).into();
    // (rank 0 reports: the caller gives the others a quiet observer)
    let loads_per_rank: Vec<[u64; 2]> = loads.iter().map(|l| [l[0], l[1]]).collect();
    observer.run_started(&RunStart {
        config: &config,
        problem: &problem,
        mesh: &mesh_info,
        placement: Placement::Ranks {
            device: &ranks_device,
            loads: &loads_per_rank,
        },
        solver: &choice,
        newton: &newton,
    });
    let path = LoadPath {
        loading: &(&config.loading).into(),
        newton: &newton,
        observer,
    };
    let (mut u, start) = match start {
        Some((u, path)) => (u, path),
        None => (
            problem.discrete.zeros(),
            PathState::start(&(&config.loading).into()),
        ),
    };
    // the whole body's size (the diagonal of its bounding box), for the plausibility warnings
    let body_size = {
        let (lo, hi) = problem.mesh.coords.iter().fold(
            ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]),
            |(lo, hi), x| {
                (
                    std::array::from_fn(|d| lo[d].min(x[d])),
                    std::array::from_fn(|d| hi[d].max(x[d])),
                )
            },
        );
        let mut extent = [-lo[0], -lo[1], -lo[2], hi[0], hi[1], hi[2]];
        c.allreduce_max(&mut extent)?;
        crate::run::length(&std::array::from_fn(|d| extent[3 + d] + extent[d]))
    };
    let newton_started = Instant::now();
    let outcome = path.run_from(
        start,
        &mut problem,
        &mut solver,
        &mut u,
        |step, u, problem, _| {
            let step_started = Instant::now();
            // every rank computes its cells' outputs (agreed: an element failure on one rank ends all)
            let cells = agreed(c, serial::CellOutputs::compute(problem, u, &config))?;
            // a state that is not finite fails the step on every rank, before it is written
            let linear = problem.is_linear();
            agreed(
                c,
                serial::check_state(step.index, u, &cells, body_size, linear).map(drop),
            )?;
            let mut least_j = [-cells
                .jacobian
                .iter()
                .zip(&part.cell_owned)
                .filter(|(_, &owned)| owned)
                .fold(f64::INFINITY, |m, (&j, _)| m.min(j))];
            c.allreduce_max(&mut least_j)?;
            let least_j = -least_j[0];
            let stamp = StepStamp {
                index: step.index,
                load_factor: step.load_factor,
                next_increment: Some(step.next_increment),
                time: Some(step.time),
            };
            let state = output.write_state(
                c,
                &config,
                &part,
                u,
                &step.reactions,
                &cells,
                stamp,
                out.as_mut().map(|o| &mut o.results),
            );
            let written = match (&mut out, state) {
                (Some(o), Ok(Some(state))) => (|| -> Result<()> {
                    let mut record = serial::step_record(
                        step,
                        state.strain_energy,
                        state.max_displacement,
                        &state.reaction_totals,
                    )?;
                    record.warnings = crate::plausibility::warnings(
                        linear,
                        state.max_displacement,
                        body_size,
                        (least_j <= 0.0)
                            .then(|| format!("cells are inverted (J = det F = {least_j:.3e})")),
                    );
                    take(&mut o.figures, &state, step.load_factor);
                    record.probes = o.figures.probes.clone();
                    if let Some(log) = &mut o.probe_log {
                        log.append(step.index, step.load_factor, &state.probes)?;
                    }
                    o.figures.count_step(step, &record);
                    observer.step_finished(step, &record);
                    o.summary
                        .record_step(record, started.elapsed().as_secs_f64())?;
                    observer.step_written(step.index);
                    Ok(())
                })(),
                (_, Err(e)) => Err(e),
                _ => Ok(()),
            };
            step_output_s += step_started.elapsed().as_secs_f64();
            agreed(c, written)
        },
    );
    // the load path's seconds without the output's
    let newton_s = newton_started.elapsed().as_secs_f64() - step_output_s;
    let output_s = first_output_s + step_output_s;
    let outcome = match outcome {
        // every rank stopped at the same point (an agreed request)
        Err(e) if is_agreed(&e) || e.is::<solve::newton::Interrupted>() => Err(e),
        other => agreed(c, other),
    };
    // what each rank held for the output at most (rank 0: one window received and merged;
    // the others: their largest message), its peak memory, its seconds in Newton and output
    let output_bytes = 8 * output.held.max_window_values as u64 * if rank == 0 { 2 } else { 1 };
    let held = comm.allgatherv_f64(&[
        output_bytes as f64,
        crate::memory::peak_resident_bytes() as f64,
        newton_s,
        output_s,
    ]);
    let wall = started.elapsed().as_secs_f64();
    let Some(o) = out else {
        held?;
        outcome?;
        // the other ranks' outcome: rank 0 reports the files
        return Ok(crate::run::RunOutcome {
            h5: dir.join(format!("{name}.h5")),
            xdmf: dir.join(format!("{name}.xdmf")),
            summary: dir.join(format!("{name}.summary.json")),
            probes_csv: None,
            steps: 0,
            figures: crate::run::RunFigures::default(),
        });
    };
    let Output {
        mut summary,
        results,
        probe_log,
        figures,
    } = o;
    // (without them where the gather failed: the summary still records the outcome)
    if let Ok(held) = &held {
        summary.update_ranks(|r| {
            r.output_bytes = held.iter().map(|h| h[0] as u64).collect();
            r.peak_resident_bytes = held.iter().map(|h| h[1] as u64).collect();
            r.newton_s = held.iter().map(|h| h[2]).collect();
            r.output_s = held.iter().map(|h| h[3]).collect();
        });
    }
    crate::run::finish_run(outcome, summary, results, probe_log, figures, wall)
}
