//! Commands on more than one MPI rank. Every fallible phase ends in a collective error
//! agreement ([`agreed`]): one rank's error becomes every rank's, so all ranks stop together
//! with the first failing rank's message and none waits in a collective.
//!
//! `check` and `run` run distributed: each rank builds and checks only its part of the mesh,
//! solves on it, and computes the output of what it owns; rank 0 writes the run's files from
//! windows of serial ids the ranks send it ([`crate::dist_output`]), never holding the mesh.

use std::path::Path;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use comm::{agree, Comm, CommError};
use linalg::Vector;
use mesh::MeshPart;
use solve::linear_solver::{Choice, LinearSolver, OperatorKind};
use solve::problem::{distributed_modes, Problem};

use crate::dist_output::{RankOutput, StateFigures};
use crate::driver::{InvertedScope, Layout};
use crate::fields::StrainCells;
use crate::locate::located;
use crate::plausibility::{Finiteness, InvertedCells};
use crate::restart::Restart;
use crate::run::{Case, CellOutputs, RunOutcome, StepStamp};
use crate::stages::{RunStages, MESH, OUTPUT, PROBLEM, SOLVER};
use crate::writer::StepOutput;
use crate::Result;

/// `result`, agreed on by every rank: an error on any rank is the same error everywhere (the
/// lowest failing rank's, with its whole chain of causes). On one rank: `result` itself.
pub fn agreed<T, E: Into<crate::Error>>(
    comm: &dyn Comm,
    result: std::result::Result<T, E>,
) -> Result<T> {
    let result = result.map_err(Into::into);
    if comm.size() == 1 {
        return result;
    }
    Ok(agree(comm, result.map_err(|e| e.chain_text()))?)
}

/// True for an error that came out of [`agreed`] (every rank holds the same one), also as a
/// cause of `error` (a front end's error may add context to it) and as a [`crate::Error`].
pub fn is_agreed(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| e.source()).any(|e| {
        matches!(
            e.downcast_ref::<CommError>(),
            Some(CommError::Failed { .. })
        ) || e
            .downcast_ref::<crate::Error>()
            .is_some_and(crate::Error::is_agreed)
    })
}

use crate::observer::{Placement, RanksDevice};

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
        crate::Error::Input(config.error_at("device", why))
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
/// geometry of its cells. Returns the partition's report (rendered by rank 0).
pub fn check_on_ranks(
    world: &std::sync::Arc<dyn Comm>,
    source: &crate::Input,
    overrides: &[String],
    output_dir: Option<&Path>,
) -> Result<crate::check::CheckReport> {
    let comm = &**world;
    let rank = comm.rank();
    let input = source.path();
    let config = agreed(comm, source.load(overrides))?;
    let dir = crate::run::output_dir(&config, output_dir);
    let name = crate::run::output_name(&config, input);
    let output = if rank == 0 {
        crate::run::check_output(&config, output_dir, &dir, &name)
    } else {
        Ok(())
    };
    agreed(comm, output)?;
    let unrecorded = &mut RunStages::new(None, Instant::now());
    let (_, part, _) = problem_on_ranks(world, &config, unrecorded)?;

    let owned_cells = part.cell_owned.iter().filter(|&&o| o).count() as u64;
    let counts = comm.allgatherv_u64(&[
        part.n_owned_nodes() as u64,
        part.n_ghost_nodes() as u64,
        owned_cells,
        part.mesh.n_cells() as u64 - owned_cells,
    ])?;
    Ok(crate::check::CheckReport {
        input: input.to_owned(),
        output: dir.join(format!("{name}.h5")),
        earlier_results: io::existing_results(&dir, &name),
        scope: crate::check::CheckScope::Ranks(crate::check::PartitionReport {
            order: part.mesh.order(),
            cells: part.n_global_cells,
            nodes: part.n_global_nodes(),
            ranks: counts.iter().map(|c| [c[0], c[1], c[2], c[3]]).collect(),
        }),
    })
}

/// Collective, agreed: this rank's part of the mesh of `config` (box: generated distributed;
/// Gmsh: read by every rank and partitioned by METIS) and the problem on it (its element loop
/// checks the geometry of every local cell), whose constraints hold the whole body. Its
/// stages: [`MESH`], [`PROBLEM`].
fn problem_on_ranks(
    world: &Arc<dyn Comm>,
    config: &config::Config,
    stages: &mut RunStages,
) -> Result<(solve::params::ProblemParams, MeshPart, Problem)> {
    let comm = &**world;
    let started = Instant::now();
    let (rank, size) = (comm.rank(), comm.size());
    let params = agreed(comm, config.problem_params())?;
    let part = agreed(
        comm,
        located(
            config,
            solve::partition::build_problem_mesh_part(&params, rank, size),
        ),
    )?;
    stages.since(MESH, started);
    let started = Instant::now();
    // the serial run's order: the problem (its element loop checks each cell's geometry),
    // then the Dirichlet expressions of the time
    let problem = agreed(
        comm,
        located(config, Problem::on_part(&params, &part, world.clone())),
    )?;
    agreed(
        comm,
        crate::locate::check_dirichlet_in_time(config, &params, &part.mesh),
    )?;
    // collective: the whole body's free rigid motions, the same error on every rank
    agreed(comm, located(config, problem.check_held()))?;
    // the tangent's host plan in this stage where the ranks run on their CPUs (a GPU makes
    // its own as the problem goes up)
    if config.device == config::ComputeDevice::Cpu {
        problem.discrete.assembler.matrix_plan();
    }
    stages.since(PROBLEM, started);
    Ok((params, part, problem))
}

/// `hexfem run` of `case` on the ranks of `comm` (more than one): each rank builds its part of
/// the mesh and the problem on it ([`problem_on_ranks`]); the driver ([`crate::driver`]) runs
/// Newton with distributed vectors and the distributed linear solver, and after every converged
/// step each rank computes its cells' outputs and rank 0 writes the mesh and each step window by
/// window from what the ranks send ([`crate::dist_output`], at most `window` values a window):
/// no rank holds the whole mesh or a whole field, and the files are those of one process.
/// `case.observer` is told on every rank: give the ranks but 0 a quiet one ([`crate::run`] does).
pub(crate) fn execute_on_ranks(
    comm: &Arc<dyn Comm>,
    case: &Case,
    window: usize,
    started: Instant,
    stages: &mut RunStages,
) -> Result<RunOutcome> {
    let c: &dyn Comm = &**comm;
    let config = case.config;
    if config.device != config::ComputeDevice::Cpu {
        // each rank's GPU driver and context start while its part and problem are built
        linalg::dist::warm_up_rank_device(comm);
    }
    let problem_started = Instant::now();
    let (params, part, mut problem) = problem_on_ranks(comm, config, stages)?;
    let problem_s = problem_started.elapsed().as_secs_f64();
    let loads_started = Instant::now();
    // a point load must find its node on some rank
    let mut found: Vec<f64> = problem
        .point_loads_found()
        .iter()
        .map(|&f| if f { 1.0 } else { 0.0 })
        .collect();
    comm.allreduce_max(&mut found)?;
    if let Some(i) = found.iter().position(|&f| f == 0.0) {
        let p = &params.point_loads[i];
        let missing = crate::Error::failure(format!(
            "boundary.point_load[{i}].at: no mesh node at [{}, {}, {}]",
            p.at[0], p.at[1], p.at[2]
        ));
        return Err(crate::locate::locate(config, missing));
    }
    stages.since(PROBLEM, loads_started);
    let device = stages.time(SOLVER, || rank_devices(comm, config))?;
    let loads_started = Instant::now();
    // each rank's owned nodes, owned cells and constrained unknowns of owned nodes
    let n_owned = part.n_owned_nodes();
    let owned_constrained: u64 = (0..n_owned)
        .map(|n| u64::from(problem.discrete.constraints.mask(n).count_ones()))
        .sum();
    let loads: Vec<[u64; 3]> = comm
        .allgatherv_u64(&[
            n_owned as u64,
            part.cell_owned.iter().filter(|&&o| o).count() as u64,
            owned_constrained,
        ])?
        .iter()
        .map(|l| [l[0], l[1], l[2]])
        .collect();
    stages.since(PROBLEM, loads_started);
    // the output: every dataset gathered to rank 0 window by window
    let output = stages.time(OUTPUT, || {
        agreed(c, RankOutput::new(comm, config, &part, window))
    })?;
    let mut layout = RankParts {
        comm,
        part: Arc::new(part),
        output,
        window,
        device,
        owned: loads.iter().map(|l| [l[0], l[1]]).collect(),
        constrained_dofs: loads.iter().map(|l| l[2] as usize).sum(),
    };
    let outcome = crate::driver::drive(c, case, &mut layout, &mut problem, started, stages);
    outcome.map(|mut o| {
        o.figures.problem_s = problem_s;
        o
    })
}

/// The ranks' [`Layout`]: each rank its part of the mesh; rank 0 writes the files from windows
/// of serial ids the ranks send it.
struct RankParts<'a> {
    comm: &'a Arc<dyn Comm>,
    part: Arc<MeshPart>,
    output: RankOutput,
    /// Values per window of the output's gathers and of a restart's reads.
    window: usize,
    device: RanksDevice,
    /// Per rank: its owned nodes and owned cells.
    owned: Vec<[u64; 2]>,
    /// Constrained unknowns of the whole mesh.
    constrained_dofs: usize,
}

impl Layout for RankParts<'_> {
    fn restart_displacement(&self, restart: &Restart, problem: &Problem) -> Result<Vector> {
        let mut u = problem.discrete.zeros()?;
        restart.displacement_of_part(
            &self.part.node_serial_ids,
            &problem.mesh.coords,
            self.part.n_global_nodes(),
            self.window,
            u.host_mut()?,
        )?;
        Ok(u)
    }

    fn solver(
        &mut self,
        config: &config::Config,
        problem: &Problem,
    ) -> Result<(LinearSolver, Choice, bool)> {
        let linear: solve::params::LinearSolverParams = (&config.linear_solver).into();
        let modes = agreed(
            &**self.comm,
            distributed_modes(problem.discrete.external.layout(), &problem.mesh.coords),
        )?;
        // the same choice as one process's, on this rank's rows: every rank refuses the same
        // options (the direct solver, AMG's scalar storage and mixed precision) at their key
        let (solver, choice) = located(
            config,
            LinearSolver::choose(
                &linear,
                modes,
                OperatorKind::Ranks {
                    comm: self.comm.clone(),
                    part: &self.part,
                    device: self.device.device.clone(),
                },
                problem.discrete.tangent_is_symmetric(),
            ),
        )?;
        Ok((solver, choice, false))
    }

    fn keep_solver(&mut self, _solver: LinearSolver, _choice: Choice) {}

    fn mesh_info(&self, _problem: &Problem) -> io::MeshInfo {
        self.output.mesh_info(self.constrained_dofs)
    }

    fn ranks_info(&self) -> Option<io::RanksInfo> {
        let owned_rows: Vec<u64> = self.owned.iter().map(|l| 3 * l[0]).collect();
        let mean = owned_rows.iter().sum::<u64>() as f64 / owned_rows.len() as f64;
        let max = owned_rows.iter().copied().max().unwrap_or(0) as f64;
        Some(io::RanksInfo {
            ranks: owned_rows.len(),
            owned_cells: self.owned.iter().map(|l| l[1]).collect(),
            owned_rows,
            row_imbalance: if mean > 0.0 { max / mean } else { 1.0 },
            output_bytes: Vec::new(),
            peak_resident_bytes: Vec::new(),
            newton_s: Vec::new(),
            output_s: Vec::new(),
            devices: self.device.names.clone(),
            exchange: self.device.exchange.0.name().to_string(),
            exchange_fallback: self.device.exchange.1.clone(),
        })
    }

    fn placement<'a>(&'a self, _solver: &'a LinearSolver) -> Placement<'a> {
        Placement::Ranks {
            device: &self.device,
            loads: &self.owned,
        }
    }

    fn create_results(
        &mut self,
        config: &config::Config,
        problem: &Problem,
        case: &Case,
    ) -> Result<StepOutput> {
        let comm = &**self.comm;
        // the first state's cells are left to the output threads where no probe reads them
        // (`first_cells`): their kernels over a copy of the element loop's mesh
        if !self.output.probes_read_outputs() {
            let mesh = Arc::new(crate::run::parallel_clone(&problem.mesh));
            let kernels = StrainCells::of(problem, mesh).map(Arc::new);
            // every rank leaves them or none does
            let mut missing = [f64::from(u8::from(kernels.is_none()))];
            comm.allreduce_max(&mut missing)?;
            self.output
                .set_strain_cells(kernels.filter(|_| missing[0] == 0.0));
        }
        self.output.create(
            comm,
            config,
            &self.part,
            &case.dir,
            &case.name,
            &case.faults,
        )
    }

    fn first_cells(
        &self,
        problem: &Problem,
        u: &Vector,
        config: &config::Config,
    ) -> Result<CellOutputs> {
        if self.output.computes_first_cells() {
            Ok(CellOutputs::fields_later(config))
        } else {
            CellOutputs::compute(problem, u, config, self.defers_strains())
        }
    }

    fn write_state(
        &mut self,
        config: &config::Config,
        _problem: &Problem,
        u: &Vector,
        reactions: &Vector,
        cells: CellOutputs,
        stamp: StepStamp,
        output: &mut StepOutput,
    ) -> Result<Option<StateFigures>> {
        let comm = &**self.comm;
        self.output
            .write_state(comm, config, &self.part, u, reactions, cells, stamp, output)
    }

    fn check_state(
        &self,
        index: usize,
        u: &Vector,
        cells: &CellOutputs,
        size: f64,
        linear: bool,
    ) -> Result<Vec<String>> {
        let part = &self.part;
        // this rank's figures (its nodes, its cells by their serial numbers; the strain
        // energy of the cells it owns), merged over the ranks in rank order on every rank
        let (local, names) = crate::run::with_state_figures(index, u, cells, size, linear, |s| {
            let names: Vec<String> = s.fields.iter().map(|(n, _)| n.to_string()).collect();
            Ok((
                Finiteness::of(s, part.cell_serial_ids.iter().copied()),
                names,
            ))
        })?;
        let owned_energy = (0..cells.strain_energy.len())
            .filter(|&c| part.cell_owned[c])
            .map(|c| cells.strain_energy[c])
            .sum();
        let local = Finiteness {
            strain_energy: owned_energy,
            ..local
        };
        let all = self.comm.allgatherv_f64(&local.to_values())?;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        if let Some(whole) = all
            .iter()
            .filter_map(|v| Finiteness::from_values(v))
            .reduce(Finiteness::merge)
        {
            whole.refuse(index, size, &names)?;
        }
        // the warnings are the whole body's (`inverted_cells`)
        Ok(Vec::new())
    }

    fn inverted_cells(&self, cells: &CellOutputs) -> Result<InvertedScope> {
        let part = &self.part;
        let owned = (0..cells.jacobian.len())
            .filter(|&c| part.cell_owned[c])
            .map(|c| (part.cell_serial_ids[c], cells.jacobian[c]));
        // each rank's count, least det F and its cell (serial ids below 2^53: exact in f64),
        // merged in rank order on every rank
        let mine = InvertedCells::of(owned).map_or(Vec::new(), |i| {
            vec![i.count as f64, i.least_j, i.cell as f64]
        });
        let all = self.comm.allgatherv_f64(&mine)?;
        let whole = all
            .iter()
            .filter(|r| r.len() == 3)
            .map(|r| InvertedCells {
                count: r[0] as u64,
                least_j: r[1],
                cell: r[2] as u64,
            })
            .reduce(InvertedCells::merge);
        Ok(InvertedScope::WholeBody(whole))
    }

    fn finish_summary(
        &self,
        summary: Option<&mut io::SummaryWriter>,
        newton_s: f64,
        output_s: f64,
    ) -> Result<()> {
        // what each rank held for the output at most (rank 0: one window received and merged;
        // the others: their largest message), its peak memory, its seconds in Newton and output
        let rank0 = self.comm.rank() == 0;
        let windows = if rank0 { 2 } else { 1 };
        let held = *self
            .output
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let output_bytes = 8 * held.max_window_values as u64 * windows;
        let held = self.comm.allgatherv_f64(&[
            output_bytes as f64,
            crate::memory::peak_resident_bytes() as f64,
            newton_s,
            output_s,
        ])?;
        if let Some(summary) = summary {
            summary.update_ranks(|r| {
                r.output_bytes = held.iter().map(|h| h[0] as u64).collect();
                r.peak_resident_bytes = held.iter().map(|h| h[1] as u64).collect();
                r.newton_s = held.iter().map(|h| h[2]).collect();
                r.output_s = held.iter().map(|h| h[3]).collect();
            });
        }
        Ok(())
    }
}
