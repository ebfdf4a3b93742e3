//! The "ex56" model problem of PETSc's `ksp/ex56` and of the blocked-GAMG paper, the one builder
//! that the AMG tests, the end-to-end tests and `hexfem bench gamg` share: the unit cube with `m^3`
//! nodes, isotropic linear elasticity `E = 1, nu = 0.25`, a soft inclusion (cells whose centroid
//! lies within 0.25 of the centre have `E` scaled by [`SOFT_SCALE`]), the face `z = 0` clamped and
//! the body force `(1, 2, 0)` per unit volume. Assembled through [`DiscreteProblem`] as one Newton
//! iteration from rest, the path `hexfem run` takes.

use fem::{CellKind, Material, Moduli};
use linalg::{Bsr, Vector};
use mesh::{generate_box, BoxSpec};

use crate::{
    body_force_load, rigid_body_modes, AssemblyError, CellMaterials, Constraints, DiscreteProblem,
    ElasticityAssembler, Prescribed,
};

/// Young's modulus of the matrix material.
pub const YOUNG: f64 = 1.0;
/// Poisson's ratio of both materials.
pub const POISSON: f64 = 0.25;
/// Young's modulus scale of the soft inclusion.
pub const SOFT_SCALE: f64 = 1e-3;
/// Radius of the soft inclusion about the cube centre.
pub const SOFT_RADIUS: f64 = 0.25;
/// Body force per unit volume.
pub const BODY_FORCE: [f64; 3] = [1.0, 2.0, 0.0];
/// The clamped face set.
pub const CLAMPED: &str = "zmin";

/// The assembled, constrained ex56 system `A x = b` and its near-null space.
pub struct Ex56 {
    /// Stiffness with the clamped rows and columns eliminated (3x3 blocks, one block row per node;
    /// nodes numbered lexicographically, `x` fastest, so the clamped nodes come first).
    pub a: Bsr,
    pub b: Vector,
    /// Node coordinates.
    pub coords: Vec<[f64; 3]>,
    /// The rigid-body modes of the nodes (the AMG's near-null space), row-major with
    /// [`crate::RIGID_BODY_MODES_3D`] columns ([`rigid_body_modes`]).
    pub near_null: Vec<f64>,
    pub nodes_per_side: usize,
    pub order: usize,
    /// Cells per side.
    pub cells: usize,
}

impl Ex56 {
    /// Builds ex56 with `m` nodes per side and elements of `order` 1 or 2 (`m - 1` must then be
    /// even).
    pub fn new(m: usize, order: usize) -> Result<Self, AssemblyError> {
        Self::with_soft_scale(m, order, SOFT_SCALE)
    }

    /// As [`Ex56::new`] with the inclusion's Young's modulus scaled by `soft_scale` (1 gives the
    /// homogeneous cube).
    pub fn with_soft_scale(m: usize, order: usize, soft_scale: f64) -> Result<Self, AssemblyError> {
        let n = Self::cells_per_side(m, order)?;
        let kind = CellKind::from_order(order).map_err(|_| AssemblyError::InvalidModelProblem {
            reason: format!("order {order} is not supported (valid orders: 1, 2)"),
        })?;
        let mesh = generate_box(&BoxSpec::new([n; 3], [0.0; 3], [1.0; 3], kind))?;
        let Ex56System { a, b } = Self::assemble(&mesh, order, soft_scale)?;
        Ok(Self {
            a,
            b,
            near_null: rigid_body_modes(&mesh.coords),
            coords: mesh.coords,
            nodes_per_side: m,
            order,
            cells: n,
        })
    }

    /// Cells per side of ex56 with `m` nodes per side and elements of `order`; an error names
    /// what is wrong with `m` or `order`.
    pub fn cells_per_side(m: usize, order: usize) -> Result<usize, AssemblyError> {
        let invalid = |reason: String| AssemblyError::InvalidModelProblem { reason };
        if m < 3 {
            return Err(invalid(format!(
                "ex56 needs at least 3 nodes per side (got {m})"
            )));
        }
        CellKind::from_order(order).map_err(|_| {
            invalid(format!(
                "order {order} is not supported (valid orders: 1, 2)"
            ))
        })?;
        if !(m - 1).is_multiple_of(order) {
            return Err(invalid(format!(
                "Q{order} needs (m - 1) divisible by {order} (got m = {m})"
            )));
        }
        Ok((m - 1) / order)
    }

    /// The ex56 system on `mesh`: the whole unit cube, or one rank's part of it (with a layer of
    /// ghost cells, whose owned rows are then the whole cube's rows bit for bit): the soft
    /// inclusion by cell centroid, the face `zmin` clamped (eliminated: diagonal rows of a fraction of the stiffness's diagonal), the body
    /// force.
    pub fn assemble(
        mesh: &mesh::HexMesh,
        order: usize,
        soft_scale: f64,
    ) -> Result<Ex56System, AssemblyError> {
        let moduli = |e| Moduli::from_young_poisson(e, POISSON).map_err(AssemblyError::Kernel);
        let hard = Material::linear(moduli(YOUNG)?);
        let soft = Material::linear(moduli(soft_scale * YOUNG)?);
        let of_cell = (0..mesh.n_cells())
            .map(|c| {
                let nodes = mesh.cell_nodes(c);
                let centroid: [f64; 3] = std::array::from_fn(|d| {
                    nodes.iter().map(|&i| mesh.coords[i][d]).sum::<f64>() / nodes.len() as f64
                });
                let r2: f64 = centroid.iter().map(|x| (x - 0.5) * (x - 0.5)).sum();
                u16::from(r2 <= SOFT_RADIUS * SOFT_RADIUS)
            })
            .collect();
        let materials = CellMaterials::new(vec![hard, soft], of_cell)?;
        let mut assembler = ElasticityAssembler::new(mesh, materials, order + 1)?;
        let constraints = Constraints::new(
            mesh.n_nodes(),
            vec![Prescribed::Components {
                set: CLAMPED.into(),
                nodes: mesh.set_nodes(CLAMPED)?,
                values: [Some(0.0); 3],
            }],
            &assembler.orphan_nodes(),
        )?;
        let external = body_force_load(&mut assembler, fem::Load::Constant(BODY_FORCE))?;
        let mut problem = DiscreteProblem {
            assembler,
            constraints,
            external,
            follower: Vec::new(),
            curved: Vec::new(),
            partition: None,
        };
        let mut system = problem.new_system()?;
        problem.linearize(&Vector::zeros(problem.n_dofs()), 1.0, &mut system)?;
        problem.eliminate(&mut system)?;
        Ok(Ex56System {
            a: system.tangent,
            b: system.rhs,
        })
    }
}

/// The constrained ex56 system of a mesh (see [`Ex56::assemble`]).
pub struct Ex56System {
    /// Stiffness with the clamped rows and columns eliminated.
    pub a: Bsr,
    pub b: Vector,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clamped rows are diagonal rows that keep a fraction of the stiffness's diagonal, the load is the body force on the free nodes (each
    /// component's total equals the force on the cube minus what the clamped nodes take), and the
    /// operator is symmetric.
    #[test]
    fn ex56_is_clamped_loaded_and_symmetric() {
        let m = 5;
        let p = Ex56::new(m, 1).unwrap();
        assert_eq!(p.a.n_rows(), 3 * m * m * m);
        let dense = p.a.to_dense().unwrap();
        let n = p.a.n_rows();
        for i in 0..n {
            for j in 0..n {
                assert_eq!(dense[i * n + j], dense[j * n + i], "({i}, {j})");
            }
        }
        let free_diagonal = (3 * m * m..n).map(|i| dense[i * n + i]).fold(0.0, f64::max);
        for dof in 0..3 * m * m {
            for j in 0..n {
                if j == dof {
                    // a fraction of the stiffness's own (a clamped node has at most half the
                    // cells of a free interior one)
                    let d = dense[dof * n + j];
                    let most = linalg::ELIMINATED_DIAGONAL_FRACTION * free_diagonal;
                    assert!(d > 0.0 && d <= most, "({dof}, {dof}): {d}");
                } else {
                    assert_eq!(dense[dof * n + j], 0.0);
                }
            }
            assert_eq!(p.b.host().unwrap()[dof], 0.0);
        }
        // The body force on a cell of side h is split equally among its 8 nodes; the clamped
        // layer's nodes take their share from the first cell layer only.
        let h = 1.0 / (m - 1) as f64;
        let clamped_share = (m - 1) * (m - 1) * 4;
        let free_share = (m - 1).pow(3) * 8 - clamped_share;
        for (d, force) in BODY_FORCE.into_iter().enumerate() {
            let total: f64 = p.b.host().unwrap().iter().skip(d).step_by(3).sum();
            let expected = force * h.powi(3) / 8.0 * free_share as f64;
            assert!((total - expected).abs() < 1e-12, "component {d}: {total}");
        }
        assert_eq!(p.near_null.len(), n * crate::RIGID_BODY_MODES_3D);
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(Ex56::new(2, 1).is_err());
        assert!(Ex56::new(8, 2).is_err());
        assert!(Ex56::new(9, 3).is_err());
    }
}
