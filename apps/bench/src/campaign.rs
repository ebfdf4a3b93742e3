//! `hexfem bench campaign`: a parameter study of neo-Hookean cases on one Q1 mesh, run as
//! separate `hexfem run` processes one after the other and as one `hexfem campaign` (one
//! process: mesh, element loop and COO plans reused, the AMG set-up shared, then also with
//! `--jobs`). Every variant writes the same files and is timed end to end; the variants take
//! turns for `rounds` rounds and each reports its best round (the harness's statistic: on a
//! shared machine noise only adds time).
//!
//! Throughput: each variant reports cases per minute and its ratio to the one-worker campaign
//! (`vs_one_worker`). With `--device cuda` the cases run on the GPU and the `--jobs` workers
//! take the GPUs round robin (2 GPUs, `--jobs 2`: the multi-GPU form); with `--ranks N` a last
//! variant runs the campaign under `mpirun -np N` (one case per rank, the serial solver).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use serde::Serialize;

use sim::campaign::{run_campaign, CampaignOptions, CampaignSummary};

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct CampaignBench {
    /// Cases (Young's moduli spread over 80..120).
    pub cases: usize,
    /// Cells of the 4 x 1 x 1 cantilever.
    pub cells: [usize; 3],
    /// Load steps of each case.
    pub steps: usize,
    /// Workers of the last variant.
    pub jobs: usize,
    /// Rounds of all variants (each variant reports its best).
    pub rounds: usize,
    /// Where to write (a fresh folder in it, removed afterwards); default: the temp dir.
    pub dir: Option<PathBuf>,
    /// `device: cuda` in every case (else the CPU).
    pub cuda: bool,
    /// With N > 1: a variant under `mpirun -np N` (oversubscribed where N exceeds the cores).
    pub ranks: usize,
}

/// One way of running the study.
#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    pub name: String,
    pub seconds: f64,
    /// Processor time (user + system) of this process and the runs it waited for, seconds:
    /// less disturbed than the wall time by other work on a shared machine.
    pub cpu_s: f64,
    /// `separate`'s processor time over this.
    pub cpu_speedup: f64,
    /// `separate` over this.
    pub speedup: f64,
    pub amg_cold_setups: usize,
    pub amg_hot_setups: usize,
    /// Seconds in preconditioner set-ups.
    pub setup_s: f64,
    pub problems_built: usize,
    pub newton_iterations: usize,
    pub linear_iterations: usize,
    /// Cases finished per minute of wall time.
    pub cases_per_minute: f64,
    /// This variant's throughput over the one-worker campaign's (problem + AMG reused).
    pub vs_one_worker: f64,
}

/// What `hexfem bench campaign --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct CampaignBenchResult {
    pub cases: usize,
    pub cells: [usize; 3],
    pub dofs: usize,
    pub steps: usize,
    pub threads: usize,
    pub rounds: usize,
    pub device: String,
    pub variants: Vec<Variant>,
}

/// Runs the benchmark.
pub fn run(bench: &CampaignBench) -> Result<CampaignBenchResult> {
    ensure!(
        bench.cases >= 1 && bench.jobs >= 1 && bench.steps >= 1,
        "--cases, --jobs and --steps must be >= 1"
    );
    let root = bench
        .dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("hexfem-bench-campaign-{}", std::process::id()));
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let result = measure(bench, &root);
    let _ = std::fs::remove_dir_all(&root);
    result
}

fn measure(bench: &CampaignBench, root: &Path) -> Result<CampaignBenchResult> {
    let [nx, ny, nz] = bench.cells;
    let base = root.join("beam.yaml");
    std::fs::write(
        &base,
        format!(
            "mesh: {{ box: {{ cells: [{nx}, {ny}, {nz}], lower: [0, 0, 0], upper: [4, 1, 1] }} }}
materials: [{{ model: neo_hookean, young_modulus: 100.0, poisson_ratio: 0.3 }}]
boundary:
  dirichlet: [{{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }}]
  traction: [{{ set: xmax, value: [0.0, 0.0, -0.02] }}]
loading: {{ steps: {} }}
output: {{ probes: {{ points: [{{ name: tip, at: [4, 0.5, 0.5] }}] }} }}
device: {}
",
            bench.steps,
            if bench.cuda { "cuda" } else { "cpu" }
        ),
    )?;
    let moduli: Vec<f64> = (0..bench.cases)
        .map(|i| 80.0 + 40.0 * i as f64 / (bench.cases.max(2) - 1) as f64)
        .collect();
    let list = moduli
        .iter()
        .map(|e| format!("{e:?}"))
        .collect::<Vec<_>>()
        .join(", ");

    let mut best: Vec<Variant> = Vec::new();
    for round in 0..bench.rounds.max(1) {
        let variants = one_round(bench, root, &base, &moduli, &list, round)?;
        if best.is_empty() {
            best = variants;
        } else {
            for (b, v) in best.iter_mut().zip(variants) {
                if v.seconds < b.seconds {
                    *b = v;
                }
            }
        }
    }
    let (separate, separate_cpu) = (best[0].seconds, best[0].cpu_s);
    let one_worker = best.get(2).map_or(separate, |v| v.seconds);
    for v in &mut best {
        v.speedup = separate / v.seconds;
        v.cpu_speedup = separate_cpu / v.cpu_s;
        v.cases_per_minute = 60.0 * bench.cases as f64 / v.seconds;
        v.vs_one_worker = one_worker / v.seconds;
    }
    let variants = best;
    Ok(CampaignBenchResult {
        cases: bench.cases,
        cells: bench.cells,
        dofs: 3 * (nx + 1) * (ny + 1) * (nz + 1),
        steps: bench.steps,
        threads: rayon::current_num_threads(),
        rounds: bench.rounds.max(1),
        device: if bench.cuda { "cuda" } else { "cpu" }.into(),
        variants,
    })
}

/// Every variant once, in the order separate, campaign (problem reused), campaign (and AMG),
/// campaign with `jobs` workers; speedups are filled in by the caller.
fn one_round(
    bench: &CampaignBench,
    root: &Path,
    base: &Path,
    moduli: &[f64],
    list: &str,
    round: usize,
) -> Result<Vec<Variant>> {
    // separate processes, one after the other
    let exe = std::env::current_exe().context("locating the hexfem binary")?;
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    let (mut cold, mut hot, mut setup_s, mut newton, mut linear) = (0, 0, 0.0, 0, 0);
    for (i, e) in moduli.iter().enumerate() {
        let dir = root.join(format!("r{round}_separate_{i:04}"));
        let out = Command::new(&exe)
            .args([
                "run",
                &base.to_string_lossy(),
                "-q",
                "-o",
                &dir.to_string_lossy(),
            ])
            .arg(format!("--set=materials.0.young_modulus={e:?}"))
            .env("CI", "1")
            .output()
            .context("starting hexfem run")?;
        ensure!(
            out.status.success(),
            "case {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = io::Summary::read(&dir.join("beam.summary.json"))?;
        for step in summary.steps.unwrap_or_default() {
            newton += step.newton_iterations;
            linear += step.linear_iterations.iter().sum::<usize>();
            for it in step.linear_solver.as_array().into_iter().flatten() {
                setup_s += it["linear"]["setup_s"].as_f64().unwrap_or(0.0);
                match it["linear"]["setup"].as_str() {
                    Some("amg_cold") => cold += 1,
                    Some("amg_hot") => hot += 1,
                    _ => {}
                }
            }
        }
    }
    let separate = started.elapsed().as_secs_f64();
    let mut variants = vec![Variant {
        name: "separate runs".into(),
        seconds: separate,
        cpu_s: cpu_seconds() - cpu_started,
        cpu_speedup: 1.0,
        speedup: 1.0,
        amg_cold_setups: cold,
        amg_hot_setups: hot,
        setup_s,
        problems_built: bench.cases,
        newton_iterations: newton,
        linear_iterations: linear,
        cases_per_minute: 0.0,
        vs_one_worker: 0.0,
    }];

    let mut campaign = |name: &str, share_solver: bool, jobs: usize| -> Result<()> {
        let tag = variants.len();
        let file = root.join(format!("r{round}_campaign_{tag}.yaml"));
        std::fs::write(
            &file,
            format!(
                "base: {}\ndirectory: {}\nshare_solver: {share_solver}\ngrid:\n  materials.0.young_modulus: [{list}]\n",
                base.display(),
                root.join(format!("r{round}_campaign_{tag}")).display()
            ),
        )?;
        let started = Instant::now();
        let cpu_started = cpu_seconds();
        let s: CampaignSummary = run_campaign(
            &CampaignOptions {
                file,
                jobs,
                resume: false,
                output_dir: None,
                interrupt: None,
                ranks_per_case: 1,
                gpus: None,
                test_abort_in_case: None,
            },
            &mut sim::Quiet,
        )?;
        let seconds = started.elapsed().as_secs_f64();
        let cpu_s = cpu_seconds() - cpu_started;
        ensure!(s.failed == 0, "{name}: {} cases failed", s.failed);
        let rows: Vec<sim::campaign::CaseRow> = std::fs::read_to_string(&s.table_jsonl)?
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        variants.push(Variant {
            name: name.into(),
            seconds,
            cpu_s,
            cpu_speedup: 1.0,
            speedup: separate / seconds,
            amg_cold_setups: s.amg_cold_setups,
            amg_hot_setups: s.amg_hot_setups,
            setup_s: s.setup_s,
            problems_built: s.problems_built,
            newton_iterations: rows.iter().map(|r| r.newton_iterations).sum(),
            linear_iterations: rows.iter().map(|r| r.linear_iterations).sum(),
            cases_per_minute: 0.0,
            vs_one_worker: 0.0,
        });
        Ok(())
    };
    campaign("campaign, problem reused", false, 1)?;
    campaign("campaign, problem + AMG set-up reused", true, 1)?;
    if bench.jobs > 1 {
        campaign(
            &format!("campaign, reused, --jobs {}", bench.jobs),
            true,
            bench.jobs,
        )?;
    }
    if bench.ranks > 1 {
        variants.push(under_mpirun(bench, root, base, list, round, &exe)?);
    }
    Ok(variants)
}

/// Processor time (user + system) of this process and of its children that were waited for,
/// seconds (`/proc/self/stat`: utime, stime, cutime, cstime, in clock ticks of 1/100 s on
/// Linux); 0 where unavailable.
/// The campaign (problem and AMG set-up reused) under `mpirun -np ranks`, one case per rank:
/// timed end to end (MPI's start included), its figures from `campaign.json`.
fn under_mpirun(
    bench: &CampaignBench,
    root: &Path,
    base: &Path,
    list: &str,
    round: usize,
    exe: &Path,
) -> Result<Variant> {
    let file = root.join(format!("r{round}_mpirun.yaml"));
    let dir = root.join(format!("r{round}_mpirun"));
    std::fs::write(
        &file,
        format!(
            "base: {}\ndirectory: {}\nshare_solver: true\ngrid:\n  materials.0.young_modulus: [{list}]\n",
            base.display(),
            dir.display()
        ),
    )?;
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    let out = comm::launch::mpirun(bench.ranks)
        // the ranks share this process's cores: no binding of Open MPI's own (which would
        // place them outside a `taskset` and compare different cores), each rank's thread
        // pool sized by the ranks on the node (`sim::campaign`), not fixed at one
        .args(["--bind-to", "none"])
        .env_remove("RAYON_NUM_THREADS")
        .arg(exe)
        .args(["campaign", &file.to_string_lossy(), "-q"])
        .env("CI", "1")
        .output()
        .context("starting mpirun (Open MPI)")?;
    let seconds = started.elapsed().as_secs_f64();
    ensure!(
        out.status.success(),
        "mpirun -np {}: {}",
        bench.ranks,
        String::from_utf8_lossy(&out.stderr)
    );
    let s: CampaignSummary =
        serde_json::from_str(&std::fs::read_to_string(dir.join("campaign.json"))?)?;
    let rows: Vec<sim::campaign::CaseRow> = std::fs::read_to_string(&s.table_jsonl)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    Ok(Variant {
        name: format!("campaign, reused, mpirun -np {}", bench.ranks),
        seconds,
        cpu_s: cpu_seconds() - cpu_started,
        cpu_speedup: 1.0,
        speedup: 1.0,
        amg_cold_setups: s.amg_cold_setups,
        amg_hot_setups: s.amg_hot_setups,
        setup_s: s.setup_s,
        problems_built: s.problems_built,
        newton_iterations: rows.iter().map(|r| r.newton_iterations).sum(),
        linear_iterations: rows.iter().map(|r| r.linear_iterations).sum(),
        cases_per_minute: 0.0,
        vs_one_worker: 0.0,
    })
}

fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // fields after the command name, which is in parentheses and may hold spaces
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // state is field 3; utime..cstime are fields 14..=17, i.e. 11..=14 here
    (11..=14)
        .filter_map(|i| fields.get(i)?.parse::<f64>().ok())
        .sum::<f64>()
        / 100.0
}

impl std::fmt::Display for CampaignBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let [nx, ny, nz] = self.cells;
        writeln!(
            f,
            "campaign of {} neo-Hookean cases, {nx}x{ny}x{nz} Q1 cells ({} unknowns), {} load steps, on the {}, {} threads, best of {} rounds",
            self.cases, self.dofs, self.steps, if self.device == "cuda" { "GPU" } else { "CPU" }, self.threads, self.rounds
        )?;
        writeln!(
            f,
            "{:<44} {:>9} {:>9} {:>6} {:>8} {:>7} {:>8} {:>6} {:>6} {:>8} {:>7} {:>7} {:>7}",
            "variant",
            "seconds",
            "cases/min",
            "vs 1",
            "speedup",
            "cpu s",
            "cpu gain",
            "cold",
            "hot",
            "setup s",
            "meshes",
            "newton",
            "linear"
        )?;
        for v in &self.variants {
            writeln!(
                f,
                "{:<44} {:>9.3} {:>9.1} {:>5.2}x {:>7.2}x {:>7.2} {:>7.2}x {:>6} {:>6} {:>8.3} {:>7} {:>7} {:>7}",
                v.name,
                v.seconds,
                v.cases_per_minute,
                v.vs_one_worker,
                v.speedup,
                v.cpu_s,
                v.cpu_speedup,
                v.amg_cold_setups,
                v.amg_hot_setups,
                v.setup_s,
                v.problems_built,
                v.newton_iterations,
                v.linear_iterations
            )?;
        }
        Ok(())
    }
}
