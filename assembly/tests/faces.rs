//! The two reference-face enums agree: `mesh::Face` (face sets, `face_local_nodes`) and `fem::Face`
//! (face kernels, `Face::local_nodes`). Traction loads take a face's nodes from the mesh and hand
//! them to a fem face kernel, so both must name, order and number every face identically. The
//! enums stay separate (neither crate depends on the other); this test is their contract.

use mesh::CellKind;

/// The pairs `(mesh face, fem face)` in declaration order.
fn pairs() -> Vec<(mesh::Face, fem::Face)> {
    assert_eq!(mesh::Face::ALL.len(), fem::Face::ALL.len());
    mesh::Face::ALL.into_iter().zip(fem::Face::ALL).collect()
}

#[test]
fn faces_have_the_same_names_order_and_sides() {
    let names = ["XMin", "XMax", "YMin", "YMax", "ZMin", "ZMax"];
    for (index, (m, f)) in pairs().into_iter().enumerate() {
        assert_eq!(format!("{m:?}"), names[index]);
        assert_eq!(format!("{f:?}"), names[index]);
        assert_eq!((m as usize, f as usize), (index, index), "{m:?}");
        assert_eq!(m.name(), names[index].to_lowercase());
        assert_eq!(m.axis(), f.axis(), "{m:?}");
        assert_eq!(m.is_max(), f.normal_sign() > 0.0, "{m:?}");
        assert_eq!(
            mesh::Face::from_axis(f.axis(), f.normal_sign() > 0.0),
            Some(m)
        );
    }
}

#[test]
fn face_local_nodes_agree_for_both_orders() {
    for (kind, order) in [(CellKind::Hex8, 1), (CellKind::Hex27, 2)] {
        assert_eq!(kind.order(), order);
        for (m, f) in pairs() {
            let from_mesh = mesh::face_local_nodes(kind, m);
            let from_fem = f.local_nodes(order).unwrap();
            assert_eq!(from_mesh, from_fem, "{m:?} of order {order}");
            assert_eq!(from_mesh.len(), kind.nodes_per_face());
            // The corners that match Gmsh quadrangles to cell faces are the same nodes too.
            let n = order + 1;
            let corners = [
                from_fem[0],
                from_fem[n - 1],
                from_fem[n * (n - 1)],
                from_fem[n * n - 1],
            ];
            assert_eq!(
                mesh::face_corner_local_nodes(kind, m),
                corners,
                "{m:?} of order {order}"
            );
        }
    }
}

/// The shared lists are what the face kernel needs: the `k`-th node of a face is the `k`-th node of
/// the quadrilateral basis (`LagrangeQuad`) on that face, i.e. its cell reference coordinates are
/// `Face::reference_point` of the quadrilateral node.
#[test]
fn face_nodes_are_the_quadrilateral_nodes_in_order() {
    for order in [1, 2] {
        let cell_xi = fem::LagrangeHex::new(order).unwrap().node_coords();
        let face_eta = fem::LagrangeQuad::new(order).unwrap().node_coords();
        for f in fem::Face::ALL {
            let local = f.local_nodes(order).unwrap();
            assert_eq!(local.len(), face_eta.len());
            for (&a, &eta) in local.iter().zip(&face_eta) {
                assert_eq!(
                    cell_xi[a],
                    f.reference_point(eta),
                    "{f:?} of order {order}, node {a}"
                );
            }
        }
    }
}
