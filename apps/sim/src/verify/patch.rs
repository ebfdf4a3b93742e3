//! Patch test: a linear displacement field imposed on the whole boundary of a distorted mesh must
//! be reproduced at every node, and its gradient everywhere, to round-off.
//!
//! The mesh is a box trilinearly mapped onto a skewed, non-affine hexahedron, with its interior
//! nodes moved by a deterministic pseudo-random offset of a tenth of the node spacing (for Q2 this
//! curves the cells). Isoparametric Q1 (2^3 Gauss points) and Q2 (3^3) elements pass on such
//! meshes: the integrands of the internal forces of a constant stress are integrated exactly.
//! The projected formulation (B-bar here) passes too, nearly incompressible: a linear field has
//! a constant volume change, which the projection keeps. Its solve is worse conditioned (soft
//! shear modes beside volumetric ones `lambda / mu = 5000` times stiffer), so its round-off is
//! larger; the tolerance holds it.

use fem::{Formulation, Load, Material, Moduli};
use linalg::hash::SplitMix64;
use linalg::Vector;
use mesh::{generate_box, BoxSpec, CellKind, HexMesh};

use super::solve::{boundary_nodes, direct, prescribe, relative_errors, solve_linear_elastic};
use super::{CaseResult, Check, Criterion};
use crate::error::fail;
use crate::Result;

pub const NAME_Q1: &str = "patch Q1";
pub const NAME_Q2: &str = "patch Q2";
pub const NAME_Q1_PROJECTED: &str = "patch Q1 projected";
pub const NAME_Q2_PROJECTED: &str = "patch Q2 projected";

/// Poisson's ratio of the displacement and projected cases: the projected formulation is for
/// nearly incompressible materials.
const POISSON: [f64; 2] = [0.3, 0.4999];

/// Cells per direction.
pub const CELLS: usize = 3;
/// Bound on the relative errors (max nodal error over max |u|, relative H1 seminorm error).
pub const TOLERANCE: f64 = 1e-10;

/// Corners of the skewed, non-affine hexahedron (corner `i + 2 j + 4 k`).
pub const CORNERS: [[f64; 3]; 8] = [
    [0.0, 0.0, 0.0],
    [1.2, 0.1, 0.0],
    [-0.1, 0.9, 0.1],
    [1.0, 1.1, -0.1],
    [0.1, 0.0, 1.0],
    [1.1, -0.1, 1.2],
    [0.0, 1.0, 0.9],
    [1.3, 1.2, 1.1],
];

/// The imposed field `u = c + B X` (`B` neither symmetric nor skew) and its gradient.
pub fn linear_field(x: [f64; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
    const C: [f64; 3] = [0.01, -0.02, 0.015];
    const B: [[f64; 3]; 3] = [
        [1.0e-3, 2.0e-3, -1.0e-3],
        [0.5e-3, -1.5e-3, -1.0e-3],
        [0.2e-3, 1.0e-3, 3.0e-3],
    ];
    let u = std::array::from_fn(|i| C[i] + (0..3).map(|j| B[i][j] * x[j]).sum::<f64>());
    (u, B)
}

/// The distorted mesh of the test.
pub fn distorted_mesh(kind: CellKind) -> Result<HexMesh> {
    let mut mesh = generate_box(&BoxSpec::mapped([CELLS; 3], CORNERS, kind))?;
    let boundary = boundary_nodes(&mesh)?;
    let amplitude = 0.1 / (CELLS * kind.order()) as f64;
    let mut rng = SplitMix64(0x5EED);
    let mut on_boundary = vec![false; mesh.n_nodes()];
    boundary.iter().for_each(|&n| on_boundary[n] = true);
    for (x, _) in mesh
        .coords
        .iter_mut()
        .zip(&on_boundary)
        .filter(|(_, &b)| !b)
    {
        for xd in x.iter_mut() {
            *xd += amplitude * rng.next_signed_unit();
        }
    }
    Ok(mesh)
}

/// Runs the patch test with cells of `kind` and the element `formulation`.
pub fn run(kind: CellKind, formulation: Formulation) -> Result<CaseResult> {
    let projected = formulation == Formulation::Projected;
    let name = match (kind, projected) {
        (CellKind::Hex8, false) => NAME_Q1,
        (CellKind::Hex27, false) => NAME_Q2,
        (CellKind::Hex8, true) => NAME_Q1_PROJECTED,
        (CellKind::Hex27, true) => NAME_Q2_PROJECTED,
    };
    let mesh = distorted_mesh(kind)?;
    let material = Material::linear(Moduli::from_young_poisson(
        1.0,
        POISSON[usize::from(projected)],
    )?);
    let boundary = boundary_nodes(&mesh)?;
    if boundary.len() >= mesh.n_nodes() {
        fail!("the patch mesh has no interior node");
    }
    let prescribed = prescribe("boundary", &mesh, &boundary, |x| {
        linear_field(x).0.map(Some)
    });
    let solution = solve_linear_elastic(
        &mesh,
        material,
        formulation,
        prescribed,
        Load::None,
        None,
        &direct(),
    )?;
    let nodal = max_nodal_error(&mesh, &solution.u)?;
    let (_, h1) = relative_errors(&solution, &linear_field)?;
    let criterion = Criterion::AtMost {
        tolerance: TOLERANCE,
    };
    Ok(CaseResult {
        case: name.to_owned(),
        checks: vec![
            Check::new("max nodal error (rel)", nodal, criterion),
            Check::new("H1 error (rel)", h1, criterion),
        ],
        error: None,
        seconds: 0.0,
    })
}

/// `max_n |u_h(X_n) - u(X_n)| / max_n |u(X_n)|` over all nodes (max norm of components).
fn max_nodal_error(mesh: &HexMesh, u: &Vector) -> Result<f64> {
    let (mut err, mut scale) = (0.0f64, 0.0f64);
    for (x, uh) in mesh.coords.iter().zip(u.host()?.chunks_exact(3)) {
        let exact = linear_field(*x).0;
        for d in 0..3 {
            err = err.max((uh[d] - exact[d]).abs());
            scale = scale.max(exact[d].abs());
        }
    }
    Ok(err / scale)
}
