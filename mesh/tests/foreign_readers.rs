//! The Exodus II and Abaqus readers against their Gmsh twins (the files of
//! `tests/data/twins/`, written by `scripts/make_mesh_twins.py` from one Gmsh mesh through the
//! netCDF library, Gmsh's Abaqus export and a hand-written Abaqus file), format recognition, and
//! a table of malformed files that must give located errors and never panic.

use std::path::PathBuf;

use mesh::{
    detect_format, parse_abaqus, parse_exodus_bytes, read_gmsh, read_mesh, HexMesh, MeshFormat,
};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/twins")
        .join(name)
}

/// `mesh` equals `twin` in nodes, cells and every set of the twin; `extra` lists the sets
/// `mesh` may have beyond the twin's.
fn assert_twins(mesh: &HexMesh, twin: &HexMesh, extra: &[&str], what: &str) {
    assert_eq!(mesh.kind, twin.kind, "{what}");
    assert_eq!(mesh.coords, twin.coords, "{what}: coordinates");
    assert_same_sets(mesh, twin, extra, what);
}

/// [`assert_twins`] with the coordinates equal to `tol` (a file written with fewer digits).
fn assert_twins_to(mesh: &HexMesh, twin: &HexMesh, extra: &[&str], tol: f64, what: &str) {
    assert_eq!(mesh.kind, twin.kind, "{what}");
    assert_eq!(mesh.n_nodes(), twin.n_nodes(), "{what}");
    for (a, b) in mesh.coords.iter().zip(&twin.coords) {
        assert!(
            (0..3).all(|d| (a[d] - b[d]).abs() <= tol),
            "{what}: {a:?} vs {b:?}"
        );
    }
    assert_same_sets(mesh, twin, extra, what);
}

fn assert_same_sets(mesh: &HexMesh, twin: &HexMesh, extra: &[&str], what: &str) {
    assert_eq!(mesh.cells, twin.cells, "{what}: cells");
    for (name, set) in &twin.cell_sets {
        assert_eq!(
            mesh.cell_sets.get(name),
            Some(set),
            "{what}: cell set {name}"
        );
    }
    for (name, set) in &twin.face_sets {
        assert_eq!(
            mesh.face_sets.get(name),
            Some(set),
            "{what}: face set {name}"
        );
    }
    for (name, set) in &twin.node_sets {
        assert_eq!(
            mesh.node_sets.get(name),
            Some(set),
            "{what}: node set {name}"
        );
    }
    let names = |m: &HexMesh| -> Vec<String> {
        m.cell_sets
            .keys()
            .chain(m.face_sets.keys())
            .chain(m.node_sets.keys())
            .cloned()
            .collect()
    };
    let twin_names = names(twin);
    for name in names(mesh) {
        assert!(
            twin_names.contains(&name) || extra.contains(&name.as_str()),
            "{what}: unexpected set {name}"
        );
    }
}

#[test]
fn exodus_classic_and_64bit_offset_read_their_gmsh_twins() {
    for order in [1, 2] {
        let twin = read_gmsh(data(&format!("twin_q{order}.msh"))).unwrap();
        assert_eq!(twin.face_sets.len(), 3);
        assert_eq!(twin.cell_sets.len(), 2);
        for kind in ["cdf1", "cdf2"] {
            let file = data(&format!("twin_q{order}_{kind}.exo"));
            let bytes = std::fs::read(&file).unwrap();
            assert_eq!(detect_format(&bytes, "x.exo").unwrap(), MeshFormat::Exodus);
            let mesh = read_mesh(&file).unwrap();
            assert_twins(&mesh, &twin, &[], &format!("{}", file.display()));
        }
    }
    // CDF-5 (64-bit data), as `nccopy -k cdf5` writes it.
    let twin = read_gmsh(data("twin_q1.msh")).unwrap();
    let mesh = read_mesh(data("twin_q1_cdf5.exo")).unwrap();
    assert_twins(&mesh, &twin, &[], "twin_q1_cdf5.exo");
}

/// Any one byte of an Exodus file set to 0x00 or 0xFF, and any truncation of an Abaqus file,
/// gives a mesh or an error, never a panic.
#[test]
fn corrupted_files_never_panic() {
    for name in ["twin_q1_cdf1.exo", "twin_q1_cdf2.exo", "twin_q1_cdf5.exo"] {
        let good = std::fs::read(data(name)).unwrap();
        for at in 0..good.len() {
            for value in [0x00, 0xff] {
                let mut bytes = good.clone();
                bytes[at] = value;
                let _ = parse_exodus_bytes(&bytes, name);
            }
        }
    }
    let text = std::fs::read_to_string(data("twin_q2.inp")).unwrap();
    for len in 0..text.len() {
        let _ = parse_abaqus(&text[..len]);
    }
}

#[test]
fn abaqus_inputs_read_their_gmsh_twins() {
    for order in [1, 2] {
        let twin = read_gmsh(data(&format!("twin_q{order}.msh"))).unwrap();
        let mesh = read_mesh(data(&format!("twin_q{order}.inp"))).unwrap();
        assert_twins(
            &mesh,
            &twin,
            &["all_left_part", "all_right_part"],
            &format!("twin_q{order}.inp"),
        );
        assert_eq!(mesh.cell_sets["all_left_part"], twin.cell_sets["left_part"]);
    }
    // Gmsh's own export: its surface elements become face sets by their corners, and the
    // NSETs it writes for every group hold the nodes of that group.
    let twin = read_gmsh(data("twin_q1.msh")).unwrap();
    let mesh = read_mesh(data("twin_q1_gmsh.inp")).unwrap();
    let extra = [
        "Surface1",
        "Surface25",
        "Surface47",
        "Surface48",
        "Volume1",
        "Volume2",
    ];
    let mut expected = twin.clone();
    for name in ["xmin", "xmax", "ymin", "left_part", "right_part"] {
        let nodes = match twin.set_nodes(name) {
            Ok(n) => n,
            Err(_) => {
                let mut n: Vec<usize> = twin.cell_sets[name]
                    .iter()
                    .flat_map(|&c| twin.cell_nodes(c).to_vec())
                    .collect();
                n.sort_unstable();
                n.dedup();
                n
            }
        };
        expected.node_sets.insert(name.into(), nodes);
    }
    // Gmsh's Abaqus export writes 14 significant digits.
    assert_twins_to(&mesh, &expected, &extra, 1e-13, "twin_q1_gmsh.inp");
}

/// netCDF-4 Exodus II (HDF5 underneath), as the netCDF library writes it (`NETCDF4` and
/// `NETCDF4_CLASSIC`; the Q2 `NETCDF4` twin with 64-bit integers and deflate-compressed
/// variables, `scripts/make_exodus_nc4_twins.py`), reads the same mesh as the classic twin and
/// the Gmsh twin: nodes, cells, sets, set ids.
#[test]
fn netcdf4_exodus_reads_its_classic_and_gmsh_twins() {
    for (order, files) in [
        (1, &["twin_q1_nc4.exo", "twin_q1_nc4c.exo"][..]),
        (2, &["twin_q2_nc4.exo", "twin_q2_nc4c.exo"][..]),
    ] {
        let twin = read_gmsh(data(&format!("twin_q{order}.msh"))).unwrap();
        let classic = read_mesh(data(&format!("twin_q{order}_cdf1.exo"))).unwrap();
        for name in files {
            let file = data(name);
            let bytes = std::fs::read(&file).unwrap();
            assert_eq!(detect_format(&bytes, "x.exo").unwrap(), MeshFormat::Exodus);
            for mesh in [read_mesh(&file).unwrap(), mesh::read_exodus(&file).unwrap()] {
                assert_twins(&mesh, &twin, &[], name);
                assert_twins(&mesh, &classic, &[], name);
                // ids and element tags too: the very mesh of the classic file
                assert_eq!(mesh, classic, "{name}");
            }
        }
    }
    // Cubit's ids, some sets unnamed: named by their ids as in the classic file.
    let classic = read_mesh(data("twin_q1_ids.exo")).unwrap();
    let mesh = read_mesh(data("twin_q1_ids_nc4.exo")).unwrap();
    assert_eq!(mesh, classic, "twin_q1_ids_nc4.exo");
}

/// A scratch file of this test binary.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hexfem-mesh-nc4-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Truncated and damaged netCDF-4 files give errors naming the file, never a panic; an HDF5
/// file that is no Exodus mesh is named; netCDF-4 bytes without a path are refused.
#[test]
fn malformed_netcdf4_exodus_files_give_errors_naming_the_file() {
    let good = std::fs::read(data("twin_q1_nc4.exo")).unwrap();
    let path = scratch("t.exo");
    let name = path.display().to_string();
    // every truncation at a stride (each one re-opens the file through HDF5)
    for len in (8..good.len()).step_by(97).chain([good.len() - 1]) {
        std::fs::write(&path, &good[..len]).unwrap();
        let err = read_mesh(&path).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{name}: ")), "{len}: {err}");
    }
    // one byte set to 0x00 or 0xFF at a stride: a mesh or an error, never a panic
    for at in (0..good.len()).step_by(13) {
        for value in [0x00, 0xff] {
            let mut bytes = good.clone();
            bytes[at] = value;
            std::fs::write(&path, &bytes).unwrap();
            if let Err(e) = read_mesh(&path) {
                assert!(e.to_string().starts_with(&format!("{name}: ")), "{at}: {e}");
            }
        }
    }
    // a variable removed, an element type changed: located errors as for the classic file
    for (unlinked, needle) in [
        ("coordx", "variable 'coordx': is missing"),
        ("connect2", "variable 'connect2': is missing"),
    ] {
        std::fs::write(&path, &good).unwrap();
        hdf5::File::open_rw(&path)
            .unwrap()
            .unlink(unlinked)
            .unwrap();
        let err = read_mesh(&path).unwrap_err().to_string();
        assert!(err.contains(needle), "{unlinked}: {err}");
        assert!(err.starts_with(&format!("{name}: ")), "{err}");
    }
    std::fs::write(&path, &good).unwrap();
    {
        let connect1 = hdf5::File::open_rw(&path)
            .unwrap()
            .dataset("connect1")
            .unwrap();
        connect1.delete_attr("elem_type").unwrap();
        connect1
            .new_attr::<hdf5::types::FixedAscii<4>>()
            .create("elem_type")
            .unwrap()
            .write_scalar(&hdf5::types::FixedAscii::<4>::from_ascii("TET4").unwrap())
            .unwrap();
    }
    let err = read_mesh(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "{name}: variable 'connect1': block 10 'left_part' (4 elements of type 'TET4', 8 \
             nodes each): only hexahedral blocks are supported"
        )),
        "{err}"
    );
    // an HDF5 file without Exodus dimensions (hexfem's own output, MED, CGNS ...)
    let file = hdf5::File::create(&path).unwrap();
    file.new_dataset::<f64>()
        .shape(6)
        .create("coordinates")
        .unwrap();
    drop(file);
    let err = read_mesh(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "{name}: an HDF5 file, but not a netCDF-4 Exodus II mesh"
        )),
        "{err}"
    );
    assert!(err.contains("hexfem reads Gmsh MSH"), "{err}");
    let err = parse_exodus_bytes(&good, "b.exo").unwrap_err().to_string();
    assert!(err.starts_with("b.exo: HDF5 file: a netCDF-4"), "{err}");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn unsupported_formats_are_named() {
    let cases: [(&str, &str); 5] = [
        (
            "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\">",
            "a VTK XML file (VTU): convert it with `meshio convert",
        ),
        ("# vtk DataFile Version 2.0\n", "a legacy VTK file"),
        (
            "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">",
            "an XDMF file",
        ),
        (
            "SetFactory(\"OpenCASCADE\");\nBox(1) = {0,0,0,1,1,1};",
            "a Gmsh geometry script",
        ),
        ("hello world", "the format is not recognised"),
    ];
    for (text, needle) in cases {
        let err = detect_format(text.as_bytes(), "m.dat")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("m.dat: "), "{err}");
        assert!(err.contains(needle), "{err}");
        assert!(err.contains("Exodus II in the netCDF classic"), "{err}");
    }
    // Unrecognised content with the extension .msh stays with the Gmsh reader's messages.
    assert_eq!(detect_format(b"hello", "m.msh").unwrap(), MeshFormat::Gmsh);
    assert_eq!(
        detect_format(b"** c\n*NODE\n", "m.txt").unwrap(),
        MeshFormat::Abaqus
    );
}

/// Replaces the first occurrence of `from` in `bytes` by `to` (same length).
fn patched(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| panic!("{:?} not in the file", String::from_utf8_lossy(from)));
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

#[test]
fn malformed_exodus_files_give_located_errors() {
    let good = std::fs::read(data("twin_q1_cdf1.exo")).unwrap();
    let good2 = std::fs::read(data("twin_q1_cdf2.exo")).unwrap();
    // Every truncation is an error, never a panic.
    for bytes in [&good, &good2] {
        for len in 0..bytes.len() {
            assert!(parse_exodus_bytes(&bytes[..len], "t.exo").is_err(), "{len}");
        }
    }
    let table: Vec<(&str, Vec<u8>, &str)> = vec![
        ("wrong magic", patched(&good, b"CDF\x01", b"CDF\x03"), "t.exo: header byte 0: not a netCDF classic file"),
        ("missing variable", patched(&good, b"coordx", b"coordq"), "t.exo: variable 'coordx': is missing"),
        ("missing dimension", patched(&good, b"num_nodes", b"num_nodez"), "t.exo: dimension 'num_nodes': is missing"),
        ("a tetrahedral block", patched(&good, b"HEX8", b"TET4"), "variable 'connect1': block 10 'left_part' (4 elements of type 'TET4', 8 nodes each): only hexahedral blocks are supported"),
        ("truncated data", good[..good.len() - 9].to_vec(), "extend past the end of the file"),
        ("a side of 0 or 7", {
            let mut b = good.clone();
            let v = mesh_side_offset(&good);
            b[v + 3] = 7;
            b
        }, "variable 'side_ss1': element 1 has side 7; hexahedron sides are 1..=6"),
    ];
    for (what, bytes, needle) in table {
        let err = parse_exodus_bytes(&bytes, "t.exo").unwrap_err().to_string();
        assert!(err.contains(needle), "{what}: {err}");
        assert!(err.starts_with("t.exo: "), "{what}: {err}");
    }
}

/// Byte offset of the data of `side_ss1` in the CDF-1 twin (read through the public reader's
/// behaviour: the first side value of set 1 is the 4 bytes holding 1..=6 after `elem_ss1`'s).
fn mesh_side_offset(bytes: &[u8]) -> usize {
    // The header stores each variable's begin offset right after its type and size; find the
    // name, then skip the fixed fields: name (padded), rank 1, dim id, ABSENT attrs (8 bytes),
    // type, vsize, begin.
    let name = b"\0\0\0\x08side_ss1";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + 4;
    let mut p = at + 8; // the name "side_ss1": 8 bytes, already 4-aligned
    p += 4 + 4; // rank, dim id
    p += 8; // ABSENT attribute list
    p += 4 + 4; // type, vsize
    u32::from_be_bytes(bytes[p..p + 4].try_into().unwrap()) as usize
}

#[test]
fn malformed_abaqus_files_give_located_errors() {
    let nodes = "*NODE\n1, 0, 0, 0\n2, 1, 0, 0\n3, 1, 1, 0\n4, 0, 1, 0\n5, 0, 0, 1\n6, 1, 0, 1\n7, 1, 1, 1\n8, 0, 1, 1\n";
    let cell = "*ELEMENT, TYPE=C3D8, ELSET=body\n1, 1, 2, 3, 4, 5, 6, 7, 8\n";
    let ok = format!("{nodes}{cell}");
    let mesh = parse_abaqus(&ok).unwrap();
    assert_eq!(mesh.n_cells(), 1);
    let table: Vec<(&str, String, &str)> = vec![
        (
            "C3D20",
            format!("{nodes}*Element, type=C3D20R\n"),
            "<text>:10:11: element type C3D20R (20-node serendipity brick) is not supported",
        ),
        (
            "tetrahedra",
            format!("{nodes}*ELEMENT, TYPE=C3D4\n"),
            "<text>:10:11: element type C3D4 is not supported",
        ),
        (
            "bad coordinate",
            "*NODE\n1, 0, x0, 0\n".into(),
            "<text>:2:7: expected a finite coordinate, found 'x0'",
        ),
        (
            "node twice",
            "*NODE\n1, 0, 0, 0\n1, 1, 0, 0\n".into(),
            "<text>:3:1: node 1 is defined twice",
        ),
        (
            "too few nodes",
            format!("{nodes}*ELEMENT, TYPE=C3D8\n1, 1, 2, 3\n"),
            "<text>:11:1: element 1 of type C3D8 lists 3 nodes; 8 expected",
        ),
        (
            "unknown node",
            format!("{nodes}*ELEMENT, TYPE=C3D8\n1, 1, 2, 3, 4, 5, 6, 7, 9\n"),
            "<text>:11:1: element 1 names node 9, which no *NODE defines",
        ),
        (
            "NCOPY",
            format!("{ok}*NCOPY, OLD SET=a, NEW SET=b\n"),
            "<text>:12:1: *NCOPY changes the mesh",
        ),
        (
            "INCLUDE",
            format!("*INCLUDE, INPUT=mesh.inp\n{ok}"),
            "<text>:1:1: *INCLUDE changes the mesh",
        ),
        (
            "unknown set",
            format!("{ok}*ELSET, ELSET=b\nbody, nobody\n"),
            "<text>:13:7: 'nobody' is neither a number nor an element set",
        ),
        (
            "bad face",
            format!("{ok}*SURFACE, NAME=s\n1, S7\n"),
            "<text>:13:4: expected a brick face S1..S6, found 'S7'",
        ),
        (
            "surface of a missing element",
            format!("{ok}*SURFACE, NAME=s\n2, S1\n"),
            "<text>:13:1: surface 's' names element 2, which is no C3D8/C3D27 brick",
        ),
        (
            "GENERATE too large",
            format!("{ok}*NSET, NSET=n, GENERATE\n1, 100000000000\n"),
            "<text>:13:4: GENERATE 1, 100000000000, 1 names more nodes",
        ),
        (
            "two instances",
            "*INSTANCE, NAME=a, PART=p\n*END INSTANCE\n*INSTANCE, NAME=b, PART=p\n".into(),
            "<text>:3:1: a second *INSTANCE",
        ),
        ("no cells", nodes.into(), "no C3D8 or C3D27 elements"),
        (
            "data first",
            "1, 2, 3\n".into(),
            "<text>:1:1: data before the first keyword line",
        ),
    ];
    for (what, text, needle) in table {
        let err = parse_abaqus(&text).unwrap_err().to_string();
        assert!(err.contains(needle), "{what}: {err}");
    }
}

#[test]
fn abaqus_keywords_are_case_insensitive_and_faces_follow_the_manual() {
    // One unit brick; S1 is z = 0, S2 z = 1, S3 y = 0, S4 x = 1, S5 y = 1, S6 x = 0.
    let text = "** a comment\n*node, nset=all\n1, 0, 0, 0\n2, 1, 0, 0\n3, 1, 1, 0\n4, 0, 1, 0\n\
                5, 0, 0, 1\n6, 1, 0, 1\n7, 1, 1, 1\n8, 0, 1, 1\n*element, type=c3d8r, elset=B\n\
                1, 1, 2, 3, 4,\n 5, 6, 7, 8\n*Surface, name=s1\nb, S1\n*SURFACE, NAME=S2\n1, s2\n\
                *surface, name=s3\n1, S3\n*surface, name=s4\n1, S4\n*surface, name=s5\n1, S5\n\
                *surface, name=s6\n1, S6\n*Material, name=m\n*Elastic\n1., 0.3\n";
    let mesh = parse_abaqus(text).unwrap();
    // A node line ending in a comma is complete (only element and set lines continue).
    let trailing = text.replace("2, 1, 0, 0\n", "2, 1, 0, 0,\n");
    assert_eq!(parse_abaqus(&trailing).unwrap(), mesh);
    let z_of = |name: &str, axis: usize| -> Vec<f64> {
        mesh.set_nodes(name)
            .unwrap()
            .iter()
            .map(|&n| mesh.coords[n][axis])
            .collect()
    };
    assert_eq!(z_of("s1", 2), [0.0; 4]);
    assert_eq!(z_of("S2", 2), [1.0; 4]);
    assert_eq!(z_of("s3", 1), [0.0; 4]);
    assert_eq!(z_of("s4", 0), [1.0; 4]);
    assert_eq!(z_of("s5", 1), [1.0; 4]);
    assert_eq!(z_of("s6", 0), [0.0; 4]);
    assert_eq!(mesh.cell_sets["B"], [0]);
    assert_eq!(mesh.node_sets["all"].len(), 8);
}

/// Sets by their Exodus ids: `twin_q1_ids.exo` (`scripts/make_exodus_ids_twin.py`) is
/// `twin_q1_cdf1.exo` with Cubit's ids and some sets unnamed. An unnamed set is named by its
/// id; every set is found by its id as well as by its name, with the same members as the named
/// twin's; an unknown reference lists the names with their ids.
#[test]
fn exodus_sets_are_found_by_id_and_by_name() {
    let named = read_mesh(data("twin_q1_cdf1.exo")).unwrap();
    let mesh = read_mesh(data("twin_q1_ids.exo")).unwrap();
    assert_eq!(mesh.coords, named.coords);
    assert_eq!(mesh.cells, named.cells);
    // unnamed: the block 10, the side set 40, the node set 7 are named by their ids
    let cell_sets: Vec<&String> = mesh.cell_sets.keys().collect();
    let face_sets: Vec<&String> = mesh.face_sets.keys().collect();
    let node_sets: Vec<&String> = mesh.node_sets.keys().collect();
    assert_eq!(cell_sets, ["10", "right_part"]);
    assert_eq!(face_sets, ["40", "xmin", "ymin"]);
    assert_eq!(node_sets, ["7"]);
    // by name and by id, the twin's members
    for (keys, twin) in [
        (&["10"][..], "left_part"),
        (&["right_part", "20"][..], "right_part"),
    ] {
        for key in keys {
            assert_eq!(
                mesh.cell_set(key).unwrap(),
                named.cell_set(twin).unwrap(),
                "{key}"
            );
        }
    }
    for (keys, twin) in [
        (&["xmin", "12"][..], "xmin"),
        (&["40"][..], "xmax"),
        (&["ymin", "3"][..], "ymin"),
    ] {
        for key in keys {
            assert_eq!(
                mesh.face_set(key).unwrap(),
                named.face_set(twin).unwrap(),
                "{key}"
            );
            assert_eq!(
                mesh.set_nodes(key).unwrap(),
                named.set_nodes(twin).unwrap(),
                "{key}"
            );
        }
    }
    assert_eq!(
        mesh.set_nodes("7").unwrap(),
        named.set_nodes("origin").unwrap()
    );
    // what a reference stands for: a name is itself, an id its set's name
    assert_eq!(mesh.set_name("12"), "xmin");
    assert_eq!(mesh.set_name("20"), "right_part");
    assert_eq!(mesh.set_name("xmin"), "xmin");
    assert_eq!(mesh.set_name("99"), "99");
    // the kinds number their sets apart: block 20 is no face set, side set 12 no cell set
    let err = mesh.face_set("20").unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown face set '20'; available: 40, xmin (id 12), ymin (id 3)"
    );
    let err = mesh.cell_set("12").unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown cell set '12'; available: 10, right_part (id 20), all"
    );
    let err = mesh.set_nodes("xmax").unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown node/face set 'xmax'; available: 40, 7, xmin (id 12), ymin (id 3)"
    );
    // a named mesh without ids lists names only, as before
    assert!(named.set_ids.node.contains_key(&1));
    let gmsh = read_gmsh(data("twin_q1.msh")).unwrap();
    assert!(gmsh.set_ids == mesh::SetIds::default());
    mesh.validate().unwrap();
}
