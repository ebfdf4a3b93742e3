//! The `hexfem` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use hexfem::run::{run, Progress, RunOptions};
use clap::{Parser, Subcommand};

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
    let result = match cli.command {
        Command::Run {
            input,
            overrides,
            output,
            quiet,
        } => {
            let progress = if quiet {
                Progress::Quiet
            } else {
                Progress::auto()
            };
            run(&RunOptions {
                input,
                overrides,
                output_dir: output,
                progress,
            })
            .map(|outcome| {
                println!(
                    "{} converged steps written to {} (open {} in ParaView); summary {}",
                    outcome.steps,
                    outcome.h5.display(),
                    outcome.xdmf.display(),
                    outcome.summary.display()
                );
            })
        }
        Command::Bench {
            which:
                Bench::Assembly {
                    order,
                    cells,
                    repeats,
                    json,
                },
        } => hexfem::bench::assembly::run(&hexfem::bench::assembly::AssemblyBench {
            order,
            cells,
            repeats,
        })
        .and_then(|r| print_result(&r, json)),
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
            hexfem::bench::gamg::run(&bench).and_then(|r| print_result(&r, json))
        }
        Command::Check { input, overrides } => {
            hexfem::check::check(&input, &overrides).map(|s| print!("{s}"))
        }
        Command::Verify { json } => {
            let report = hexfem::verify::run_suite(|case| {
                if !json {
                    eprintln!("  {} ({:.2} s)", case.case, case.seconds);
                }
            });
            let printed = if json {
                serde_json::to_string(&report)
                    .map(|s| println!("{s}"))
                    .map_err(anyhow::Error::from)
            } else {
                print!("{report}");
                Ok(())
            };
            printed.and_then(|()| {
                anyhow::ensure!(
                    report.passed(),
                    "{} verification checks failed",
                    report.n_failures()
                );
                Ok(())
            })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Prints a benchmark result as a table or as one JSON object.
fn print_result<T: serde::Serialize + std::fmt::Display>(
    result: &T,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(result)?);
    } else {
        print!("{result}");
    }
    Ok(())
}
