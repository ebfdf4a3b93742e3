//! Every input in inputs/ runs through `hexfem run`'s code path; results are checked against
//! physics where an exact or classical answer exists, and read back from the HDF5 file.

use std::path::{Path, PathBuf};

use hexfem_end_to_end::{run, run_options, ScratchDir};
use serde_json::Value;
use sim::RunOutcome;

fn inputs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs")
}

/// Runs `inputs/<name>.yaml` into a folder of its own (`tag` keeps parallel tests apart), removed
/// when the returned [`ScratchDir`] is dropped.
fn run_input(tag: &str, name: &str, overrides: &[&str]) -> (ScratchDir, RunOutcome, Value) {
    let out = ScratchDir::new(&format!("inputs-{tag}-{name}"));
    let outcome = run(
        &run_options(inputs_dir().join(format!("{name}.yaml")), out.to_path_buf())
            .with_overrides(overrides.iter().copied()),
        &sim::Quiet,
    )
    .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(&outcome.summary).unwrap()).unwrap();
    assert_eq!(summary["status"]["state"], "completed", "{name}");
    (out, outcome, summary)
}

/// Node coordinates and the displacement of the last step, read back from the HDF5 file.
fn last_displacement(outcome: &RunOutcome) -> (Vec<[f64; 3]>, Vec<[f64; 3]>) {
    let file = io::ResultsReader::open(&outcome.h5).unwrap();
    let rows = |path: &str| -> Vec<[f64; 3]> {
        let (shape, values) = file
            .read_f64(path)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(shape[1], 3, "{path}");
        values.chunks_exact(3).map(|r| [r[0], r[1], r[2]]).collect()
    };
    (
        rows("mesh/coordinates"),
        rows(&format!("steps/{:06}/displacement", outcome.steps)),
    )
}

/// Displacement of the node at `x` (which must be a mesh node).
fn displacement_at(coords: &[[f64; 3]], u: &[[f64; 3]], x: [f64; 3]) -> [f64; 3] {
    let node = coords
        .iter()
        .position(|c| (0..3).all(|d| (c[d] - x[d]).abs() < 1e-12))
        .unwrap_or_else(|| panic!("no node at {x:?}"));
    u[node]
}

/// Euler-Bernoulli bending plus Timoshenko shear deflection of the 10 x 1 x 1 cantilever
/// (E = 1e4, nu = 0.3, end load 1): F L^3 / (3 E I) + F L / (kappa G A), kappa = 5/6.
fn beam_tip_deflection() -> f64 {
    let (e, nu, l, f): (f64, f64, f64, f64) = (1.0e4, 0.3, 10.0, 1.0);
    let i = 1.0 / 12.0;
    let g = e / (2.0 * (1.0 + nu));
    f * l.powi(3) / (3.0 * e * i) + f * l / (5.0 / 6.0 * g)
}

#[test]
fn cantilever_q2_matches_beam_theory() {
    let (_dir, outcome, summary) = run_input("beam", "cantilever_q2", &[]);
    let (coords, u) = last_displacement(&outcome);
    let tip = displacement_at(&coords, &u, [10.0, 0.5, 0.5]);
    let exact = beam_tip_deflection();
    // 3D clamping (no warping freedom) and Poisson effects make the solid a little stiffer
    assert!(
        (-tip[2] - exact).abs() < 0.02 * exact,
        "tip {} vs beam {exact}",
        -tip[2]
    );
    // linear material: one Newton iteration
    assert_eq!(summary["steps"][0]["newton_iterations"], 1);
}

#[test]
fn cantilever_q1_is_close_to_beam_theory_but_stiffer() {
    let (_dir, outcome, _) = run_input("beam", "cantilever_q1", &[]);
    let (coords, u) = last_displacement(&outcome);
    let tip = -displacement_at(&coords, &u, [10.0, 0.5, 0.5])[2];
    let exact = beam_tip_deflection();
    // fully integrated trilinear hexahedra lock mildly in bending: stiffer, within 6 %
    assert!(
        tip < exact && tip > 0.94 * exact,
        "tip {tip} vs beam {exact}"
    );
}

/// Uniaxial dead load on a compressible neo-Hookean block on rollers: the deformation
/// F = diag(a, a, c) is homogeneous, which trilinear elements represent exactly; solve
/// P_xx = mu (a - 1/a) + lambda ln(a^2 c) / a = 0, P_zz = mu (c - 1/c) + lambda ln(a^2 c) / c = t.
#[test]
fn neo_hookean_block_matches_the_homogeneous_solution() {
    let (_dir, outcome, summary) = run_input("block", "neo_hookean_block", &[]);
    let (e, nu, t) = (10.0, 0.3, 3.0);
    let (lambda, mu) = (
        e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)),
        e / (2.0 * (1.0 + nu)),
    );
    let (mut a, mut c) = (1.0f64, 1.0f64);
    for _ in 0..50 {
        let lnj = (a * a * c).ln();
        let r = [
            mu * (a - 1.0 / a) + lambda * lnj / a,
            mu * (c - 1.0 / c) + lambda * lnj / c - t,
        ];
        let j11 = mu * (1.0 + 1.0 / (a * a)) + lambda * (2.0 / (a * a) - lnj / (a * a));
        let j12 = lambda / (a * c);
        let j21 = 2.0 * lambda / (a * c);
        let j22 = mu * (1.0 + 1.0 / (c * c)) + lambda * (1.0 / (c * c) - lnj / (c * c));
        let det = j11 * j22 - j12 * j21;
        a -= (j22 * r[0] - j12 * r[1]) / det;
        c -= (j11 * r[1] - j21 * r[0]) / det;
    }
    let (coords, u) = last_displacement(&outcome);
    let corner = displacement_at(&coords, &u, [1.0, 1.0, 1.0]);
    for (got, want) in corner.iter().zip([a - 1.0, a - 1.0, c - 1.0]) {
        assert!(
            (got - want).abs() < 1e-7,
            "corner {corner:?} vs ({}, {}, {})",
            a - 1.0,
            a - 1.0,
            c - 1.0
        );
    }
    // Newton converges quadratically: no step needs more than 6 iterations
    for step in summary["steps"].as_array().unwrap() {
        assert!(step["newton_iterations"].as_u64().unwrap() <= 6, "{step}");
    }
}

/// The twisted column carries no external load, so the support reactions at the clamped bottom and
/// the twisted top balance: zero net force and zero net moment about the deformed positions, with
/// a torque that is not zero. This checks the solution, not the prescribed values.
#[test]
fn twisting_column_reactions_are_in_equilibrium() {
    let (_dir, outcome, summary) = run_input("twist", "twisting_column", &[]);
    assert_eq!(outcome.steps, 6);
    let (coords, u) = last_displacement(&outcome);
    let file = io::ResultsReader::open(&outcome.h5).unwrap();
    let reactions: Vec<[f64; 3]> = file
        .read_f64(&format!("steps/{:06}/reaction", outcome.steps))
        .unwrap()
        .1
        .chunks_exact(3)
        .map(|r| [r[0], r[1], r[2]])
        .collect();
    let (mut force, mut moment, mut top_torque, mut scale) =
        ([0.0f64; 3], [0.0f64; 3], 0.0, 0.0f64);
    for ((x, u), r) in coords.iter().zip(&u).zip(&reactions) {
        let p = [x[0] + u[0], x[1] + u[1], x[2] + u[2]];
        let m = [
            p[1] * r[2] - p[2] * r[1],
            p[2] * r[0] - p[0] * r[2],
            p[0] * r[1] - p[1] * r[0],
        ];
        for d in 0..3 {
            force[d] += r[d];
            moment[d] += m[d];
        }
        if x[2] == 4.0 {
            top_torque += m[2];
        }
        scale = scale.max(r.iter().fold(0.0f64, |a, v| a.max(v.abs())));
    }
    // Saint-Venant torsion of the unit square section, T = G J theta / L with J = 0.1406 a^4,
    // G = mu = 10, theta = 120 degrees, L = 4; finite strain changes it by a few per cent
    let saint_venant = 10.0 * 0.1406 * 120f64.to_radians() / 4.0;
    assert!(
        (top_torque.abs() - saint_venant).abs() < 0.15 * saint_venant,
        "torque {top_torque} vs {saint_venant}"
    );
    for d in 0..3 {
        assert!(
            force[d].abs() < 1e-6 * scale,
            "net force {force:?} (scale {scale})"
        );
        assert!(
            moment[d].abs() < 1e-6 * top_torque.abs(),
            "net moment {moment:?} vs torque {top_torque}"
        );
    }
    // load factors 1/6, 2/6, ..., 1 and a strain energy that grows with the twist
    let steps = summary["steps"].as_array().unwrap();
    assert_eq!(steps.last().unwrap()["load_factor"].as_f64().unwrap(), 1.0);
    let energies: Vec<f64> = steps
        .iter()
        .map(|s| s["strain_energy"].as_f64().unwrap())
        .collect();
    assert!(energies.windows(2).all(|w| w[1] > w[0]), "{energies:?}");
    // the summary's reaction totals per set: the top's torque as computed above, and the
    // bottom's force and moment balance the top's
    let totals = &steps.last().unwrap()["reactions"];
    let get = |set: &str, key: &str, d: usize| totals[set][key][d].as_f64().unwrap();
    assert!((get("zmax", "moment", 2) - top_torque).abs() < 1e-9 * top_torque.abs());
    for d in 0..3 {
        assert!((get("zmax", "force", d) + get("zmin", "force", d)).abs() < 1e-6 * scale);
        assert!(
            (get("zmax", "moment", d) + get("zmin", "moment", d)).abs() < 1e-6 * top_torque.abs()
        );
    }
}

/// The Gmsh-meshed Cook membrane: the AMG and the direct solver give the same Newton path.
#[test]
fn cook_membrane_from_gmsh_agrees_across_linear_solvers() {
    let (_dir_amg, amg, _) = run_input("cook", "cook_membrane", &["linear_solver.rtol=1e-12"]);
    let (_dir_direct, direct, _) = run_input(
        "cook-direct",
        "cook_membrane",
        &["linear_solver.method=direct", "output.name=cook_direct"],
    );
    let (coords, ua) = last_displacement(&amg);
    let (_, ud) = last_displacement(&direct);
    let tip = displacement_at(&coords, &ua, [48.0, 60.0, 0.0]);
    assert!(
        tip[1] > 0.5,
        "the tip moves up under the upward shear: {tip:?}"
    );
    let scale = tip[1].abs();
    for (a, d) in ua.iter().zip(&ud) {
        for k in 0..3 {
            assert!((a[k] - d[k]).abs() < 1e-8 * scale, "{a:?} vs {d:?}");
        }
    }
}

/// The rubber pad bonded to rigid plates and squeezed by 10 %: with `formulation: projected` its
/// Q1 cells carry the plate force of Q2 cells on the same nodes to within 8 % (the bonded edges
/// are singular, which Q1 resolves slowly), where displacement-based Q1 is nearly twice as stiff
/// (locked); the nearly incompressible rubber keeps its volume (cell-averaged J within 0.5 % of 1,
/// below it: compressed).
#[test]
fn rubber_block_does_not_lock_and_keeps_its_volume() {
    let name = "rubber_block_incompressible";
    let plate = |o: &RunOutcome| -o.figures.probes["plate.fz"];
    let (_dir, outcome, summary) = run_input("rubber", name, &[]);
    let (_dir_q2, q2, _) = run_input(
        "rubber-q2",
        name,
        &["mesh.box.order=2", "mesh.box.cells=[4, 4, 4]"],
    );
    let (_dir_locked, locked, _) = run_input("rubber-locked", name, &["formulation=displacement"]);
    let (force, reference, stiff) = (plate(&outcome), plate(&q2), plate(&locked));
    assert!(
        (force - reference).abs() < 0.08 * reference,
        "Q1 projected {force} N vs Q2 {reference} N"
    );
    assert!(
        stiff > 1.5 * reference,
        "Q1 displacement {stiff} N vs Q2 {reference} N"
    );
    let file = io::ResultsReader::open(&outcome.h5).unwrap();
    let (_, j) = file
        .read_f64(&format!("steps/{:06}/jacobian", outcome.steps))
        .unwrap();
    // equal cells: the mean of the cell averages is the volume ratio of the pad
    let mean = j.iter().sum::<f64>() / j.len() as f64;
    assert!(mean < 1.0 && mean > 0.995, "mean J {mean}");
    for step in summary["steps"].as_array().unwrap() {
        assert!(step["newton_iterations"].as_u64().unwrap() <= 12, "{step}");
    }
}

/// `hexfem check` into a directory that holds an earlier run's results warns that `run` would
/// be refused there without `--overwrite`, naming the directory and the files (issue 30); the
/// report carries them. An empty directory gets no warning.
#[test]
fn check_warns_where_run_would_need_overwrite() {
    let input = inputs_dir().join("cantilever_q1.yaml");
    let dir = ScratchDir::new("inputs-check-overwrite");
    let report = sim::check::check(&input, &[], Some(&dir)).unwrap();
    assert!(report.earlier_results.is_empty());
    let text = hexfem_end_to_end::check(&input, &[], Some(&dir)).unwrap();
    assert!(!text.contains("--overwrite"), "{text}");
    run(&run_options(&input, dir.to_path_buf()), &sim::Quiet).unwrap();
    let report = sim::check::check(&input, &[], Some(&dir)).unwrap();
    assert!(
        report
            .earlier_results
            .contains(&dir.join("cantilever_q1.h5")),
        "{:?}",
        report.earlier_results
    );
    let text = hexfem_end_to_end::check(&input, &[], Some(&dir)).unwrap();
    let warning = text
        .lines()
        .find(|l| l.trim_start().starts_with("warning") && l.contains("already holds"))
        .unwrap_or_else(|| panic!("no warning:\n{text}"));
    assert!(
        warning.contains(&dir.display().to_string())
            && warning.contains("--overwrite")
            && warning.contains("cantilever_q1.h5"),
        "{warning}"
    );
    // and `run` is refused there, as the warning says
    let refused = run(
        &run_options(&input, dir.to_path_buf()).with_overwrite(false),
        &sim::Quiet,
    )
    .unwrap_err();
    assert!(
        format!("{refused:#}").contains("--overwrite"),
        "{refused:#}"
    );
}

/// Every input in the folder loads, checks and runs (the ones above verify numbers).
#[test]
fn every_input_runs() {
    let mut names: Vec<String> = std::fs::read_dir(inputs_dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "yaml")
                .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in &names {
        let text = hexfem_end_to_end::check(&inputs_dir().join(format!("{name}.yaml")), &[], None)
            .unwrap();
        assert!(text.contains("valid"), "{text}");
        let (_dir, outcome, summary) = run_input("all", name, &[]);
        assert!(outcome.steps >= 1);
        assert_eq!(
            summary["steps"].as_array().unwrap().len(),
            outcome.steps,
            "{name}"
        );
        // the XDMF names the undeformed step 0 and one grid per converged step
        let xdmf = std::fs::read_to_string(&outcome.xdmf).unwrap();
        assert_eq!(
            xdmf.matches("<Grid Name=\"step_").count(),
            outcome.steps + 1,
            "{name}"
        );
    }
}

/// The GPU's Newton loop takes cells with different materials and a follower pressure:
/// `device: cuda` is not refused for either (where no GPU is usable, the only error is that one,
/// at the `device` key), and `device: auto` accepts both.
#[test]
fn device_cuda_takes_several_materials_and_a_follower_pressure() {
    // two cells in two volume groups with different materials (MSH 2.2)
    let dir = ScratchDir::new("inputs-device-two-materials");
    let mut nodes = String::new();
    for k in 0..2 {
        for j in 0..2 {
            for i in 0..3 {
                nodes += &format!("{} {i} {j} {k}\n", 1 + i + 3 * j + 6 * k);
            }
        }
    }
    let msh = format!(
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n3\n2 1 \"left\"\n3 2 \"a\"\n3 3 \"b\"\n$EndPhysicalNames\n\
         $Nodes\n12\n{nodes}$EndNodes\n$Elements\n3\n1 3 2 1 1 1 4 10 7\n\
         2 5 2 2 2 1 2 5 4 7 8 11 10\n3 5 2 3 3 2 3 6 5 8 9 12 11\n$EndElements\n"
    );
    std::fs::write(dir.path().join("two.msh"), msh).unwrap();
    let input = dir.path().join("two.yaml");
    std::fs::write(
        &input,
        "mesh:\n  gmsh: { file: two.msh }\n\
         materials:\n  - { cells: a, model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }\n\
         \x20 - { cells: b, model: neo_hookean, young_modulus: 20.0, poisson_ratio: 0.3 }\n\
         boundary:\n  dirichlet: [{ set: left, x: 0.0, y: 0.0, z: 0.0 }]\n",
    )
    .unwrap();
    let accepts_on_cuda = |input: &std::path::Path, overrides: Vec<String>, feature: &str| {
        let mut with_cuda = vec!["device=cuda".to_string()];
        with_cuda.extend(overrides.iter().cloned());
        if let Err(e) = hexfem_end_to_end::check(input, &with_cuda, None) {
            let message = format!("{e:#}");
            assert!(
                !message.contains("does not support this problem") && !message.contains(feature),
                "{feature}: {message}"
            );
        }
        let mut with_auto = vec!["device=auto".to_string()];
        with_auto.extend(overrides);
        let text = hexfem_end_to_end::check(input, &with_auto, None).unwrap();
        assert!(text.contains("valid"), "{feature}: {text}");
    };
    accepts_on_cuda(&input, vec![], "different materials");
    let block = inputs_dir().join("neo_hookean_block.yaml");
    let pressure = "boundary.pressure=[{set: zmax, value: 0.1}]".to_string();
    accepts_on_cuda(&block, vec![pressure], "follower pressure");
}
