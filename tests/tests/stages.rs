//! Where a run's time goes (issue 26): the summary's stage table holds at least 95 % of the
//! wall time measured around the library call, with every stage of a Newton run with AMG.

use std::path::Path;
use std::time::Instant;

use hexfem_end_to_end::{run, run_options, ScratchDir};
use sim::stages;

fn input(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../inputs/{name}.yaml"))
}

/// The neo-Hookean block (4 load steps, CG with AMG) timed from just before `sim::run`: the
/// named stages hold at least 95 % of the time the call took; the stages and `other` add up
/// to the table's wall time, which is within the call; the per-step stages count what the
/// steps' records count; the summary holds the same table; the table renders.
#[test]
fn the_stage_table_holds_at_least_95_percent_of_the_run() {
    let dir = ScratchDir::new("stages");
    let options = run_options(input("neo_hookean_block"), dir.path())
        .with_overrides(["linear_solver.method=cg_amg", "mesh.box.cells=[12,12,12]"]);
    let started = Instant::now();
    let outcome = run(&options.with_process_started(started), &sim::Quiet).unwrap();
    let call_s = started.elapsed().as_secs_f64();
    let table = outcome.figures.stages.clone().expect("a stage table");
    assert_eq!(table.ranks, 1);
    let named: f64 = table
        .stages
        .iter()
        .filter(|r| r.name != stages::OTHER)
        .map(|r| r.mean_s)
        .sum();
    let text = hexfem::stage_table::render(&table);
    assert!(
        named >= 0.95 * call_s,
        "the stages hold {named:.4} s of the call's {call_s:.4} s:\n{text}"
    );
    assert!(table.coverage() >= 0.95, "{text}");
    assert!(table.wall.mean_s <= call_s, "{text}");
    let all: f64 = table.stages.iter().map(|r| r.mean_s).sum();
    assert!((all - table.wall.mean_s).abs() <= 1e-9, "{text}");
    assert_eq!(
        table.stages.last().map(|r| r.name.as_str()),
        Some(stages::OTHER)
    );
    for r in &table.stages {
        assert_eq!((r.min_s, r.max_s), (r.mean_s, r.mean_s), "{}", r.name);
    }

    // the steps' own records: one solve and one set-up per Newton iteration
    let summary = io::Summary::read(&outcome.summary).unwrap();
    assert_eq!(summary.stages.as_ref(), Some(&table));
    let steps = summary.steps.unwrap();
    assert_eq!(steps.len(), 4);
    let newton: usize = steps.iter().map(|s| s.newton_iterations).sum();
    let count = |name: &str| table.row(name).map_or(0, |r| r.count as usize);
    assert_eq!(count(stages::SOLVE), newton, "{text}");
    let setups = [stages::AMG_COLD, stages::AMG_RENEWAL, stages::AMG_HOT];
    assert_eq!(setups.iter().map(|s| count(s)).sum::<usize>(), newton);
    assert!(count(stages::AMG_COLD) >= 1, "{text}");
    // the step's converged state, and one more assembly per step than iterations (the test of
    // the converged state) besides each step's loads
    assert_eq!(count(stages::CONVERGED_STATE), 4);
    assert_eq!(count(stages::ASSEMBLY), newton + 2 * 4, "{text}");
    for stage in [
        stages::CONFIGURATION,
        stages::MESH,
        stages::PROBLEM,
        stages::SOLVER,
        stages::OUTPUT,
        stages::UPLOADS,
        stages::NEAR_NULL_SPACE,
        stages::LINE_SEARCH,
    ] {
        assert!(table.row(stage).is_some(), "{stage} missing:\n{text}");
    }
    // the set-up and solve seconds are the records' own
    let recorded: f64 = steps
        .iter()
        .flat_map(|s| s.linear_solver.as_array().unwrap().iter())
        .map(|it| it["linear"]["solve_s"].as_f64().unwrap())
        .sum();
    let solve = table.row(stages::SOLVE).unwrap().mean_s;
    assert!(
        (solve - recorded).abs() <= 1e-9 * recorded.max(1.0),
        "{solve} {recorded}"
    );
    assert!(text.contains("the stages hold"), "{text}");
}
