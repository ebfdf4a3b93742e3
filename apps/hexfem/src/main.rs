//! The `hexfem` command line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use monitor::{Progress, TerminalMonitor};
use sim::RunOptions;

use hexfem::plot;

mod about;
mod campaign_progress;
mod monitor;
mod signals;

/// hexfem: hyperelastic solids on hexahedral meshes, solved with a blocked algebraic multigrid.
#[derive(Parser)]
#[command(name = "hexfem", version = about::SHORT_VERSION, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the simulation described by a YAML file (`-`: read it from standard input); writes
    /// <name>.h5, .xdmf and .summary.json. Ctrl-C stops it after the step under way (a second
    /// Ctrl-C at once) and prints the --restart that continues it.
    Run(RunArgs),
    /// Run a parameter study: every case of a campaign file (a base input and the parameters
    /// that vary), each in its own directory, and one results table (results.csv, .jsonl).
    Campaign(CampaignArgs),
    /// Plot a run (its <name>.summary.json: Newton residuals, probes against the load factor)
    /// or a campaign (its directory: outputs against a parameter) as PNG and SVG.
    Plot {
        /// A run's summary file or a campaign directory.
        path: PathBuf,
        /// Campaign: the parameter on the x axis (default: the first numeric one).
        #[arg(long)]
        x: Option<String>,
        /// Campaign: outputs to plot (default: strain_energy, max_displacement, every probe).
        #[arg(long, value_delimiter = ',')]
        y: Vec<String>,
        /// Where the pictures go (default: beside the summary; <campaign>/plots).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Benchmarks (table, or one JSON object with --json).
    Bench {
        #[command(subcommand)]
        which: bench::cli::Bench,
    },
    /// Run the verification suite (patch tests, convergence rates, Timoshenko-Goodier cantilever);
    /// exits non-zero if any check fails.
    Verify {
        /// Print the results as one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Validate a YAML file (`-`: standard input) and summarise the problem without solving it.
    Check {
        input: PathBuf,
        #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
        overrides: Vec<String>,
        /// Output directory to check (as `run -o`).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Print the resolved input instead of the summary: every key with its value or
        /// default, `--set` and `-o` applied, as YAML that `hexfem run` reads as is.
        #[arg(long)]
        print_resolved: bool,
    },
    /// Print the JSON Schema of input files (for editors: a
    /// `# yaml-language-server: $schema=FILE` line), or of campaign files.
    Schema {
        /// The schema of campaign files instead.
        #[arg(long)]
        campaign: bool,
    },
    /// Print a shell completion script: `hexfem completion bash > ~/.local/share/bash-completion/completions/hexfem`.
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

// The arguments of `hexfem run` (its help text is the `Run` variant's).
#[derive(clap::Args)]
struct RunArgs {
    input: PathBuf,
    /// Override a configuration value: --set newton.rtol=1e-10 (repeatable).
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    overrides: Vec<String>,
    /// Output directory (replaces output.directory).
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// No progress lines (by default: a header and one line per load step).
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
    /// Also one line per Newton iteration (residual, linear iterations, step length).
    #[arg(short, long)]
    verbose: bool,
    /// Continue from a converged step of an earlier run: FILE.h5 (its last step) or
    /// FILE.h5:STEP.
    #[arg(long, value_name = "FILE.h5[:STEP]")]
    restart: Option<String>,
    /// Replace the results of an earlier run of the same name in the output directory
    /// (without it, such a run is refused and the earlier results are kept).
    #[arg(long)]
    overwrite: bool,
    /// Also draw the run's default plots (as `hexfem plot` on its summary).
    #[arg(long)]
    plot: bool,
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
    /// Test-only: values per window of the output's gathers to rank 0 under mpirun (small:
    /// many windows per dataset).
    #[arg(long, hide = true, value_name = "N", default_value_t = sim::windows::DEFAULT_WINDOW_VALUES)]
    test_output_window: usize,
}

// The arguments of `hexfem campaign` (its help text is the `Campaign` variant's).
#[derive(clap::Args)]
struct CampaignArgs {
    file: PathBuf,
    /// Cases run at once.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Skip cases already completed with the same resolved input.
    #[arg(long)]
    resume: bool,
    /// Only check: resolve and validate every case, build its problem, list the cases.
    #[arg(long, conflicts_with_all = ["resume", "jobs"])]
    check: bool,
    /// Under mpirun: ranks that run each case together (the distributed solver); 1: each
    /// rank runs cases with the serial solver.
    #[arg(long, default_value_t = 1, value_name = "K")]
    ranks_per_case: usize,
    /// GPUs the workers (or ranks) take in turn, as ordinals (default: every GPU found).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    gpus: Option<Vec<usize>>,
    /// Campaign directory (replaces the file's `directory`).
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// No progress (default: a bar on a terminal, a line per case otherwise).
    #[arg(short, long)]
    quiet: bool,
    /// Test-only: abort the process once N cases have finished.
    #[arg(long, hide = true, value_name = "N")]
    test_abort_after_cases: Option<usize>,
    /// Test-only: under mpirun, the rank that starts case N aborts.
    #[arg(long, hide = true, value_name = "N")]
    test_abort_in_case: Option<usize>,
}

/// Large arrays on transparent huge pages where the kernel offers them (`HEXFEM_HUGE_PAGES`).
#[global_allocator]
static ALLOCATOR: hexfem::huge_pages::HugePageAlloc = hexfem::huge_pages::HugePageAlloc;

fn main() -> ExitCode {
    hexfem::stage_table::mark_process_start();
    if let Err(e) = hexfem::huge_pages::configure_from_env() {
        report(&format!("error: {e}"));
        return ExitCode::FAILURE;
    }
    let cli = parse_arguments();
    // Ctrl-C and SIGTERM stop a run or campaign at a safe point (installed before MPI starts,
    // on every rank)
    let interrupt =
        matches!(cli.command, Command::Run(_) | Command::Campaign(_)).then(signals::install);
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
        execute_on_ranks(&comm, cli.command, interrupt.as_ref())
    } else {
        execute(&comm, cli.command, interrupt.as_ref())
    };
    let root = comm.rank() == 0;
    // stopped on request: every rank stopped at the same point with its files written; rank 0
    // says how to continue
    if let Some(stopped) = result
        .as_ref()
        .err()
        .and_then(|e| e.downcast_ref::<Stopped>())
    {
        if root && !stopped.0.is_empty() {
            report(&stopped.0);
        }
        drop(session);
        return ExitCode::from(signals::INTERRUPTED_STATUS);
    }
    // Collective error agreement: every rank ends with the first failing rank's message; rank 0
    // alone prints (the others' output would repeat it).
    // (An error that is already agreed is the same on every rank: all of them skip this.)
    let result = match result {
        Err(e) if sim::distributed::is_agreed(&*e) => Err(e),
        // the lowest failing rank's error with its whole chain of causes, on every rank
        result if comm.size() > 1 => {
            comm::agree(&*comm, result.map_err(|e| format!("{e:#}"))).map_err(anyhow::Error::from)
        }
        result => result,
    };
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
            report(&format!(
                "error: writing to standard output: {e} (the command itself completed; what it \
                 wrote to files is complete)"
            ));
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

/// The command line; `--version` also says what the binary was built with (found only when
/// asked for: it looks for the CUDA driver).
fn parse_arguments() -> Cli {
    let mut command = Cli::command();
    if std::env::args_os().any(|a| a == "--version") {
        // computed once per process, only for --version: leaking it is free
        let text: &'static str = Box::leak(about::long_version().into_boxed_str());
        command = command.long_version(text);
    }
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// A run or campaign stopped by a signal (its files written): the text that says how to
/// continue. Exits with [`signals::INTERRUPTED_STATUS`].
#[derive(Debug)]
struct Stopped(String);

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stopped {}

/// The input of `run` or `check`: a file, or with `-` standard input's text (read by rank 0,
/// sent to every rank).
fn read_input(comm: &dyn comm::Comm, input: &std::path::Path) -> anyhow::Result<Option<String>> {
    if input != std::path::Path::new("-") {
        return Ok(None);
    }
    let read = || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes).map(|_| bytes)
    };
    Ok(Some(sim::read_input_text(comm, read)?))
}

/// `hexfem check [--print-resolved]` of a file or of standard input.
fn check_command(
    comm: &std::sync::Arc<dyn comm::Comm>,
    input: &std::path::Path,
    overrides: &[String],
    output: Option<&std::path::Path>,
    print_resolved: bool,
) -> anyhow::Result<String> {
    let text = read_input(&**comm, input)?;
    let source = match &text {
        Some(text) => sim::Input::Text(text),
        None => sim::Input::File(input),
    };
    let report = sim::check_input(comm, &source, overrides, output)?;
    if !print_resolved {
        return Ok(hexfem::check_text::render(&report));
    }
    let mut config = source.load(overrides)?;
    if let Some(dir) = output {
        config.output.directory = dir.to_owned();
    }
    Ok(config.to_resolved_yaml()?)
}

/// `hexfem campaign`: in this process, or under mpirun on rank groups (rank 0 reports, plots
/// and prints).
fn campaign_command(
    comm: &std::sync::Arc<dyn comm::Comm>,
    args: CampaignArgs,
    interrupt: Option<&sim::Interrupt>,
) -> (String, anyhow::Result<()>) {
    let CampaignArgs {
        file,
        jobs,
        resume,
        check,
        output,
        quiet,
        ranks_per_case,
        gpus,
        test_abort_after_cases,
        test_abort_in_case,
    } = args;
    if check {
        // rank 0 checks (every case on one process, as without mpirun)
        if comm.rank() != 0 {
            return (String::new(), Ok(()));
        }
        return split(sim::campaign::check_campaign(&file, output.as_deref()).map_err(Into::into));
    }
    if comm.size() == 1 && ranks_per_case > 1 {
        return split(Err(anyhow::anyhow!(
            "--ranks-per-case {ranks_per_case}: runs under mpirun (this process is one rank)"
        )));
    }
    if comm.size() > 1 && jobs > 1 {
        return split(Err(anyhow::anyhow!(
            "--jobs {jobs}: under mpirun each rank group runs one case at a time (start more \
             ranks instead)"
        )));
    }
    let root = comm.rank() == 0;
    let quiet = quiet || !root;
    use campaign_progress::{CampaignProgress, Reporter};
    use sim::campaign::{run_campaign, CampaignOptions};
    let mut progress = CampaignProgress {
        reporter: if quiet {
            Reporter::Quiet
        } else {
            Reporter::auto()
        },
        abort_after_cases: test_abort_after_cases,
        finished: 0,
    };
    let options = CampaignOptions {
        file,
        jobs,
        resume,
        output_dir: output.clone(),
        interrupt: interrupt.cloned(),
        ranks_per_case,
        gpus,
        test_abort_in_case,
    };
    let summary = if comm.size() > 1 {
        let summary = sim::campaign::run_campaign_on_ranks(comm, &options, &mut progress);
        // stopped on request: every rank says so (main skips the error agreement for it)
        let stopped = matches!(&summary, Err(sim::Error::CampaignInterrupted(_)));
        let mut any = [if stopped { 1.0 } else { 0.0 }];
        if let Err(e) = comm.allreduce_max(&mut any) {
            return split(Err(e.into()));
        }
        match summary {
            Ok(Some(s)) => Ok(s),
            _ if any[0] > 0.0 && !root => {
                return (
                    String::new(),
                    Err(anyhow::Error::new(Stopped(String::new()))),
                )
            }
            // the other ranks: rank 0 reports
            Ok(None) => return (String::new(), Ok(())),
            Err(e) => Err(e),
        }
    } else {
        run_campaign(&options, &mut progress)
    };
    match summary {
        Ok(s) => {
            if s.completed > 0 {
                // the default pictures; a campaign whose results are written has not
                // failed for them
                let plots = s.directory.join("plots");
                if let Err(e) = plot::plot_campaign(&s.directory, None, &[], &plots) {
                    if !quiet {
                        eprintln!("warning: plotting the campaign: {e:#}");
                    }
                }
            }
            let saved =
                s.saving.problems_saved_s.unwrap_or(0.0) + s.saving.setups_saved_s.unwrap_or(0.0);
            let text = format!(
                        "{} cases: {} completed, {} failed{}; table {} ({:.2} s; problems built {}, reused {}; AMG set-ups {} cold, {} renewed, {} hot; reuse saved about {saved:.2} s)\n",
                        s.cases,
                        s.completed,
                        s.failed,
                        if s.resumed > 0 { format!(" ({} resumed)", s.resumed) } else { String::new() },
                        s.table_csv.display(),
                        s.wall_s,
                        s.problems_built,
                        s.problems_reused,
                        s.amg_cold_setups,
                        s.amg_renewed_setups,
                        s.amg_hot_setups,
                    );
            let status = if s.failed > 0 {
                Err(anyhow::anyhow!(
                    "{} of {} cases failed (their errors are in {})",
                    s.failed,
                    s.cases,
                    s.table_csv.display()
                ))
            } else {
                Ok(())
            };
            (text, status)
        }
        Err(e) => match e {
            // stopped by a signal: the table holds the finished cases; --resume runs the rest
            sim::Error::CampaignInterrupted(stopped) => {
                let mut words = Vec::new();
                if comm.size() > 1 {
                    words.extend(["mpirun".to_owned(), "-np".into(), comm.size().to_string()]);
                }
                words.extend(["hexfem".to_owned(), "campaign".to_owned()]);
                words.push(signals::shell_word(&options.file.to_string_lossy()));
                if let Some(dir) = &options.output_dir {
                    words.push("-o".into());
                    words.push(signals::shell_word(&dir.to_string_lossy()));
                }
                if options.ranks_per_case > 1 {
                    words.push("--ranks-per-case".into());
                    words.push(options.ranks_per_case.to_string());
                }
                words.push("--resume".into());
                let text = format!("{stopped}; continue with\n  {}", words.join(" "));
                (String::new(), Err(anyhow::Error::new(Stopped(text))))
            }
            e => (String::new(), Err(e.into())),
        },
    }
}

/// Runs a command: what it prints on standard output, and whether it succeeded. A failed
/// command may still print (the table of a failed verification).
fn execute(
    comm: &std::sync::Arc<dyn comm::Comm>,
    command: Command,
    interrupt: Option<&sim::Interrupt>,
) -> (String, anyhow::Result<()>) {
    match command {
        Command::Run(args) => run_command(comm, args, interrupt),
        Command::Check {
            input,
            overrides,
            output,
            print_resolved,
        } => split(check_command(
            comm,
            &input,
            &overrides,
            output.as_deref(),
            print_resolved,
        )),
        Command::Schema { campaign } => (
            if campaign {
                config::schema::campaign_json_schema_text()
            } else {
                config::schema::json_schema_text()
            },
            Ok(()),
        ),
        Command::Completion { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "hexfem", &mut script);
            split(String::from_utf8(script).map_err(anyhow::Error::from))
        }
        Command::Bench { which } => split(bench::cli::run(comm, which)),
        Command::Campaign(args) => campaign_command(comm, args, interrupt),
        Command::Plot { path, x, y, output } => {
            split((|| {
                let files = if path.is_dir() {
                    let out = output.unwrap_or_else(|| path.join("plots"));
                    plot::plot_campaign(&path, x.as_deref(), &y, &out)?
                } else {
                    if x.is_some() || !y.is_empty() {
                        anyhow::bail!("--x and --y choose what a campaign's plots show; {} is a run's summary", path.display());
                    }
                    let out = output.unwrap_or_else(|| {
                        path.parent().map_or_else(PathBuf::new, |p| p.to_owned())
                    });
                    std::fs::create_dir_all(&out)?;
                    plot::plot_run(&path, &out)?
                };
                Ok(files.iter().map(|f| format!("{}\n", f.display())).collect())
            })())
        }
        Command::Verify { json } => {
            let report_case = |case: &sim::verify::CaseResult| {
                if !json {
                    report(&format!("  {} ({:.2} s)", case.case, case.seconds));
                }
            };
            let suite = sim::verify::run_suite(report_case);
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
    interrupt: Option<&sim::Interrupt>,
) -> (String, anyhow::Result<()>) {
    let what = match command {
        Command::Bench { which } if which.runs_on_ranks() => {
            return split(bench::cli::run(comm, which))
        }
        Command::Run(args) => return run_command(comm, args, interrupt),
        command @ (Command::Check { .. } | Command::Schema { .. } | Command::Completion { .. }) => {
            return execute(comm, command, interrupt)
        }
        Command::Campaign(args) => return campaign_command(comm, args, interrupt),
        Command::Bench { .. } => "bench",
        Command::Verify { .. } => "verify",
        Command::Plot { .. } => "plot",
    };
    (
        String::new(),
        Err(anyhow::anyhow!(
            "hexfem {what} on {} MPI ranks is not available yet (distributed today: run, check, \
             bench distributed and bench gamg); run it without mpirun, or with mpirun -np 1",
            comm.size()
        )),
    )
}

/// `hexfem run` on this process or on the ranks of `comm` (rank 0 reports and draws the plots).
fn run_command(
    comm: &std::sync::Arc<dyn comm::Comm>,
    args: RunArgs,
    interrupt: Option<&sim::Interrupt>,
) -> (String, anyhow::Result<()>) {
    let RunArgs {
        input,
        overrides,
        output,
        quiet,
        verbose,
        restart,
        overwrite,
        plot,
        test_abort_at_write,
        test_torn_write,
        test_abort_after_step,
        test_output_window,
    } = args;
    let progress = if quiet {
        Progress::Quiet
    } else if verbose {
        Progress::Iterations
    } else {
        Progress::Steps
    };
    let faults = match test_abort_at_write {
        Some(at) => io::Faults::stop_at(at, test_torn_write, io::FaultAction::Abort),
        None => io::Faults::none(),
    };
    let text = match read_input(&**comm, &input) {
        Ok(text) => text,
        Err(e) => return split(Err(e)),
    };
    let base = match text {
        Some(text) => RunOptions::from_text(text),
        None => RunOptions::new(&input),
    };
    let continue_with = |stopped: &sim::Interrupted| {
        continue_command(&input, &overrides, output.as_deref(), stopped)
    };
    let options = RunOptions {
        overrides: overrides.clone(),
        output_dir: output.clone(),
        restart,
        overwrite,
        faults,
        output_window: test_output_window,
        interrupt: interrupt.cloned(),
        process_started: hexfem::stage_table::process_started(),
        ..base
    };
    let monitor = TerminalMonitor::new(progress, test_abort_after_step);
    let outcome = sim::run(comm, &options, &monitor);
    monitor.finish();
    let outcome = outcome.map_err(|e| match e {
        sim::Error::Interrupted(stopped) => anyhow::Error::new(Stopped(continue_with(&stopped))),
        e => anyhow::Error::new(e),
    });
    // rank 0 wrote the files and draws the plots (an error there is agreed in `main`)
    split(outcome.and_then(|outcome| {
        let stages = outcome.figures.stages.as_ref().filter(|_| verbose);
        let table = stages.map_or_else(String::new, hexfem::stage_table::render);
        Ok(run_report(&outcome, plot && comm.rank() == 0, quiet)? + &table)
    }))
}

/// What an interrupted run prints: where it stopped and the command that continues it (the
/// same input and overrides, `--restart` at its last step, written beside its output in
/// `continued/`: a restart must not overwrite the file it reads).
fn continue_command(
    input: &std::path::Path,
    overrides: &[String],
    output: Option<&std::path::Path>,
    stopped: &sim::Interrupted,
) -> String {
    let dir = stopped
        .summary
        .parent()
        .map_or_else(|| PathBuf::from("."), |d| d.to_owned());
    let _ = output; // the run's directory is where its summary is
    let mut words = vec!["hexfem".to_owned(), "run".to_owned()];
    words.push(signals::shell_word(&input.to_string_lossy()));
    for o in overrides {
        words.push("--set".into());
        words.push(signals::shell_word(o));
    }
    words.push("-o".into());
    words.push(signals::shell_word(
        &dir.join("continued").to_string_lossy(),
    ));
    words.push("--restart".into());
    words.push(signals::shell_word(&stopped.restart));
    format!(
        "interrupted after step {}: every converged step is in its files (summary {}); continue with\n  {}",
        stopped.step,
        stopped.summary.display(),
        words.join(" ")
    )
}

/// A command's text and status from its result.
/// The end of a run: draws its plots where `plot`, and says what was written (nothing where
/// `quiet`: `-q` prints only errors).
fn run_report(outcome: &sim::run::RunOutcome, plot: bool, quiet: bool) -> anyhow::Result<String> {
    let mut text = format!(
        "{} converged steps written to {} (open {} in ParaView); summary {}\n",
        outcome.steps,
        outcome.h5.display(),
        outcome.xdmf.display(),
        outcome.summary.display()
    );
    if plot {
        let dir = outcome.summary.parent().unwrap_or(std::path::Path::new(""));
        let files = plot::plot_run(&outcome.summary, dir)?;
        text.push_str(&match files.len() {
            0 => {
                "plots: none (every residual is zero and no probe moved: nothing to plot)\n".into()
            }
            n => format!("plots: {n} files in {}\n", dir.display()),
        });
    }
    Ok(if quiet { String::new() } else { text })
}

fn split(result: anyhow::Result<String>) -> (String, anyhow::Result<()>) {
    match result {
        Ok(text) => (text, Ok(())),
        Err(e) => (String::new(), Err(e)),
    }
}
