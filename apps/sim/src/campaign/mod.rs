//! `hexfem campaign CAMPAIGN.yaml [--jobs N] [--resume]`: the cases of a parameter study, each a
//! full run in its own directory, and one results table.
//!
//! Order of work: the campaign file is read ([`config::campaign::Campaign`]); every case's
//! configuration is resolved and validated, its output checked and its memory estimated, and
//! its problem built (on one mesh per distinct mesh and quadrature, reconfigured per case) and
//! its probes resolved — all before the first case runs, so a bad value stops the campaign at
//! once, named at its line in the campaign file. Then the cases run, grouped by mesh, on `jobs`
//! workers (each with its share of the threads; results do not depend on the thread count); each worker keeps its last problem (mesh, element loop, COO plans) and, with
//! `share_solver`, its linear solver (the AMG hierarchy: the next case's first set-up is hot), see
//! [`crate::run::Warm`]. A failed case is recorded with its error and the others go on.
//!
//! Files in the campaign directory: `case_NNNN/` (the run's files, `input.yaml`: the resolved
//! input, which `hexfem run` reads as is, and `case.json`: the case's table row, written last),
//! `results.csv` and `results.jsonl` (one row per case, in case order, rewritten after each
//! case), `campaign.json` (totals: cases, failures, reuse, wall time) and `plots/` (outputs
//! against the first numeric parameter, PNG and SVG, drawn by the `hexfem` command). `--resume` skips the
//! cases whose `case.json` says completed for the same resolved input (a hash of it), so a
//! campaign killed at any point resumes to the same table.
//!
//! Under MPI ([`run_campaign_on_ranks`]) the ranks split into groups that each run one case at
//! a time (see [`ranks`]); with `--jobs` on a machine with GPUs each worker takes a GPU
//! ([`placement`]). Each row records where its case ran (host, worker or rank group, GPU).

pub mod placement;
mod progress;
mod ranks;
mod table;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

use config::campaign::{Campaign, CaseSpec};
use config::Config;

use crate::error::{fail, Context};
use crate::run::{execute, Case, Warm};
use crate::{Error, Result};
pub use progress::{CampaignObserver, Tally};
pub use ranks::run_campaign_on_ranks;
pub use table::{CaseRow, CaseStatus};

/// Options of `hexfem campaign`.
pub struct CampaignOptions {
    pub file: PathBuf,
    /// Cases run at once (at least 1).
    pub jobs: usize,
    /// Skip cases already completed with the same resolved input.
    pub resume: bool,
    /// Replaces the campaign's `directory` (`-o`).
    pub output_dir: Option<PathBuf>,
    /// Stops the campaign when requested: no further case starts, the cases at work stop at
    /// their next step or Newton iteration and leave no row (`--resume` runs them again), and
    /// [`CampaignInterrupted`] is returned. `None`: runs to the end.
    pub interrupt: Option<crate::Interrupt>,
    /// Under MPI: ranks that run each case together (at least 1; 1: the serial solver).
    pub ranks_per_case: usize,
    /// The GPUs workers (or ranks) take in turn (`--gpus`); `None`: every GPU found.
    pub gpus: Option<Vec<usize>>,
    /// Test-only: under MPI, the rank that starts case N aborts its process (a crashed rank).
    pub test_abort_in_case: Option<usize>,
}

impl CampaignOptions {
    /// The campaign of `file` as it is: one job, no resume, one rank per case, every GPU.
    pub fn new(file: impl Into<PathBuf>) -> Self {
        CampaignOptions {
            file: file.into(),
            jobs: 1,
            resume: false,
            output_dir: None,
            interrupt: None,
            ranks_per_case: 1,
            gpus: None,
            test_abort_in_case: None,
        }
    }
}

/// A campaign stopped on request ([`CampaignOptions::interrupt`]): its table holds the cases
/// finished so far; `--resume` runs the others.
#[derive(Debug, Clone, thiserror::Error)]
#[error("campaign interrupted with {done} of {total} cases finished (table {})", table.display())]
pub struct CampaignInterrupted {
    pub done: usize,
    pub total: usize,
    pub table: PathBuf,
}

/// What a campaign did.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CampaignSummary {
    pub campaign: PathBuf,
    pub base: PathBuf,
    pub directory: PathBuf,
    pub parameters: Vec<String>,
    pub cases: usize,
    pub completed: usize,
    pub failed: usize,
    /// Cases skipped by `--resume` (completed earlier).
    pub resumed: usize,
    pub jobs: usize,
    /// MPI ranks of the campaign (1 without MPI) and ranks per case.
    #[serde(default)]
    pub ranks: usize,
    #[serde(default)]
    pub ranks_per_case: usize,
    pub share_solver: bool,
    /// Problems (mesh, element loop, plans) built from scratch while running, and reused from
    /// the case before (the first worker's first case reuses the problem the validation built).
    pub problems_built: usize,
    pub problems_reused: usize,
    /// Cases whose linear solver (AMG hierarchy) came from the case before.
    pub solvers_reused: usize,
    pub amg_cold_setups: usize,
    pub amg_hot_setups: usize,
    /// AMG renewals for a new near-null space (a cold set-up's values, plans kept).
    pub amg_renewed_setups: usize,
    /// Seconds in preconditioner set-ups over all cases run.
    pub setup_s: f64,
    /// What reuse saved, estimated from this campaign's own timings (see [`Saving`]).
    pub saving: Saving,
    /// Seconds validating every case before the first ran.
    pub validate_s: f64,
    pub wall_s: f64,
    pub table_csv: PathBuf,
    pub table_jsonl: PathBuf,
}

/// The time reuse saved, estimated from the campaign's own cases: each reused problem would
/// have cost the mean build time of the problems built, and each case whose first set-up was
/// hot would have paid the mean first set-up of the cases that started cold. Process start-up,
/// which separate runs also pay, is not counted (see `hexfem bench campaign` for a measurement
/// against separate runs).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Saving {
    /// Mean seconds to build a problem, and to reconfigure a reused one.
    pub problem_build_s: Option<f64>,
    pub problem_reuse_s: Option<f64>,
    /// Mean seconds of a case's first set-up when cold, and when hot on a shared solver.
    pub first_setup_cold_s: Option<f64>,
    pub first_setup_hot_s: Option<f64>,
    /// Estimated seconds saved by reused problems and by shared set-ups (`null` when the
    /// campaign has no case of one of the two kinds to compare).
    pub problems_saved_s: Option<f64>,
    pub setups_saved_s: Option<f64>,
}

impl Saving {
    fn estimate(rows: &[&CaseRow]) -> Saving {
        let mean = |values: Vec<f64>| {
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        let completed: Vec<&&CaseRow> = rows
            .iter()
            .filter(|r| r.status == CaseStatus::Completed)
            .collect();
        let build = mean(
            completed
                .iter()
                .filter(|r| !r.reused_problem)
                .map(|r| r.problem_s)
                .collect(),
        );
        let reuse = mean(
            completed
                .iter()
                .filter(|r| r.reused_problem)
                .map(|r| r.problem_s)
                .collect(),
        );
        let cold = mean(
            completed
                .iter()
                .filter(|r| !r.reused_solver && r.amg_cold_setups > 0)
                .map(|r| r.first_setup_s)
                .collect(),
        );
        let hot = mean(
            completed
                .iter()
                .filter(|r| r.reused_solver)
                .map(|r| r.first_setup_s)
                .collect(),
        );
        let reused_problems = completed.iter().filter(|r| r.reused_problem).count() as f64;
        let reused_solvers = completed.iter().filter(|r| r.reused_solver).count() as f64;
        Saving {
            problem_build_s: build,
            problem_reuse_s: reuse,
            first_setup_cold_s: cold,
            first_setup_hot_s: hot,
            problems_saved_s: build.zip(reuse).map(|(b, r)| reused_problems * (b - r)),
            setups_saved_s: cold.zip(hot).map(|(c, h)| reused_solvers * (c - h)),
        }
    }
}

/// Checks a campaign without running it: every case resolved, validated, its output and memory
/// checked and its problem built, as `run_campaign` does before the first case; returns a
/// summary of the cases (one line each).
pub fn check_campaign(file: &Path, output_dir: Option<&Path>) -> Result<String> {
    let campaign = Campaign::load(file)?;
    let directory = output_dir.map_or_else(|| campaign.directory.clone(), Path::to_owned);
    let prepared = resolve(&campaign, &directory, true)?;
    build_problems(&campaign, &prepared)?;
    let meshes: std::collections::BTreeSet<&String> = prepared.iter().map(|p| &p.key).collect();
    let mut text = format!(
        "{}: {} cases valid on {} mesh(es), base {}, into {}\n",
        file.display(),
        prepared.len(),
        meshes.len(),
        campaign.base.display(),
        directory.display()
    );
    for p in &prepared {
        text.push_str(&format!(
            "  case_{:04}  {}  [{}]\n",
            p.spec.index,
            p.hash,
            campaign.describe(&p.spec)
        ));
    }
    Ok(text)
}

/// A case ready to run.
struct Prepared {
    spec: CaseSpec,
    config: Config,
    hash: String,
    dir: PathBuf,
    key: String,
}

/// Runs the campaign of `options.file`, telling `observer` of its progress; returns its
/// summary. Failed cases are in the summary and the table; the error is only for a campaign
/// that could not run (a bad file or case).
pub fn run_campaign(
    options: &CampaignOptions,
    observer: &mut dyn CampaignObserver,
) -> Result<CampaignSummary> {
    let started = Instant::now();
    let campaign = Campaign::load(&options.file)?;
    let directory = options
        .output_dir
        .clone()
        .unwrap_or_else(|| campaign.directory.clone());
    let jobs = options.jobs.max(1);
    let prepared = resolve(&campaign, &directory, true)?;
    let mut validated = build_problems(&campaign, &prepared)?;
    let visible = placement::visible_gpus(&prepared.iter().map(|p| &p.config).collect::<Vec<_>>());
    if let Some(list) = &options.gpus {
        placement::check_gpu_list(list, visible)?;
    }
    let host = placement::host_name();
    let validate_s = started.elapsed().as_secs_f64();
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("creating the campaign directory {}", directory.display()))?;

    let mut rows: Vec<Option<CaseRow>> = vec![None; prepared.len()];
    let mut resumed = 0;
    let mut queue = VecDeque::new();
    // cases on one mesh run one after the other, so that a worker reuses its problem
    let mut order: Vec<usize> = (0..prepared.len()).collect();
    order.sort_by(|&a, &b| prepared[a].key.cmp(&prepared[b].key));
    for i in order {
        let p = &prepared[i];
        match resumable(&campaign, p, options.resume) {
            Some(row) => {
                rows[i] = Some(row);
                resumed += 1;
            }
            None => queue.push_back(i),
        }
    }
    let table = table::Table::new(&directory, &campaign.parameters);
    table.write(&rows)?;
    let mut tally = Tally::new(prepared.len(), resumed);
    observer.started(&tally);
    let to_run = queue.len();
    let workers = jobs.min(to_run);
    check_memory(
        &prepared,
        &queue,
        workers,
        &format!("--jobs {workers}"),
        "use fewer jobs",
    )?;
    let mut held = vec![None; workers];
    if let Some(first) = held.first_mut() {
        // the first worker holds the problem the validation built last
        *first = validated.problem_key().map(str::to_owned);
    }
    let scheduler = Mutex::new(Scheduler {
        pending: queue.into(),
        held,
    });
    let (sender, receiver) = mpsc::channel::<(usize, CaseRow)>();
    // a worker's word that it started a case (the tally's running cases)
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let share_solver = campaign.share_solver;
    let interrupt = options.interrupt.as_ref();
    let stopping = || interrupt.is_some_and(|i| i.requested());
    // the first worker starts with the problem the validation built last
    validated.share_solver = share_solver;
    let mut warms: Vec<Warm> = (0..workers).map(|_| Warm::new(share_solver)).collect();
    if let Some(first) = warms.first_mut() {
        *first = validated;
    }
    std::thread::scope(|scope| -> Result<()> {
        for (worker, mut warm) in warms.into_iter().enumerate() {
            let sender = sender.clone();
            let (scheduler, prepared, campaign, started_tx, stopping) = (
                &scheduler,
                &prepared,
                &campaign,
                started_tx.clone(),
                &stopping,
            );
            let place = Where {
                host: host.clone(),
                group: worker,
                ranks: 1,
                gpu: placement::gpu_of_slot(worker, visible, options.gpus.as_deref()),
            };
            scope.spawn(move || {
                // Each worker runs its cases inside a thread pool of its own with its share of
                // the threads (results do not depend on the thread count): the parallel loops
                // of a case then start from a pool thread, not from outside the pool.
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(placement::threads_per_worker(
                        rayon::current_num_threads(),
                        workers,
                    ))
                    .build()
                    .ok();
                // the lock is taken and released inside the condition
                while let Some(i) = scheduler
                    .lock()
                    .ok()
                    .filter(|_| !stopping())
                    .and_then(|mut s| s.next(worker, |i| prepared[i].key.as_str()))
                {
                    let _ = started_tx.send(());
                    let row = match &pool {
                        Some(pool) => pool.install(|| {
                            run_case(campaign, &prepared[i], &mut warm, interrupt, &place)
                        }),
                        None => run_case(campaign, &prepared[i], &mut warm, interrupt, &place),
                    };
                    // a case stopped on request leaves no row: `--resume` runs it again
                    if stopping() && row.status != CaseStatus::Completed {
                        break;
                    }
                    if sender.send((i, row)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        for (i, row) in receiver {
            row.write(&prepared[i].dir.join("case.json"))?;
            tally.finished(&row, started_rx.try_iter().count());
            let description = campaign.describe(&prepared[i].spec);
            rows[i] = Some(row);
            table.write(&rows)?;
            if let Some(row) = &rows[i] {
                observer.case_finished(row, &description, &tally);
            }
        }
        Ok(())
    })?;
    observer.done(&tally);
    if stopping() && rows.iter().any(Option::is_none) {
        return Err(CampaignInterrupted {
            done: tally.done,
            total: tally.total,
            table: table.csv.clone(),
        }
        .into());
    }
    let totals = Totals {
        resumed,
        jobs,
        ranks: 1,
        ranks_per_case: 1,
        validate_s,
        started,
    };
    summarize(options, &campaign, &directory, &table, rows, &totals)
}

/// What the summary counts beside the rows.
struct Totals {
    resumed: usize,
    jobs: usize,
    ranks: usize,
    ranks_per_case: usize,
    validate_s: f64,
    started: Instant,
}

/// The summary of a campaign whose every case reported, written to `campaign.json`.
fn summarize(
    options: &CampaignOptions,
    campaign: &Campaign,
    directory: &Path,
    table: &table::Table,
    rows: Vec<Option<CaseRow>>,
    totals: &Totals,
) -> Result<CampaignSummary> {
    let expected = rows.len();
    let rows: Vec<CaseRow> = rows.into_iter().flatten().collect();
    if rows.len() != expected {
        fail!("{} cases did not report", expected - rows.len());
    }
    let ran = || rows.iter().filter(|r| !r.resumed);
    let summary = CampaignSummary {
        campaign: options.file.clone(),
        base: campaign.base.clone(),
        directory: directory.to_owned(),
        parameters: campaign.parameters.clone(),
        cases: rows.len(),
        completed: rows
            .iter()
            .filter(|r| r.status == CaseStatus::Completed)
            .count(),
        failed: rows
            .iter()
            .filter(|r| r.status == CaseStatus::Failed)
            .count(),
        resumed: totals.resumed,
        jobs: totals.jobs,
        ranks: totals.ranks,
        ranks_per_case: totals.ranks_per_case,
        share_solver: campaign.share_solver,
        problems_built: ran().filter(|r| !r.reused_problem).count(),
        problems_reused: ran().filter(|r| r.reused_problem).count(),
        solvers_reused: ran().filter(|r| r.reused_solver).count(),
        amg_cold_setups: ran().map(|r| r.amg_cold_setups).sum(),
        amg_hot_setups: ran().map(|r| r.amg_hot_setups).sum(),
        amg_renewed_setups: ran().map(|r| r.amg_renewed_setups).sum(),
        setup_s: ran().map(|r| r.setup_s).sum(),
        saving: Saving::estimate(&ran().collect::<Vec<_>>()),
        validate_s: totals.validate_s,
        wall_s: totals.started.elapsed().as_secs_f64(),
        table_csv: table.csv.clone(),
        table_jsonl: table.jsonl.clone(),
    };
    let path = directory.join("campaign.json");
    table::write_atomic(&path, serde_json::to_string_pretty(&summary)? + "\n")?;
    Ok(summary)
}

/// The row `--resume` keeps for `p`: its `case.json` where it records a completed run of the
/// same resolved input and the case's files agree with it; `None`: the case runs.
fn resumable(campaign: &Campaign, p: &Prepared, resume: bool) -> Option<CaseRow> {
    let row = resume
        .then(|| CaseRow::read(&p.dir.join("case.json")))
        .flatten()?;
    let agrees = row.hash == p.hash
        && row.status == CaseStatus::Completed
        && row
            .agrees_with_files(
                &CaseRow::new(p.spec.index, &p.hash, &p.dir, &p.spec),
                &crate::run::output_name(&p.config, &campaign.base),
            )
            .is_ok();
    agrees.then_some(row)
}

/// Hands cases to workers so that each keeps to one mesh: a worker takes the next case on the
/// mesh it holds, else the next case on a mesh no other worker holds, else the next case.
struct Scheduler {
    /// Cases not yet started, grouped by mesh.
    pending: Vec<usize>,
    /// The mesh key each worker last ran.
    held: Vec<Option<String>>,
}

impl Scheduler {
    /// The case `worker` runs next, `key(case)` the mesh key of a case; `None` when no case
    /// is left.
    fn next<'k>(&mut self, worker: usize, key: impl Fn(usize) -> &'k str) -> Option<usize> {
        let own = self.held[worker].clone();
        let position = self
            .pending
            .iter()
            .position(|&i| Some(key(i)) == own.as_deref())
            .or_else(|| {
                self.pending
                    .iter()
                    .position(|&i| !self.held.iter().any(|h| h.as_deref() == Some(key(i))))
            })
            .or_else(|| (!self.pending.is_empty()).then_some(0))?;
        let case = self.pending.remove(position);
        self.held[worker] = Some(key(case).to_owned());
        Some(case)
    }
}

/// Resolves and validates every case; with `check`, also its output and memory (see the
/// module's documentation).
fn resolve(campaign: &Campaign, directory: &Path, check: bool) -> Result<Vec<Prepared>> {
    let mut prepared = Vec::with_capacity(campaign.cases.len());
    for spec in &campaign.cases {
        let mut config = campaign.case_config(spec)?;
        let dir = directory.join(format!("case_{:04}", spec.index));
        config.output.directory = dir.clone();
        let name = crate::run::output_name(&config, &campaign.base);
        if check {
            crate::run::check_output(&config, None, &dir, &name)
                .and_then(|()| crate::memory::guard(&config).map(|_| ()))
                .map_err(|e| relocate(campaign, spec, e))?;
        }
        let hash = input_hash(&config)?;
        let key = crate::run::problem_key(&config)?;
        prepared.push(Prepared {
            spec: spec.clone(),
            config,
            hash,
            dir,
            key,
        });
    }
    Ok(prepared)
}

/// Builds each case's problem and resolves its probes (the check before the first case);
/// returns the problem built last, which the first worker's first case reuses.
fn build_problems(campaign: &Campaign, prepared: &[Prepared]) -> Result<Warm> {
    // build each case's problem, one mesh at a time; the meshes in reverse order of their
    // keys, so that the problem left in `warm` is the one the first worker needs first
    let mut order: Vec<&Prepared> = prepared.iter().collect();
    order.sort_by(|a, b| b.key.cmp(&a.key).then(a.spec.index.cmp(&b.spec.index)));
    let mut warm = Warm::new(false);
    for p in order {
        crate::run::prepare_problem(&p.config, &mut warm)
            .map_err(|e| relocate(campaign, &p.spec, e))?;
    }
    Ok(warm)
}

/// Refuses `workers` cases at once (`what` says why that many) when the largest of them
/// together would not fit in the memory available (each case alone was checked by `resolve`);
/// the error ends with `advice`.
fn check_memory(
    prepared: &[Prepared],
    queue: &VecDeque<usize>,
    workers: usize,
    what: &str,
    advice: &str,
) -> Result<()> {
    if workers < 2 {
        return Ok(());
    }
    let Some(available) = crate::memory::available() else {
        return Ok(());
    };
    let mut sizes = queue
        .iter()
        .map(|&i| Ok(crate::memory::estimate(&prepared[i].config)?.total))
        .collect::<Result<Vec<f64>>>()?;
    sizes.sort_by(|a, b| b.total_cmp(a));
    let together: f64 = sizes.iter().take(workers).sum();
    if together > available {
        fail!(
            "{what}: the largest {workers} cases together need about {} and {} is available; {advice}",
            crate::memory::human(together),
            crate::memory::human(available)
        );
    }
    Ok(())
}

/// An error of a case moved to the campaign file where a campaign value caused it.
fn relocate(campaign: &Campaign, spec: &CaseSpec, error: impl Into<Error>) -> Error {
    match error.into() {
        Error::Input(e) => Error::Input(campaign.relocate(spec, e)),
        e => e.context(format!("case {}", spec.index)),
    }
}

/// A hash of the resolved input (output directory aside): what `--resume` compares.
fn input_hash(config: &Config) -> Result<String> {
    let mut config = config.clone();
    config.output.directory = PathBuf::new();
    let text = serde_json::to_string(&config)?;
    // FNV-1a, 64 bits: stable across versions and machines
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Ok(format!("{h:016x}"))
}

/// Where a worker or rank group runs its cases (see [`CaseRow::host`]).
#[derive(Clone, Debug)]
struct Where {
    host: String,
    group: usize,
    ranks: usize,
    /// The GPU of the worker (of the group's first rank); cases on the CPU run on none.
    gpu: Option<usize>,
}

impl Where {
    /// Records where `p` ran in `row`.
    fn stamp(&self, row: &mut CaseRow, p: &Prepared) {
        row.host = self.host.clone();
        row.group = self.group;
        row.ranks = self.ranks;
        row.gpu = placement::gpu_of_case(&p.config, self.gpu);
    }
}

/// Writes the case's directory and resolved input (`input.yaml`); returns the input's path.
fn write_input(campaign: &Campaign, p: &Prepared) -> Result<PathBuf> {
    let input = p.dir.join("input.yaml");
    std::fs::create_dir_all(&p.dir).with_context(|| format!("creating {}", p.dir.display()))?;
    let header = format!(
        "# case {} of {}: {}\n# resolved input (base {}); `hexfem run` reads it as is\n",
        p.spec.index,
        campaign.file.display(),
        campaign.describe(&p.spec),
        campaign.base.display()
    );
    table::write_atomic(
        &input,
        header + &serde_json::to_string_pretty(&p.config)? + "\n",
    )?;
    Ok(input)
}

/// Runs one case in this process (the serial solver) on `place`'s GPU: its resolved input, the
/// run, its row.
fn run_case(
    campaign: &Campaign,
    p: &Prepared,
    warm: &mut Warm,
    interrupt: Option<&crate::Interrupt>,
    place: &Where,
) -> CaseRow {
    let started = Instant::now();
    let mut row = CaseRow::new(p.spec.index, &p.hash, &p.dir, &p.spec);
    place.stamp(&mut row, p);
    let outcome = (|| {
        let input = write_input(campaign, p)?;
        let name = crate::run::output_name(&p.config, &campaign.base);
        let case = Case {
            config: &p.config,
            input: &input,
            dir: p.dir.clone(),
            name,
            restart: None,
            faults: io::Faults::none(),
            observer: &crate::interrupt::Interruptible {
                inner: &crate::observer::Quiet,
                interrupt,
                comm: &comm::SelfComm,
            },
        };
        linalg::Device::with_thread_gpu(place.gpu.unwrap_or(0), || execute(&case, warm, started))
    })();
    row.wall_s = started.elapsed().as_secs_f64();
    match outcome {
        Ok(outcome) => row.completed(&outcome),
        Err(e) => row.failed(&format!("{e:#}")),
    }
    row
}
