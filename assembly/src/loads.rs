//! External load vectors of dead loads (independent of the displacement): body forces per unit
//! reference volume and tractions per unit reference area on face sets. Assembled once at load factor
//! one; the Newton loop scales them.

use fem::{FaceKernel, Load};
use linalg::Vector;
use mesh::{face_local_nodes, CellFace, HexMesh, MeshError};

use crate::{AssemblyError, ElasticityAssembler};

/// Body-force load vector `f_a = int f N_a dV` (node-major, 3 per node).
///
/// With the displacement zero the deformation gradient is the identity, where every material's
/// stress vanishes; the element residual is then exactly `-int f N_a`, so the volume kernel that the
/// Newton loop uses also integrates the load (same quadrature, no second code path).
pub fn body_force_load(
    assembler: &mut ElasticityAssembler,
    body: Load<'_>,
) -> Result<Vector, AssemblyError> {
    let n = 3 * assembler.n_nodes();
    let mut r = Vector::zeros(n);
    assembler.residual(&Vector::zeros(n), body, &mut r)?;
    let mut f = Vector::zeros(n);
    linalg::ops::axpy(-1.0, &r, &mut f)?;
    Ok(f)
}

/// Adds the nodal forces of a dead-load traction `t` (per unit reference area, a constant or a
/// field of the reference position) on `faces` to `f`
/// (node-major, `3 * mesh.n_nodes()` entries). The face nodes are taken in `face_local_nodes`
/// order, the node order of the face basis that the face kernel expects (one reference-cell
/// topology, `fem::reference`, serves mesh and kernel).
pub fn add_traction_load(
    mesh: &HexMesh,
    faces: &[CellFace],
    t: Load<'_>,
    points_per_direction: usize,
    f: &mut Vector,
) -> Result<(), AssemblyError> {
    let kernel =
        FaceKernel::new(mesh.order(), points_per_direction).map_err(AssemblyError::Kernel)?;
    if f.len() != 3 * mesh.n_nodes() {
        return Err(AssemblyError::SizeMismatch {
            what: "traction load vector",
            expected: 3 * mesh.n_nodes(),
            got: f.len(),
        });
    }
    let f = f.host_mut()?;
    for cf in faces {
        let (nodes, x) = face_nodes(mesh, cf)?;
        let mut fa = vec![[0.0; 3]; nodes.len()];
        kernel.nodal_forces(&x, t, &mut fa).map_err(|source| {
            AssemblyError::invalid_element(mesh.cell_tags.as_ref(), cf.cell, source)
        })?;
        for (&node, fa) in nodes.iter().zip(&fa) {
            for d in 0..3 {
                f[3 * node + d] += fa[d];
            }
        }
    }
    Ok(())
}

/// The mesh nodes of a traction face in the face basis order (`face_local_nodes`) and their
/// reference coordinates; an error names a face outside the mesh.
pub(crate) fn face_nodes(
    mesh: &HexMesh,
    cf: &CellFace,
) -> Result<(Vec<usize>, Vec<[f64; 3]>), AssemblyError> {
    if cf.cell >= mesh.n_cells() {
        let message = format!(
            "traction face {} of cell {} is outside the mesh ({} cells)",
            cf.face.name(),
            cf.cell,
            mesh.n_cells()
        );
        return Err(MeshError::Invalid(message).into());
    }
    let cell = mesh.cell_nodes(cf.cell);
    let nodes: Vec<usize> = face_local_nodes(mesh.kind, cf.face)
        .iter()
        .map(|&a| cell[a])
        .collect();
    let x = nodes.iter().map(|&n| mesh.coords[n]).collect();
    Ok((nodes, x))
}
