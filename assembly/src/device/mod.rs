//! The element loop on a CUDA device: element kernels (`fem/cuda/element.cu`, launched through
//! `linalg::gpu::KernelModule`) write residual and tangent contributions straight into a
//! device value stream in the host assembler's contribution order, and COO plans sum them
//! owner-computes on the device (the same sums in the same order as the host: bit-identical
//! wherever the element values are): the residual's plan uploaded once, the tangent's made on the
//! device from it (`linalg::gpu::DeviceCooPlan::of_cell_blocks`, the host plan entry for entry;
//! the host makes its own only where it assembles).
//!
//! The crate's device API is [`DeviceProblem`]: the host [`crate::DiscreteProblem`]'s
//! operations under the same names ([`crate::NewtonProblem`] over both) on linalg
//! [`linalg::Vector`]s and a [`crate::NewtonSystem`] stored on the device: one Newton iteration's
//! "linearize, eliminate" in the host's calling order, the residual and free norm of line-search
//! trial states, the potential energy (cell energies summed exactly on the device, the host's
//! bits), the constraints' values, the cells' output fields and strains, the rigid-body modes
//! about `X + u`; only norms and sums come back. [`DeviceProblem::supports`] says, on the host,
//! whether a problem can go up; [`DeviceProblem::timed_internal_residual_tangent`] reports the
//! element loop's phases ([`DeviceAssemblyTimes`]) to the benchmarks. Nothing else is public:
//! no caller outside the crate sees a bare device array.
//!
//! The pieces below it are crate-private and work on linalg's bare device arrays
//! (`linalg::gpu`), as element loops do:
//! - `DeviceElements`: mesh, quadrature tables and the cells of each material on the device
//!   (one launch per material over its cell list, all writing one contribution stream); element
//!   residuals, tangent blocks, energies and output fields (Cauchy stress, von Mises, `J`, energy
//!   density) per cell.
//! - `DeviceAssembler`: `DeviceElements` plus the plans; residual and tangent of the whole mesh
//!   into device buffers.
//! - `DeviceConstraints`: Dirichlet constraints on the device (zeroing, copying, prescribed
//!   values with twists, own load-curve factors and values of `t` taken per load step,
//!   symmetric elimination), bit-identical to the host's.
//! - `DeviceTractions`, `DeviceAssembler::body_force_load`: dead loads integrated on the device
//!   (face kernel for tractions on Q1/Q2 faces, volume quadrature for the body force; fields
//!   evaluated by the host at the quadrature points), the host's bits; checked by the tests, not
//!   yet called by [`DeviceProblem`] (see the limits below).
//! - `DevicePressure`: a follower pressure's residual and nonsymmetric load stiffness added
//!   into the device residual and tangent in the host's face order (gather plans), the host's
//!   bits.
//! - `deformed_rigid_body_modes`: the AMG's near-null space at `X + u` where `u` lives, the
//!   host's bits ([`DeviceProblem::rigid_body_modes`]).
//!
//! Their parity tests against the host (and the NVRTC checks of their sources) are the crate's
//! `device::tests`.
//!
//! Only scalars cross to the host per evaluation (a 4-byte failure flag); a failing cell (inverted
//! geometry or `J <= 0`) is reported as the host reports it, the first in cell order.
//! Limits (reported as [`crate::AssemblyError::DeviceUnsupported`]): dead loads enter the Newton
//! loop through the external force vector, as on the host's Newton path; `hexfem run` still builds
//! that vector on the host (the same bits as the device kernels) and uploads it once.

mod assembler;
mod constraints;
mod elements;
mod loads;
mod pressure;
mod rigid_body;
mod system;

pub use assembler::DeviceAssemblyTimes;
pub use system::DeviceProblem;

pub(crate) use assembler::DeviceAssembler;
pub(crate) use constraints::DeviceConstraints;
pub(crate) use elements::DeviceElements;
pub(crate) use pressure::DevicePressure;
pub(crate) use rigid_body::deformed_rigid_body_modes;

#[cfg(test)]
use constraints::compile_constraints_source;
#[cfg(test)]
use elements::{compile_element_source, CELL_FIELDS};
#[cfg(test)]
use loads::{body_force_at_points, compile_loads_source, DeviceTractions};
#[cfg(test)]
use rigid_body::compile_rigid_body_source;

#[cfg(test)]
mod tests;
