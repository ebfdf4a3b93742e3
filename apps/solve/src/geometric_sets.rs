//! The input's sets by geometry ([`GeometricSet`]) added to a mesh: nodes, boundary faces or
//! cells selected by a box, a plane, an outward normal and an expression of `x, y, z` (all
//! given criteria hold), through `mesh::select`.
//!
//! A name the mesh already uses for a set of any kind is an error (one name, one set), and so,
//! on a whole mesh, is a set that selects nothing (a mistyped coordinate would otherwise leave a
//! boundary condition on no node). On a rank's part the faces are chosen among the global
//! boundary faces the caller passes, and an empty selection is allowed (the set may lie on
//! other ranks).

use mesh::select::{select_cells, select_faces, select_nodes};
use mesh::{CellFace, HexMesh};

use crate::error::{Error, Result};
use crate::params::{GeometricSet, GeometricSetKind};

/// Relative default tolerance: times the diagonal of the mesh's bounding box.
pub const DEFAULT_RELATIVE_TOLERANCE: f64 = 1e-6;

/// Adds `sets` to `mesh`. `boundary`: the global boundary faces among the part's faces (`None`:
/// the whole mesh, whose boundary is its faces of one cell); `whole`: whether `mesh` is the whole
/// mesh (then an empty set is an error). `diagonal`: the bounding-box diagonal of the whole mesh
/// (for the default tolerance; `None`: this mesh's).
pub fn add_geometric_sets(
    mesh: &mut HexMesh,
    sets: &[GeometricSet],
    boundary: Option<&[CellFace]>,
    whole: bool,
    diagonal: Option<f64>,
) -> Result<()> {
    let diagonal = diagonal.unwrap_or_else(|| bounding_diagonal(mesh));
    for set in sets {
        let exists = mesh.node_sets.contains_key(&set.name)
            || mesh.face_sets.contains_key(&set.name)
            || mesh.cell_sets.contains_key(&set.name);
        let id_of = mesh.set_name(&set.name);
        if !exists && id_of != set.name {
            return Err(Error::SetNameIsAnId {
                name: set.name.clone(),
                id_of: id_of.to_string(),
            });
        }
        if exists {
            return Err(Error::SetNameTaken {
                name: set.name.clone(),
            });
        }
        let tol = set
            .tolerance
            .unwrap_or(DEFAULT_RELATIVE_TOLERANCE * diagonal);
        let inside = |x: [f64; 3]| point_test(set, tol, x);
        let count = match set.kind {
            GeometricSetKind::Nodes => {
                let nodes = select_nodes(mesh, &inside);
                let n = nodes.len();
                mesh.node_sets.insert(set.name.clone(), nodes);
                n
            }
            GeometricSetKind::Cells => {
                let cells = select_cells(mesh, &inside);
                let n = cells.len();
                mesh.cell_sets.insert(set.name.clone(), cells);
                n
            }
            GeometricSetKind::Faces => {
                let cos = set.angle.cos();
                let direction = set.normal.map(unit);
                let normal_test = |n: [f64; 3]| match direction {
                    Some(d) => dot(n, d) >= cos - 1e-12,
                    None => true,
                };
                let faces = select_faces(mesh, boundary, &inside, &normal_test);
                let n = faces.len();
                mesh.face_sets.insert(set.name.clone(), faces);
                n
            }
        };
        if whole && count == 0 {
            return Err(Error::EmptySet {
                name: set.name.clone(),
                kind: match set.kind {
                    GeometricSetKind::Nodes => "node",
                    GeometricSetKind::Faces => "boundary face",
                    GeometricSetKind::Cells => "cell",
                },
                bounds: describe_bounds(mesh),
                tolerance: tol,
            });
        }
    }
    Ok(())
}

/// Whether the position `x` passes the box, plane and expression criteria of `set`.
fn point_test(set: &GeometricSet, tol: f64, x: [f64; 3]) -> bool {
    if let Some((lower, upper)) = set.within {
        if (0..3).any(|d| x[d] < lower[d] - tol || x[d] > upper[d] + tol) {
            return false;
        }
    }
    if let Some((point, normal)) = set.plane {
        let n = unit(normal);
        let distance = dot([x[0] - point[0], x[1] - point[1], x[2] - point[2]], n);
        if distance.abs() > tol {
            return false;
        }
    }
    if let Some(e) = &set.expression {
        // An expression that cannot be evaluated at a point (a domain error) selects nothing
        // there.
        match e.eval(x) {
            Ok(v) if v <= tol => {}
            _ => return false,
        }
    }
    true
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `v` scaled to unit length (scaled by its largest component first, so tiny and huge vectors
/// keep their direction).
fn unit(v: [f64; 3]) -> [f64; 3] {
    let m = v.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    if m == 0.0 {
        return v;
    }
    let s = v.map(|c| c / m);
    let len = dot(s, s).sqrt();
    s.map(|c| c / len)
}

fn bounds(mesh: &HexMesh) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for x in &mesh.coords {
        for d in 0..3 {
            lo[d] = lo[d].min(x[d]);
            hi[d] = hi[d].max(x[d]);
        }
    }
    (lo, hi)
}

/// The diagonal of the bounding box of `mesh`'s nodes (0 for an empty mesh).
pub fn bounding_diagonal(mesh: &HexMesh) -> f64 {
    if mesh.coords.is_empty() {
        return 0.0;
    }
    let (lo, hi) = bounds(mesh);
    (0..3).map(|d| (hi[d] - lo[d]).powi(2)).sum::<f64>().sqrt()
}

fn describe_bounds(mesh: &HexMesh) -> String {
    let (lo, hi) = bounds(mesh);
    format!("{lo:?} to {hi:?}")
}
