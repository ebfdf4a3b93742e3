//! Box and mapped-box generators: counts, coordinates, sets, errors, sizes.

use mesh::{generate_box, BoxSpec, CellKind, Face, MeshError, MAX_BOX_BYTES, MAX_BOX_NODES};

fn close(a: [f64; 3], b: [f64; 3], tol: f64) -> bool {
    (0..3).all(|d| (a[d] - b[d]).abs() <= tol)
}

#[test]
fn counts_of_q1_and_q2_boxes() {
    let q1 = generate_box(&BoxSpec::new([3, 4, 5], [0.0; 3], [1.0; 3], CellKind::Hex8)).unwrap();
    assert_eq!(
        (q1.n_nodes(), q1.n_cells(), q1.nodes_per_cell()),
        (4 * 5 * 6, 60, 8)
    );
    let q2 = generate_box(&BoxSpec::new(
        [3, 4, 5],
        [0.0; 3],
        [1.0; 3],
        CellKind::Hex27,
    ))
    .unwrap();
    assert_eq!(
        (q2.n_nodes(), q2.n_cells(), q2.nodes_per_cell()),
        (7 * 9 * 11, 60, 27)
    );
    q1.validate().unwrap();
    q2.validate().unwrap();
    assert_eq!(q2.cell_set("all").unwrap().len(), 60);
}

#[test]
fn box_nodes_follow_the_lexicographic_convention() {
    let spec = BoxSpec::new(
        [2, 3, 4],
        [-1.0, 0.5, 2.0],
        [3.0, 2.0, 3.0],
        CellKind::Hex27,
    );
    let mesh = generate_box(&spec).unwrap();
    let h = [2.0, 0.5, 0.25];
    for c in 0..mesh.n_cells() {
        let nodes = mesh.cell_nodes(c);
        let x0 = mesh.coords[nodes[0]];
        for (l, &n) in nodes.iter().enumerate() {
            let ijk = [l % 3, (l / 3) % 3, l / 9];
            let expect: [f64; 3] = std::array::from_fn(|d| x0[d] + ijk[d] as f64 * h[d] / 2.0);
            assert!(close(mesh.coords[n], expect, 1e-14), "cell {c} local {l}");
        }
    }
    // Cell 0 starts at the lower corner, the last cell ends at the upper one.
    assert_eq!(mesh.coords[mesh.cell_nodes(0)[0]], [-1.0, 0.5, 2.0]);
    assert_eq!(mesh.coords[mesh.cell_nodes(23)[26]], [3.0, 2.0, 3.0]);
}

#[test]
fn mapped_box_reproduces_affine_maps() {
    // x = A u + b with a sheared, rotated, stretched A (det > 0).
    let a = [[2.0, 0.3, -0.2], [0.1, 1.5, 0.4], [-0.3, 0.2, 0.8]];
    let b = [1.0, -2.0, 0.5];
    let affine = |u: [f64; 3]| -> [f64; 3] {
        std::array::from_fn(|r| b[r] + (0..3).map(|c| a[r][c] * u[c]).sum::<f64>())
    };
    let corners = std::array::from_fn(|c| {
        affine([(c & 1) as f64, ((c >> 1) & 1) as f64, ((c >> 2) & 1) as f64])
    });
    for kind in [CellKind::Hex8, CellKind::Hex27] {
        let cells = [3, 2, 4];
        let mesh = generate_box(&BoxSpec::mapped(cells, corners, kind)).unwrap();
        let n: [usize; 3] = std::array::from_fn(|d| kind.order() * cells[d] + 1);
        for (idx, &x) in mesh.coords.iter().enumerate() {
            let ijk = [idx % n[0], (idx / n[0]) % n[1], idx / (n[0] * n[1])];
            let u = std::array::from_fn(|d| ijk[d] as f64 / (n[d] - 1) as f64);
            assert!(close(x, affine(u), 1e-13), "{kind:?} node {idx}: {x:?}");
        }
    }
}

#[test]
fn mapped_cook_slab_has_the_exact_area() {
    // Cook's membrane panel extruded to thickness 2: area 1440, bilinear cells are exact.
    let p = [[0.0, 0.0], [48.0, 44.0], [0.0, 44.0], [48.0, 60.0]];
    let corners = std::array::from_fn(|c| [p[c % 4][0], p[c % 4][1], 2.0 * (c / 4) as f64]);
    let mesh = generate_box(&BoxSpec::mapped([16, 16, 1], corners, CellKind::Hex8)).unwrap();
    let mut area = 0.0;
    for c in 0..mesh.n_cells() {
        let n = mesh.cell_nodes(c);
        let ring = [n[0], n[1], n[3], n[2]].map(|i| mesh.coords[i]);
        let a: f64 = (0..4)
            .map(|i| ring[i][0] * ring[(i + 1) % 4][1] - ring[(i + 1) % 4][0] * ring[i][1])
            .sum::<f64>()
            / 2.0;
        assert!(a > 0.0, "cell {c} is inverted");
        area += a;
    }
    assert!((area - 1440.0).abs() < 1e-9, "{area}");
    // Mid-edge node of a Q2 cell is the image of the logical midpoint, not the chord midpoint.
    let q2 = generate_box(&BoxSpec::mapped([1, 1, 1], corners, CellKind::Hex27)).unwrap();
    let centre = q2.coords[q2.cell_nodes(0)[13]];
    assert!(close(centre, [24.0, 37.0, 1.0], 1e-12), "{centre:?}");
}

#[test]
fn face_and_node_sets_of_a_box() {
    let cells = [2, 3, 4];
    for kind in [CellKind::Hex8, CellKind::Hex27] {
        let spec = BoxSpec::new(cells, [0.0; 3], [1.0, 2.0, 3.0], kind);
        let mesh = generate_box(&spec).unwrap();
        let p = kind.order();
        let n = cells.map(|c| p * c + 1);
        for face in Face::ALL {
            let axis = face.axis();
            let (a, b) = match axis {
                0 => (1, 2),
                1 => (0, 2),
                _ => (0, 1),
            };
            let faces = &mesh.face_sets[face.name()];
            assert_eq!(faces.len(), cells[a] * cells[b], "{face:?}");
            assert!(faces.iter().all(|cf| cf.face == face));
            let nodes = &mesh.node_sets[face.name()];
            assert_eq!(nodes.len(), n[a] * n[b], "{face:?}");
            let plane = if face.is_max() { spec.upper[axis] } else { 0.0 };
            assert!(nodes.iter().all(|&i| mesh.coords[i][axis] == plane));
            // The nodes of the face set are the node set.
            let mut from_faces: Vec<usize> =
                faces.iter().flat_map(|&cf| mesh.face_nodes(cf)).collect();
            from_faces.sort_unstable();
            from_faces.dedup();
            assert_eq!(&from_faces, nodes, "{face:?}");
        }
    }
}

#[test]
fn invalid_specs_are_rejected() {
    let err =
        generate_box(&BoxSpec::new([2, 0, 1], [0.0; 3], [1.0; 3], CellKind::Hex8)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid box specification: cells[1] is 0; every direction needs at least one cell"
    );
    let err = generate_box(&BoxSpec::new(
        [1, 1, 1],
        [0.0; 3],
        [1.0, 1.0, 0.0],
        CellKind::Hex8,
    ))
    .unwrap_err();
    assert!(matches!(err, MeshError::InvalidSpec(_)));
    assert!(err.to_string().contains("lower[2] < upper[2]"), "{err}");
    // Swapping two corners inverts the hexahedron.
    let mut corners: [[f64; 3]; 8] =
        std::array::from_fn(|c| [(c & 1) as f64, ((c >> 1) & 1) as f64, (c >> 2) as f64]);
    corners.swap(0, 1);
    let err = generate_box(&BoxSpec::mapped([1, 1, 1], corners, CellKind::Hex8)).unwrap_err();
    assert!(err.to_string().contains("right-handed"), "{err}");
}

/// Sizes over the documented limits are specification errors, found before any allocation.
#[test]
fn oversized_boxes_are_rejected() {
    let spec = |cells, kind| BoxSpec::new(cells, [0.0; 3], [1.0; 3], kind);
    // Q1 1000^3: 1003003001 nodes (under 2^31 - 1) but about 96 GB, over MAX_BOX_BYTES.
    let err = generate_box(&spec([1000; 3], CellKind::Hex8)).unwrap_err();
    assert!(matches!(err, MeshError::InvalidSpec(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "invalid box specification: cells [1000, 1000, 1000] of kind Hex8 need about 96.1 GB, \
         over the limit of 64 GiB for a generated box; reduce the cell counts"
    );
    // Q2 1000^3: 2001^3 nodes, over MAX_BOX_NODES.
    let err = generate_box(&spec([1000; 3], CellKind::Hex27)).unwrap_err();
    assert!(
        err.to_string()
            .contains("give 8012006001 nodes, over the limit of 2147483647 (2^31 - 1)"),
        "{err}"
    );
    // Counts whose node product overflows usize.
    let err = generate_box(&spec([usize::MAX, 2, 2], CellKind::Hex8)).unwrap_err();
    assert!(err.to_string().contains("give more than"), "{err}");
    let err = generate_box(&spec([1 << 22, 1 << 22, 1 << 22], CellKind::Hex8)).unwrap_err();
    assert!(err.to_string().contains("give more than"), "{err}");
    // At the node limit: a 1 x 1 x n line of Q1 cells has 4 (n + 1) nodes, 2^31 - 4 for
    // n = 2^29 - 2 (passes the node check, fails the memory one) and 2^31 for n = 2^29 - 1.
    let line = |n: usize| spec([1, 1, n], CellKind::Hex8);
    let err = generate_box(&line((1 << 29) - 2)).unwrap_err();
    assert!(
        err.to_string().contains("GB, over the limit of 64 GiB"),
        "{err}"
    );
    let err = generate_box(&line((1 << 29) - 1)).unwrap_err();
    assert!(err.to_string().contains("give 2147483648 nodes"), "{err}");
    assert_eq!(MAX_BOX_NODES, (1 << 31) - 1);
    assert_eq!(MAX_BOX_BYTES, 64 << 30);
}

/// Large boxes (64^3 Q1, 32^3 Q2 cells) come out complete and valid, with their coordinate and
/// connectivity arrays allocated once at their final length: the generator is one pass over
/// pre-sized arrays, linear in the size of the mesh (the benchmarks measure its time).
#[test]
fn large_boxes_are_complete_and_allocated_once() {
    for (n, kind) in [(64, CellKind::Hex8), (32, CellKind::Hex27)] {
        let mesh = generate_box(&BoxSpec::new([n; 3], [0.0; 3], [1.0; 3], kind)).unwrap();
        let per_side = kind.order() * n + 1;
        assert_eq!(mesh.n_nodes(), per_side.pow(3), "{kind:?}");
        assert_eq!(mesh.n_cells(), n.pow(3), "{kind:?}");
        assert_eq!(mesh.coords.capacity(), mesh.coords.len(), "{kind:?}");
        assert_eq!(mesh.cells.capacity(), mesh.cells.len(), "{kind:?}");
        mesh.validate().unwrap();
        for face in Face::ALL {
            assert_eq!(mesh.node_sets[face.name()].len(), per_side.pow(2));
            assert_eq!(mesh.face_sets[face.name()].len(), n.pow(2));
        }
        assert_eq!(mesh.cell_sets["all"].len(), n.pow(3));
        // the last cell ends at the last node, the far corner of the box
        assert_eq!(mesh.cells.last(), Some(&(mesh.n_nodes() - 1)));
        assert_eq!(mesh.coords.last(), Some(&[1.0; 3]));
    }
}
