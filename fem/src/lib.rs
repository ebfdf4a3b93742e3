//! Finite-element building blocks for 3D elasticity on hexahedra: the reference cell (cell kinds,
//! faces, local node numbering), Gauss quadrature, Lagrange bases (Q1, Q2), isotropic hyperelastic
//! materials with closed-form tangents, and element / face kernels that produce residuals and 3x3
//! tangent blocks. Knows nothing of meshes or sparse matrices; meshes are built on its reference
//! cell.
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
pub mod reference;
pub mod strain;
pub mod sym3;

pub use basis::{LagrangeHex, LagrangeQuad};
pub use element::{
    CellFieldSet, CellFields, ElementKernel, Formulation, StateCellFields, LOCKING_POISSON_RATIO,
};
pub use error::{FemError, Result};
pub use face::FaceKernel;
pub use load::Load;
pub use material::{von_mises, Material, Moduli, Tangent};
pub use quadrature::{GaussLegendre, Quadrature, QuadratureFace};
/// The device twin of [`ElementKernel`] (CUDA source, `fem/cuda/element.cu`): residual, tangent
/// blocks and energy per cell for Q1/Q2 and every [`Material`], specialised by `#define NODES`,
/// `NQP`, `MATERIAL` ([`Material::device_code`]) and `EPB`; compiled and launched by the crate that
/// owns device memory (assembly, through `linalg::gpu::KernelModule`). Its formulas are a
/// second copy of the host's, so the device tests check it against the host kernel and against
/// finite differences of its own residual.
pub const ELEMENT_CUDA_SOURCE: &str = include_str!("../cuda/element.cu");
/// The device twins of the projected formulation's kernels (`fem/cuda/projected.cu` after the
/// element source, whose defines, kinematics and materials it uses; one more define, `MODES`, and
/// the table [`ElementKernel::projection_table`]): residual, tangent blocks, energies and output
/// fields of `sum_q wd_q psi(F_bar_q)`, operation for operation as `fem/src/element/projected.rs`.
pub const PROJECTED_CUDA_SOURCE: &str = concat!(
    include_str!("../cuda/element.cu"),
    include_str!("../cuda/projected.cu")
);
/// The device twins of the dead-load integrals (`fem/cuda/loads.cu` after the element source,
/// whose defines and point gradients it uses): body-force contributions per cell
/// ([`ElementKernel`]'s `-int f N_a dV` at zero displacement), traction forces per face
/// ([`FaceKernel::nodal_forces`]) and their deterministic gather into nodal vectors.
pub const LOADS_CUDA_SOURCE: &str = concat!(
    include_str!("../cuda/element.cu"),
    include_str!("../cuda/loads.cu")
);

pub use reference::{face_corner_local_nodes, face_local_nodes, CellKind, Face, MAX_NODES};
pub use strain::{principal_values, principal_values_of, StrainMeasure};
