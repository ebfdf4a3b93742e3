//! Finite-element building blocks for 3D elasticity on hexahedra: Gauss quadrature, Lagrange bases
//! (Q1, Q2), isotropic hyperelastic materials with closed-form tangents, and element / face kernels
//! that produce residuals and 3x3 tangent blocks. Knows nothing of meshes or sparse matrices.
//!
//! Conventions (ARCHITECTURE.md): lexicographic node order (`i` fastest), tangent blocks row-major
//! with `K_ab[3 i + k] = d r_{a,i} / d u_{b,k}`, material tangent `A[(3 i + J, 3 k + L)] = dP_iJ/dF_kL`,
//! residual `r_a = int P : grad_X N_a dV - int f N_a dV` (total Lagrangian).

pub mod basis;
pub mod element;
pub mod error;
pub mod face;
pub mod load;
pub mod material;
pub mod quadrature;

pub use basis::{Face, LagrangeHex, LagrangeQuad};
pub use element::{CellFields, ElementKernel};
pub use error::{FemError, Result};
pub use face::FaceKernel;
pub use load::Load;
pub use material::{von_mises, Material, Moduli, Tangent};
pub use quadrature::{GaussLegendre, Quadrature, QuadratureFace};
