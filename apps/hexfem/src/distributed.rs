//! Commands on more than one MPI rank. Every fallible phase ends in a collective error
//! agreement ([`agreed`]): one rank's error becomes every rank's, so all ranks stop together
//! with the first failing rank's message and none waits in a collective.
//!
//! `check` and `run` run distributed: each rank builds and checks only its part of the mesh,
//! solves on it, and computes the output of what it owns; rank 0 gathers the output and writes
//! the run's files on the serial mesh (never a serial problem).

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

/// Where a run's ranks compute (`device:` under mpirun): the agreed choice and every rank's
/// device.
struct RanksDevice {
    device: linalg::Device,
    names: Vec<String>,
    /// Why `auto` runs on the CPUs.
    why_host: Option<String>,
}

impl RanksDevice {
    /// The header's device line(s).
    fn header(&self, size: usize) -> String {
        if self.device.is_host() {
            let mut s = format!(
                "host CPUs: {size} MPI ranks, {} threads each",
                rayon::current_num_threads()
            );
            if let Some(why) = &self.why_host {
                s.push_str(&format!(" (device auto: {why})"));
            }
            return s;
        }
        let map: Vec<String> = self
            .names
            .iter()
            .enumerate()
            .map(|(r, n)| format!("rank {r}: {n}"))
            .collect();
        format!(
            "GPUs: {size} MPI ranks, one GPU each ({}); Newton assembly and the AMG set-up and updates on each rank's CPU (tangent values uploaded, hierarchy levels uploaded), CG and the V-cycle on the GPUs",
            map.join(", ")
        )
    }
}

/// Collective. Each rank's device for `config.device` (see `linalg::dist::select_rank_devices`):
/// `cpu` the host; `cuda` this rank's GPU, or every rank's located error; `auto` the GPUs where
/// every rank has one (and the tangent is symmetric: the GPU path is CG), else the host on
/// every rank.
fn rank_devices(
    comm: &std::sync::Arc<dyn Comm>,
    config: &config::Config,
    symmetric: bool,
) -> Result<RanksDevice> {
    use linalg::dist::{select_rank_devices, RankDeviceRequest};
    let size = comm.size();
    let host = |why: Option<String>| RanksDevice {
        device: linalg::Device::Host,
        names: vec!["host".into(); size],
        why_host: why,
    };
    let request = match config.device {
        config::ComputeDevice::Cpu => return Ok(host(None)),
        config::ComputeDevice::Auto if !symmetric => {
            return Ok(host(Some(
                "the follower pressure's tangent is not symmetric: GMRES runs on the CPUs".into(),
            )))
        }
        config::ComputeDevice::Cuda if !symmetric => {
            return Err(config
                .error_at(
                    "device",
                    format!("cuda on {size} MPI ranks solves with CG only, and the follower pressure's tangent is not symmetric (valid there: cpu, auto)"),
                )
                .into())
        }
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
    Ok(RanksDevice {
        device: chosen.device,
        names: chosen.names,
        why_host: chosen.fallback,
    })
}

/// `hexfem check` on the ranks of `comm`: the configuration (every rank), the output files
/// (rank 0), then each rank's part of the mesh (generated or partitioned by METIS) and the
/// geometry of its cells. Returns the summary with the partition's load balance (to be printed
/// by rank 0).
pub fn check_on_ranks(
    comm: &dyn Comm,
    input: &Path,
    overrides: &[String],
    output_dir: Option<&Path>,
) -> Result<String> {
    let (rank, size) = (comm.rank(), comm.size());
    let config = agreed(
        comm,
        config::load_with_overrides(input, overrides).map_err(anyhow::Error::from),
    )?;
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
            solve::partition::build_mesh_part(&params.mesh, rank, size),
        ),
    )?;
    agreed(
        comm,
        crate::locate::located(
            &config,
            solve::partition::check_part_geometry(&part, &params),
        ),
    )?;

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

/// `hexfem run` on the ranks of `comm`: each rank builds its part of the mesh (box: generated
/// distributed; Gmsh: partitioned by METIS) and the problem on it, Newton runs with distributed
/// vectors (reductions over the ranks) and the distributed linear solver; after every converged
/// step each rank computes its owned cells' outputs, and these, the owned displacements and
/// reactions are gathered to rank 0 in serial numbering; rank 0 writes them with the serial
/// writer on the serial mesh alone (no serial problem), so the files are those of a serial
/// run. Every phase is agreed: one rank's error ends every rank with it.
pub fn run_on_ranks(
    comm: &std::sync::Arc<dyn Comm>,
    options: &crate::run::RunOptions,
) -> Result<crate::run::RunOutcome> {
    use crate::run::{self as serial, Progress, StepStamp};
    use solve::dist_solver::{distributed_modes, DistMethod, DistSolver};
    use solve::linear_solver::LinearSolver;
    use solve::newton::{LoadPath, PathState};
    use std::io::Write as _;
    use std::time::Instant;

    let started = Instant::now();
    let (rank, size) = (comm.rank(), comm.size());
    let c: &dyn Comm = &**comm;
    let config = agreed(
        c,
        config::load_with_overrides(&options.input, &options.overrides)
            .map_err(anyhow::Error::from),
    )?;
    // every rank reads the step it continues from (its own nodes' displacements)
    let restart = agreed(
        c,
        options
            .restart
            .as_deref()
            .map(crate::restart::Restart::read)
            .transpose(),
    )?;
    let dir = serial::output_dir(&config, options.output_dir.as_deref());
    let name = serial::output_name(&config, &options.input);
    let output = if rank == 0 {
        serial::check_output(&config, options.output_dir.as_deref(), &dir, &name)
    } else {
        Ok(())
    };
    agreed(c, output)?;
    let params = agreed(c, config.problem_params().map_err(anyhow::Error::from))?;
    let part = agreed(
        c,
        crate::locate::located(
            &config,
            solve::partition::build_mesh_part(&params.mesh, rank, size),
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
                r.displacement_of_part(&part.node_serial_ids, &problem.mesh.coords, u.host_mut()?)?;
                problem.set_time(r.time)?;
                Ok((u, path))
            })();
            Some(agreed(c, local)?)
        }
        None => None,
    };
    // what rank 0 writes on: the serial mesh alone (coordinates, connectivity, sets), never a
    // serial problem; every output quantity is computed by the ranks on what they own
    let serial_mesh = if rank == 0 {
        crate::locate::located(&config, solve::problem::build_mesh(&params.mesh)).map(Some)
    } else {
        Ok(None)
    };
    let serial_mesh = agreed(c, serial_mesh)?;

    let linear: solve::params::LinearSolverParams = (&config.linear_solver).into();
    let amg_text = |amg: &amg::AmgParams| {
        format!(
            "{} smoother, coarse_eq_limit {}",
            match amg.smoother {
                amg::SmootherKind::Chebyshev => "Chebyshev",
                amg::SmootherKind::Jacobi => "Jacobi",
            },
            amg.coarse_eq_limit
        )
    };
    let krylov = if problem.discrete.tangent_is_symmetric() {
        "CG"
    } else {
        "GMRES (the follower pressure's tangent is not symmetric)"
    };
    let (method, text) = match linear.method {
        solve::params::LinearSolverMethod::CgJacobi => (
            DistMethod::Jacobi,
            format!("{krylov} with point-block Jacobi, distributed over {size} MPI ranks"),
        ),
        solve::params::LinearSolverMethod::CgAmg => (
            DistMethod::Amg,
            format!(
                "{krylov} with the distributed smoothed-aggregation AMG ({}) over {size} MPI ranks",
                amg_text(&linear.amg)
            ),
        ),
        solve::params::LinearSolverMethod::Auto => (
            DistMethod::Amg,
            format!(
                "{krylov} with the distributed smoothed-aggregation AMG ({}) over {size} MPI ranks (method auto: the direct solver is not available on several ranks)",
                amg_text(&linear.amg)
            ),
        ),
        solve::params::LinearSolverMethod::Direct => {
            return Err(config
                .error_at(
                    "linear_solver.method",
                    format!("direct is not available on {size} MPI ranks (valid there: auto, cg_amg, cg_jacobi)"),
                )
                .into())
        }
    };
    let ranks_device = rank_devices(comm, &config, problem.discrete.tangent_is_symmetric())?;
    if method == DistMethod::Amg && linear.amg.storage == amg::Storage::Scalar {
        return Err(config
            .error_at(
                "linear_solver.amg.storage",
                format!("scalar is not available on {size} MPI ranks (valid there: blocked)"),
            )
            .into());
    }
    let cg = amg::CgParams {
        rtol: linear.rtol,
        atol: linear.atol,
        max_iterations: linear.max_iterations,
        ..amg::CgParams::default()
    };
    let modes = agreed(
        c,
        distributed_modes(problem.discrete.external.layout(), &problem.mesh.coords),
    )?;
    let mut solver = LinearSolver::Distributed(Box::new(
        DistSolver::new(
            cg,
            method,
            linear.amg.clone(),
            problem.discrete.tangent_is_symmetric(),
            comm.clone(),
            &part,
            modes,
        )
        .on_device(ranks_device.device.clone()),
    ));

    // rank 0 gathers the output in messages of at most GATHER_CHUNK values; only it holds the
    // whole (the serial ids of every rank's owned nodes and cells once, then each step's
    // displacement, reactions and cell outputs)
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
    let node_counts: Vec<usize> = loads.iter().map(|l| l[0] as usize).collect();
    let cell_counts: Vec<usize> = loads.iter().map(|l| l[1] as usize).collect();
    let serial_node_ids = gather_ids(c, &part.node_serial_ids[..n_owned], &node_counts)?;
    let owned_cell_ids: Vec<u64> = part
        .cell_serial_ids
        .iter()
        .zip(&part.cell_owned)
        .filter(|(_, &o)| o)
        .map(|(&s, _)| s)
        .collect();
    let serial_cell_ids = gather_ids(c, &owned_cell_ids, &cell_counts)?;
    let gather_state = |problem: &solve::problem::Problem,
                        u: &Vector,
                        reactions: &Vector|
     -> Result<Option<GatheredState>> {
        // every rank computes its cells' outputs (agreed: an element failure on one rank ends all)
        let cells = agreed(c, serial::CellOutputs::compute(problem, u))?;
        let packed = cells.packed(|k| part.cell_owned[k]);
        let full_u = gather_nodes(c, u, n_owned, &node_counts, serial_node_ids.as_deref())?;
        let full_r = gather_nodes(
            c,
            reactions,
            n_owned,
            &node_counts,
            serial_node_ids.as_deref(),
        )?;
        let widths: Vec<usize> = cell_counts
            .iter()
            .map(|n| serial::CellOutputs::WIDTH * n)
            .collect();
        let all = gather_to_root(c, &packed, &widths, GATHER_CHUNK)?;
        match (full_u, full_r, all, &serial_cell_ids) {
            (Some(u), Some(r), Some(all), Some(ids)) => {
                let cells = serial::CellOutputs::unpacked(ids.len(), ids, all.iter().flatten())?;
                Ok(Some(GatheredState {
                    displacement: u,
                    reactions: r,
                    cells,
                }))
            }
            _ => Ok(None),
        }
    };

    struct Output {
        summary: io::SummaryWriter,
        results: io::ResultsWriter,
        probes: crate::probes::Probes,
        probe_log: Option<io::ProbeLog>,
        figures: crate::run::RunFigures,
    }
    // the first step: the undeformed state, or the state the restart continues from (its
    // reactions: the constrained entries of this part's residual, complete on owned rows)
    let (first_u, first_reactions, first_stamp) = match (&restart, &start) {
        (Some(r), Some((u, path))) => {
            let reactions = agreed(
                c,
                (|| -> Result<Vector> {
                    let mut residual = problem.discrete.zeros();
                    problem.discrete.residual(u, r.load_factor, &mut residual)?;
                    let mut reactions = problem.discrete.zeros();
                    problem
                        .discrete
                        .constraints
                        .copy_constrained(&residual, &mut reactions)?;
                    Ok(reactions)
                })(),
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
    let first = gather_state(&problem, &first_u, &first_reactions)?;
    drop((first_u, first_reactions));
    let mut out = None;
    if let (Some(mesh), Some(first)) = (&serial_mesh, first) {
        let created = (|| -> Result<Output> {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating output directory {}", dir.display()))?;
            let probes = crate::probes::Probes::new(&config, mesh)?;
            let mut summary = io::SummaryWriter::create(
                &dir,
                &name,
                io::RunInfo {
                    restart: restart
                        .as_ref()
                        .map(|r| format!("{}:{}", r.file.display(), r.step)),
                    ..serial::run_info(&config, &options.input)?
                },
                serial::mesh_info(mesh, constrained_dofs),
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
                devices: ranks_device.names.clone(),
            });
            let mut results = serial::create_results(&config, mesh, &dir, &name, &options.faults)?;
            let probe_log = if probes.is_empty() {
                None
            } else {
                Some(io::ProbeLog::create(&dir, &name, probes.columns())?)
            };
            let stamp = first_stamp;
            let energy = serial::write_fields(
                &config,
                mesh,
                stamp,
                &first.displacement,
                &first.reactions,
                &first.cells,
                &mut results,
            )?;
            let mut figures = crate::run::RunFigures::default();
            serial::record_state(
                &probes,
                mesh,
                &first.displacement,
                &first.reactions,
                energy,
                &mut figures,
                stamp.load_factor,
            )?;
            let mut probe_log = probe_log;
            if let Some(log) = &mut probe_log {
                log.append(
                    stamp.index,
                    stamp.load_factor,
                    &serial::probe_values(&probes, &figures),
                )?;
            }
            Ok(Output {
                summary,
                results,
                probes,
                probe_log,
                figures,
            })
        })();
        out = Some(created);
    }
    let mut out = agreed(c, out.transpose())?;

    let newton: solve::params::NewtonParams = (&config.newton).into();
    let progress = options.progress;
    if let (Some(mesh), true) = (&serial_mesh, progress != Progress::Quiet) {
        let device = ranks_device.header(c.size());
        let mut text = serial::header(
            &config,
            &problem,
            &device,
            &text,
            &newton,
            &serial::problem_text(&serial::mesh_info(mesh, constrained_dofs), mesh.kind),
        );
        text.push_str("  ranks        rank: owned nodes, owned cells\n");
        for (r, l) in loads.iter().enumerate() {
            text.push_str(&format!("               {r}: {}, {}\n", l[0], l[1]));
        }
        let _ = write!(std::io::stderr().lock(), "{text}");
    }
    let path = LoadPath {
        loading: &(&config.loading).into(),
        newton: &newton,
        verbose: progress == Progress::Iterations && rank == 0,
        report_cutbacks: progress != Progress::Quiet && rank == 0,
    };
    let (mut u, start) = match start {
        Some((u, path)) => (u, path),
        None => (
            problem.discrete.zeros(),
            PathState::start(&(&config.loading).into()),
        ),
    };
    let outcome = path.run_from(
        start,
        &mut problem,
        &mut solver,
        &mut u,
        |step, u, problem, _| {
            let gathered = gather_state(problem, u, &step.reactions)?;
            let written = match (&serial_mesh, &mut out, gathered) {
                (Some(mesh), Some(o), Some(g)) => (|| -> Result<()> {
                    let mut step = step.clone();
                    step.reactions = g.reactions;
                    let full_u = g.displacement;
                    let mut record = serial::write_step(
                        &config,
                        mesh,
                        &step,
                        &full_u,
                        &g.cells,
                        &mut o.results,
                    )?;
                    serial::record_state(
                        &o.probes,
                        mesh,
                        &full_u,
                        &step.reactions,
                        record.strain_energy,
                        &mut o.figures,
                        step.load_factor,
                    )?;
                    let values = serial::probe_values(&o.probes, &o.figures);
                    record.probes = o.figures.probes.clone();
                    if let Some(log) = &mut o.probe_log {
                        log.append(step.index, step.load_factor, &values)?;
                    }
                    o.figures.count_step(&step, &record);
                    if progress != Progress::Quiet {
                        let _ = write!(
                            std::io::stderr().lock(),
                            "{}",
                            serial::step_lines(&step, &record)
                        );
                    }
                    o.summary
                        .record_step(record, started.elapsed().as_secs_f64())?;
                    Ok(())
                })(),
                _ => Ok(()),
            };
            agreed(c, written)
        },
    );
    let outcome = match outcome {
        Err(e) if is_agreed(&e) => Err(e),
        other => agreed(c, other),
    };
    // what each rank held for the output, and its peak memory: rank 0's against the others'
    let n_global_nodes = part.n_global_nodes();
    let output_bytes = match &serial_mesh {
        // the mesh (coordinates, connectivity, sets) and the serial ids of nodes and cells,
        // then one step: displacement and reactions in serial order (24 bytes a node each), the
        // cell outputs received and unpacked (104 bytes a cell each), the nodal stress and its
        // von Mises (80 bytes a node)
        Some(mesh) => {
            let sets: usize = mesh.node_sets.values().map(Vec::len).sum::<usize>()
                + mesh.cell_sets.values().map(Vec::len).sum::<usize>()
                + 2 * mesh.face_sets.values().map(Vec::len).sum::<usize>();
            let mesh_bytes = 24 * mesh.n_nodes() + 8 * (mesh.cells.len() + sets);
            let cell_bytes = 8 * serial::CellOutputs::WIDTH as u64;
            mesh_bytes as u64
                + 8 * (n_global_nodes + part.n_global_cells)
                + (2 * 24 + 80) * n_global_nodes
                + 2 * cell_bytes * part.n_global_cells
        }
        // the owned cells' packed outputs (displacement and reactions are sent from the vectors)
        None => {
            8 * serial::CellOutputs::WIDTH as u64 * cell_counts[rank] as u64
                + 8 * (n_owned + cell_counts[rank]) as u64
        }
    };
    let held = comm.allgatherv_u64(&[output_bytes, crate::memory::peak_resident_bytes()]);
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
        ..
    } = o;
    // (without them where the gather failed: the summary still records the outcome)
    if let Ok(held) = &held {
        summary.update_ranks(|r| {
            r.output_bytes = held.iter().map(|h| h[0]).collect();
            r.peak_resident_bytes = held.iter().map(|h| h[1]).collect();
        });
    }
    crate::run::finish_run(outcome, summary, results, probe_log, figures, wall)
}

/// One step's state on rank 0, in serial numbering: what the serial writer writes.
struct GatheredState {
    displacement: Vector,
    reactions: Vector,
    cells: crate::run::CellOutputs,
}

/// Collective: every rank's `ids` (`counts[r]` on rank `r`) on rank 0, in rank order, as one
/// list; `None` on the other ranks.
fn gather_ids(comm: &dyn Comm, ids: &[u64], counts: &[usize]) -> Result<Option<Vec<u64>>> {
    let bits: Vec<f64> = ids.iter().map(|&s| f64::from_bits(s)).collect();
    Ok(gather_to_root(comm, &bits, counts, GATHER_CHUNK)?
        .map(|all| all.iter().flatten().map(|x| x.to_bits()).collect()))
}

/// Collective: the owned nodes' entries of `v` (`3 n_owned` first entries; rank `r` owns
/// `node_counts[r]` nodes) on rank 0 in serial node order (`serial_ids`: every rank's owned
/// nodes' serial ids in rank order, on rank 0); `None` on the other ranks.
fn gather_nodes(
    comm: &dyn Comm,
    v: &Vector,
    n_owned: usize,
    node_counts: &[usize],
    serial_ids: Option<&[u64]>,
) -> Result<Option<Vector>> {
    let dof_counts: Vec<usize> = node_counts.iter().map(|n| 3 * n).collect();
    let Some(all) = gather_to_root(comm, &v.host()?[..3 * n_owned], &dof_counts, GATHER_CHUNK)?
    else {
        return Ok(None);
    };
    let serial_ids = serial_ids.context("rank 0 holds the serial ids")?;
    let mut out = vec![0.0; 3 * serial_ids.len()];
    let mut values = all.iter().flatten();
    for &s in serial_ids {
        for x in &mut out[3 * s as usize..3 * s as usize + 3] {
            *x = *values
                .next()
                .context("gathered fewer values than owned nodes")?;
        }
    }
    Ok(Some(Vector::from_vec(out)))
}

/// Values per message of the output's [`gather_to_root`] (8 MiB).
pub const GATHER_CHUNK: usize = 1 << 20;

/// Collective (point to point): every rank's `local` on rank 0, indexed by rank (`lens[r]`:
/// rank `r`'s length, the same on every rank); `None` on the other ranks. Each rank sends its
/// values in messages of at most `chunk` values, and only rank 0 ever holds the whole.
pub fn gather_to_root(
    comm: &dyn Comm,
    local: &[f64],
    lens: &[usize],
    chunk: usize,
) -> Result<Option<Vec<Vec<f64>>>> {
    let chunk = chunk.max(1);
    if lens.len() != comm.size() || lens[comm.rank()] != local.len() {
        anyhow::bail!(
            "gather to rank 0: {} values here, {:?} expected per rank",
            local.len(),
            lens
        );
    }
    if comm.rank() != 0 {
        for part in local.chunks(chunk) {
            comm.exchange(&[(0, part)], &mut [], &mut || ())?;
        }
        return Ok(None);
    }
    let mut all: Vec<Vec<f64>> = lens.iter().map(|&n| vec![0.0; n]).collect();
    all[0].copy_from_slice(local);
    let rounds = lens[1..]
        .iter()
        .map(|n| n.div_ceil(chunk))
        .max()
        .unwrap_or(0);
    for k in 0..rounds {
        let start = k * chunk;
        let mut recvs: Vec<(usize, &mut [f64])> = all
            .iter_mut()
            .enumerate()
            .skip(1)
            .filter(|(_, v)| start < v.len())
            .map(|(r, v)| {
                let end = (start + chunk).min(v.len());
                (r, &mut v[start..end])
            })
            .collect();
        comm.exchange(&[], &mut recvs, &mut || ())?;
    }
    Ok(Some(all))
}
