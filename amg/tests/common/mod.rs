//! The operator of the AMG tests and examples: PETSc's ex56 as the rest of hexfem builds it
//! (`assembly::ex56`, a dev-dependency only: the library sees matrices, never meshes): `m^3` nodes,
//! Q1 hexahedra, E = 1, nu = 0.25, the cells of the central sphere of radius 0.25 with E scaled by
//! `soft`, face z = 0 clamped (identity rows and columns; its nodes come first), body force
//! (1, 2, 0); the rigid-body modes as near-null space.
#![allow(dead_code)]

use amg::NearNullSpace;
use assembly::ex56::Ex56;
use assembly::RIGID_BODY_MODES_3D;
use linalg::{Bsr, Vector};

/// The assembled problem.
pub struct Problem {
    pub a: Bsr,
    pub b: Vector,
    pub near_null: NearNullSpace,
}

/// ex56 with `m` nodes per side and soft-inclusion factor `soft` (1 for the homogeneous cube).
pub fn elasticity(m: usize, soft: f64) -> Problem {
    elasticity_of_order(m, 1, soft)
}

/// [`elasticity`] with elements of `order` 1 (Q1) or 2 (Q2: `m - 1` even).
pub fn elasticity_of_order(m: usize, order: usize, soft: f64) -> Problem {
    let Ex56 {
        a, b, near_null, ..
    } = Ex56::with_soft_scale(m, order, soft).expect("ex56 with m >= 3 (Q2: m - 1 even)");
    let near_null = NearNullSpace::from_row_major(a.n_rows(), RIGID_BODY_MODES_3D, near_null)
        .expect("six rigid-body modes per unknown");
    Problem { a, b, near_null }
}

pub mod renewal;
