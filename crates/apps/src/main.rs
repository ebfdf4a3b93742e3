//! The `hexfem` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use apps::run::{run, Progress, RunOptions};
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
    /// Validate a YAML file and summarise the problem without solving it.
    Check {
        input: PathBuf,
        #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
        overrides: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { input, overrides, output, quiet } => {
            let progress = if quiet { Progress::Quiet } else { Progress::auto() };
            run(&RunOptions { input, overrides, output_dir: output, progress }).map(|outcome| {
                println!(
                    "{} converged steps written to {} (open {} in ParaView); summary {}",
                    outcome.steps,
                    outcome.h5.display(),
                    outcome.xdmf.display(),
                    outcome.summary.display()
                );
            })
        }
        Command::Check { input, overrides } => apps::check::check(&input, &overrides).map(|s| print!("{s}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
