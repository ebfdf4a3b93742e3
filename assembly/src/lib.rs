//! From a hex mesh, materials and boundary conditions to blocked sparse operators: the element loop
//! that emits 3x3 tangent blocks in COO form and sums them through a [`linalg::CooPlan`] built once,
//! Dirichlet constraints eliminated symmetrically (keeping the block pattern), dead loads, the
//! rigid-body modes that smoothed aggregation uses as near-null space, the linear system of one
//! Newton iteration ([`DiscreteProblem`], [`NewtonSystem`]; [`NewtonProblem`] over the host or
//! a GPU) and the ex56 model problem built on it.

pub mod assembler;
pub mod constraints;
pub mod device;
pub mod error;
pub mod ex56;
pub mod hold;
pub mod loads;
pub mod newton_problem;
pub mod pieces;
pub mod pressure;
pub mod rigid_body;
pub mod system;

pub use assembler::{check_mesh_geometry, AssemblyTimings, CellMaterials, ElasticityAssembler};
pub use constraints::{rotation_matrix, Constraints, PositionFn, Prescribed};
pub use error::AssemblyError;
pub use hold::{free_motions, hold_gram, FreeMotion, MotionFrame};
pub use loads::{add_traction_load, body_force_load};
pub use newton_problem::NewtonProblem;
pub use pieces::MeshPieces;
pub use pressure::FollowerPressure;
pub use rigid_body::{
    coordinate_sums, rigid_body_modes, rigid_body_modes_about, RIGID_BODY_MODES_3D,
};
pub use system::{CurvedLoad, DiscreteProblem, NewtonSystem, Potential, RankPart};
