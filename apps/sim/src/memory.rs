//! The memory guard: before anything large is allocated, estimate what the whole run will hold
//! (mesh, assembly plans, tangent matrix, AMG hierarchy, solver vectors) and refuse a run that
//! does not fit in the memory the machine has available, naming both numbers.
//!
//! The model counts, per node and per cell, the arrays the run keeps; its constants were
//! calibrated against the peak resident memory of `hexfem run` on the twisting column (Q1 30k and
//! 69k nodes: 4.7-5.2 KB per node measured, 4.8 modelled; Q2 31k and 69k nodes: 7.8 measured, 8.3
//! modelled).

use config::{Config, LinearSolverMethod, MeshSource};

use crate::Result;

/// What the run is estimated to hold at its peak, in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryEstimate {
    pub nodes: f64,
    pub cells: f64,
    pub mesh: f64,
    pub plans: f64,
    pub matrix: f64,
    pub preconditioner: f64,
    pub vectors: f64,
    pub total: f64,
}

/// Bytes per stored 3x3 block of a matrix: values and a column index.
const BLOCK_BYTES: f64 = 9.0 * 8.0 + 4.0;
/// Bytes per element contribution in the segmented COO plans (measured, `docs/benchmarks.md`).
const PLAN_BYTES_PER_CONTRIBUTION: f64 = 8.7;
/// Vectors of three unknowns per node held by Newton, CG and the smoothers.
const VECTORS: f64 = 20.0;
/// AMG hierarchy, Galerkin plans and smoother data relative to the fine matrix.
const AMG_FACTOR: f64 = 0.85;
/// The program, thread stacks and batch buffers.
const BASE: f64 = 32.0 * 1024.0 * 1024.0;

impl MemoryEstimate {
    /// The estimate for a mesh of `nodes` nodes and `cells` cells of `order` 1 or 2.
    pub fn new(nodes: f64, cells: f64, order: usize, amg: bool) -> Self {
        let npc = if order == 2 { 27.0 } else { 8.0 };
        // Stored blocks per row: 27 for Q1; Q2 rows average between 27 (cell centres) and 125
        // (vertices), 50 as measured.
        let blocks_per_node = if order == 2 { 50.0 } else { 26.5 };
        let mesh = nodes * 24.0 + cells * npc * 8.0;
        let plans = cells * (npc * npc + npc) * PLAN_BYTES_PER_CONTRIBUTION;
        let matrix = nodes * blocks_per_node * BLOCK_BYTES;
        let preconditioner = if amg { AMG_FACTOR * matrix } else { 0.0 };
        let vectors = VECTORS * 3.0 * 8.0 * nodes;
        MemoryEstimate {
            nodes,
            cells,
            mesh,
            plans,
            matrix,
            preconditioner,
            vectors,
            total: BASE + mesh + plans + matrix + preconditioner + vectors,
        }
    }
}

/// The estimate of a configured run (a Gmsh mesh is read to count its nodes and cells).
pub fn estimate(config: &Config) -> Result<MemoryEstimate> {
    let amg = matches!(
        config.linear_solver.method,
        LinearSolverMethod::CgAmg | LinearSolverMethod::Auto
    );
    Ok(match &config.mesh {
        MeshSource::Box(b) => {
            let [a, b2, c] = b.cells.map(|n| n as f64);
            let p = b.order as f64;
            let nodes = (p * a + 1.0) * (p * b2 + 1.0) * (p * c + 1.0);
            MemoryEstimate::new(nodes, a * b2 * c, b.order, amg)
        }
        MeshSource::Gmsh(g) => {
            let mesh = crate::locate::located(config, mesh::read_mesh(&g.file))?;
            MemoryEstimate::new(
                mesh.n_nodes() as f64,
                mesh.n_cells() as f64,
                mesh.order(),
                amg,
            )
        }
    })
}

/// Memory available to this process: the kernel's `MemAvailable`, lowered to the cgroup's
/// limit less its usage where one is set; `None` where neither can be read.
pub fn available() -> Option<f64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = meminfo
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse::<f64>()
        .ok()?;
    let mut bytes = kb * 1024.0;
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
    };
    if let (Some(max), Some(current)) = (
        read("/sys/fs/cgroup/memory.max"),
        read("/sys/fs/cgroup/memory.current"),
    ) {
        bytes = bytes.min((max - current).max(0.0));
    }
    Some(bytes)
}

/// `bytes` as GiB or MiB for messages.
pub fn human(bytes: f64) -> String {
    if bytes >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} GiB", bytes / (1024.0 * 1024.0 * 1024.0))
    } else {
        format!("{:.0} MiB", bytes / (1024.0 * 1024.0))
    }
}

/// Refuses a run whose estimate exceeds the available memory; the error is located at the mesh
/// and gives the estimate, its parts and what is available. Returns the estimate.
pub fn guard(config: &Config) -> Result<MemoryEstimate> {
    let e = estimate(config)?;
    let Some(available) = available() else {
        return Ok(e);
    };
    if e.total > available {
        let key = match &config.mesh {
            MeshSource::Box(_) => "mesh.box.cells",
            MeshSource::Gmsh(_) => "mesh.gmsh.file",
        };
        return Err(crate::Error::Input(config.error_at(
            key,
            format!(
                "the run needs about {} ({:.3e} nodes, {:.3e} cells: mesh {}, assembly plans {}, \
                 tangent matrix {}, preconditioner {}, vectors {}), but {} of memory is \
                 available; use a coarser mesh",
                human(e.total),
                e.nodes,
                e.cells,
                human(e.mesh),
                human(e.plans),
                human(e.matrix),
                human(e.preconditioner),
                human(e.vectors),
                human(available)
            ),
        )));
    }
    Ok(e)
}

/// This process's peak resident memory in bytes (`VmHWM` of `/proc/self/status`); 0 where that
/// is unavailable (not Linux).
pub fn peak_resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| 1024 * kb)
}
