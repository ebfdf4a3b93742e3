//! Sparse direct solver for small symmetric problems: envelope (skyline) `L D L^T` in a
//! reverse Cuthill-McKee ordering of the block graph.
//!
//! Calling order: [`DirectSymbolic::new`] once per pattern (ordering and profile), then
//! [`DirectSolver::factor`] for each set of values, then [`DirectSolver::solve`] per right-hand
//! side; failures are [`crate::LinalgError`] values. No pivoting: the factorization exists for symmetric positive definite matrices and for
//! symmetric quasi-definite ones (`[[K, B^T], [B, -C]]`, `K` and `C` positive definite) in any
//! symmetric ordering. Factorization and solves are sequential, hence deterministic.
//!
//! Cost: memory is the envelope size, work about the sum of squared row envelope widths; meant
//! for coarse AMG levels and small verification problems (tens of thousands of unknowns).

mod factor;
mod rcm;
mod symbolic;
#[cfg(test)]
mod tests;

pub use factor::DirectSolver;
pub use symbolic::DirectSymbolic;
