//! `--restart FILE.h5[:STEP]`: a load path continued from a converged step of an earlier run
//! repeats the uninterrupted run bit for bit (same input, device and thread count).

use std::path::{Path, PathBuf};

use hexfem_end_to_end::{run, run_options, ScratchDir};
use sim::RunOutcome;

fn input(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../inputs/{name}.yaml"))
}

fn run_into(dir: &Path, name: &str, overrides: &[&str], restart: Option<String>) -> RunOutcome {
    run(
        &sim::RunOptions {
            restart,
            ..run_options(input(name), dir.to_owned()).with_overrides(overrides.iter().copied())
        },
        &sim::Quiet,
    )
    .unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

/// Every dataset of every step of `b` equals (bitwise) the same dataset of `a`.
fn assert_steps_identical(a: &Path, b: &Path, from: usize) -> usize {
    let (a, b) = (
        io::ResultsReader::open(a).unwrap(),
        io::ResultsReader::open(b).unwrap(),
    );
    let steps_a = a.steps().unwrap();
    let steps_b = b.steps().unwrap();
    assert_eq!(
        steps_b.first().unwrap().0,
        from,
        "the restart step comes first"
    );
    let mut compared = 0;
    for &(step, load_factor) in steps_b.iter().skip(1) {
        let (_, lf_a) = *steps_a.iter().find(|(s, _)| *s == step).unwrap();
        assert_eq!(load_factor.to_bits(), lf_a.to_bits(), "step {step}");
        for path in b.dataset_paths().unwrap() {
            if !path.starts_with(&format!("/steps/{step:06}/")) {
                continue;
            }
            let (_, va) = a.read_f64(&path).unwrap();
            let (_, vb) = b.read_f64(&path).unwrap();
            assert!(
                va.iter().zip(&vb).all(|(x, y)| x.to_bits() == y.to_bits()) && va.len() == vb.len(),
                "{path} differs"
            );
            compared += 1;
        }
    }
    assert_eq!(steps_a.len(), steps_b.len() + from, "same last step");
    compared
}

/// The twisted column (AMG with reused interpolation, six steps) restarted from steps 3 and 2.
#[test]
fn restarted_run_equals_the_uninterrupted_one() {
    let full_dir = ScratchDir::new("restart-full");
    let full = run_into(&full_dir, "twisting_column", &[], None);
    assert_eq!(full.steps, 6);
    let again_dir = ScratchDir::new("restart-again");
    let again = run_into(
        &again_dir,
        "twisting_column",
        &[],
        Some(format!("{}:3", full.h5.display())),
    );
    assert_eq!(again.steps, 6);
    assert!(assert_steps_identical(&full.h5, &again.h5, 3) >= 3 * 8);
    let summary = io::Summary::read(&again.summary).unwrap();
    assert_eq!(
        summary.run.restart,
        Some(format!("{}:3", full.h5.display())),
        "the summary names the restart"
    );
    let steps = summary.steps.unwrap();
    assert_eq!(steps.first().unwrap().step, 4);
    let full_summary = io::Summary::read(&full.summary).unwrap();
    for s in &steps {
        let f = &full_summary.steps.as_ref().unwrap()[s.step - 1];
        assert_eq!(s.residual_norms, f.residual_norms, "step {}", s.step);
        assert_eq!(s.linear_iterations, f.linear_iterations, "step {}", s.step);
    }

    // from step 2 as well
    let cut_dir = ScratchDir::new("restart-cut");
    let cut = run_into(
        &cut_dir,
        "twisting_column",
        &[],
        Some(format!("{}:2", full.h5.display())),
    );
    assert!(assert_steps_identical(&full.h5, &cut.h5, 2) > 0);
}

/// With a load curve (up to its peak and back) the load factor is not the path position: the
/// restart places the step by its pseudo-time and repeats the uninterrupted run.
#[test]
fn restart_on_a_load_curve_continues_at_the_steps_time() {
    let curve = [
        "loading.curve=[[0, 0], [1, 1], [2, 0.5]]",
        "loading.steps=6",
    ];
    let full_dir = ScratchDir::new("restart-curve-full");
    let full = run_into(&full_dir, "twisting_column", &curve, None);
    assert_eq!(full.steps, 6);
    let again_dir = ScratchDir::new("restart-curve-again");
    let again = run_into(
        &again_dir,
        "twisting_column",
        &curve,
        Some(format!("{}:4", full.h5.display())),
    );
    assert_eq!(again.steps, 6);
    assert!(assert_steps_identical(&full.h5, &again.h5, 4) > 0);
    // the file records each step's time beside its load factor: step 4 of 6 is at t = 4/3
    let reader = io::ResultsReader::open(&full.h5).unwrap();
    let time = reader.step_attribute(4, "time").unwrap().unwrap();
    assert!((time - 4.0 / 3.0).abs() < 1e-12, "time {time}");
}

/// Restart errors: a step the file lacks, another mesh.
#[test]
fn restart_errors_name_the_problem() {
    let dir = ScratchDir::new("restart-errors");
    let first = run_into(&dir, "cantilever_q1", &["loading.steps=2"], None);
    let other = ScratchDir::new("restart-errors-2");
    let attempt = |overrides: &[&str], spec: String| {
        run(
            &run_options(input("cantilever_q1"), other.to_path_buf())
                .with_overrides(overrides.iter().copied())
                .with_restart(spec),
            &sim::Quiet,
        )
        .unwrap_err()
        .to_string()
    };
    let e = attempt(&["loading.steps=2"], format!("{}:7", first.h5.display()));
    assert!(e.contains("has no step 7") && e.contains("0, 1, 2"), "{e}");
    let e = attempt(
        &["mesh.box.cells=[20, 2, 2]"],
        format!("{}", first.h5.display()),
    );
    assert!(e.contains("mesh"), "{e}");
}

/// A change made to a results file.
type Tamper<'a> = Box<dyn FnOnce(&hdf5::File) + 'a>;

/// A copy of `h5` (as `tag.h5` in `dir`) changed by `tamper` through the HDF5 library.
fn tampered(dir: &Path, h5: &Path, tag: &str, tamper: impl FnOnce(&hdf5::File)) -> PathBuf {
    let copy = dir.join(format!("{tag}.h5"));
    std::fs::copy(h5, &copy).unwrap();
    let file = hdf5::File::open_rw(&copy).unwrap();
    tamper(&file);
    file.close().unwrap();
    copy
}

/// `--restart` continues only from a converged state the run wrote: attributes that are not
/// finite or contradict the load path, a displacement out of equilibrium, not finite or not
/// float64, and renumbered steps are refused, naming the file and the step; the untouched copy
/// still restarts.
#[test]
fn restart_refuses_a_state_that_is_not_a_converged_step() {
    let column = ["mesh.box.cells=[2, 2, 6]", "loading.steps=3"];
    let dir = ScratchDir::new("restart-tampered");
    let first = run_into(&dir, "twisting_column", &column, None);
    assert_eq!(first.steps, 3);
    let attempt = |spec: String| {
        let other = ScratchDir::new("restart-tampered-out");
        run(
            &sim::RunOptions::new(input("twisting_column"))
                .with_restart(spec)
                .with_output_dir(other.to_path_buf())
                .with_overrides(column),
            &sim::Quiet,
        )
        .map(|o| o.steps)
        .map_err(|e| format!("{e:#}"))
    };
    let step = |file: &hdf5::File| file.group("steps/000002").unwrap();
    let set_attr = |value: f64| {
        move |file: &hdf5::File| {
            step(file)
                .attr("load_factor")
                .unwrap()
                .write_scalar(&value)
                .unwrap()
        }
    };
    let displacement = |file: &hdf5::File| -> Vec<f64> {
        step(file)
            .dataset("displacement")
            .unwrap()
            .read_raw::<f64>()
            .unwrap()
    };
    let rewrite = |change: fn(&mut Vec<f64>)| {
        move |file: &hdf5::File| {
            let mut u = displacement(file);
            change(&mut u);
            step(file)
                .dataset("displacement")
                .unwrap()
                .write_raw(&u)
                .unwrap();
        }
    };
    let float32 = |file: &hdf5::File| {
        let u: Vec<f32> = displacement(file).iter().map(|&v| v as f32).collect();
        let group = step(file);
        group.unlink("displacement").unwrap();
        group
            .new_dataset::<f32>()
            .shape([u.len() / 3, 3])
            .create("displacement")
            .unwrap()
            .write_raw(&u)
            .unwrap();
    };
    let next_increment = |value: f64| {
        move |file: &hdf5::File| {
            step(file)
                .attr("next_increment")
                .unwrap()
                .write_scalar(&value)
                .unwrap()
        }
    };
    let renumbered = |file: &hdf5::File| {
        file.relink("steps/000002", "steps/000007").unwrap();
    };
    let cases: Vec<(&str, Tamper<'_>, usize, &str)> = vec![
        ("nan", Box::new(set_attr(f64::NAN)), 2, "load_factor = NaN"),
        ("five", Box::new(set_attr(5.0)), 2, "has the load factor 5"),
        (
            "minus",
            Box::new(set_attr(-1.0)),
            2,
            "has the load factor -1",
        ),
        (
            "scaled",
            Box::new(rewrite(|u| u.iter_mut().for_each(|v| *v *= 1.01))),
            2,
            "is not in equilibrium",
        ),
        (
            "flipped",
            Box::new(rewrite(|u| {
                u[7] = f64::from_bits(u[7].to_bits() ^ (1 << 62))
            })),
            2,
            "",
        ),
        (
            "hole",
            Box::new(rewrite(|u| u[4] = f64::NAN)),
            2,
            "not finite (NaN at node 1)",
        ),
        ("float32", Box::new(float32), 2, "float64"),
        (
            "tiny-increment",
            Box::new(next_increment(1e-320)),
            2,
            "has the next increment 1e-320",
        ),
        (
            "large-increment",
            Box::new(next_increment(0.5)),
            2,
            "the nominal 1 / loading.steps",
        ),
        ("renumbered", Box::new(renumbered), 7, "consecutive steps"),
    ];
    for (tag, tamper, at, needle) in cases {
        let copy = tampered(&dir, &first.h5, tag, tamper);
        let e = attempt(format!("{}:{at}", copy.display())).unwrap_err();
        assert!(
            e.contains(&format!("--restart {}: step {at} ", copy.display())) && e.contains(needle),
            "{tag}: {e}"
        );
    }
    // the untouched file continues
    assert_eq!(attempt(format!("{}:2", first.h5.display())), Ok(3));
}
