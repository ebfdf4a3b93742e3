//! The `hexfem bench ...` subcommands: their arguments (clap) and the one function that runs
//! any of them and renders its result ([`run`]), on one process or on the ranks of an MPI job.

use std::path::PathBuf;
use std::sync::Arc;

use comm::Comm;

use crate::gamg::BenchDevice;

#[derive(clap::Subcommand)]
pub enum Bench {
    /// CG + AMG iterations as Poisson's ratio nears 1/2: cube and Cook's membrane, Q1/Q2,
    /// displacement and projected formulations, AMG variants (`bench/incompressible.rs`).
    Incompressible {
        /// Q1 cells per direction (Q2: half).
        #[arg(long, default_value_t = 16)]
        cells: usize,
        /// `default`, or `all`: also one AMG knob changed at a time.
        #[arg(long, default_value = "default")]
        variants: String,
        /// Also keep each case's linear system here (PETSc binary files and `systems.json`:
        /// `bench/incompressible_peers.rs`).
        #[arg(long)]
        export: Option<std::path::PathBuf>,
        /// Do not run the peers (PyAMG, PETSc GAMG, hypre) on the exported systems.
        #[arg(long)]
        no_peers: bool,
        #[arg(long)]
        json: bool,
    },
    /// Residual + tangent assembly through the COO plan (neo-Hookean box of N^3 cells).
    Assembly {
        #[arg(long, default_value_t = 1)]
        order: usize,
        #[arg(long, default_value_t = 32)]
        cells: usize,
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// `cuda`: also assemble on the first CUDA GPU (device events, bytes, flops, parity).
        #[arg(long, value_enum, default_value_t = BenchDevice::Cpu)]
        device: BenchDevice,
        /// The element formulation (both run on the CPU and the GPU).
        #[arg(long, value_enum, default_value_t = FormulationArg::Displacement)]
        formulation: FormulationArg,
        #[arg(long)]
        json: bool,
    },
    /// Output cost per step over a long run of tiny steps (HDF5, XDMF, step log, summary), in
    /// windows: flat when appending costs O(1).
    Output {
        #[arg(long, default_value_t = 10_000)]
        steps: usize,
        /// Cells per side of the Q1 box.
        #[arg(long, default_value_t = 2)]
        cells: usize,
        /// Steps per timing window.
        #[arg(long, default_value_t = 1000)]
        window: usize,
        /// Folder to write in (a fresh subfolder, removed afterwards); default: the temp dir.
        #[arg(long)]
        dir: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// The output writer on one state of every output field (`bench/writer.rs`): seconds per
    /// field group (each derived field alone, the step's writes with the values ready, the
    /// pipeline's derivations and the pipeline: derive and write), the best of `--repeats`.
    Writer {
        /// Cells per side of the Q1 box.
        #[arg(long, default_value_t = 40)]
        cells: usize,
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// Folder to write in (a fresh subfolder, removed afterwards); default: the temp dir.
        #[arg(long)]
        dir: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// The symmetric 3x3 eigen-solver of the principal values and the logarithmic strain
    /// (`fem::sym3`) against nalgebra's: time per tensor and Gauss point, largest differences,
    /// over random and adversarial families (`bench/eigen.rs`).
    Eigen {
        /// Tensors per family.
        #[arg(long, default_value_t = 200_000)]
        tensors: usize,
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        #[arg(long)]
        json: bool,
    },
    /// One neo-Hookean Newton iteration on the ex56-sized box (m^3 nodes): the linear system,
    /// the hot AMG update and CG, with the breakdown; on the GPU everything stays there.
    Newton {
        /// Nodes per side.
        #[arg(long, default_value_t = 66)]
        m: usize,
        #[arg(long, value_enum, default_value_t = BenchDevice::Cpu)]
        device: BenchDevice,
        #[arg(long)]
        json: bool,
    },
    /// One block SpMV for one block shape (27-point stencil for square blocks, prolongator- or
    /// restriction-shaped otherwise): time, bytes, GB/s.
    Spmv {
        /// Nodes per side.
        #[arg(long, default_value_t = 66)]
        m: usize,
        /// Block shape RxC (3x3: the fine operator, 6x6: coarse, 3x6: P, 6x3: P^T).
        #[arg(long, default_value = "3x3")]
        block: String,
        #[arg(long, value_enum, default_value_t = BenchDevice::Cpu)]
        device: BenchDevice,
        #[arg(long)]
        json: bool,
    },
    /// A parameter study of neo-Hookean cases on one Q1 mesh: separate `hexfem run` processes
    /// against one campaign (problem reused, AMG set-up shared, then with --jobs).
    Campaign {
        #[arg(long, default_value_t = 20)]
        cases: usize,
        /// Cells of the 4 x 1 x 1 cantilever, as NX,NY,NZ.
        #[arg(long, value_delimiter = ',', default_values_t = [32, 8, 8])]
        cells: Vec<usize>,
        #[arg(long, default_value_t = 1)]
        steps: usize,
        /// Workers of the last variant (on a GPU machine with --device cuda: one per GPU).
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Rounds of all variants, taking turns (each reports its best).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Folder to write in (a fresh subfolder, removed afterwards); default: the temp dir.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Where the cases run.
        #[arg(long, value_enum, default_value_t = BenchDevice::Cpu)]
        device: BenchDevice,
        /// With N > 1, also the campaign under `mpirun -np N` (one case per rank).
        #[arg(long, default_value_t = 0, value_name = "N")]
        ranks: usize,
        #[arg(long)]
        json: bool,
    },
    /// The distributed matrix path (run it under mpirun -np N, or alone): each rank's box of a
    /// clamped elastic cube, owned-row assembly, halo plan, SpMV and CG with point-block Jacobi.
    Distributed {
        /// Cells per side of the unit cube.
        #[arg(long, default_value_t = 32)]
        cells: usize,
        #[arg(long, default_value_t = 1)]
        order: usize,
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        /// Also set up the distributed AMG hierarchy and solve with CG + AMG.
        #[arg(long)]
        amg: bool,
        #[arg(long)]
        json: bool,
    },
    /// Smoothed-aggregation AMG + CG on a model problem: cold set-up and solve, then hot set-ups
    /// (reused interpolation) and solves on the scaled operator.
    Gamg {
        /// Model problem (only ex56: PETSc's ksp ex56).
        #[arg(long, value_enum, default_value_t = Problem::Ex56)]
        problem: Problem,
        /// Nodes per side.
        #[arg(long, default_value_t = 33)]
        m: usize,
        #[arg(long, default_value_t = 1)]
        order: usize,
        /// Total solves (the first cold, the others after a hot set-up).
        #[arg(long, default_value_t = 2)]
        solves: usize,
        /// Store every operator and prolongator as 1x1 blocks (same algorithm).
        #[arg(long)]
        scalar: bool,
        /// Where the set-up and solves run: the CPU or the first CUDA GPU.
        #[arg(long, value_enum, default_value_t = BenchDevice::Cpu)]
        device: BenchDevice,
        /// Stored precision of prolongators, coarse operators and smoother inverses (`mixed`:
        /// fp32 storage, fp64 arithmetic; the fine operator and CG stay fp64).
        #[arg(long, value_enum, default_value_t = PrecisionArg::Double)]
        precision: PrecisionArg,
        /// Under mpirun with `--device cuda`: how halo exchanges travel between the GPUs
        /// (`nccl`: device to device on the stream; `ipc`: each GPU writes its halo messages
        /// straight into its neighbours' memory, every rank on one node, NCCL for the rest;
        /// `staged`: through pinned host memory and MPI; `auto`: ipc where every rank can, else
        /// NCCL where every rank has it, else staged).
        #[arg(long, value_enum, default_value_t = ExchangeArg::Auto)]
        exchange: ExchangeArg,
        /// Under mpirun: a coarse level of n unknowns is held by max(1, n / this) ranks (the
        /// AMG option `process_eq_limit`; default 50 on CPU ranks, 20000 on GPU ranks).
        #[arg(long)]
        process_eq_limit: Option<usize>,
        /// Under mpirun: the grid of boxes the cube is cut into, `PxQxR` boxes across x, y and
        /// z (their product the rank count; e.g. `1x1x8` for slabs); default: the grid that
        /// cuts the fewest nodes (2x2x2 on 8 ranks).
        #[arg(long, value_parser = parse_rank_grid)]
        rank_grid: Option<[usize; 3]>,
        /// On one process: the distributed hierarchy (the ranks' path) on one rank, its
        /// stages without a halo to exchange, beside the one-process hierarchy's (under
        /// mpirun it is the path taken anyway).
        #[arg(long)]
        distributed: bool,
        #[arg(long)]
        json: bool,
    },
}

/// `--rank-grid PxQxR`: three positive box counts.
pub fn parse_rank_grid(s: &str) -> Result<[usize; 3], String> {
    let bad =
        || format!("{s:?} is not a grid of boxes: expected PxQxR with P, Q, R >= 1 (e.g. 2x2x2)");
    let v: Vec<usize> = s
        .split('x')
        .map(|t| t.trim().parse::<usize>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [p, q, r] if p >= 1 && q >= 1 && r >= 1 => Ok([p, q, r]),
        _ => Err(bad()),
    }
}

/// `--exchange` of `bench gamg` under mpirun.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ExchangeArg {
    Auto,
    Nccl,
    Ipc,
    Staged,
}

/// `--precision` of `bench gamg` (the AMG option `precision`).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PrecisionArg {
    Double,
    Mixed,
}

/// `--formulation` of `bench assembly`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum FormulationArg {
    Displacement,
    Projected,
}

/// Model problems of `bench gamg`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Problem {
    Ex56,
}

impl Bench {
    /// Whether the benchmark runs on the ranks of an MPI job (the others run on one process).
    pub fn runs_on_ranks(&self) -> bool {
        matches!(self, Bench::Distributed { .. } | Bench::Gamg { .. })
    }
}

/// Runs the benchmark `bench` on `comm` (one process, or the ranks of an MPI job for those that
/// [run on ranks](Bench::runs_on_ranks); their errors agreed by every rank) and renders its
/// result: a table, or one JSON line with `--json`.
pub fn run(comm: &Arc<dyn Comm>, bench: Bench) -> anyhow::Result<String> {
    let on_ranks = comm.size() > 1;
    match bench {
        Bench::Assembly {
            order,
            cells,
            repeats,
            device,
            formulation,
            json,
        } => crate::assembly::run(&crate::assembly::AssemblyBench {
            order,
            cells,
            repeats,
            cuda: device == BenchDevice::Cuda,
            formulation: match formulation {
                FormulationArg::Displacement => fem::Formulation::Displacement,
                FormulationArg::Projected => fem::Formulation::Projected,
            },
        })
        .and_then(|r| render(&r, json)),
        Bench::Gamg {
            problem: Problem::Ex56,
            m,
            order,
            solves,
            scalar,
            device,
            precision,
            exchange,
            process_eq_limit,
            rank_grid,
            distributed,
            json,
        } => {
            let precision = match precision {
                PrecisionArg::Double => amg::Precision::Double,
                PrecisionArg::Mixed if on_ranks || distributed => {
                    // the distributed hierarchy stores fp64 only
                    anyhow::bail!(
                        "bench gamg --precision mixed runs the one-process hierarchy (the \
                         distributed hierarchy is fp64 only); valid under mpirun or with \
                         --distributed: double"
                    )
                }
                PrecisionArg::Mixed => amg::Precision::Mixed,
            };
            let mut bench = crate::gamg::GamgBench {
                m,
                order,
                solves,
                scalar,
                amg: amg::AmgParams {
                    precision,
                    ..amg::AmgParams::default()
                },
                device,
            };
            if !on_ranks && !distributed {
                // one process: no exchanges between GPUs, one box
                if let Some(g) = rank_grid.filter(|g| *g != [1, 1, 1]) {
                    let g = g.map(|p| p.to_string()).join("x");
                    anyhow::bail!(
                        "--rank-grid {g} cuts the cube for several MPI ranks; this is one process \
                         (run it under mpirun -np with the grid's product, or drop --rank-grid)"
                    );
                }
                return crate::gamg::run(&bench).and_then(|r| render(&r, json));
            }
            bench.amg.process_eq_limit = process_eq_limit;
            let exchange = match exchange {
                ExchangeArg::Auto => linalg::dist::DeviceExchange::Auto,
                ExchangeArg::Nccl => linalg::dist::DeviceExchange::Nccl,
                ExchangeArg::Ipc => linalg::dist::DeviceExchange::Ipc,
                ExchangeArg::Staged => linalg::dist::DeviceExchange::Staged,
            };
            let result = crate::dist_gamg::run(comm, &bench, exchange, rank_grid);
            render(&agreed(&**comm, result)?, json)
        }
        Bench::Newton { m, device, json } => {
            crate::newton::run(&crate::newton::NewtonBench { m, device })
                .and_then(|r| render(&r, json))
        }
        Bench::Spmv {
            m,
            block,
            device,
            json,
        } => {
            let shape = block
                .split_once(['x', 'X'])
                .and_then(|(r, c)| Some((r.trim().parse().ok()?, c.trim().parse().ok()?)));
            let Some((block_rows, block_cols)) = shape else {
                anyhow::bail!(
                    "--block {block}: expected RxC with R, C in 1..=32 (3x3, 6x6, 3x6, 6x3)"
                );
            };
            crate::spmv::run(&crate::spmv::SpmvBench {
                m,
                block_rows,
                block_cols,
                device,
            })
            .and_then(|r| render(&r, json))
        }
        Bench::Campaign {
            cases,
            cells,
            steps,
            jobs,
            rounds,
            dir,
            device,
            ranks,
            json,
        } => {
            let [nx, ny, nz] = cells[..] else {
                anyhow::bail!("--cells takes three numbers, NX,NY,NZ (got {cells:?})");
            };
            crate::campaign::run(&crate::campaign::CampaignBench {
                cases,
                cells: [nx, ny, nz],
                steps,
                jobs,
                rounds,
                dir,
                cuda: device == BenchDevice::Cuda,
                ranks,
            })
            .and_then(|r| render(&r, json))
        }
        Bench::Distributed {
            cells,
            order,
            repeats,
            amg,
            json,
        } => {
            let bench = crate::distributed::DistributedBench {
                cells,
                order,
                repeats,
                amg,
            };
            let result = if on_ranks {
                agreed(&**comm, crate::distributed::run(comm, &bench))
            } else {
                crate::distributed::run(&comm::SelfComm::shared(), &bench)
            };
            result.and_then(|r| render(&r, json))
        }
        Bench::Incompressible {
            cells,
            variants,
            export,
            no_peers,
            json,
        } => {
            use crate::incompressible as b;
            let variants = match variants.as_str() {
                "all" => b::all_variants(),
                _ => b::all_variants().into_iter().take(1).collect(),
            };
            b::run_bench(&b::IncompressibleBench {
                cells,
                variants,
                export,
                peers: !no_peers,
            })
            .and_then(|r| render(&r, json))
        }
        Bench::Eigen {
            tensors,
            repeats,
            json,
        } => crate::eigen::run(&crate::eigen::EigenBench { tensors, repeats })
            .and_then(|r| render(&r, json)),
        Bench::Output {
            steps,
            cells,
            window,
            dir,
            json,
        } => crate::output::run(&crate::output::OutputBench {
            steps,
            cells,
            window,
            dir,
        })
        .and_then(|r| render(&r, json)),
        Bench::Writer {
            cells,
            repeats,
            dir,
            json,
        } => crate::writer::run(&crate::writer::WriterBench {
            cells,
            repeats,
            dir,
        })
        .and_then(|r| render(&r, json)),
    }
}

/// `result`, agreed on by every rank (as `sim::distributed::agreed` for the benchmarks'
/// `anyhow` errors): an error on any rank is the same everywhere (the lowest failing rank's,
/// with its whole chain of causes). On one rank: `result` itself.
fn agreed<T>(comm: &dyn Comm, result: anyhow::Result<T>) -> anyhow::Result<T> {
    if comm.size() == 1 {
        return result;
    }
    Ok(comm::agree(comm, result.map_err(|e| format!("{e:#}")))?)
}

/// A benchmark result as a table or as one JSON line.
fn render<T: serde::Serialize + std::fmt::Display>(
    result: &T,
    json: bool,
) -> anyhow::Result<String> {
    Ok(if json {
        serde_json::to_string(result)? + "\n"
    } else {
        result.to_string()
    })
}
