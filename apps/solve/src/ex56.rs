//! The "ex56" model problem of PETSc's `ksp/ex56` and of the blocked-GAMG paper: the unit cube with
//! `m^3` nodes, isotropic linear elasticity `E = 1, nu = 0.25`, a soft inclusion (cells whose centroid
//! lies within 0.25 of the centre have `E = 1e-3`), the face `z = 0` clamped and the body force
//! `(1, 2, 0)` per unit volume. Built through the same assembly path as `hexfem run`.

use anyhow::{ensure, Result};
use assembly::{CellMaterials, Constraints, ElasticityAssembler, Prescribed};
use fem::{Load, Material, Moduli};
use linalg::{ops, Bsr, Vector};
use mesh::{generate_box, BoxSpec, CellKind};

use crate::problem::near_null_space;

/// Young's modulus scale of the soft inclusion.
pub const SOFT_SCALE: f64 = 1e-3;
/// Radius of the soft inclusion about the cube centre.
pub const SOFT_RADIUS: f64 = 0.25;

/// The assembled, constrained ex56 system `A x = b` and its near-null space.
pub struct Ex56 {
    /// Stiffness with the clamped rows and columns eliminated (3x3 blocks).
    pub a: Bsr,
    pub b: Vector,
    /// Rigid-body modes of the nodes (the AMG's near-null space).
    pub near_null: amg::NearNullSpace,
    pub nodes_per_side: usize,
    pub order: usize,
    pub cells: usize,
}

impl Ex56 {
    /// Builds ex56 with `m` nodes per side and elements of `order` 1 or 2 (`m - 1` must then be even).
    pub fn new(m: usize, order: usize) -> Result<Self> {
        ensure!(m >= 3, "ex56 needs at least 3 nodes per side (got {m})");
        let kind = match order {
            1 => CellKind::Hex8,
            2 => CellKind::Hex27,
            _ => anyhow::bail!("--order {order}: valid orders are 1 and 2"),
        };
        ensure!(
            (m - 1).is_multiple_of(order),
            "Q{order} needs (m - 1) divisible by {order} (got m = {m})"
        );
        let n = (m - 1) / order;
        let mesh = generate_box(&BoxSpec {
            cells: [n; 3],
            lower: [0.0; 3],
            upper: [1.0; 3],
            kind,
            corners: None,
        })?;
        let hard = Material::linear(Moduli::from_young_poisson(1.0, 0.25)?);
        let soft = Material::linear(Moduli::from_young_poisson(SOFT_SCALE, 0.25)?);
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
        let mut assembler = ElasticityAssembler::new(&mesh, materials, order + 1)?;
        let clamped = mesh.set_nodes("zmin")?;
        let constraints = Constraints::new(
            mesh.n_nodes(),
            vec![Prescribed::Components {
                set: "zmin".into(),
                nodes: clamped,
                values: [Some(0.0); 3],
            }],
            &assembler.orphan_nodes(),
        )?;
        let dofs = 3 * mesh.n_nodes();
        let mut r = Vector::zeros(dofs);
        let mut a = assembler.new_matrix();
        assembler.residual_tangent(
            &Vector::zeros(dofs),
            Load::Constant([1.0, 2.0, 0.0]),
            &mut r,
            &mut a,
        )?;
        constraints.eliminate_in_matrix(&mut a)?;
        let mut b = Vector::zeros(dofs);
        ops::axpy(-1.0, &r, &mut b)?;
        constraints.zero_constrained(&mut b)?;
        let near_null = near_null_space(&mesh.coords)?;
        Ok(Self {
            a,
            b,
            near_null,
            nodes_per_side: m,
            order,
            cells: n,
        })
    }
}
