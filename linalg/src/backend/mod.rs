//! Kernels by device. Every numeric operation of the crate matches on where its operands' values
//! live ([`crate::Device`]) and calls the kernel of that backend: `host` (rayon, today's only
//! backend); a `cuda` backend (cudarc, NVRTC) plugs in beside it. Only this module will touch a
//! device runtime.

pub(crate) mod host;
