//! The `.cu` sources (files under `linalg/cuda/`, embedded at build time) and launch helpers.

use cudarc::driver::LaunchConfig;

use super::nvrtc::KernelSource;

/// Every source with its `--fmad` choice. `false` wherever the kernel mirrors a host kernel's
/// operations one for one, so that the device rounds exactly as the host does (bit-identical
/// results); these kernels are memory-bound, so separate multiply and add cost nothing
/// measurable (see docs/benchmarks.md).
pub(crate) const SPMV: KernelSource = KernelSource {
    name: "spmv.cu",
    text: include_str!("../../../cuda/spmv.cu"),
    fmad: false,
};
pub(crate) const VECTOR: KernelSource = KernelSource {
    name: "vector.cu",
    text: include_str!("../../../cuda/vector.cu"),
    fmad: false,
};
pub(crate) const JACOBI: KernelSource = KernelSource {
    name: "jacobi.cu",
    text: include_str!("../../../cuda/jacobi.cu"),
    fmad: false,
};
pub(crate) const COO: KernelSource = KernelSource {
    name: "coo.cu",
    text: include_str!("../../../cuda/coo.cu"),
    fmad: false,
};
pub(crate) const SPGEMM: KernelSource = KernelSource {
    name: "spgemm.cu",
    text: include_str!("../../../cuda/spgemm.cu"),
    fmad: false,
};

pub(crate) const OPS: KernelSource = KernelSource {
    name: "ops.cu",
    text: include_str!("../../../cuda/ops.cu"),
    fmad: false,
};

pub(crate) const MIS: KernelSource = KernelSource {
    name: "mis.cu",
    text: include_str!("../../../cuda/mis.cu"),
    fmad: false,
};

pub(crate) const GRAPH: KernelSource = KernelSource {
    name: "graph.cu",
    text: include_str!("../../../cuda/graph.cu"),
    fmad: false,
};

pub(crate) const HALO: KernelSource = KernelSource {
    name: "halo.cu",
    text: include_str!("../../../cuda/halo.cu"),
    fmad: false,
};

pub(crate) const GALERKIN: KernelSource = KernelSource {
    name: "galerkin.cu",
    text: include_str!("../../../cuda/galerkin.cu"),
    fmad: false,
};

pub(crate) const QR: KernelSource = KernelSource {
    name: "qr.cu",
    text: include_str!("../../../cuda/qr.cu"),
    fmad: false,
};

pub(crate) const SYMBOLIC: KernelSource = KernelSource {
    name: "symbolic.cu",
    text: include_str!("../../../cuda/symbolic.cu"),
    fmad: false,
};

/// Names of the sources, for [`super::compile_with_log`].
pub const SOURCE_NAMES: &[&str] = &[
    "spmv.cu",
    "vector.cu",
    "jacobi.cu",
    "coo.cu",
    "spgemm.cu",
    "ops.cu",
    "mis.cu",
    "graph.cu",
    "halo.cu",
    "galerkin.cu",
    "qr.cu",
    "symbolic.cu",
];

/// The source called `name`.
pub(crate) fn source(name: &str) -> Option<KernelSource> {
    [
        SPMV, VECTOR, JACOBI, COO, SPGEMM, OPS, MIS, GRAPH, HALO, GALERKIN, QR, SYMBOLIC,
    ]
    .into_iter()
    .find(|s| s.name == name)
}

/// `n` threads in blocks of `block` (at least one block, so that empty launches stay valid).
pub(crate) fn grid_1d(n: u64, block: u32) -> LaunchConfig {
    let blocks = n.div_ceil(block as u64).clamp(1, i32::MAX as u64) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Grid-stride launch for element-wise kernels over `n` entries.
pub(crate) fn grid_stride(n: u64) -> LaunchConfig {
    const BLOCK: u32 = 256;
    let blocks = n.div_ceil(BLOCK as u64).clamp(1, 65_535 * 8) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// [`SPGEMM`] with FMA contraction (faster, equal to the host's to rounding only).
pub(crate) const SPGEMM_FMAD: KernelSource = KernelSource {
    fmad: true,
    ..SPGEMM
};
