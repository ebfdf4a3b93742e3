//! Files written by the output module, read back through independent handles.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use super::*;

/// Serialises the tests that touch HDF5 files. HDF5 opens files without close-on-exec and locks
/// them (`flock`); a child process spawned by one test (h5dump) inherits the descriptor of a file
/// another test has open, keeps its lock until it exits, and the other test's next open fails.
static HDF5_FILES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn hdf5_files() -> std::sync::MutexGuard<'static, ()> {
    HDF5_FILES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hexfem-output-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Two unit hexahedra side by side along x: 12 nodes, VTK corner order.
struct TwoCells {
    coordinates: Vec<[f64; 3]>,
    connectivity: Vec<usize>,
}

fn two_cells() -> TwoCells {
    let node = |i: usize, j: usize, k: usize| i + 3 * j + 6 * k;
    let mut coordinates = Vec::new();
    for k in 0..2 {
        for j in 0..2 {
            for i in 0..3 {
                coordinates.push([i as f64, j as f64 + 0.25, k as f64 * 2.0]);
            }
        }
    }
    let mut connectivity = Vec::new();
    for c in 0..2 {
        for (i, j, k) in [
            (0, 0, 0),
            (1, 0, 0),
            (1, 1, 0),
            (0, 1, 0),
            (0, 0, 1),
            (1, 0, 1),
            (1, 1, 1),
            (0, 1, 1),
        ] {
            connectivity.push(node(c + i, j, k));
        }
    }
    TwoCells {
        coordinates,
        connectivity,
    }
}

const XMIN: [usize; 4] = [0, 3, 6, 9];
const RIGHT: [usize; 1] = [1];
const MATERIAL: [usize; 2] = [0, 3];

fn mesh_data(m: &TwoCells) -> MeshData<'_> {
    MeshData {
        nodes_per_cell: 8,
        coordinates: &m.coordinates,
        connectivity: &m.connectivity,
        material: Some(&MATERIAL),
        node_sets: &[("xmin", &XMIN), ("empty", &[])],
        cell_sets: &[("right", &RIGHT)],
        face_sets: &[("left", &[[0, 0]])],
        node_indicators: None,
    }
}

/// Deterministic, distinct values for the fields of a step.
struct Fields {
    displacement: Vec<[f64; 3]>,
    reaction: Vec<[f64; 3]>,
    stress6: Vec<[f64; 6]>,
    stress9: Vec<[f64; 9]>,
    scalar: Vec<f64>,
}

fn fields(step: usize) -> Fields {
    let s = step as f64;
    Fields {
        displacement: (0..12).map(|n| [n as f64 * 0.1 + s, -s, 0.5 * s]).collect(),
        reaction: (0..12).map(|n| [s, n as f64, -(n as f64) / 3.0]).collect(),
        stress6: (0..2)
            .map(|c| std::array::from_fn(|k| s + c as f64 + k as f64 / 7.0))
            .collect(),
        stress9: (0..2)
            .map(|c| std::array::from_fn(|k| s * 10.0 + c as f64 - k as f64))
            .collect(),
        scalar: vec![1.0 + s / 3.0, 2.0 - s],
    }
}

fn read_f64(file: &hdf5::File, path: &str) -> (Vec<usize>, Vec<f64>) {
    let ds = file.dataset(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (ds.shape(), ds.read_raw::<f64>().unwrap())
}

fn read_i64(file: &hdf5::File, path: &str) -> (Vec<usize>, Vec<i64>) {
    let ds = file.dataset(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (ds.shape(), ds.read_raw::<i64>().unwrap())
}

/// Paths of every dataset under `group`, recursively (`/mesh/coordinates`, ...).
fn dataset_paths(group: &hdf5::Group, prefix: &str, out: &mut Vec<String>) {
    for name in group.member_names().unwrap() {
        let path = format!("{prefix}/{name}");
        if let Ok(child) = group.group(&name) {
            dataset_paths(&child, &path, out);
        } else {
            out.push(path);
        }
    }
}

/// Checks that tags nest properly (a minimal well-formedness check) and returns the text of
/// every `DataItem`.
fn xml_data_items(xml: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut items = Vec::new();
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        if rest[open..].starts_with("<?") {
            // A processing instruction: its content is not markup.
            let end = rest[open..].find("?>").expect("unterminated instruction") + open;
            rest = &rest[end + 2..];
            continue;
        }
        let close = rest[open..].find('>').expect("unterminated tag") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else if !tag.starts_with('?') && !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap().to_owned();
            if name == "DataItem" {
                let end = rest[close..].find('<').unwrap() + close;
                items.push(rest[close + 1..end].to_owned());
            }
            stack.push(name);
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed tags {stack:?}");
    items
}

#[test]
fn hdf5_and_xdmf_hold_every_completed_step() {
    let _files = hdf5_files();
    let dir = scratch_dir("steps");
    let m = two_cells();
    let mut writer = ResultsWriter::create(&dir, "beam", &mesh_data(&m), &Faults::none()).unwrap();
    assert!(xml_data_items(&fs::read_to_string(writer.xdmf_path()).unwrap()).is_empty());

    let f1 = fields(1);
    writer
        .write_step(&StepData {
            step: 1,
            load_factor: 0.5,
            displacement: Some(&f1.displacement),
            reaction: Some(&f1.reaction),
            cauchy_stress: Some(CellTensor::Symmetric(&f1.stress6)),
            von_mises: Some(&f1.scalar),
            jacobian: None,
            energy_density: Some(&f1.scalar),
            nodal_cauchy_stress: None,
            nodal_von_mises: None,
            next_increment: None,
            time: None,
            ..StepData::default()
        })
        .unwrap();
    let f2 = fields(2);
    writer
        .write_step(&StepData {
            step: 2,
            load_factor: 1.0,
            displacement: Some(&f2.displacement),
            cauchy_stress: Some(CellTensor::Full(&f2.stress9)),
            jacobian: Some(&f2.scalar),
            ..StepData::default()
        })
        .unwrap();
    assert_eq!(writer.steps_written(), 2);

    // The writer is still alive (as in a run killed before it ends): read through a new handle.
    let file = hdf5::File::open(writer.h5_path()).unwrap();
    assert_eq!(
        read_f64(&file, "/mesh/coordinates"),
        (vec![12, 3], m.coordinates.as_flattened().to_vec())
    );
    let connectivity: Vec<i64> = m.connectivity.iter().map(|&i| i as i64).collect();
    assert_eq!(
        read_i64(&file, "/mesh/connectivity"),
        (vec![2, 8], connectivity)
    );
    assert_eq!(
        read_i64(&file, "/mesh/sets/nodes/xmin"),
        (vec![4], vec![0, 3, 6, 9])
    );
    assert_eq!(read_i64(&file, "/mesh/sets/nodes/empty"), (vec![0], vec![]));
    assert_eq!(
        read_i64(&file, "/mesh/sets/cells/right"),
        (vec![1], vec![1])
    );
    assert_eq!(
        read_i64(&file, "/mesh/sets/faces/left"),
        (vec![1, 2], vec![0, 0])
    );

    let step1 = file.group("/steps/000001").unwrap();
    assert_eq!(
        step1
            .attr("load_factor")
            .unwrap()
            .read_scalar::<f64>()
            .unwrap(),
        0.5
    );
    let step2 = file.group("/steps/000002").unwrap();
    assert_eq!(
        step2
            .attr("load_factor")
            .unwrap()
            .read_scalar::<f64>()
            .unwrap(),
        1.0
    );
    let expected: Vec<(&str, Vec<usize>, Vec<f64>)> = vec![
        (
            "/steps/000001/displacement",
            vec![12, 3],
            f1.displacement.as_flattened().to_vec(),
        ),
        (
            "/steps/000001/reaction",
            vec![12, 3],
            f1.reaction.as_flattened().to_vec(),
        ),
        (
            "/steps/000001/cauchy_stress",
            vec![2, 6],
            f1.stress6.as_flattened().to_vec(),
        ),
        ("/steps/000001/von_mises", vec![2], f1.scalar.clone()),
        ("/steps/000001/energy_density", vec![2], f1.scalar.clone()),
        (
            "/steps/000002/displacement",
            vec![12, 3],
            f2.displacement.as_flattened().to_vec(),
        ),
        (
            "/steps/000002/cauchy_stress",
            vec![2, 9],
            f2.stress9.as_flattened().to_vec(),
        ),
        ("/steps/000002/jacobian", vec![2], f2.scalar.clone()),
    ];
    for (path, shape, values) in &expected {
        assert_eq!(
            read_f64(&file, path),
            (shape.clone(), values.clone()),
            "{path}"
        );
    }

    // The XDMF file is well formed and references exactly the datasets of the HDF5 file.
    let mut in_h5 = Vec::new();
    dataset_paths(&file, "", &mut in_h5);
    let xml = fs::read_to_string(writer.xdmf_path()).unwrap();
    let mut referenced: Vec<String> = xml_data_items(&xml)
        .iter()
        .map(|item| {
            item.strip_prefix("beam.h5:")
                .expect("relative HDF5 reference")
                .to_owned()
        })
        .collect();
    for path in &referenced {
        assert!(
            in_h5.contains(path),
            "{path} is referenced but not in the file"
        );
    }
    referenced.sort();
    referenced.dedup();
    let mut data: Vec<&String> = in_h5
        .iter()
        .filter(|p| !p.starts_with("/mesh/sets/"))
        .collect();
    data.sort();
    assert_eq!(data, referenced.iter().collect::<Vec<_>>());
    // Coordinates, connectivity and material, then the step data.
    assert_eq!(referenced.len(), 3 + expected.len());
    assert_eq!(read_i64(&file, "/mesh/material"), (vec![2], vec![0, 3]));
    assert!(xml.contains("<Time Value=\"0.5\"/>") && xml.contains("<Time Value=\"1.0\"/>"));
    assert!(xml.contains("AttributeType=\"Tensor6\" Center=\"Cell\""));
    assert!(xml.contains("<Attribute Name=\"reaction\" AttributeType=\"Vector\" Center=\"Node\">"));
    assert!(xml.contains("TopologyType=\"Hexahedron\" NumberOfElements=\"2\""));
    drop(file);

    // External tools read the file while the writer is alive.
    match Command::new("h5dump")
        .arg("-H")
        .arg(writer.h5_path())
        .output()
    {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "h5dump failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            for path in &expected {
                let name = path.0.rsplit('/').next().unwrap();
                assert!(
                    text.contains(&format!("DATASET \"{name}\"")),
                    "{name} missing:\n{text}"
                );
            }
            assert!(text.contains("ATTRIBUTE \"load_factor\""));
        }
        Err(e) => eprintln!("h5dump not available ({e}); external read check skipped"),
    }
    if let Some(keep) = std::env::var_os("HEXFEM_KEEP_TEST_OUTPUT") {
        for f in ["beam.h5", "beam.xdmf"] {
            fs::copy(dir.join(f), std::path::Path::new(&keep).join(f)).unwrap();
        }
    }
    assert!(fs::read_dir(&dir).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tmp")));
    fs::remove_dir_all(&dir).unwrap();
}

/// The sets as 0/1 attributes: `/mesh/indicators/{nodes,cells}/<name>` flag the members, and
/// every step's grid shows them as `set:<name>`; without them the mesh has no such group.
#[test]
fn set_indicators_flag_the_members_and_show_in_every_grid() {
    let _files = hdf5_files();
    let dir = scratch_dir("indicators");
    let m = two_cells();
    let indicators: [(&str, &[usize]); 2] = [("left", &[0, 3, 6, 9]), ("xmin", &XMIN)];
    let mesh = MeshData {
        node_indicators: Some(&indicators),
        ..mesh_data(&m)
    };
    let mut writer = ResultsWriter::create(&dir, "sets", &mesh, &Faults::none()).unwrap();
    let f = fields(1);
    writer
        .write_step(&StepData {
            step: 0,
            load_factor: 0.0,
            displacement: Some(&f.displacement),
            ..StepData::default()
        })
        .unwrap();
    let file = hdf5::File::open(writer.h5_path()).unwrap();
    let (_, flags) = read_i64(&file, "mesh/indicators/nodes/xmin");
    let expected: Vec<i64> = (0..12).map(|n| i64::from(XMIN.contains(&n))).collect();
    assert_eq!(flags, expected);
    let (_, cells) = read_i64(&file, "mesh/indicators/cells/right");
    assert_eq!(cells, [0, 1]);
    let xml = fs::read_to_string(writer.xdmf_path()).unwrap();
    assert!(xml.contains("<Attribute Name=\"set:xmin\" AttributeType=\"Scalar\" Center=\"Node\">"));
    assert!(xml.contains("<Attribute Name=\"set:right\" AttributeType=\"Scalar\" Center=\"Cell\">"));
    assert!(xml.contains("sets.h5:/mesh/indicators/nodes/left</DataItem>"));
    drop(file);
    let plain = ResultsWriter::create(&dir, "plain", &mesh_data(&m), &Faults::none()).unwrap();
    let file = hdf5::File::open(plain.h5_path()).unwrap();
    assert!(file.group("mesh/indicators").is_err());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn quadratic_cells_use_hexahedron_27() {
    let _files = hdf5_files();
    let dir = scratch_dir("q2");
    let coordinates: Vec<[f64; 3]> = (0..27)
        .map(|n| [(n % 3) as f64, (n / 3 % 3) as f64, (n / 9) as f64])
        .collect();
    let connectivity: Vec<usize> = (0..27).collect();
    let mesh = MeshData {
        nodes_per_cell: 27,
        coordinates: &coordinates,
        connectivity: &connectivity,
        material: None,
        node_sets: &[],
        cell_sets: &[],
        face_sets: &[],
        node_indicators: None,
    };
    let mut writer = ResultsWriter::create(&dir, "cube", &mesh, &Faults::none()).unwrap();
    let jacobian = [1.0];
    writer
        .write_step(&StepData {
            step: 0,
            load_factor: 0.25,
            jacobian: Some(&jacobian),
            ..StepData::default()
        })
        .unwrap();
    let xml = fs::read_to_string(writer.xdmf_path()).unwrap();
    assert!(
        xml.contains("TopologyType=\"Hexahedron_27\" NumberOfElements=\"1\""),
        "{xml}"
    );
    assert!(xml.contains("Dimensions=\"1 27\""), "{xml}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inconsistent_data_is_rejected_before_writing() {
    let _files = hdf5_files();
    let dir = scratch_dir("invalid");
    let m = two_cells();
    let good = mesh_data(&m);
    let bad_meshes = [
        MeshData {
            nodes_per_cell: 20,
            ..good
        },
        MeshData {
            connectivity: &m.connectivity[..15],
            ..good
        },
        MeshData {
            node_sets: &[("far", &[12])],
            ..good
        },
        MeshData {
            cell_sets: &[("far", &[2])],
            ..good
        },
        MeshData {
            node_sets: &[("a/b", &[0])],
            ..good
        },
        MeshData {
            face_sets: &[("far", &[[2, 0]])],
            ..good
        },
        MeshData {
            face_sets: &[("sideways", &[[0, 6]])],
            ..good
        },
    ];
    for mesh in &bad_meshes {
        let err = ResultsWriter::create(&dir, "bad", mesh, &Faults::none()).unwrap_err();
        assert!(matches!(err, OutputError::InvalidData(_)), "{err}");
    }
    let bad_index = [99; 16];
    let err = ResultsWriter::create(
        &dir,
        "bad",
        &MeshData {
            connectivity: &bad_index,
            ..good
        },
        &Faults::none(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid output data: connectivity refers to index 99, but there are 12 nodes"
    );
    assert!(!dir.join("bad.h5").exists());

    let mut writer = ResultsWriter::create(&dir, "run", &good, &Faults::none()).unwrap();
    let short = [[0.0; 3]; 11];
    let err = writer
        .write_step(&StepData {
            step: 1,
            load_factor: 0.1,
            displacement: Some(&short),
            ..StepData::default()
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid output data: field `displacement` of step 1 has 33 values, expected 12 x 3"
    );
    writer
        .write_step(&StepData {
            step: 1,
            load_factor: 0.1,
            ..StepData::default()
        })
        .unwrap();
    let err = writer
        .write_step(&StepData {
            step: 1,
            load_factor: 0.2,
            ..StepData::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("steps must increase"), "{err}");
    assert_eq!(writer.steps_written(), 1);
    let file = hdf5::File::open(writer.h5_path()).unwrap();
    assert_eq!(
        file.group("/steps").unwrap().member_names().unwrap(),
        ["000001"]
    );
    drop(file);
    fs::remove_dir_all(&dir).unwrap();
}

fn step_record(step: usize) -> StepRecord {
    StepRecord {
        step,
        load_factor: step as f64 * 0.5,
        cutbacks: step - 1,
        newton_iterations: 2,
        linear_iterations: vec![13, 17],
        // values whose shortest decimal form needs 17 digits: the final summary must keep them
        residual_norms: vec![1.0, 1.0e-3, 1.4481422599928433e-09],
        strain_energy: 0.125 * step as f64,
        max_displacement: 0.38703742144087516 * step as f64,
        wall_s: 0.75,
        linear_solver: serde_json::json!({ "levels": [ { "rows": 300 }, { "rows": 12 } ] }),
        converged_by: String::new(),
        failed_attempts: serde_json::Value::Null,
        reactions: serde_json::Value::Null,
        probes: Default::default(),
        output_transfer_bytes: None,
        warnings: Vec::new(),
    }
}

#[test]
fn summary_is_rewritten_after_every_step_and_parses_back() {
    let dir = scratch_dir("summary");
    fs::create_dir_all(&dir).unwrap();
    let run = RunInfo {
        program: "hexfem 0.1.0".into(),
        input: PathBuf::from("inputs/beam.yaml"),
        started_unix_s: 1_700_000_000,
        threads: 4,
        config: serde_json::json!({ "loading": { "steps": 2 } }),
        restart: None,
        formulations: Vec::new(),
    };
    let mesh = MeshInfo {
        nodes: 12,
        cells: 2,
        nodes_per_cell: 8,
        dofs: 36,
        constrained_dofs: 12,
    };
    let mut writer = SummaryWriter::create(&dir, "beam", run, mesh, &Faults::none()).unwrap();
    assert_eq!(writer.path(), dir.join("beam.summary.json"));
    let running = Summary::read(writer.path()).unwrap();
    assert_eq!(running.status, RunStatus::Running);
    assert_eq!(running.steps, Some(vec![]));

    writer.record_step(step_record(1), 1.0).unwrap();
    // While running, the file holds no step list; the records are read from the log.
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(writer.path()).unwrap()).unwrap();
    assert!(json.get("steps").is_none(), "{json}");
    assert_eq!(json["steps_completed"], 1);
    let after_one = Summary::read(writer.path()).unwrap();
    assert_eq!(after_one.steps, Some(vec![step_record(1)]));
    assert_eq!(after_one.wall_s, 1.0);

    writer.record_step(step_record(2), 2.5).unwrap();
    writer
        .finish(
            RunStatus::Failed {
                message: "Newton diverged at load factor 1".into(),
            },
            3.0,
        )
        .unwrap();
    let last = Summary::read(writer.path()).unwrap();
    // every number of every step exactly as recorded (the final file re-reads the step log)
    assert_eq!(last.steps, Some(vec![step_record(1), step_record(2)]));
    assert_eq!(last.steps_completed, 2);
    assert_eq!(last.wall_s, 3.0);

    // The status is tagged for readers that do not know the Rust types, and the final file
    // holds every step.
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(writer.path()).unwrap()).unwrap();
    assert_eq!(json["status"]["state"], "failed");
    assert_eq!(
        json["status"]["message"],
        "Newton diverged at load factor 1"
    );
    assert_eq!(json["steps"][1]["linear_solver"]["levels"][1]["rows"], 12);
    assert_eq!(
        json["steps"][0]["residual_norms"][2],
        1.4481422599928433e-09
    );
    writer.finish(RunStatus::Completed, 3.5).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(writer.path()).unwrap()).unwrap();
    assert_eq!(json["status"], serde_json::json!({ "state": "completed" }));
    fs::remove_dir_all(&dir).unwrap();
}

/// Writes what a run writes, in its order (summary, results, then per step the HDF5 file, the
/// XDMF, the step log and summary), for `steps` steps, stopping at the first error; returns the
/// number of steps whose writes all succeeded.
fn write_run(dir: &std::path::Path, faults: &Faults, steps: usize) -> usize {
    write_run_in(dir, faults, steps, None)
}

/// Writes `values` as dataset `dataset` in pieces of `k` values, the last piece first.
fn put_backwards(pieces: &mut Pieces, dataset: usize, values: &[f64], k: usize) {
    let starts: Vec<usize> = (0..values.len()).step_by(k).collect();
    for &s in starts.iter().rev() {
        pieces.put_f64(dataset, s, &values[s..(s + k).min(values.len())]);
    }
}

/// [`put_backwards`] for an index dataset.
fn put_indices_backwards(pieces: &mut Pieces, dataset: usize, values: &[usize], k: usize) {
    let values: Vec<u64> = values.iter().map(|&v| v as u64).collect();
    let starts: Vec<usize> = (0..values.len()).step_by(k).collect();
    for &s in starts.iter().rev() {
        pieces.put_indices(dataset, s, &values[s..(s + k).min(values.len())]);
    }
}

/// The results writer of [`write_run_in`]: whole datasets, or pieces of `k` values.
fn create_results(
    dir: &std::path::Path,
    mesh: &MeshData,
    faults: &Faults,
    pieces: Option<usize>,
) -> Result<ResultsWriter, OutputError> {
    let Some(k) = pieces else {
        return ResultsWriter::create(dir, "run", mesh, faults);
    };
    let shape = MeshShape::of(mesh);
    ResultsWriter::create_in_pieces(dir, "run", &shape, faults, |p| {
        let at = |d| shape.dataset(d).unwrap();
        put_backwards(
            p,
            at(MeshDataset::Coordinates),
            mesh.coordinates.as_flattened(),
            k,
        );
        put_indices_backwards(p, at(MeshDataset::Connectivity), mesh.connectivity, k);
        put_indices_backwards(p, at(MeshDataset::Material), mesh.material.unwrap(), k);
        for (i, (_, v)) in mesh.node_sets.iter().enumerate() {
            put_indices_backwards(p, at(MeshDataset::NodeSet(i)), v, k);
        }
        for (i, (_, v)) in mesh.cell_sets.iter().enumerate() {
            put_indices_backwards(p, at(MeshDataset::CellSet(i)), v, k);
        }
        for (i, (_, v)) in mesh.face_sets.iter().enumerate() {
            put_indices_backwards(p, at(MeshDataset::FaceSet(i)), v.as_flattened(), k);
        }
        Ok::<(), OutputError>(())
    })
}

/// [`write_run`], with the mesh and the steps' datasets written in pieces of `k` values (the
/// last piece first) when `pieces` is `Some(k)`.
fn write_run_in(
    dir: &std::path::Path,
    faults: &Faults,
    steps: usize,
    pieces: Option<usize>,
) -> usize {
    let m = two_cells();
    let run = RunInfo {
        program: "hexfem test".into(),
        input: PathBuf::from("beam.yaml"),
        started_unix_s: 0,
        threads: 1,
        config: serde_json::Value::Null,
        restart: None,
        formulations: Vec::new(),
    };
    let mesh = MeshInfo {
        nodes: 12,
        cells: 2,
        nodes_per_cell: 8,
        dofs: 36,
        constrained_dofs: 0,
    };
    let Ok(mut summary) = SummaryWriter::create(dir, "run", run, mesh, faults) else {
        return 0;
    };
    let mut results = match create_results(dir, &mesh_data(&m), faults, pieces) {
        Ok(r) => r,
        Err(e) => {
            let _ = summary.finish(
                RunStatus::Failed {
                    message: e.to_string(),
                },
                0.0,
            );
            return 0;
        }
    };
    for step in 1..=steps {
        let f = fields(step);
        let load_factor = step as f64 / steps as f64;
        let written = match pieces {
            None => results.write_step(&StepData {
                step,
                load_factor,
                displacement: Some(&f.displacement),
                cauchy_stress: Some(CellTensor::Symmetric(&f.stress6)),
                von_mises: Some(&f.scalar),
                ..StepData::default()
            }),
            Some(k) => {
                let header = StepHeader {
                    step,
                    load_factor,
                    next_increment: None,
                    time: None,
                    fields: vec![
                        StepField::Displacement,
                        StepField::CauchyStress6,
                        StepField::VonMises,
                    ],
                };
                results.write_step_in_pieces(&header, |p| {
                    put_backwards(p, 0, f.displacement.as_flattened(), k);
                    put_backwards(p, 1, f.stress6.as_flattened(), k);
                    put_backwards(p, 2, &f.scalar, k);
                    Ok::<(), OutputError>(())
                })
            }
        }
        .and_then(|()| summary.record_step(step_record(step), step as f64));
        if let Err(e) = written {
            let _ = summary.finish(
                RunStatus::Failed {
                    message: e.to_string(),
                },
                0.0,
            );
            return step - 1;
        }
    }
    let _ = summary.finish(RunStatus::Completed, 1.0);
    steps
}

/// Checks the files a (possibly interrupted) run left in `dir`: the HDF5 file, when it exists,
/// opens with steps `1..=c` holding exactly the data written, `c >= completed`; the XDMF file is
/// well formed and names only steps of the HDF5 file; the summary parses and lists no step the
/// HDF5 file lacks. Returns `c`.
fn check_leftovers(dir: &std::path::Path, completed: usize, context: &str) -> usize {
    let h5 = dir.join("run.h5");
    let committed = if h5.exists() {
        let file = ResultsReader::open(&h5).unwrap_or_else(|e| panic!("{context}: {e}"));
        let steps = file.steps().unwrap_or_else(|e| panic!("{context}: {e}"));
        let indices: Vec<usize> = steps.iter().map(|s| s.0).collect();
        assert_eq!(indices, (1..=steps.len()).collect::<Vec<_>>(), "{context}");
        for &(step, _) in &steps {
            let f = fields(step);
            let path = format!("/steps/{step:06}/displacement");
            let (_, u) = file
                .read_f64(&path)
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_eq!(u, f.displacement.as_flattened(), "{context}: {path}");
            let path = format!("/steps/{step:06}/von_mises");
            assert_eq!(file.read_f64(&path).unwrap().1, f.scalar, "{context}");
        }
        assert_eq!(file.read_i64("/mesh/material").unwrap().1, [0, 3]);
        steps.len()
    } else {
        0
    };
    assert!(
        committed >= completed,
        "{context}: {committed} < {completed}"
    );
    let xdmf = dir.join("run.xdmf");
    if xdmf.exists() {
        let items = xml_data_items(&fs::read_to_string(&xdmf).unwrap());
        let grids = items
            .iter()
            .filter(|i| i.ends_with("/displacement"))
            .count();
        assert!(
            grids <= committed && grids + 1 >= completed,
            "{context}: {grids} grids"
        );
    }
    let summary_path = dir.join("run.summary.json");
    if summary_path.exists() {
        let summary = Summary::read(&summary_path).unwrap_or_else(|e| panic!("{context}: {e}"));
        let listed = summary.steps.unwrap().len();
        assert!(listed <= committed, "{context}: summary lists {listed}");
        if completed == 3 {
            assert_eq!(summary.status, RunStatus::Completed, "{context}");
        }
    }
    committed
}

/// A stop (kill or error) at every write position of a run, before the write or halfway
/// through it, leaves files that open with every step completed before it; the writer that
/// failed writes nothing more.
#[test]
fn a_stop_at_any_write_leaves_every_completed_step_readable() {
    let _files = hdf5_files();
    let dir = scratch_dir("faults");
    let counting = Faults::counting();
    assert_eq!(write_run(&dir, &counting, 3), 3);
    assert_eq!(check_leftovers(&dir, 3, "no fault"), 3);
    let positions = counting.writes();
    assert!(positions > 15, "{positions} write positions");
    let mut seen = std::collections::BTreeSet::new();
    for at in 0..positions {
        for torn in [false, true] {
            fs::remove_dir_all(&dir).unwrap();
            fs::create_dir_all(&dir).unwrap();
            let faults = Faults::stop_at(at, torn, FaultAction::Fail);
            let completed = write_run(&dir, &faults, 3);
            let context = format!("stop at write {at} (torn: {torn}), {completed} steps done");
            let committed = check_leftovers(&dir, completed, &context);
            seen.insert(committed);
        }
    }
    // Stops fell before the file existed, and after each of the three steps.
    assert_eq!(seen, [0, 1, 2, 3].into_iter().collect(), "{seen:?}");
    fs::remove_dir_all(&dir).unwrap();
}

/// Datasets written in pieces at offsets (the last piece first) give the file, byte for byte,
/// that whole datasets give; a stop at any write of a run written in pieces, between pieces or
/// inside one, leaves the previous committed state (every completed step opens).
#[test]
fn pieces_at_offsets_equal_one_write_and_a_stop_between_them_keeps_the_committed_steps() {
    let _files = hdf5_files();
    let dir = scratch_dir("pieces");
    let (whole, pieces) = (dir.join("whole"), dir.join("pieces"));
    for d in [&whole, &pieces] {
        fs::create_dir_all(d).unwrap();
    }
    assert_eq!(write_run_in(&whole, &Faults::none(), 3, None), 3);
    let counting = Faults::counting();
    assert_eq!(write_run_in(&pieces, &counting, 3, Some(5)), 3);
    let bytes = |d: &std::path::Path| fs::read(d.join("run.h5")).unwrap();
    assert_eq!(bytes(&whole), bytes(&pieces), "the HDF5 files differ");
    assert_eq!(
        fs::read_to_string(whole.join("run.xdmf")).unwrap(),
        fs::read_to_string(pieces.join("run.xdmf")).unwrap()
    );

    let positions = counting.writes();
    let mut seen = std::collections::BTreeSet::new();
    for at in 0..positions {
        for torn in [false, true] {
            fs::remove_dir_all(&pieces).unwrap();
            fs::create_dir_all(&pieces).unwrap();
            let faults = Faults::stop_at(at, torn, FaultAction::Fail);
            let completed = write_run_in(&pieces, &faults, 3, Some(5));
            let context = format!("pieces: stop at write {at} (torn: {torn}), {completed} done");
            seen.insert(check_leftovers(&pieces, completed, &context));
        }
    }
    assert_eq!(seen, [0, 1, 2, 3].into_iter().collect(), "{seen:?}");
    fs::remove_dir_all(&dir).unwrap();
}

/// Pieces that overlap their dataset's end, leave a value unwritten or hold an index out of
/// range are refused: nothing is committed and the writer stops.
#[test]
fn misplaced_or_missing_pieces_are_refused() {
    let _files = hdf5_files();
    let dir = scratch_dir("bad-pieces");
    let m = two_cells();
    let mut writer = ResultsWriter::create(&dir, "run", &mesh_data(&m), &Faults::none()).unwrap();
    let header = StepHeader {
        step: 1,
        load_factor: 1.0,
        next_increment: None,
        time: None,
        fields: vec![StepField::VonMises],
    };
    let err = writer
        .write_step_in_pieces(&header, |p| {
            p.put_f64(0, 0, &[1.0]);
            Ok::<(), OutputError>(())
        })
        .unwrap_err();
    assert!(err.to_string().contains("1 of 2 values written"), "{err}");
    assert_eq!(writer.steps_written(), 0);
    assert!(ResultsReader::open(writer.h5_path())
        .unwrap()
        .steps()
        .unwrap()
        .is_empty());

    let shape = MeshShape::of(&mesh_data(&m));
    let bad = ResultsWriter::create_in_pieces(&dir, "bad", &shape, &Faults::none(), |p| {
        let at = shape.dataset(MeshDataset::Connectivity).unwrap();
        p.put_indices(at, 0, &[12]);
        Ok::<(), OutputError>(())
    })
    .unwrap_err();
    assert!(bad.to_string().contains("index 12"), "{bad}");
    assert!(!dir.join("bad.h5").exists());
    let overlap = ResultsWriter::create_in_pieces(&dir, "bad", &shape, &Faults::none(), |p| {
        p.put_f64(0, 35, &[0.0, 0.0]);
        Ok::<(), OutputError>(())
    })
    .unwrap_err();
    assert!(overlap.to_string().contains("does not fit"), "{overlap}");
    drop(writer);
    fs::remove_dir_all(&dir).unwrap();
}

/// A group with tens of thousands of links (three B-tree levels, reallocated name heaps) reads
/// back whole through the HDF5 library.
#[test]
fn many_steps_read_back_through_the_library() {
    let _files = hdf5_files();
    // Every step is synced to the disk before its commit (about 2 ms on a disk); in memory
    // (/dev/shm) the test takes a fraction of a second.
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        let dir = shm.join(format!("hexfem-output-{}-many", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_or_else(|_| scratch_dir("many"), |()| dir)
    } else {
        scratch_dir("many")
    };
    let m = two_cells();
    let mut writer = ResultsWriter::create(&dir, "many", &mesh_data(&m), &Faults::none()).unwrap();
    let n = 9000;
    for step in 1..=n {
        let j = [step as f64, -(step as f64)];
        writer
            .write_step(&StepData {
                step,
                load_factor: step as f64 / n as f64,
                jacobian: Some(&j),
                ..StepData::default()
            })
            .unwrap();
    }
    let file = ResultsReader::open(writer.h5_path()).unwrap();
    let steps = file.steps().unwrap();
    assert_eq!(steps.len(), n);
    for (i, &(step, load)) in steps.iter().enumerate() {
        assert_eq!(step, i + 1);
        assert_eq!(load, step as f64 / n as f64);
    }
    for step in [1, 8, 9, 256, 257, 4000, 8192, 8193, n] {
        let (_, j) = file
            .read_f64(&format!("/steps/{step:06}/jacobian"))
            .unwrap();
        assert_eq!(j, [step as f64, -(step as f64)]);
    }
    let xml = fs::read_to_string(writer.xdmf_path()).unwrap();
    assert_eq!(xml_data_items(&xml).len(), 4 * n);
    drop(file);
    fs::remove_dir_all(&dir).unwrap();
}

/// A field of more values than one piece of [`Pieces::put_f64`] (a row of 12000 cells: 96 012
/// displacement values, 108 000 strain values) is written in pieces through one buffer and
/// reads back bit for bit, in f64 and, rounded to nearest, in f32.
#[test]
fn fields_larger_than_a_piece_read_back_bit_for_bit() {
    let _files = hdf5_files();
    // more values than a piece holds in the displacement, the strain and the connectivity
    let cells = 140_000;
    let coordinates: Vec<[f64; 3]> = (0..=cells)
        .flat_map(|i| (0..4).map(move |k| [i as f64, f64::from(k & 1), f64::from(k >> 1)]))
        .collect();
    let connectivity: Vec<usize> = (0..cells)
        .flat_map(|i| [0, 4, 5, 1, 2, 6, 7, 3].map(|k| 4 * i + k))
        .collect();
    let mesh = MeshData {
        nodes_per_cell: 8,
        coordinates: &coordinates,
        connectivity: &connectivity,
        material: None,
        node_sets: &[],
        cell_sets: &[],
        face_sets: &[],
        node_indicators: None,
    };
    let displacement: Vec<[f64; 3]> = (0..coordinates.len())
        .map(|n| std::array::from_fn(|i| ((3 * n + i) as f64 * 0.618_033_988_7).sin() * 1e-3))
        .collect();
    let strain: Vec<[f64; 9]> = (0..cells)
        .map(|c| std::array::from_fn(|i| ((9 * c + i) as f64 * 0.414_213_562_3).cos() / 3.0))
        .collect();
    use crate::h5::PIECE_VALUES;
    assert!(3 * displacement.len() > PIECE_VALUES && 9 * strain.len() > PIECE_VALUES);
    assert!(connectivity.len() > PIECE_VALUES);
    for single in [false, true] {
        let dir = scratch_dir(if single { "pieces-f32" } else { "pieces-f64" });
        let mut writer = ResultsWriter::create(&dir, "row", &mesh, &Faults::none()).unwrap();
        writer.set_single_precision_fields(single);
        writer
            .write_step(&StepData {
                step: 1,
                load_factor: 1.0,
                displacement: Some(&displacement),
                logarithmic_strain: Some(&strain),
                ..StepData::default()
            })
            .unwrap();
        let file = hdf5::File::open(writer.h5_path()).unwrap();
        let (_, u) = read_f64(&file, "/steps/000001/displacement");
        assert_eq!(u, displacement.as_flattened(), "the displacement stays f64");
        let (_, x) = read_f64(&file, "/mesh/coordinates");
        assert_eq!(x, coordinates.as_flattened());
        let (_, nodes) = read_i64(&file, "/mesh/connectivity");
        assert!(nodes
            .iter()
            .zip(&connectivity)
            .all(|(&a, &b)| a as usize == b));
        assert_eq!(nodes.len(), connectivity.len());
        let strain_path = "/steps/000001/logarithmic_strain";
        if single {
            let values: Vec<f32> = file.dataset(strain_path).unwrap().read_raw().unwrap();
            let want: Vec<f32> = strain.as_flattened().iter().map(|&v| v as f32).collect();
            assert_eq!(values, want);
        } else {
            assert_eq!(read_f64(&file, strain_path).1, strain.as_flattened());
        }
        drop(file);
        fs::remove_dir_all(&dir).unwrap();
    }
}
