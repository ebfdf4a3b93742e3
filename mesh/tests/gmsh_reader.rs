//! Gmsh MSH 4.1 reader: the committed meshes and the error texts of broken files.

use std::path::PathBuf;

use mesh::{parse_gmsh, read_gmsh, CellKind, Face, HexMesh, MeshError};

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Jacobian determinant of the corner map at local corner 0 (edges to corners 1, 2, 4).
fn corner_det(mesh: &HexMesh, c: usize) -> f64 {
    let corners = mesh.kind.corner_local_nodes();
    let n = mesh.cell_nodes(c);
    let x = |l: usize| mesh.coords[n[corners[l]]];
    let e: [[f64; 3]; 3] = [1, 2, 4].map(|l| std::array::from_fn(|d| x(l)[d] - x(0)[d]));
    e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1])
        - e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0])
        + e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0])
}

#[test]
fn reads_the_cook_q1_slab() {
    let mesh = read_gmsh(data("../inputs/meshes/cook_q1.msh")).unwrap();
    assert_eq!(mesh.kind, CellKind::Hex8);
    assert_eq!((mesh.n_cells(), mesh.n_nodes()), (64, 2 * 81));
    assert_eq!(mesh.cell_set("body").unwrap(), (0..64).collect::<Vec<_>>());
    assert_eq!(mesh.face_sets["clamped"].len(), 8);
    assert_eq!(mesh.face_sets["load"].len(), 8);
    let clamped = mesh.set_nodes("clamped").unwrap();
    let load = mesh.set_nodes("load").unwrap();
    assert_eq!((clamped.len(), load.len()), (18, 18));
    assert!(clamped.iter().all(|&n| mesh.coords[n][0].abs() < 1e-12));
    assert!(load
        .iter()
        .all(|&n| (mesh.coords[n][0] - 48.0).abs() < 1e-12));
    let tip = mesh.set_nodes("tip").unwrap();
    assert_eq!(tip.len(), 1);
    assert_eq!(mesh.coords[tip[0]], [48.0, 60.0, 0.0]);
    // Lexicographic cells: right-handed, and the bottom faces tile the panel (area 1440).
    let mut area = 0.0;
    for c in 0..mesh.n_cells() {
        assert!(corner_det(&mesh, c) > 0.0, "cell {c} is inverted");
        let n = mesh.cell_nodes(c);
        let ring = [n[0], n[1], n[3], n[2]].map(|i| mesh.coords[i]);
        area += (0..4)
            .map(|i| ring[i][0] * ring[(i + 1) % 4][1] - ring[(i + 1) % 4][0] * ring[i][1])
            .sum::<f64>()
            / 2.0;
    }
    assert!((area.abs() - 1440.0).abs() < 1e-9, "{area}");
}

#[test]
fn reads_the_q2_box_in_lexicographic_order() {
    let mesh = read_gmsh(data("tests/data/box_q2.msh")).unwrap();
    assert_eq!(mesh.kind, CellKind::Hex27);
    assert_eq!((mesh.n_cells(), mesh.n_nodes()), (2, 5 * 3 * 3));
    // Each local node (i, j, k) is the trilinear image of (i/2, j/2, k/2) under the cell's corners
    // (cells are parallelepipeds, whatever their orientation), and the cells are right-handed.
    let corners = mesh.kind.corner_local_nodes();
    for c in 0..2 {
        assert!(corner_det(&mesh, c) > 0.0, "cell {c} is inverted");
        let n = mesh.cell_nodes(c);
        for (l, &g) in n.iter().enumerate() {
            let u = [l % 3, (l / 3) % 3, l / 9].map(|i| i as f64 / 2.0);
            for d in 0..3 {
                let expect: f64 = (0..8)
                    .map(|k| {
                        let w: f64 = (0..3)
                            .map(|a| if (k >> a) & 1 == 1 { u[a] } else { 1.0 - u[a] })
                            .product();
                        w * mesh.coords[n[corners[k]]][d]
                    })
                    .sum();
                assert!(
                    (mesh.coords[g][d] - expect).abs() < 1e-9,
                    "cell {c} local {l}"
                );
            }
        }
    }
    assert_eq!(mesh.cell_set("solid").unwrap(), [0, 1]);
    let left = &mesh.face_sets["left"];
    assert_eq!(left.len(), 1);
    let left_nodes = mesh.set_nodes("left").unwrap();
    assert_eq!(left_nodes.len(), 9);
    assert!(left_nodes.iter().all(|&n| mesh.coords[n][0] == 0.0));
    assert_eq!(mesh.face_sets["right"].len(), 1);
    let right_nodes = mesh.set_nodes("right").unwrap();
    assert!(right_nodes.iter().all(|&n| mesh.coords[n][0] == 2.0));
    // The unnamed curve group 7 (x = 0, y = 0) is a node set named "7" with 3 quadratic nodes.
    let edge = mesh.set_nodes("7").unwrap();
    assert_eq!(edge.len(), 3);
    assert!(edge
        .iter()
        .all(|&n| mesh.coords[n][0] == 0.0 && mesh.coords[n][1] == 0.0));
}

/// One unit hexahedron with node tags `tags` (Gmsh order), plus extra element blocks.
fn one_hex(version: &str, tags: [usize; 8], extra_blocks: &[&str]) -> String {
    let corners = [
        [0, 0, 0],
        [1, 0, 0],
        [1, 1, 0],
        [0, 1, 0],
        [0, 0, 1],
        [1, 0, 1],
        [1, 1, 1],
        [0, 1, 1],
    ];
    let mut s = format!("$MeshFormat\n{version}\n$EndMeshFormat\n");
    s += "$PhysicalNames\n2\n2 5 \"bottom face\"\n3 9 \"solid\"\n$EndPhysicalNames\n";
    s += "$Entities\n0 0 1 1\n";
    s += "1 0 0 0 1 1 0 1 5 0\n";
    s += "1 0 0 0 1 1 1 1 9 0\n$EndEntities\n";
    s += &format!(
        "$Nodes\n1 8 {} {}\n3 1 0 8\n",
        tags.iter().min().unwrap(),
        tags.iter().max().unwrap()
    );
    for t in tags {
        s += &format!("{t}\n");
    }
    for c in corners {
        s += &format!("{} {} {}\n", c[0], c[1], c[2]);
    }
    s += "$EndNodes\n";
    // Each extra block holds one element, tagged 2, 3, ...
    let n = 1 + extra_blocks.len();
    s += &format!("$Elements\n{n} {n} 1 {n}\n3 1 5 1\n");
    s += &format!("1 {}\n", tags.map(|t| t.to_string()).join(" "));
    for b in extra_blocks {
        s += b;
    }
    s += "$EndElements\n";
    s
}

const TAGS: [usize; 8] = [10, 20, 30, 40, 55, 66, 77, 88];

#[test]
fn renumbers_non_contiguous_tags_and_matches_faces() {
    let bottom = "2 1 3 1\n2 10 40 30 20\n";
    let mesh = parse_gmsh(&one_hex("4.1 0 8", TAGS, &[bottom])).unwrap();
    assert_eq!((mesh.n_nodes(), mesh.n_cells()), (8, 1));
    // Gmsh corner order 0 1 2 3 4 5 6 7 -> lexicographic 0 1 3 2 4 5 7 6.
    assert_eq!(mesh.cell_nodes(0), [0, 1, 3, 2, 4, 5, 7, 6]);
    assert_eq!(mesh.face_sets["bottom face"][0].face, Face::ZMin);
    assert_eq!(mesh.set_nodes("bottom face").unwrap(), [0, 1, 2, 3]);
    assert_eq!(mesh.cell_set("solid").unwrap(), [0]);
}

fn parse_err(text: &str) -> String {
    let err = parse_gmsh(text).unwrap_err();
    assert!(matches!(err, MeshError::Gmsh { .. }), "{err:?}");
    err.to_string()
}

#[test]
fn rejects_other_versions_and_broken_binary_headers() {
    let err = parse_err(&one_hex("3.0 0 8", TAGS, &[]));
    assert_eq!(
        err,
        "<text>:2: MSH format version 3.0 is not supported; 4.1 and 2.2 are (ASCII or binary; \
         export with Mesh.MshFileVersion = 4.1)"
    );
    // A binary header followed by text: the byte-order check integer is not 1.
    let err = parse_err(&one_hex("4.1 1 8", TAGS, &[]));
    assert!(
        err.contains("the byte-order check integer is not 1"),
        "{err}"
    );
    let err = parse_err("$Nodes\n0 0 0 0\n$EndNodes\n");
    assert_eq!(err, "<text>:1: expected $MeshFormat first, found '$Nodes'");
}

#[test]
fn rejects_unknown_nodes_and_truncation() {
    let text = one_hex("4.1 0 8", TAGS, &[]).replace("1 10 20 30", "1 10 99 30");
    let err = parse_err(&text);
    assert_eq!(
        err,
        "<text>:37: element 1 references node 99, which is not in $Nodes"
    );

    let full = one_hex("4.1 0 8", TAGS, &[]);
    let cut = &full[..full.find("0 1 1\n$EndNodes").unwrap()];
    let err = parse_err(cut);
    assert!(
        err.starts_with("<text>:32: unexpected end of file in $Nodes (expected"),
        "{err}"
    );

    // A block count that is too small leaves a node where $EndNodes should be.
    let err = parse_err(
        &full
            .replace("$Nodes\n1 8 10 88", "$Nodes\n1 7 10 77")
            .replace("3 1 0 8", "3 1 0 7"),
    );
    assert!(err.contains("expected $EndNodes, found"), "{err}");

    let err = parse_err(&full.replace("\n0 1 1\n", "\n0 x 1\n"));
    assert_eq!(err, "<text>:32: expected y (a finite number), found 'x'");
}

#[test]
fn rejects_unsupported_element_mixes() {
    let hex27: Vec<String> = (1..=27).map(|i| i.to_string()).collect();
    let mixed = format!("3 1 12 1\n2 {}\n", hex27.join(" "));
    let err = parse_err(&one_hex("4.1 0 8", TAGS, &[&mixed]));
    assert!(
        err.starts_with("<text>:39: element 2 is a 27-node hexahedron but element 1 (line 37)"),
        "{err}"
    );
    let tet = "3 1 4 1\n2 10 20 30 55\n";
    let err = parse_err(&one_hex("4.1 0 8", TAGS, &[tet]));
    assert!(err.contains("4-node tetrahedron"), "{err}");
    // A quadrangle that is no face of the hexahedron (a diagonal plane).
    let diagonal = "2 1 3 1\n2 10 30 88 55\n";
    let err = parse_err(&one_hex("4.1 0 8", TAGS, &[diagonal]));
    assert_eq!(
        err,
        "<text>:39: element 2: quadrangle of physical group 'bottom face' (5) is not a face of \
         any hexahedron"
    );
    // Too few nodes on a hexahedron line.
    let err =
        parse_err(&one_hex("4.1 0 8", TAGS, &[]).replace(" 88\n$EndElements", "\n$EndElements"));
    assert_eq!(
        err,
        "<text>:37: element 1 (8-node hexahedron) lists 7 nodes, expected 8"
    );
}

#[test]
fn missing_file_is_an_io_error() {
    let err = read_gmsh(data("tests/data/does_not_exist.msh")).unwrap_err();
    assert!(matches!(err, MeshError::Io { .. }));
    assert!(err.to_string().contains("does_not_exist.msh"));
}

/// The reader keeps each hexahedron's element tag, and messages name cells by it.
#[test]
fn cells_keep_their_element_tags() {
    let mesh = parse_gmsh(&one_hex("4.1 0 8", TAGS, &[])).unwrap();
    assert_eq!(mesh.cell_tags.as_deref(), Some(&[1][..]));
    assert_eq!(mesh.describe_cell(0), "Gmsh element 1 (cell 0)");
    let cook = read_gmsh(data("../inputs/meshes/cook_q1.msh")).unwrap();
    let tags = cook.cell_tags.as_ref().unwrap();
    assert_eq!(tags.len(), cook.n_cells());
    let mut unique = tags.to_vec();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), tags.len(), "element tags are unique");
}

/// Counts, dimensions and flags from hostile headers: each is an error naming the problem,
/// never a panic, an overflow or an allocation sized by the header.
#[test]
fn hostile_headers_are_errors_without_huge_allocations() {
    const HUGE: &str = "1000000000000000000"; // 1e18: a reservation of it would abort
    const LARGE: &str = "1000000000000000"; // 1e15: a reservation of it would fail to allocate
    const MAX: &str = "18446744073709551615"; // usize::MAX
    let full = one_hex("4.1 0 8", TAGS, &[]);
    let with = |from: &str, to: &str| {
        assert!(full.contains(from), "{from}");
        full.replacen(from, to, 1)
    };
    for count in [HUGE, LARGE, MAX] {
        // $Nodes header count.
        let err = parse_err(&with("$Nodes\n1 8 ", &format!("$Nodes\n1 {count} ")));
        assert_eq!(
            err,
            format!("<text>:15: $Nodes header announces {count} nodes, but its blocks hold 8")
        );
        // Number of node blocks: the next block header is $EndNodes.
        let err = parse_err(&with("$Nodes\n1 8 ", &format!("$Nodes\n{count} 8 ")));
        assert_eq!(
            err,
            "<text>:33: invalid entity dimension '$EndNodes' (expected 0, 1, 2 or 3)"
        );
        // Nodes in a block: coordinates are read as tags until $EndNodes is no tag.
        let err = parse_err(&with("3 1 0 8\n", &format!("3 1 0 {count}\n")));
        assert_eq!(
            err,
            "<text>:33: expected node tag (an unsigned integer), found '$EndNodes'"
        );
        // Physical tags of an entity.
        let err = parse_err(&with("1 1 1 1 9 0\n", &format!("1 1 1 {count} 9 0\n")));
        assert_eq!(
            err,
            "<text>:13: expected physical tag (an integer), found '$EndEntities'"
        );
        // Entities, physical names, element blocks, elements in a block.
        let err = parse_err(&with(
            "$Entities\n0 0 1 1",
            &format!("$Entities\n0 0 1 {count}"),
        ));
        assert!(err.contains("expected entity tag (an integer)"), "{err}");
        let err = parse_err(&with(
            "$PhysicalNames\n2",
            &format!("$PhysicalNames\n{count}"),
        ));
        assert_eq!(
            err,
            "<text>:8: expected physical group dimension (an unsigned integer), found \
             '$EndPhysicalNames'"
        );
        let err = parse_err(&with("$Elements\n1 ", &format!("$Elements\n{count} ")));
        assert_eq!(
            err,
            "<text>:38: invalid entity dimension '$EndElements' (expected 0, 1, 2 or 3)"
        );
        let err = parse_err(&with("3 1 5 1\n", &format!("3 1 5 {count}\n")));
        assert!(err.contains("expected element tag"), "{err}");
    }
    // Entity dimensions above 3 (3 + usize::MAX parametric coordinates would overflow).
    for dim in ["4", MAX] {
        let err = parse_err(&with("3 1 0 8\n", &format!("{dim} 1 1 8\n")));
        assert_eq!(
            err,
            format!("<text>:16: invalid entity dimension '{dim}' (expected 0, 1, 2 or 3)")
        );
        let err = parse_err(&with("3 1 5 1\n", &format!("{dim} 1 5 1\n")));
        assert_eq!(
            err,
            format!("<text>:36: invalid entity dimension '{dim}' (expected 0, 1, 2 or 3)")
        );
    }
    let err = parse_err(&with("3 1 0 8\n", "3 1 2 8\n"));
    assert_eq!(
        err,
        "<text>:16: invalid parametric flag 2 (expected 0 or 1)"
    );
    // A count beyond 64 bits is no integer.
    let err = parse_err(&with("$Nodes\n1 8 ", "$Nodes\n1 99999999999999999999999 "));
    assert_eq!(
        err,
        "<text>:15: expected number of nodes (an unsigned integer), found \
         '99999999999999999999999'"
    );
}

/// Parametric node blocks carry `entity_dim` extra values per node, which are skipped.
#[test]
fn parametric_node_coordinates_are_skipped() {
    let full = one_hex("4.1 0 8", TAGS, &[]);
    let mut text = full.replacen("3 1 0 8\n", "3 1 1 8\n", 1);
    for c in [
        "0 0 0", "1 0 0", "1 1 0", "0 1 0", "0 0 1", "1 0 1", "1 1 1", "0 1 1",
    ] {
        text = text.replacen(&format!("\n{c}\n"), &format!("\n{c} 0.5 0.5 0.5\n"), 1);
    }
    assert_eq!(parse_gmsh(&text).unwrap(), parse_gmsh(&full).unwrap());
}

/// The same mesh written by Gmsh (`tests/data/formats/make_formats.sh`) as MSH 4.1 ASCII, 4.1
/// binary, 2.2 ASCII, 2.2 binary and gzip-compressed reads to the same nodes, cells and sets.
#[test]
fn every_msh_encoding_gives_the_same_mesh() {
    let reference = read_gmsh(data("tests/data/formats/box41.msh")).unwrap();
    assert_eq!((reference.n_cells(), reference.n_nodes()), (12, 36));
    assert_eq!(reference.cell_set("body").unwrap().len(), 12);
    assert_eq!(reference.face_sets["bottom"].len(), 6);
    assert_eq!(reference.face_sets["left"].len(), 4);
    assert_eq!(reference.set_nodes("origin").unwrap().len(), 1);
    for file in [
        "box41_binary.msh",
        "box22.msh",
        "box22_binary.msh",
        "box41.msh.gz",
        "box22_binary.msh.gz",
    ] {
        let mut mesh = read_gmsh(data(&format!("tests/data/formats/{file}")))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        // ASCII files round coordinates to 16 digits; binary files hold them exactly.
        for (a, b) in mesh.coords.iter().zip(&reference.coords) {
            assert!(
                (0..3).all(|d| (a[d] - b[d]).abs() < 1e-14),
                "{file}: {a:?} {b:?}"
            );
        }
        mesh.coords.clone_from(&reference.coords);
        assert_eq!(mesh, reference, "{file}");
    }
}

/// A tetrahedral mesh with a triangle face group: the error names the element kind (not the
/// faces) and the physical group by name.
#[test]
fn unsupported_cells_are_named_before_faces() {
    let err = read_gmsh(data("tests/data/formats/tets41.msh"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is a 4-node tetrahedron; only hexahedra"),
        "{err}"
    );
    // The same file without its tetrahedra: now the triangles of the face group are the
    // problem, and there are no hexahedra at all.
    let text = std::fs::read_to_string(data("tests/data/formats/tets41.msh")).unwrap();
    let with_hex = one_hex("4.1 0 8", TAGS, &["2 1 2 1\n2 10 20 30\n"]);
    let err = parse_err(&with_hex);
    assert!(
        err.contains(
            "element 2 of surface entity 1 in physical group 'bottom face' (5) is a \
                      3-node triangle; only quadrangles"
        ),
        "{err}"
    );
    assert!(text.contains("\"clamped\""));
}

/// Honest meshes: an element tag used twice, a hexahedron listed twice under another tag, header
/// counts that do not match, quadrangles of face sets inside the mesh, set nodes of no cell.
#[test]
fn dishonest_meshes_are_refused_naming_the_elements() {
    let full = one_hex("4.1 0 8", TAGS, &[]);
    // The same hexahedron again as element 2.
    let twice = full
        .replace(
            "$Elements\n1 1 1 1\n3 1 5 1\n",
            "$Elements\n1 2 1 2\n3 1 5 2\n",
        )
        .replace(
            "\n$EndElements",
            "\n2 20 30 40 10 66 77 88 55\n$EndElements",
        );
    assert_eq!(
        parse_err(&twice),
        "<text>:38: elements 1 (line 37) and 2 have the same corner nodes: the hexahedron is \
         listed twice"
    );
    // Element tag 1 twice.
    let reused = twice.replace("\n2 20 30 40 10", "\n1 20 30 40 10");
    assert!(
        parse_err(&reused).contains("element tag 1 is used twice (lines 37 and 38)"),
        "{}",
        parse_err(&reused)
    );
    // Header counts.
    let err = parse_err(&full.replace("$Elements\n1 1 1 1", "$Elements\n1 2 1 2"));
    assert_eq!(
        err,
        "<text>:35: $Elements header announces 2 elements, but the file holds 1"
    );
    let err = parse_err(&full.replace("$Elements\n1 1 1 1", "$Elements\n1 1 1 7"));
    assert!(err.contains("announces element tags 1 to 7"), "{err}");
    let err = parse_err(&full.replace("$Nodes\n1 8 10 88", "$Nodes\n1 8 10 99"));
    assert!(err.contains("announces node tags 10 to 99"), "{err}");
    // Two cells side by side: their shared face is no boundary.
    let two = parse_gmsh(&two_cells(&[])).unwrap();
    assert_eq!(two.n_cells(), 2);
    let err = parse_err(&two_cells(&["2 1 3 1\n3 2 5 8 11\n"]));
    assert!(
        err.contains(
            "element 3: quadrangle of physical group 'mid' (4) is an interior face (between \
             elements 1 and 2)"
        ),
        "{err}"
    );
    // A point group on a node no hexahedron uses.
    let err = parse_err(&two_cells(&["0 1 15 1\n3 13\n"]));
    assert!(
        err.contains("element 3: node 13 is not a node of any hexahedron"),
        "{err}"
    );
}

/// Two unit cells along x (nodes 1..12 on a 3 x 2 x 2 grid, tag `1 + i + 3 j + 6 k`, and an
/// unused node 13), elements 1 and 2, and extra element blocks (elements 3, ...) of surface 1
/// (physical group 4, "mid") or point 1 (physical group 6, "spot").
fn two_cells(extra_blocks: &[&str]) -> String {
    let mut s = String::from("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n");
    s += "$PhysicalNames\n2\n2 4 \"mid\"\n0 6 \"spot\"\n$EndPhysicalNames\n";
    s += "$Entities\n1 0 1 1\n1 0 0 0 1 6\n1 1 0 0 1 1 1 1 4 0\n1 0 0 0 2 1 1 0 0\n$EndEntities\n";
    s += "$Nodes\n1 13 1 13\n3 1 0 13\n";
    for tag in 1..=13 {
        s += &format!("{tag}\n");
    }
    for tag in 0..13 {
        s += &format!("{} {} {}\n", tag % 3, (tag / 3) % 2, tag / 6);
    }
    let (blocks, n) = (1 + extra_blocks.len(), 2 + extra_blocks.len());
    s += &format!("$EndNodes\n$Elements\n{blocks} {n} 1 {n}\n3 1 5 2\n");
    s += "1 1 2 5 4 7 8 11 10\n2 2 3 6 5 8 9 12 11\n";
    for b in extra_blocks {
        s += b;
    }
    s + "$EndElements\n"
}

/// A gzip file that inflates beyond the limit (a gzip bomb: here 64 MiB of zeros in about
/// 64 KiB) is refused once the limit is read, naming the file and the limit (main before issue
/// 30: a 4 MB file inflating to 4 GiB was read whole). The default limit is 64 times the
/// compressed size plus 1 GiB, at most `MAX_MSH_BYTES`.
#[test]
fn a_gzip_bomb_is_refused_at_the_inflate_limit() {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("hexfem-gzip-bomb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bomb.msh.gz");
    let file = std::fs::File::create(&path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap();
    let compressed = std::fs::metadata(&path).unwrap().len();
    assert!(compressed < 1 << 20, "{compressed} bytes");
    let err = mesh::read_gmsh_with_inflate_limit(&path, 1 << 20).unwrap_err();
    let message = err.to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(err, MeshError::Gmsh { .. }), "{err:?}");
    assert!(
        message.contains("bomb.msh.gz") && message.contains("more than 1048576 bytes"),
        "{message}"
    );
    assert_eq!(mesh::gzip_inflate_limit(1000), 64_000 + (1 << 30));
    assert_eq!(mesh::gzip_inflate_limit(u64::MAX), mesh::MAX_MSH_BYTES);
}
