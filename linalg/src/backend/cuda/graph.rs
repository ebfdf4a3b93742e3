//! The strength graph of a device operator and the aggregation around its maximal independent
//! set, on the device (`linalg/cuda/graph.cu`, the rounds of `linalg/cuda/mis.cu`): the same
//! edges, weights, roots and aggregates as `amg`'s host set-up (`amg::strength_graph`,
//! `amg::aggregation`), bit for bit.
//!
//! Calling order: [`DeviceGraph::strength`] (a count pass, an exclusive scan, a fill pass; one
//! 8-byte download for the sizes), then [`DeviceGraph::aggregate`] (MIS priorities and rounds,
//! roots numbered by a scan, the "most connected neighbouring aggregate" rounds; one `u32` downloaded
//! per round and the vertex -> aggregate map at the end). The graph never crosses to the host
//! unless asked ([`DeviceGraph::download`]).

use cudarc::driver::PushKernelArg;

use super::context::driver_err;
use super::kernels::{grid_1d, GRAPH, MIS};
use super::matrix::DevicePattern;
use super::mis::MIS_IN;
use super::symbolic::exclusive_scan;
use super::{CudaContext, DeviceBsr, DeviceBuffer};
use crate::LinalgError;

/// Threads per block of the one-thread-per-vertex kernels.
const VERTEX_BLOCK: u32 = 256;

/// An undirected graph in device memory: CSR adjacency without self loops, `u32` offsets and
/// neighbours, `f64` edge weights (each row's neighbours in the operator's column order).
#[derive(Debug)]
pub struct DeviceGraph {
    n_vertices: usize,
    n_edges: usize,
    row_ptr: DeviceBuffer<u32>,
    col: DeviceBuffer<u32>,
    weight: DeviceBuffer<f64>,
}

/// A [`DeviceGraph`] downloaded: CSR row offsets (`n_vertices + 1`), neighbours, weights.
#[derive(Debug, Clone, PartialEq)]
pub struct HostGraph {
    pub row_ptr: Vec<usize>,
    pub col: Vec<u32>,
    pub weight: Vec<f64>,
}

/// The first row without a diagonal block that [`diagonal_norms`] found (as `n - row`, 0:
/// none), read when asked (one 4-byte download).
pub(crate) struct MissingDiagonal {
    n: usize,
    flag: DeviceBuffer<u32>,
}

impl MissingDiagonal {
    /// The first row without a diagonal block, if any (waits for the kernel).
    pub(crate) fn wait(&self, ctx: &CudaContext) -> Result<Option<usize>, LinalgError> {
        let flag = ctx.download(&self.flag)?[0];
        Ok((flag != 0).then(|| self.n - flag as usize))
    }
}

/// Queues `dnorm[i] = norms[diagonal slot of row i]` for the square rows of `p` (0 for a row
/// without a diagonal block, which the returned flag names).
pub(crate) fn diagonal_norms(
    ctx: &CudaContext,
    p: &DevicePattern,
    norms: &DeviceBuffer<f64>,
    dnorm: &mut DeviceBuffer<f64>,
) -> Result<MissingDiagonal, LinalgError> {
    let n = p.n_block_rows();
    let nn = n as u32;
    let mut flag = ctx.zeros::<u32>(1)?;
    let f = ctx.function(&GRAPH, &[], "strength_diagonal")?;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&nn)
        .arg(&p.row_ptr)
        .arg(&p.col_idx)
        .arg(norms)
        .arg(dnorm)
        .arg(&mut flag);
    // SAFETY: arguments match `strength_diagonal`; the pattern's arrays, its nnz norms, n
    // diagonal norms.
    unsafe { l.launch(per_vertex(n)) }.map_err(driver_err("strength_diagonal"))?;
    Ok(MissingDiagonal { n, flag })
}

/// `n` threads of a one-thread-per-vertex kernel.
fn per_vertex(n: usize) -> cudarc::driver::LaunchConfig {
    grid_1d(n as u64, VERTEX_BLOCK)
}

/// `32 n` threads of a one-warp-per-vertex kernel (the strength passes and the aggregate choices
/// of `graph.cu`).
pub(crate) fn warp_per_vertex(n: usize) -> cudarc::driver::LaunchConfig {
    grid_1d(32 * n as u64, VERTEX_BLOCK)
}

impl DeviceGraph {
    /// The strength graph of the square-block device operator `a` (amg's `strength_graph`):
    /// an edge `i -> j` (`j != i`) where block `A_ij` is nonzero and its weight
    /// `||A_ij||_F / sqrt(||A_ii||_F ||A_jj||_F)` is at least `threshold`, between two rows
    /// that each keep such an edge (a row without one is isolated in both directions).
    /// Errors: [`LinalgError::MissingDiagonal`] (the first such row), a non-square pattern.
    pub fn strength(ctx: &CudaContext, a: &DeviceBsr, threshold: f64) -> Result<Self, LinalgError> {
        let p = a.pattern();
        if p.n_block_rows() != p.n_block_cols() {
            return Err(LinalgError::PatternNotSquare {
                n_block_rows: p.n_block_rows(),
                n_block_cols: p.n_block_cols(),
            });
        }
        let n = p.n_block_rows();
        let nn = n as u32;
        let mut norms = ctx.zeros::<f64>(p.nnz().max(1))?;
        super::ops::block_norms(ctx, a, &mut norms)?;
        let mut dnorm = ctx.zeros::<f64>(n.max(1))?;
        let missing = diagonal_norms(ctx, p, &norms, &mut dnorm)?;
        let mut coupled = ctx.zeros::<u32>(n.max(1))?;
        let f = ctx.function(&GRAPH, &[], "strength_coupled")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nn)
            .arg(&p.row_ptr)
            .arg(&p.col_idx)
            .arg(&norms)
            .arg(&dnorm)
            .arg(&threshold)
            .arg(&mut coupled);
        // SAFETY: arguments match `strength_coupled` (one warp a row).
        unsafe { l.launch(warp_per_vertex(n)) }.map_err(driver_err("strength_coupled"))?;
        let mut counts = ctx.zeros::<u32>(n.max(1))?;
        let f = ctx.function(&GRAPH, &[], "strength_count")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nn)
            .arg(&p.row_ptr)
            .arg(&p.col_idx)
            .arg(&norms)
            .arg(&dnorm)
            .arg(&threshold)
            .arg(&coupled)
            .arg(&mut counts);
        // SAFETY: arguments match `strength_count` (one warp a row).
        unsafe { l.launch(warp_per_vertex(n)) }.map_err(driver_err("strength_count"))?;
        let (row_ptr, n_edges) = exclusive_scan(ctx, &counts, n, "device strength graph: edges")?;
        drop(counts);
        if let Some(row) = missing.wait(ctx)? {
            return Err(LinalgError::MissingDiagonal { row });
        }
        let n_edges = n_edges as usize;
        let mut col = ctx.zeros::<u32>(n_edges.max(1))?;
        let mut weight = ctx.zeros::<f64>(n_edges.max(1))?;
        let f = ctx.function(&GRAPH, &[], "strength_fill")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nn)
            .arg(&p.row_ptr)
            .arg(&p.col_idx)
            .arg(&norms)
            .arg(&dnorm)
            .arg(&threshold)
            .arg(&coupled)
            .arg(&row_ptr)
            .arg(&mut col)
            .arg(&mut weight);
        // SAFETY: arguments match `strength_fill` (one warp a row); `col` and `weight` hold
        // the counted edges.
        unsafe { l.launch(warp_per_vertex(n)) }.map_err(driver_err("strength_fill"))?;
        Ok(Self {
            n_vertices: n,
            n_edges,
            row_ptr,
            col,
            weight,
        })
    }

    /// Number of vertices.
    pub fn n_vertices(&self) -> usize {
        self.n_vertices
    }

    /// Number of directed edges.
    pub fn n_edges(&self) -> usize {
        self.n_edges
    }

    /// The graph on the host (counted downloads; for tests and the rare host step that needs
    /// the edges).
    pub fn download(&self, ctx: &CudaContext) -> Result<HostGraph, LinalgError> {
        let row_ptr = ctx.download(&self.row_ptr)?;
        let mut col = ctx.download(&self.col)?;
        let mut weight = ctx.download(&self.weight)?;
        col.truncate(self.n_edges);
        weight.truncate(self.n_edges);
        Ok(HostGraph {
            row_ptr: row_ptr.into_iter().map(|x| x as usize).collect(),
            col,
            weight,
        })
    }

    /// The maximal independent set's status on the device (amg's `mis`): priorities from the
    /// degrees (`mis_priorities`, isolated vertices out), then the Luby rounds.
    fn mis_status(
        &self,
        ctx: &CudaContext,
        distance_two: bool,
    ) -> Result<DeviceBuffer<u64>, LinalgError> {
        let n = self.n_vertices;
        let nn = n as u32;
        let mut status = ctx.zeros::<u64>(n.max(1))?;
        let f = ctx.function(&GRAPH, &[], "mis_priorities")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nn).arg(&self.row_ptr).arg(&mut status);
        // SAFETY: arguments match `mis_priorities`.
        unsafe { l.launch(per_vertex(n)) }.map_err(driver_err("mis_priorities"))?;
        mis_rounds(ctx, n, &self.row_ptr, &self.col, &mut status, distance_two)?;
        Ok(status)
    }

    /// The roots of the MIS (distance two: MIS-2), downloaded (`true` for a root).
    pub fn mis_roots(
        &self,
        ctx: &CudaContext,
        distance_two: bool,
    ) -> Result<Vec<bool>, LinalgError> {
        let status = self.mis_status(ctx, distance_two)?;
        let mut s = ctx.download(&status)?;
        s.truncate(self.n_vertices);
        Ok(s.into_iter().map(|s| s == MIS_IN).collect())
    }

    /// Aggregates around the MIS (amg's `aggregate_with_roots` before its merging of small
    /// aggregates): roots numbered in ascending vertex order; every other non-isolated vertex
    /// joins the neighbouring root it has the most edges to (ties: the smaller number), then
    /// leftovers join the neighbouring aggregate they have the most edges to, in rounds until
    /// none joins (the edges' weights are not read).
    /// Returns the vertex -> aggregate map (`u32::MAX`: none) and the number of aggregates.
    pub fn aggregate(
        &self,
        ctx: &CudaContext,
        distance_two: bool,
    ) -> Result<(Vec<u32>, usize), LinalgError> {
        let n = self.n_vertices;
        let nn = n as u32;
        let cfg = per_vertex(n);
        let status = self.mis_status(ctx, distance_two)?;
        let mut root_id = ctx.zeros::<u32>(n.max(1))?;
        let n_roots = {
            let mut is_root = ctx.zeros::<u32>(n.max(1))?;
            let f = ctx.function(&GRAPH, &[], "root_flags")?;
            let mut l = ctx.stream().launch_builder(&f);
            l.arg(&nn).arg(&status).arg(&mut is_root);
            // SAFETY: arguments match `root_flags`.
            unsafe { l.launch(cfg) }.map_err(driver_err("root_flags"))?;
            let (scanned, n_roots) = exclusive_scan(ctx, &is_root, n, "device aggregation: roots")?;
            let f = ctx.function(&GRAPH, &[], "root_ids")?;
            let mut l = ctx.stream().launch_builder(&f);
            l.arg(&nn).arg(&status).arg(&scanned).arg(&mut root_id);
            // SAFETY: arguments match `root_ids`.
            unsafe { l.launch(cfg) }.map_err(driver_err("root_ids"))?;
            n_roots as usize
        };
        let mut agg = ctx.zeros::<u32>(n.max(1))?;
        let f = ctx.function(&GRAPH, &[], "aggregate_roots")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nn)
            .arg(&self.row_ptr)
            .arg(&self.col)
            .arg(&root_id)
            .arg(&mut agg);
        // SAFETY: arguments match `aggregate_roots` (one warp a vertex).
        unsafe { l.launch(warp_per_vertex(n)) }.map_err(driver_err("aggregate_roots"))?;
        let mut next = root_id;
        let round = ctx.function(&GRAPH, &[], "aggregate_round")?;
        loop {
            let mut changed = ctx.zeros::<u32>(1)?;
            let mut l = ctx.stream().launch_builder(&round);
            l.arg(&nn)
                .arg(&self.row_ptr)
                .arg(&self.col)
                .arg(&agg)
                .arg(&mut next)
                .arg(&mut changed);
            // SAFETY: arguments match `aggregate_round` (one warp a vertex); `agg` and `next`
            // hold n entries.
            unsafe { l.launch(warp_per_vertex(n)) }.map_err(driver_err("aggregate_round"))?;
            if ctx.download(&changed)?[0] == 0 {
                break;
            }
            std::mem::swap(&mut agg, &mut next);
        }
        let mut agg = ctx.download(&agg)?;
        agg.truncate(n);
        Ok((agg, n_roots))
    }
}

/// Mean edges a vertex from which the MIS rounds' neighbourhood minimum takes a warp a vertex.
const WARP_ROW_EDGES: usize = 48;

/// Luby rounds queued between two looks at their counts: a set takes 5 to 12 rounds on the
/// levels of an elasticity hierarchy, and each look waits for the GPU; a round queued after the
/// set is final returns at once (`mis.cu`'s `mis_round_done`).
const MIS_ROUNDS_A_LOOK: usize = 4;

/// The Luby rounds of `linalg/cuda/mis.cu` on the device graph (`row_ptr`, `col`) from
/// `status` until a round moves no vertex: [`MIS_ROUNDS_A_LOOK`] rounds queued at a time, then
/// their counts downloaded (one look). The rounds after the last that moved a vertex change
/// nothing: the same set as one look a round.
pub(crate) fn mis_rounds(
    ctx: &CudaContext,
    n: usize,
    row_ptr: &DeviceBuffer<u32>,
    col: &DeviceBuffer<u32>,
    status: &mut DeviceBuffer<u64>,
    distance_two: bool,
) -> Result<(), LinalgError> {
    let mut m1 = ctx.zeros::<u64>(n.max(1))?;
    let mut m2 = ctx.zeros::<u64>(n.max(1))?;
    // a warp a vertex where rows are long (coarse levels), else a thread a vertex
    let long_rows = n > 0 && (col.len() / n) >= WARP_ROW_EDGES;
    let (closed_min, min_cfg) = match long_rows {
        true => (
            ctx.function(&MIS, &[], "closed_min_warp")?,
            warp_per_vertex(n),
        ),
        false => (
            ctx.function(&MIS, &[], "closed_min")?,
            grid_1d(n as u64, 256),
        ),
    };
    let update = ctx.function(&MIS, &[], "mis_update")?;
    let nn = n as u32;
    let cfg = grid_1d(n as u64, 256);
    loop {
        let mut counts = ctx.zeros::<u32>(MIS_ROUNDS_A_LOOK)?;
        for round in 0..MIS_ROUNDS_A_LOOK as u32 {
            let mut l = ctx.stream().launch_builder(&closed_min);
            l.arg(&nn)
                .arg(row_ptr)
                .arg(col)
                .arg(&*status)
                .arg(&mut m1)
                .arg(&counts)
                .arg(&round);
            // SAFETY: arguments match `closed_min` and `closed_min_warp` (its launch shape);
            // every buffer holds n entries (row_ptr n + 1), `counts` MIS_ROUNDS_A_LOOK.
            unsafe { l.launch(min_cfg) }.map_err(driver_err("closed_min"))?;
            if distance_two {
                let mut l = ctx.stream().launch_builder(&closed_min);
                l.arg(&nn)
                    .arg(row_ptr)
                    .arg(col)
                    .arg(&m1)
                    .arg(&mut m2)
                    .arg(&counts)
                    .arg(&round);
                // SAFETY: as above.
                unsafe { l.launch(min_cfg) }.map_err(driver_err("closed_min"))?;
            }
            let reach = if distance_two { &m2 } else { &m1 };
            let mut l = ctx.stream().launch_builder(&update);
            l.arg(&nn)
                .arg(&mut *status)
                .arg(reach)
                .arg(&mut counts)
                .arg(&round);
            // SAFETY: arguments match `mis_update`; `counts` holds MIS_ROUNDS_A_LOOK counters.
            unsafe { l.launch(cfg) }.map_err(driver_err("mis_update"))?;
        }
        if ctx.download(&counts)?.contains(&0) {
            return Ok(());
        }
    }
}
