//! The strain and principal-stress output fields against exact states: a block in homogeneous
//! uniaxial stress (small strain for the linear model, Green-Lagrange and logarithmic strains of
//! the stretches the run reached for neo-Hookean), written only when `output.fields` lists them.

use std::path::Path;

use hexfem_end_to_end::{run, run_text, run_text_error, step_dataset, ScratchDir};
use io::ResultsReader;
use sim::run::RunOutcome;
use sim::RunOptions;

/// A 2 x 1 x 1 block on symmetry planes (xmin: x = 0, ymin: y = 0, zmin: z = 0) pulled by a
/// dead traction `sigma` on xmax: homogeneous uniaxial stress, exact in Q1 and Q2.
fn block(model: &str, sigma: f64, fields: &str, order: &str) -> String {
    format!(
        "mesh: {{ box: {{ cells: [2, 2, 2], lower: [0, 0, 0], upper: [2, 1, 1], order: {order} }} }}
materials: [{{ model: {model}, young_modulus: 1000.0, poisson_ratio: 0.3 }}]
boundary:
  dirichlet: [{{ set: xmin, x: 0.0 }}, {{ set: ymin, y: 0.0 }}, {{ set: zmin, z: 0.0 }}]
  traction: [{{ set: xmax, value: [{sigma}, 0.0, 0.0] }}]
linear_solver: {{ rtol: 1.0e-13 }}
newton: {{ rtol: 1.0e-13 }}
output: {{ fields: {fields} }}
"
    )
}

/// The run of `text` as `dir/name.yaml`, its files in `dir`.
fn run_block(dir: &Path, name: &str, text: &str) -> RunOutcome {
    run_text(dir, name, text, dir).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The rows of `dataset` of the last step.
fn rows(outcome: &RunOutcome, dataset: &str) -> Vec<Vec<f64>> {
    let (shape, values) = step_dataset(outcome, outcome.steps, dataset);
    let width = shape.get(1).copied().unwrap_or(1);
    values.chunks(width).map(<[f64]>::to_vec).collect()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{what}: {got:?} vs {want:?}");
    }
}

/// Linear: strain = sigma / E (1, -nu, -nu), the principal stresses (sigma, 0, 0) in every
/// cell and at every node, von Mises sigma; Green-Lagrange adds the square of the stretch.
#[test]
fn uniaxial_stress_block_has_exact_strains_and_principal_stresses() {
    let dir = ScratchDir::new("fields-uniaxial");
    let (e, nu, sigma) = (1000.0, 0.3, 10.0);
    for kind in ["1", "2"] {
        let outcome = run_block(
            &dir,
            &format!("linear_{kind}"),
            &block(
                "linear",
                sigma,
                "[displacement, cauchy_stress, von_mises, strain, green_lagrange_strain, \
                 logarithmic_strain, principal_stress, nodal_principal_stress]",
                kind,
            ),
        );
        let eps = [sigma / e, -nu * sigma / e, -nu * sigma / e];
        let diag = |d: [f64; 3]| vec![d[0], 0.0, 0.0, 0.0, d[1], 0.0, 0.0, 0.0, d[2]];
        for strain in rows(&outcome, "strain") {
            assert_close(&strain, &diag(eps), 1e-14, &format!("{kind} strain"));
        }
        for gl in rows(&outcome, "green_lagrange_strain") {
            let want = eps.map(|x| x + 0.5 * x * x);
            assert_close(&gl, &diag(want), 1e-14, &format!("{kind} Green-Lagrange"));
        }
        for log in rows(&outcome, "logarithmic_strain") {
            let want = eps.map(f64::ln_1p);
            assert_close(&log, &diag(want), 1e-14, &format!("{kind} logarithmic"));
        }
        for p in rows(&outcome, "principal_stress") {
            assert_close(&p, &[sigma, 0.0, 0.0], 1e-10, &format!("{kind} principal"));
        }
        for p in rows(&outcome, "nodal_principal_stress") {
            assert_close(
                &p,
                &[sigma, 0.0, 0.0],
                1e-10,
                &format!("{kind} nodal principal"),
            );
        }
        for vm in rows(&outcome, "von_mises") {
            assert_close(&vm, &[sigma], 1e-10, &format!("{kind} von Mises"));
        }
    }
}

/// Neo-Hookean at 20 % stretch: the strains are those of the stretches the displacement shows
/// (`E = (l^2 - 1) / 2`, `ln V = ln l`, and the model's strain is Green-Lagrange); the principal
/// stresses are the Cauchy stress's diagonal (sigma_xx, 0, 0).
#[test]
fn finite_stretch_strains_are_those_of_the_stretches() {
    let dir = ScratchDir::new("fields-neo");
    let outcome = run_block(
        &dir,
        "neo",
        &block(
            "neo_hookean",
            150.0,
            "[displacement, cauchy_stress, strain, green_lagrange_strain, logarithmic_strain, \
             principal_stress]",
            "1",
        ),
    );
    // the stretches: u = (l - 1) X at the far corner (2, 1, 1)
    let results = ResultsReader::open(&outcome.h5).unwrap();
    let (_, x) = results.read_f64("mesh/coordinates").unwrap();
    let u = rows(&outcome, "displacement");
    let corner = x
        .chunks(3)
        .position(|p| p == [2.0, 1.0, 1.0])
        .expect("the far corner");
    let stretch = [
        1.0 + u[corner][0] / 2.0,
        1.0 + u[corner][1],
        1.0 + u[corner][2],
    ];
    assert!(stretch[0] > 1.1, "{stretch:?}");
    let diag = |d: [f64; 3]| vec![d[0], 0.0, 0.0, 0.0, d[1], 0.0, 0.0, 0.0, d[2]];
    let gl = diag(stretch.map(|l| 0.5 * (l * l - 1.0)));
    for (model, green) in rows(&outcome, "strain")
        .iter()
        .zip(rows(&outcome, "green_lagrange_strain"))
    {
        assert_eq!(model, &green);
        assert_close(&green, &gl, 1e-12, "Green-Lagrange");
    }
    for log in rows(&outcome, "logarithmic_strain") {
        assert_close(&log, &diag(stretch.map(f64::ln)), 1e-12, "logarithmic");
    }
    for (p, s) in rows(&outcome, "principal_stress")
        .iter()
        .zip(rows(&outcome, "cauchy_stress"))
    {
        assert!(s[0] > 100.0, "{s:?}");
        assert_close(p, &[s[0], 0.0, 0.0], 1e-9 * s[0], "principal");
    }
}

/// Without the new fields listed, a step holds exactly the datasets it held before them.
#[test]
fn default_fields_leave_the_new_ones_out() {
    let dir = ScratchDir::new("fields-default");
    let text = block("linear", 1.0, "null", "1").replace("output: { fields: null }\n", "");
    let outcome = run_block(&dir, "plain", &text);
    let results = ResultsReader::open(&outcome.h5).unwrap();
    let step = format!("steps/{:06}/", outcome.steps);
    let mut names: Vec<String> = results
        .dataset_paths()
        .unwrap()
        .into_iter()
        .filter_map(|p| {
            p.trim_start_matches('/')
                .strip_prefix(&step)
                .map(str::to_owned)
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "cauchy_stress",
            "displacement",
            "energy_density",
            "jacobian",
            "nodal_cauchy_stress",
            "nodal_von_mises",
            "reaction",
            "von_mises"
        ]
    );
}

/// Probes of fields on the uniaxial block: at a point the cell's stress, strain and principal
/// values; over a set the least, largest and mean values (cell and nodal fields); the globals
/// of the cell fields. Reactions are reported for the constrained sets only.
#[test]
fn probes_read_fields_at_points_over_sets_and_globally() {
    let dir = ScratchDir::new("fields-probes");
    let (e, nu, sigma) = (1000.0, 0.3, 10.0);
    let text = block("linear", sigma, "[displacement]", "1").replace(
        "output: { fields: [displacement] }",
        "output:
  fields: [displacement]
  probes:
    points: [{ name: mid, at: [1.3, 0.4, 0.7], fields: [displacement, cauchy_stress, von_mises, strain, principal_stress] }]
    sets: [{ set: xmax, fields: [von_mises, nodal_von_mises, jacobian] }]
    globals: [max_von_mises, max_principal_stress, min_principal_stress, min_jacobian, strain_energy]",
    );
    let outcome = run_block(&dir, "probed", &text);
    let table = io::ProbeTable::read(outcome.probes_csv.as_ref().unwrap()).unwrap();
    let last = |c: &str| {
        *table
            .column(c)
            .unwrap_or_else(|| panic!("no column {c}: {:?}", table.columns))
            .last()
            .unwrap()
    };
    let eps = sigma / e;
    let j = (1.0 + eps) * (1.0 - nu * eps) * (1.0 - nu * eps);
    for (column, want, tol) in [
        ("mid.ux", 1.3 * eps, 1e-13),
        ("mid.uy", -0.4 * nu * eps, 1e-13),
        ("mid.cauchy_stress.xx", sigma, 1e-10),
        ("mid.cauchy_stress.yy", 0.0, 1e-10),
        ("mid.cauchy_stress.xy", 0.0, 1e-10),
        ("mid.von_mises", sigma, 1e-10),
        ("mid.strain.xx", eps, 1e-14),
        ("mid.strain.zz", -nu * eps, 1e-14),
        ("mid.principal_stress.1", sigma, 1e-10),
        ("mid.principal_stress.3", 0.0, 1e-10),
        ("xmax.von_mises.min", sigma, 1e-10),
        ("xmax.von_mises.max", sigma, 1e-10),
        ("xmax.von_mises.mean", sigma, 1e-10),
        ("xmax.nodal_von_mises.mean", sigma, 1e-10),
        ("xmax.jacobian.min", j, 1e-13),
        ("max_von_mises", sigma, 1e-10),
        ("max_principal_stress", sigma, 1e-10),
        ("min_principal_stress", 0.0, 1e-10),
        ("min_jacobian", j, 1e-13),
    ] {
        let got = last(column);
        assert!((got - want).abs() <= tol, "{column}: {got} vs {want}");
    }
    // step 0: undeformed
    assert_eq!(table.column("min_jacobian").unwrap()[0], 1.0);
    // the displacement and reaction columns of the set come first, as before
    let at = |c: &str| table.columns.iter().position(|k| k == c).unwrap();
    assert!(at("xmax.mz") < at("xmax.von_mises.min"));
    // reactions: the three constrained symmetry planes, not the loaded face
    let sets: Vec<&String> = outcome.figures.reactions.keys().collect();
    assert_eq!(sets, ["xmin", "ymin", "zmin"]);
    assert!((outcome.figures.reactions["xmin"][0] + sigma).abs() < 1e-9);
}

/// A probe of a field it cannot read is refused at its key, naming the valid fields.
#[test]
fn probes_of_fields_they_cannot_read_are_located_errors() {
    let dir = ScratchDir::new("fields-probe-errors");
    for (probes, key, field) in [
        (
            "points: [{ name: p, at: [1, 0.5, 0.5], fields: [nodal_von_mises] }]",
            "output.probes.points[0].fields[0]",
            "nodal_von_mises",
        ),
        (
            "sets: [{ set: xmin, fields: [von_mises, reaction] }]",
            "output.probes.sets[0].fields[1]",
            "reaction",
        ),
    ] {
        let text = block("linear", 1.0, "[displacement]", "1").replace(
            "output: { fields: [displacement] }",
            &format!("output: {{ probes: {{ {probes} }} }}"),
        );
        let error = run_text_error(&dir, "bad", &text, &dir);
        assert!(error.contains(key), "{error}");
        assert!(
            error.contains(&format!("cannot read `{field}`; valid:")),
            "{error}"
        );
    }
}

/// `sets` writes each node or face set's nodes and each cell set as 0/1 flags that the XDMF
/// shows as `set:<name>` attributes of every step.
#[test]
fn sets_are_written_as_flags_for_viewers() {
    let dir = ScratchDir::new("fields-sets");
    let outcome = run_block(
        &dir,
        "sets",
        &block("linear", 1.0, "[displacement, sets]", "1"),
    );
    let results = ResultsReader::open(&outcome.h5).unwrap();
    let (_, x) = results.read_f64("mesh/coordinates").unwrap();
    let (_, xmin) = results.read_i64("mesh/indicators/nodes/xmin").unwrap();
    let flagged: Vec<bool> = xmin.iter().map(|&f| f == 1).collect();
    let on_plane: Vec<bool> = x.chunks(3).map(|p| p[0] == 0.0).collect();
    assert_eq!(flagged, on_plane);
    assert_eq!(xmin.iter().filter(|&&f| f == 1).count(), 9);
    let xdmf = std::fs::read_to_string(&outcome.xdmf).unwrap();
    assert!(xdmf.contains("Name=\"set:xmin\""), "{xdmf}");
    assert!(xdmf.contains("Name=\"set:zmax\""), "{xdmf}");
}

/// `output.precision: single` writes every field but the displacement as float32, each value the
/// double run's value rounded to nearest (the runs are the same computation, so bit for bit),
/// the XDMF saying `Precision="4"` for them; the displacement (what a restart reads) and the
/// mesh stay float64 and equal, and a restart from the single-precision file runs.
#[test]
fn single_precision_fields_are_the_double_values_rounded() {
    let dir = ScratchDir::new("fields-single");
    let every = "[displacement, reaction, cauchy_stress, von_mises, jacobian, energy_density, \
                 nodal_cauchy_stress, nodal_von_mises, strain, green_lagrange_strain, \
                 logarithmic_strain, principal_stress, nodal_principal_stress]";
    let text = block("neo_hookean", 40.0, every, "1");
    let double = run_block(&dir, "double", &text);
    let single_text = text.replace(
        &format!("output: {{ fields: {every} }}"),
        &format!("output: {{ fields: {every}, precision: single }}"),
    );
    assert_ne!(single_text, text);
    let single = run_block(&dir, "single", &single_text);
    assert_eq!(single.steps, double.steps);
    let (a, b) = (
        ResultsReader::open(&double.h5).unwrap(),
        ResultsReader::open(&single.h5).unwrap(),
    );
    let fields = [
        "reaction",
        "cauchy_stress",
        "von_mises",
        "jacobian",
        "energy_density",
        "nodal_cauchy_stress",
        "nodal_von_mises",
        "strain",
        "green_lagrange_strain",
        "logarithmic_strain",
        "principal_stress",
        "nodal_principal_stress",
    ];
    for step in 0..=double.steps {
        for field in fields {
            let path = format!("/steps/{step:06}/{field}");
            assert!(a.is_f64(&path).unwrap(), "{path}");
            assert!(!b.is_f64(&path).unwrap(), "{path} is not float32");
            let (shape_a, x) = a.read_f64(&path).unwrap();
            let (shape_b, y) = b.read_f64(&path).unwrap();
            assert_eq!(shape_a, shape_b, "{path}");
            for (p, q) in x.iter().zip(&y) {
                assert_eq!(
                    f64::from(*p as f32).to_bits(),
                    q.to_bits(),
                    "{path}: {p} {q}"
                );
            }
            if step == double.steps {
                let rounded = x.iter().any(|&p| f64::from(p as f32) != p);
                assert!(rounded, "{path}: nothing rounded");
            }
        }
        {
            let path = format!("/steps/{step:06}/displacement");
            assert!(b.is_f64(&path).unwrap(), "{path}");
            let (x, y) = (a.read_f64(&path).unwrap().1, b.read_f64(&path).unwrap().1);
            assert!(
                x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()),
                "{path}"
            );
        }
    }
    assert!(b.is_f64("/mesh/coordinates").unwrap());
    let xdmf = std::fs::read_to_string(&single.xdmf).unwrap();
    assert!(xdmf.contains(&format!(
        "Precision=\"4\" Format=\"HDF\">single.h5:/steps/{:06}/von_mises<",
        single.steps
    )));
    assert!(xdmf.contains("Precision=\"8\" Format=\"HDF\">single.h5:/steps/000000/displacement<"));
    let double_xdmf = std::fs::read_to_string(&double.xdmf).unwrap();
    assert!(!double_xdmf.contains("Precision=\"4\""));
    // a restart continues from the single-precision file's exact displacement
    let input = dir.join("restarted.yaml");
    std::fs::write(&input, &single_text).unwrap();
    let restarted = run(
        &RunOptions::new(&input)
            .with_output_dir(dir.join("restarted"))
            .with_restart(format!("{}:{}", single.h5.display(), single.steps - 1)),
        &sim::Quiet,
    )
    .unwrap_or_else(|e| panic!("restart: {e:#}"));
    assert_eq!(restarted.steps, single.steps);
}
