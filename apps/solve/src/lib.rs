//! hexfem's solution layer: the discrete problem of a run (mesh, materials, constraints, loads),
//! Newton with lifting, line search and load stepping, and the choice of linear solver.

pub mod ex56;
pub mod linear_solver;
pub mod newton;
pub mod problem;
