//! Kernels by device. Every numeric operation of the crate matches on where its operands' values
//! live ([`crate::Device`]) and calls the kernel of that backend: `host` (rayon); `cuda` (cudarc,
//! NVRTC: the only module of the workspace that touches a device runtime). Other crates reach the
//! GPU through the typed seam [`crate::gpu`].

pub mod cuda;
pub(crate) mod host;
