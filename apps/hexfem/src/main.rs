//! The `hexfem` command line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hexfem::run::{run, Progress, RunOptions};

/// hexfem: hyperelastic solids on hexahedral meshes, solved with a blocked algebraic multigrid.
#[derive(Parser)]
#[command(name = "hexfem", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the simulation described by a YAML file; writes <name>.h5, .xdmf and .summary.json.
    Run {
        input: PathBuf,
        /// Override a configuration value: --set newton.rtol=1e-10 (repeatable).
        #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
        overrides: Vec<String>,
        /// Output directory (replaces output.directory).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// No progress lines (the default in CI and when standard error is not a terminal).
        #[arg(short, long)]
        quiet: bool,
        /// Test-only (crash tests): abort the process at output write position N (0-based,
        /// counting every write, rename and truncation of the output files).
        #[arg(long, hide = true, value_name = "N")]
        test_abort_at_write: Option<usize>,
        /// Test-only: with --test-abort-at-write, write the first half of that write's bytes
        /// before aborting (a kill inside the write call).
        #[arg(long, hide = true, requires = "test_abort_at_write")]
        test_torn_write: bool,
        /// Test-only: abort the process right after step N is completely written.
        #[arg(long, hide = true, value_name = "N")]
        test_abort_after_step: Option<usize>,
    },
    /// Benchmarks (table, or one JSON object with --json).
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
    /// Run the verification suite (patch tests, convergence rates, Timoshenko-Goodier cantilever);
    /// exits non-zero if any check fails.
    Verify {
        /// Print the results as one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Validate a YAML file and summarise the problem without solving it.
    Check {
        input: PathBuf,
        #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
        overrides: Vec<String>,
        /// Output directory to check (as `run -o`).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// Residual + tangent assembly through the COO plan (neo-Hookean box of N^3 cells).
    Assembly {
        #[arg(long, default_value_t = 1)]
        order: usize,
        #[arg(long, default_value_t = 32)]
        cells: usize,
        #[arg(long, default_value_t = 3)]
        repeats: usize,
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
    /// The distributed matrix path (run it under mpirun -np N, or alone): each rank's slab of a
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
        #[arg(long)]
        json: bool,
    },
}

/// Model problems of `bench gamg`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Problem {
    Ex56,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // MPI when started by mpirun, else the serial program (MPI untouched).
    let session = match comm::Session::init() {
        Ok(session) => session,
        Err(e) => {
            report(&format!("error: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let comm = session.comm();
    let (stdout, result) = if comm.size() > 1 {
        execute_on_ranks(&comm, cli.command)
    } else {
        execute(cli.command)
    };
    // Collective error agreement: every rank ends with the first failing rank's message; rank 0
    // alone prints (the others' output would repeat it).
    // (An error that is already agreed is the same on every rank: all of them skip this.)
    let result = match result {
        Err(e) if hexfem::distributed::is_agreed(&e) => Err(e),
        result if comm.size() > 1 => hexfem::distributed::agreed(&*comm, result),
        result => result,
    };
    let root = comm.rank() == 0;
    if let Err(e) = result {
        // Printed before MPI_Finalize (a fence of all ranks): no rank exits, which makes mpirun
        // end the job, before rank 0 has written the message.
        if root {
            report(&format!("error: {e:#}"));
        }
        drop(session);
        return ExitCode::FAILURE;
    }
    drop(session);
    if !root {
        return ExitCode::SUCCESS;
    }
    match write_stdout(&stdout) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`| head -1`): end quietly, with the status a shell gives a
        // command killed by SIGPIPE.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(141),
        Err(e) => {
            report(&format!("error: writing to standard output: {e}"));
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` to standard output and flushes it (errors are returned, never a panic).
fn write_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes a line to standard error, ignoring failures (there is nowhere left to report them).
fn report(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Runs a command: what it prints on standard output, and whether it succeeded. A failed
/// command may still print (the table of a failed verification).
fn execute(command: Command) -> (String, anyhow::Result<()>) {
    match command {
        Command::Run {
            input,
            overrides,
            output,
            quiet,
            test_abort_at_write,
            test_torn_write,
            test_abort_after_step,
        } => {
            let progress = if quiet {
                Progress::Quiet
            } else {
                Progress::auto()
            };
            let faults = match test_abort_at_write {
                Some(at) => io::Faults::stop_at(at, test_torn_write, io::FaultAction::Abort),
                None => io::Faults::none(),
            };
            let outcome = run(&RunOptions {
                input,
                overrides,
                output_dir: output,
                progress,
                faults,
                abort_after_step: test_abort_after_step,
            });
            split(outcome.map(|outcome| {
                format!(
                    "{} converged steps written to {} (open {} in ParaView); summary {}\n",
                    outcome.steps,
                    outcome.h5.display(),
                    outcome.xdmf.display(),
                    outcome.summary.display()
                )
            }))
        }
        Command::Bench {
            which:
                Bench::Assembly {
                    order,
                    cells,
                    repeats,
                    json,
                },
        } => split(
            hexfem::bench::assembly::run(&hexfem::bench::assembly::AssemblyBench {
                order,
                cells,
                repeats,
            })
            .and_then(|r| render(&r, json)),
        ),
        Command::Bench {
            which:
                Bench::Gamg {
                    problem: Problem::Ex56,
                    m,
                    order,
                    solves,
                    scalar,
                    json,
                },
        } => {
            let bench = hexfem::bench::gamg::GamgBench {
                m,
                order,
                solves,
                scalar,
                amg: amg::AmgParams::default(),
            };
            split(hexfem::bench::gamg::run(&bench).and_then(|r| render(&r, json)))
        }
        Command::Bench {
            which:
                Bench::Distributed {
                    cells,
                    order,
                    repeats,
                    amg,
                    json,
                },
        } => split(
            hexfem::bench::distributed::run(
                &comm::SelfComm::shared(),
                &hexfem::bench::distributed::DistributedBench {
                    cells,
                    order,
                    repeats,
                    amg,
                },
            )
            .and_then(|r| render(&r, json)),
        ),
        Command::Bench {
            which:
                Bench::Output {
                    steps,
                    cells,
                    window,
                    dir,
                    json,
                },
        } => split(
            hexfem::bench::output::run(&hexfem::bench::output::OutputBench {
                steps,
                cells,
                window,
                dir,
            })
            .and_then(|r| render(&r, json)),
        ),
        Command::Check {
            input,
            overrides,
            output,
        } => split(hexfem::check::check(&input, &overrides, output.as_deref())),
        Command::Verify { json } => {
            let report_case = |case: &hexfem::verify::CaseResult| {
                if !json {
                    report(&format!("  {} ({:.2} s)", case.case, case.seconds));
                }
            };
            let suite = hexfem::verify::run_suite(report_case);
            let text = if json {
                match serde_json::to_string(&suite) {
                    Ok(s) => s + "\n",
                    Err(e) => return (String::new(), Err(e.into())),
                }
            } else {
                suite.to_string()
            };
            let passed = if suite.passed() {
                Ok(())
            } else {
                Err(anyhow::anyhow!(
                    "{} verification checks failed",
                    suite.n_failures()
                ))
            };
            (text, passed)
        }
    }
}

/// A command on more than one MPI rank. `check` runs distributed (each rank builds and checks
/// its part of the mesh). The distributed solve, verification and benchmarks are not built yet:
/// every rank refuses with the same message instead of running the serial program N times.
fn execute_on_ranks(
    comm: &std::sync::Arc<dyn comm::Comm>,
    command: Command,
) -> (String, anyhow::Result<()>) {
    let what = match command {
        Command::Bench {
            which:
                Bench::Distributed {
                    cells,
                    order,
                    repeats,
                    amg,
                    json,
                },
        } => {
            let bench = hexfem::bench::distributed::DistributedBench {
                cells,
                order,
                repeats,
                amg,
            };
            let result = hexfem::bench::distributed::run(comm, &bench);
            let result = hexfem::distributed::agreed(&**comm, result);
            return split(result.and_then(|r| render(&r, json)));
        }
        Command::Check {
            input,
            overrides,
            output,
        } => {
            return split(hexfem::distributed::check_on_ranks(
                &**comm,
                &input,
                &overrides,
                output.as_deref(),
            ))
        }
        Command::Run { .. } => "run",
        Command::Bench { .. } => "bench",
        Command::Verify { .. } => "verify",
    };
    (
        String::new(),
        Err(anyhow::anyhow!(
            "hexfem {what} on {} MPI ranks is not available yet (distributed today: check and \
             bench distributed: mesh partitioning, assembly, CG with point-block Jacobi or a \
             distributed AMG; not yet: Newton, the configured AMG and output); run it without \
             mpirun, or with mpirun -np 1",
            comm.size()
        )),
    )
}

/// A command's text and status from its result.
fn split(result: anyhow::Result<String>) -> (String, anyhow::Result<()>) {
    match result {
        Ok(text) => (text, Ok(())),
        Err(e) => (String::new(), Err(e)),
    }
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
