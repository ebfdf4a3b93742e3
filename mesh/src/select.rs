//! Sets by geometry: the nodes, boundary faces or cells of a mesh that satisfy a test of their
//! position (and, for faces, of their outward normal), for sets an input defines by a box, a
//! plane, an outward normal or an expression instead of by name in the mesh file.
//!
//! The tests are the caller's (`Fn([f64; 3]) -> bool` on a reference position), so the rules of
//! the input (tolerances, expressions) stay with the input. A node is tested at its position; a
//! face is selected when it lies on the boundary (in one cell only, or in the `boundary` list
//! given for a rank's part), all its nodes pass the test, and its outward normal at the face
//! centre passes the normal test; a cell is tested at its centroid (the mean of its corners).

use crate::cell::{face_corner_local_nodes, CellFace, Face};
use crate::foreign::face_sharing;
use crate::hex_mesh::HexMesh;

/// The sorted nodes whose position passes `inside`.
pub fn select_nodes(mesh: &HexMesh, inside: &dyn Fn([f64; 3]) -> bool) -> Vec<usize> {
    (0..mesh.n_nodes())
        .filter(|&n| inside(mesh.coords[n]))
        .collect()
}

/// The sorted cells whose centroid (mean of the 8 corners) passes `inside`.
pub fn select_cells(mesh: &HexMesh, inside: &dyn Fn([f64; 3]) -> bool) -> Vec<usize> {
    (0..mesh.n_cells())
        .filter(|&c| inside(cell_centroid(mesh, c)))
        .collect()
}

/// The faces of the mesh that belong to one cell only, sorted.
pub fn boundary_faces(mesh: &HexMesh) -> Vec<CellFace> {
    let mut faces: Vec<CellFace> = face_sharing(mesh)
        .into_values()
        .filter(|f| f.len() == 1)
        .map(|f| f[0])
        .collect();
    faces.sort_unstable();
    faces
}

/// The sorted faces of `boundary` (all boundary faces when `None`) whose nodes all pass
/// `inside` and whose unit outward normal passes `normal`.
pub fn select_faces(
    mesh: &HexMesh,
    boundary: Option<&[CellFace]>,
    inside: &dyn Fn([f64; 3]) -> bool,
    normal: &dyn Fn([f64; 3]) -> bool,
) -> Vec<CellFace> {
    let all;
    let faces = match boundary {
        Some(b) => b,
        None => {
            all = boundary_faces(mesh);
            &all
        }
    };
    let mut out: Vec<CellFace> = faces
        .iter()
        .copied()
        .filter(|&cf| {
            mesh.face_nodes(cf).iter().all(|&n| inside(mesh.coords[n]))
                && normal(outward_normal(mesh, cf))
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The unit outward normal of a cell face at its centre, from its corners: the cross product of
/// the face's two mid-lines, turned away from the cell's centroid.
pub fn outward_normal(mesh: &HexMesh, cf: CellFace) -> [f64; 3] {
    let nodes = mesh.cell_nodes(cf.cell);
    let c = face_corner_local_nodes(mesh.kind, cf.face).map(|l| mesh.coords[nodes[l]]);
    // Corners in tensor order: c0 (0,0), c1 (1,0), c2 (0,1), c3 (1,1).
    let d1: [f64; 3] = std::array::from_fn(|d| c[1][d] + c[3][d] - c[0][d] - c[2][d]);
    let d2: [f64; 3] = std::array::from_fn(|d| c[2][d] + c[3][d] - c[0][d] - c[1][d]);
    let mut n = [
        d1[1] * d2[2] - d1[2] * d2[1],
        d1[2] * d2[0] - d1[0] * d2[2],
        d1[0] * d2[1] - d1[1] * d2[0],
    ];
    let centre: [f64; 3] = std::array::from_fn(|d| c.iter().map(|x| x[d]).sum::<f64>() / 4.0);
    let inner = cell_centroid(mesh, cf.cell);
    let away: f64 = (0..3).map(|d| n[d] * (centre[d] - inner[d])).sum();
    let len = n.iter().map(|v| v * v).sum::<f64>().sqrt();
    let sign = if away < 0.0 { -1.0 } else { 1.0 };
    if len > 0.0 {
        for v in &mut n {
            *v *= sign / len;
        }
    }
    n
}

fn cell_centroid(mesh: &HexMesh, c: usize) -> [f64; 3] {
    let nodes = mesh.cell_nodes(c);
    let corners = mesh.kind.corner_local_nodes();
    std::array::from_fn(|d| {
        corners
            .iter()
            .map(|&l| mesh.coords[nodes[l]][d])
            .sum::<f64>()
            / 8.0
    })
}

/// The faces of `mesh` listed in the named face sets `names` (those that exist), sorted: the
/// global boundary of a rank's part of a generated box, whose six side sets cover it.
pub fn faces_of_sets(mesh: &HexMesh, names: &[&str]) -> Vec<CellFace> {
    let mut faces: Vec<CellFace> = names
        .iter()
        .filter_map(|n| mesh.face_sets.get(*n))
        .flatten()
        .copied()
        .collect();
    faces.sort_unstable();
    faces.dedup();
    faces
}

/// The six side sets of a generated box, `xmin` .. `zmax`.
pub fn box_side_names() -> [&'static str; 6] {
    Face::ALL.map(Face::name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellKind;
    use crate::generate::{generate_box, BoxSpec};

    fn unit_box(order: usize) -> HexMesh {
        let kind = if order == 1 {
            CellKind::Hex8
        } else {
            CellKind::Hex27
        };
        generate_box(&BoxSpec::new([3, 2, 2], [0.0; 3], [1.0; 3], kind)).unwrap()
    }

    /// Selectors reproduce the named sets of a generated box: the face set `xmax` by a plane or
    /// by its outward normal, the node set `xmin` by a box, and the cells of one half by an
    /// inequality on the centroid.
    #[test]
    fn selectors_reproduce_the_named_sets_of_a_box() {
        for order in [1, 2] {
            let mesh = unit_box(order);
            let any = |_: [f64; 3]| true;
            let plane = |x: [f64; 3]| (x[0] - 1.0).abs() < 1e-12;
            let faces = select_faces(&mesh, None, &plane, &any);
            assert_eq!(faces, mesh.face_sets["xmax"], "order {order}");
            let by_normal = select_faces(&mesh, None, &any, &|n| n[0] > 0.999);
            assert_eq!(by_normal, mesh.face_sets["xmax"], "order {order}");
            let down = select_faces(&mesh, None, &any, &|n| n[2] < -0.999);
            assert_eq!(down, mesh.face_sets["zmin"], "order {order}");
            let nodes = select_nodes(&mesh, &|x| x[0] <= 1e-12);
            assert_eq!(nodes, mesh.set_nodes("xmin").unwrap(), "order {order}");
            let cells = select_cells(&mesh, &|x| x[0] < 1.0 / 3.0);
            assert_eq!(cells.len(), 4);
            assert!(cells.iter().all(|&c| mesh
                .cell_nodes(c)
                .iter()
                .all(|&n| mesh.coords[n][0] <= 1.0 / 3.0 + 1e-12)));
            assert_eq!(
                faces_of_sets(&mesh, &box_side_names()),
                boundary_faces(&mesh),
                "order {order}"
            );
        }
    }

    #[test]
    fn outward_normals_point_out_of_every_face() {
        let mesh = unit_box(2);
        for cf in boundary_faces(&mesh) {
            let n = outward_normal(&mesh, cf);
            let mut expected = [0.0; 3];
            expected[cf.face.axis()] = if cf.face.is_max() { 1.0 } else { -1.0 };
            for d in 0..3 {
                assert!((n[d] - expected[d]).abs() < 1e-14, "{cf:?}: {n:?}");
            }
        }
    }
}
