//! A rank's rows of the distributed strength graph and the aggregation rounds on ranks, on the
//! rank's GPU (`linalg/cuda/graph.cu`'s `dist_*` kernels): `amg`'s `dist_strength_graph` and
//! `dist_aggregate` rounds, the same edges (in the serial ids' order), weights, roots and labels
//! bit for bit.
//!
//! Local vertices: the rank's owned block rows `0..n`, then the ghosts of its operator's halo
//! (`n + c` for the off-diagonal part's column `c`). A per-vertex state is an owned buffer and a
//! ghost buffer that the caller's [`RankExchange`] fills from the owners: 8-byte values (`u64`
//! states and labels as the bits of `f64`s), which travel unchanged. Every round reads the
//! previous round's arrays only (owner computes), so the rounds are the host's.
//!
//! Calling order: [`RankGraph::strength`] (three exchanges: diagonal norms, coupled rows and,
//! by the caller before, the serial ids), then [`RankGraph::aggregate`] (per MIS round one or two
//! exchanges and one `u32` down, per leftover round one of each; the owned labels down at the
//! end). The edges cross to the host only when asked ([`RankGraph::download`]).

use cudarc::driver::{LaunchArgs, PushKernelArg};

use super::context::driver_err;
use super::graph::{diagonal_norms, HostGraph};
use super::kernels::{grid_1d, GRAPH, MIS};
use super::symbolic::exclusive_scan;
use super::{CudaContext, DeviceBsr, DeviceBuffer, DevicePattern};
use crate::LinalgError;

/// The label of a vertex in no aggregate (`amg`'s `UNAGGREGATED`).
const UNAGGREGATED: u32 = u32::MAX;

/// What the rounds need from the other ranks: the caller's halo and communicator.
pub trait RankExchange {
    /// Collective over the neighbours: the ghosts' values of `owned` (one 8-byte value a
    /// vertex, its bits unchanged) into `ghost` (one a ghost, in the halo's order).
    fn fill_ghosts(
        &mut self,
        owned: &DeviceBuffer<f64>,
        ghost: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError>;

    /// Collective: true on every rank where any rank's `local` is.
    fn any(&mut self, local: bool) -> Result<bool, LinalgError>;

    /// Collective: every rank's outcome of a phase; an error on one rank is an error on all.
    fn agree(&mut self, local: Result<(), LinalgError>) -> Result<(), LinalgError>;
}

/// A rank's rows of the distributed strength graph in device memory: CSR over the owned
/// vertices, `u32` offsets and local neighbours (owned or ghost, each row in its neighbours'
/// serial id order), `f64` weights.
#[derive(Debug)]
pub struct RankGraph {
    n: usize,
    n_ghosts: usize,
    n_edges: usize,
    row_ptr: DeviceBuffer<u32>,
    col: DeviceBuffer<u32>,
    weight: DeviceBuffer<f64>,
    /// The owned vertices' serial ids (`u64` bits).
    serial: DeviceBuffer<f64>,
}

/// `n` threads of a one-thread-per-vertex kernel.
fn per_vertex(n: usize) -> cudarc::driver::LaunchConfig {
    grid_1d(n as u64, 256)
}

/// A buffer of `n` zeros (none allocated for `n == 0`: the kernels then read nothing, and an
/// exchanged buffer's length is the halo's exactly).
fn zeros(ctx: &CudaContext, n: usize) -> Result<DeviceBuffer<f64>, LinalgError> {
    if n == 0 {
        ctx.upload::<f64>(&[])
    } else {
        ctx.zeros::<f64>(n)
    }
}

/// The owned and ghost buffers of one exchanged state.
struct Split {
    owned: DeviceBuffer<f64>,
    ghost: DeviceBuffer<f64>,
}

impl Split {
    fn zeros(ctx: &CudaContext, n: usize, n_ghosts: usize) -> Result<Self, LinalgError> {
        Ok(Self {
            owned: zeros(ctx, n)?,
            ghost: zeros(ctx, n_ghosts)?,
        })
    }
}

/// The operands the three strength kernels share, in their parameters' order: the owned rows'
/// parts (pattern and block norms) and the diagonal norms of the owned and ghost vertices.
struct Operands<'a> {
    n: u32,
    diag: &'a DevicePattern,
    d_norms: &'a DeviceBuffer<f64>,
    offd: &'a DevicePattern,
    o_norms: &'a DeviceBuffer<f64>,
    dnorm: &'a Split,
    threshold: f64,
}

impl Operands<'_> {
    /// Pushes the shared arguments onto a launch of `dist_strength_coupled`, `_count` or
    /// `_fill` (their first ten parameters).
    fn push<'b>(&'b self, l: &mut LaunchArgs<'b>) {
        l.arg(&self.n)
            .arg(&self.diag.row_ptr)
            .arg(&self.diag.col_idx)
            .arg(self.d_norms)
            .arg(&self.offd.row_ptr)
            .arg(&self.offd.col_idx)
            .arg(self.o_norms)
            .arg(&self.dnorm.owned)
            .arg(&self.dnorm.ghost)
            .arg(&self.threshold);
    }
}

impl RankGraph {
    /// Collective. The strength graph of a rank's rows of a square-block operator (its
    /// diagonal part `diag`, owned columns, and off-diagonal part `offd`, ghost columns), as
    /// `amg::dist_strength_graph`: an edge `i -> j` where block `A_ij` is nonzero, off the
    /// diagonal and of weight `||A_ij||_F / sqrt(||A_ii||_F ||A_jj||_F) >= threshold`, between
    /// two rows that keep such an edge (the ghosts' norms and flags from their owners).
    /// `serial`: the owned vertices' serial ids as `u64` bits, `serial_ghost` the ghosts'.
    /// Errors (agreed): [`LinalgError::MissingDiagonal`] (this rank's first such row), a
    /// diagonal part that is not square.
    pub fn strength(
        ctx: &CudaContext,
        diag: &DeviceBsr,
        offd: &DeviceBsr,
        threshold: f64,
        serial: DeviceBuffer<f64>,
        serial_ghost: &DeviceBuffer<f64>,
        x: &mut impl RankExchange,
    ) -> Result<Self, LinalgError> {
        let (dp, op) = (diag.pattern(), offd.pattern());
        let n = dp.n_block_rows();
        let n_ghosts = op.n_block_cols();
        let shape = if dp.n_block_cols() != n {
            Err(LinalgError::PatternNotSquare {
                n_block_rows: n,
                n_block_cols: dp.n_block_cols(),
            })
        } else if op.n_block_rows() != n || serial.len() != n || serial_ghost.len() != n_ghosts {
            Err(LinalgError::DimensionMismatch {
                what: "rank strength graph: off-diagonal part's rows, owned and ghost serial ids",
                expected: n + n + n_ghosts,
                found: op.n_block_rows() + serial.len() + serial_ghost.len(),
            })
        } else {
            Ok(())
        };
        x.agree(shape)?;
        let nn = n as u32;
        // the three passes run one warp an owned row
        let cfg = super::graph::warp_per_vertex(n);
        let mut d_norms = zeros(ctx, dp.nnz())?;
        let mut o_norms = zeros(ctx, op.nnz())?;
        super::ops::block_norms(ctx, diag, &mut d_norms)?;
        super::ops::block_norms(ctx, offd, &mut o_norms)?;
        let mut dnorm = Split::zeros(ctx, n, n_ghosts)?;
        let missing = diagonal_norms(ctx, dp, &d_norms, &mut dnorm.owned)?.wait(ctx)?;
        x.agree(match missing {
            None => Ok(()),
            Some(row) => Err(LinalgError::MissingDiagonal { row }),
        })?;
        x.fill_ghosts(&dnorm.owned, &mut dnorm.ghost)?;
        let operands = Operands {
            n: nn,
            diag: dp,
            d_norms: &d_norms,
            offd: op,
            o_norms: &o_norms,
            dnorm: &dnorm,
            threshold,
        };
        let mut coupled = Split::zeros(ctx, n, n_ghosts)?;
        let f = ctx.function(&GRAPH, &[], "dist_strength_coupled")?;
        let mut l = ctx.stream().launch_builder(&f);
        operands.push(&mut l);
        l.arg(&mut coupled.owned);
        // SAFETY: arguments match `dist_strength_coupled` (one warp a row); both parts' arrays
        // and norms, n owned and n_ghosts ghost diagonal norms.
        unsafe { l.launch(cfg) }.map_err(driver_err("dist_strength_coupled"))?;
        x.fill_ghosts(&coupled.owned, &mut coupled.ghost)?;
        let mut counts = ctx.zeros::<u32>(n.max(1))?;
        let f = ctx.function(&GRAPH, &[], "dist_strength_count")?;
        let mut l = ctx.stream().launch_builder(&f);
        operands.push(&mut l);
        l.arg(&coupled.owned).arg(&coupled.ghost).arg(&mut counts);
        // SAFETY: arguments match `dist_strength_count` (one warp a row).
        unsafe { l.launch(cfg) }.map_err(driver_err("dist_strength_count"))?;
        let (row_ptr, n_edges) = exclusive_scan(ctx, &counts, n, "rank strength graph: edges")?;
        drop(counts);
        let n_edges = n_edges as usize;
        let mut col = ctx.zeros::<u32>(n_edges.max(1))?;
        let mut weight = zeros(ctx, n_edges)?;
        let f = ctx.function(&GRAPH, &[], "dist_strength_fill")?;
        let mut l = ctx.stream().launch_builder(&f);
        operands.push(&mut l);
        l.arg(&coupled.owned)
            .arg(&coupled.ghost)
            .arg(&serial)
            .arg(serial_ghost)
            .arg(&row_ptr)
            .arg(&mut col)
            .arg(&mut weight);
        // SAFETY: arguments match `dist_strength_fill` (one warp a row); `col` and `weight` hold the counted
        // edges, `serial_ghost` one id a ghost (the caller's exchange).
        unsafe { l.launch(cfg) }.map_err(driver_err("dist_strength_fill"))?;
        Ok(Self {
            n,
            n_ghosts,
            n_edges,
            row_ptr,
            col,
            weight,
            serial,
        })
    }

    /// Number of owned vertices.
    pub fn n_vertices(&self) -> usize {
        self.n
    }

    /// Number of directed edges of the owned rows.
    pub fn n_edges(&self) -> usize {
        self.n_edges
    }

    /// The owned rows on the host (counted downloads; neighbours are local vertices).
    pub fn download(&self, ctx: &CudaContext) -> Result<HostGraph, LinalgError> {
        let mut row_ptr = ctx.download(&self.row_ptr)?;
        let mut col = ctx.download(&self.col)?;
        let mut weight = ctx.download(&self.weight)?;
        row_ptr.truncate(self.n + 1);
        col.truncate(self.n_edges);
        weight.truncate(self.n_edges);
        Ok(HostGraph {
            row_ptr: row_ptr.into_iter().map(|x| x as usize).collect(),
            col,
            weight,
        })
    }

    /// Collective. The aggregates of the owned vertices as `amg::dist_aggregate` makes them
    /// before merging small aggregates: the Luby MIS (distance two: MIS-2) at the serial ids'
    /// priorities, roots labelled by their serial ids, every other non-isolated vertex joining
    /// the neighbouring root's aggregate it has the most edges to, then leftovers joining the
    /// neighbouring aggregate they have the most edges to, in rounds until no rank's vertex
    /// joins. Returns each owned
    /// vertex's label (its root's serial id, or `u32::MAX`: none). Errors (agreed):
    /// [`LinalgError::DimensionTooLarge`] where a root's serial id does not fit a `u32` label.
    pub fn aggregate(
        &self,
        ctx: &CudaContext,
        distance_two: bool,
        x: &mut impl RankExchange,
    ) -> Result<Vec<u32>, LinalgError> {
        let status = self.mis_status(ctx, distance_two, x)?;
        let (n, nn, cfg) = (self.n, self.n as u32, per_vertex(self.n));
        let mut roots = Split::zeros(ctx, n, self.n_ghosts)?;
        let mut too_large = ctx.zeros::<u64>(1)?;
        let f = ctx.function(&GRAPH, &[], "dist_root_labels")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nn)
            .arg(&status.owned)
            .arg(&self.serial)
            .arg(&mut roots.owned)
            .arg(&mut too_large);
        // SAFETY: arguments match `dist_root_labels`; n owned statuses and ids.
        unsafe { l.launch(cfg) }.map_err(driver_err("dist_root_labels"))?;
        drop(status);
        let too_large = ctx.download(&too_large)?[0];
        x.agree(if too_large == 0 {
            Ok(())
        } else {
            Err(LinalgError::DimensionTooLarge {
                what: "distributed aggregation: a root's serial vertex id (a u32 label)",
                value: too_large as usize,
            })
        })?;
        x.fill_ghosts(&roots.owned, &mut roots.ghost)?;
        let mut agg = Split::zeros(ctx, n, self.n_ghosts)?;
        let f = ctx.function(&GRAPH, &[], "dist_aggregate_roots")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nn)
            .arg(&self.row_ptr)
            .arg(&self.col)
            .arg(&roots.owned)
            .arg(&roots.ghost)
            .arg(&mut agg.owned);
        // SAFETY: arguments match `dist_aggregate_roots` (one warp a vertex).
        unsafe { l.launch(super::graph::warp_per_vertex(n)) }
            .map_err(driver_err("dist_aggregate_roots"))?;
        drop(roots);
        let mut next = zeros(ctx, n)?;
        let round = ctx.function(&GRAPH, &[], "dist_aggregate_round")?;
        loop {
            x.fill_ghosts(&agg.owned, &mut agg.ghost)?;
            let mut changed = ctx.zeros::<u32>(1)?;
            let mut l = ctx.stream().launch_builder(&round);
            l.arg(&nn)
                .arg(&self.row_ptr)
                .arg(&self.col)
                .arg(&agg.owned)
                .arg(&agg.ghost)
                .arg(&mut next)
                .arg(&mut changed);
            // SAFETY: arguments match `dist_aggregate_round` (one warp a vertex); n owned
            // labels in and out.
            unsafe { l.launch(super::graph::warp_per_vertex(n)) }
                .map_err(driver_err("dist_aggregate_round"))?;
            if !x.any(ctx.download(&changed)?[0] > 0)? {
                break;
            }
            std::mem::swap(&mut agg.owned, &mut next);
        }
        let mut labels = ctx.download(&agg.owned)?;
        labels.truncate(n);
        Ok(labels
            .into_iter()
            .map(|l| {
                let l = l.to_bits();
                if l == u64::from(UNAGGREGATED) {
                    UNAGGREGATED
                } else {
                    l as u32
                }
            })
            .collect())
    }

    /// Collective. The MIS status of the owned vertices (`u64` bits; `0`: in the set) after
    /// the Luby rounds of `amg::dist_mis` at the serial ids' priorities (isolated vertices
    /// out).
    fn mis_status(
        &self,
        ctx: &CudaContext,
        distance_two: bool,
        x: &mut impl RankExchange,
    ) -> Result<Split, LinalgError> {
        let (n, nn, cfg) = (self.n, self.n as u32, per_vertex(self.n));
        let mut status = Split::zeros(ctx, n, self.n_ghosts)?;
        let f = ctx.function(&GRAPH, &[], "dist_mis_priorities")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nn)
            .arg(&self.row_ptr)
            .arg(&self.serial)
            .arg(&mut status.owned);
        // SAFETY: arguments match `dist_mis_priorities`.
        unsafe { l.launch(cfg) }.map_err(driver_err("dist_mis_priorities"))?;
        x.fill_ghosts(&status.owned, &mut status.ghost)?;
        let mut first = Split::zeros(ctx, n, self.n_ghosts)?;
        let mut reach = zeros(ctx, n)?;
        let closed_min = ctx.function(&GRAPH, &[], "dist_closed_min")?;
        let update = ctx.function(&MIS, &[], "mis_update")?;
        let min_into = |s: &Split, m: &mut DeviceBuffer<f64>| -> Result<(), LinalgError> {
            let mut l = ctx.stream().launch_builder(&closed_min);
            l.arg(&nn)
                .arg(&self.row_ptr)
                .arg(&self.col)
                .arg(&s.owned)
                .arg(&s.ghost)
                .arg(m);
            // SAFETY: arguments match `dist_closed_min`; n owned and n_ghosts ghost states.
            unsafe { l.launch(per_vertex(n)) }.map_err(driver_err("dist_closed_min"))?;
            Ok(())
        };
        loop {
            if distance_two {
                min_into(&status, &mut first.owned)?;
                x.fill_ghosts(&first.owned, &mut first.ghost)?;
                min_into(&first, &mut reach)?;
            } else {
                min_into(&status, &mut reach)?;
            }
            let mut changed = ctx.zeros::<u32>(1)?;
            let mut l = ctx.stream().launch_builder(&update);
            // one round a look: its count in `changed[0]` (round 0 never skips)
            let round = 0u32;
            l.arg(&nn)
                .arg(&mut status.owned)
                .arg(&reach)
                .arg(&mut changed)
                .arg(&round);
            // SAFETY: arguments match `mis_update` (u64 states as the bits of the f64s).
            unsafe { l.launch(cfg) }.map_err(driver_err("mis_update"))?;
            if !x.any(ctx.download(&changed)?[0] > 0)? {
                return Ok(status);
            }
            x.fill_ghosts(&status.owned, &mut status.ghost)?;
        }
    }
}
