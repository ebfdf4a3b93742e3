//! Compute backends. `cuda` is the only module of the workspace that touches `cudarc`.

pub mod cuda;
