//! [`DeviceDistGraph`]: a rank's rows of the distributed strength graph of a device
//! [`DistBsr`] and their aggregation, on the rank's GPU: `amg`'s `dist_strength_graph` and
//! the rounds of `dist_aggregate` with their ghost states exchanged GPU to GPU through a
//! [`DeviceHalo`] of the operator's halo at block size one (peer writes, NCCL or pinned
//! staging, as for vectors). The same edges, roots and labels as the host's, bit for bit; only
//! scalars per round, the ghosts' serial ids and the owned labels come to the host.

use std::sync::Arc;

use crate::backend::cuda::graph::HostGraph;
use crate::backend::cuda::rank_graph::{RankExchange, RankGraph};
use crate::backend::cuda::{CudaContext, DeviceBuffer};
use crate::dist::{DeviceHalo, DistBsr, DistPattern, HaloPlan};
use crate::LinalgError;

/// The serial ids of a device operator's local vertices on its GPU and the host (owned, then
/// the ghosts in the order of the operator's halo, their ids gathered from their owners once):
/// what [`DeviceDistGraph::strength`] numbers its vertices by. Made for one operator pattern
/// and kept by a caller whose level keeps it (a renewal's), so a later graph on that pattern
/// uploads and exchanges no ids.
#[derive(Debug)]
pub struct DeviceSerialIds {
    pattern: Arc<DistPattern>,
    /// Owned, then ghosts.
    serial_ids: Vec<u64>,
    owned: DeviceBuffer<f64>,
    ghost: DeviceBuffer<f64>,
}

/// Collective. The context of the device operator `a` and a device halo of its halo at block
/// size one (the graph's vertices), where `a` is on a GPU and `check` (this rank's) holds on
/// every rank; else the first failure on every rank (`what` names the work a host operator
/// cannot do).
fn graph_halo(
    a: &DistBsr,
    what: &'static str,
    check: Result<(), LinalgError>,
) -> Result<(Arc<CudaContext>, DeviceHalo), LinalgError> {
    let plan = Arc::new(a.pattern().halo().with_block_size(1));
    let device = a.device();
    let placed = match device.cuda_context() {
        None => Err(LinalgError::Unsupported {
            what,
            device: device.name(),
        }),
        Some(ctx) => check.map(|()| ctx.clone()),
    };
    let ctx = comm::agree(&**plan.comm(), placed)?;
    let halo = DeviceHalo::new(plan, ctx.clone())?;
    Ok((ctx, halo))
}

impl DeviceSerialIds {
    /// Collective. The ids of the local vertices of the device operator `a`:
    /// `owned_serial_ids` names its owned block rows, the ghosts' come from their owners.
    /// Errors (agreed): `a` not on a GPU, lengths that disagree.
    pub fn new(a: &DistBsr, owned_serial_ids: &[u64]) -> Result<Self, LinalgError> {
        let pattern = a.pattern();
        let n = pattern.diag().n_block_rows();
        let lengths = match owned_serial_ids.len() == n {
            true => Ok(()),
            false => Err(LinalgError::LengthMismatch {
                what: "DeviceSerialIds: serial ids of the owned rows",
                expected: n,
                found: owned_serial_ids.len(),
            }),
        };
        let (ctx, mut halo) = graph_halo(
            a,
            "the serial ids of a device strength graph (DeviceSerialIds)",
            lengths,
        )?;
        let bits: Vec<f64> = owned_serial_ids
            .iter()
            .map(|&s| f64::from_bits(s))
            .collect();
        let owned = ctx.upload(&bits)?;
        let ghost = ctx.duplicate(halo.fill_ghosts(&owned, || Ok(()))?)?;
        let mut serial_ids = owned_serial_ids.to_vec();
        serial_ids.extend(ctx.download(&ghost)?.into_iter().map(f64::to_bits));
        Ok(Self {
            pattern: pattern.clone(),
            serial_ids,
            owned,
            ghost,
        })
    }

    /// Collective. Whether these ids serve a graph of `a` (on every rank: its pattern, the
    /// same object, whose owned rows have `owned_serial_ids`); `false` on every rank if on one.
    pub fn serve(
        ids: Option<&Self>,
        a: &DistBsr,
        owned_serial_ids: &[u64],
    ) -> Result<bool, LinalgError> {
        let here = ids.is_some_and(|ids| {
            Arc::ptr_eq(&ids.pattern, a.pattern())
                && ids.serial_ids.get(..owned_serial_ids.len()) == Some(owned_serial_ids)
        });
        // the largest "does not serve" over the ranks
        let mut missing = [f64::from(u8::from(!here))];
        a.pattern().partition().comm().allreduce_max(&mut missing)?;
        Ok(missing[0] == 0.0)
    }

    /// Serial ids of the local vertices: owned, then the ghosts in the halo's order.
    pub fn serial_ids(&self) -> &[u64] {
        &self.serial_ids
    }
}

/// A rank's rows of a device operator's distributed strength graph (see the module doc).
#[derive(Debug)]
pub struct DeviceDistGraph {
    graph: RankGraph,
    /// Serial ids of the local vertices: owned, then the ghosts in the halo's order.
    serial_ids: Vec<u64>,
    halo: DeviceHalo,
    ctx: Arc<CudaContext>,
}

/// The rounds' exchanges: the graph's device halo and its communicator.
struct HaloExchange<'a> {
    halo: &'a mut DeviceHalo,
    ctx: &'a CudaContext,
}

impl RankExchange for HaloExchange<'_> {
    fn fill_ghosts(
        &mut self,
        owned: &DeviceBuffer<f64>,
        ghost: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        let filled = self.halo.fill_ghosts(owned, || Ok(()))?;
        self.ctx.copy(filled, ghost)
    }

    fn any(&mut self, local: bool) -> Result<bool, LinalgError> {
        let mut v = [f64::from(u8::from(local))];
        self.halo.plan().comm().allreduce_sum(&mut v)?;
        Ok(v[0] > 0.0)
    }

    fn agree(&mut self, local: Result<(), LinalgError>) -> Result<(), LinalgError> {
        Ok(comm::agree(&**self.halo.plan().comm(), local)?)
    }
}

impl DeviceDistGraph {
    /// Collective. The strength graph of this rank's rows of the device operator `a` (`amg`'s
    /// `dist_strength_graph`, its threshold already checked), its vertices numbered by `ids`
    /// (made for `a`'s pattern: [`DeviceSerialIds::serve`]); the ghosts' diagonal norms and
    /// coupled flags come from their owners. Errors (agreed): `a` not on a GPU, ids of another
    /// pattern, a missing diagonal block.
    pub fn strength(
        a: &DistBsr,
        threshold: f64,
        ids: &DeviceSerialIds,
    ) -> Result<Self, LinalgError> {
        let same_pattern = match Arc::ptr_eq(&ids.pattern, a.pattern()) {
            true => Ok(()),
            false => Err(LinalgError::PatternMismatch {
                what: "DeviceDistGraph::strength: serial ids made for another operator pattern",
            }),
        };
        let (ctx, mut halo) = graph_halo(
            a,
            "a device strength graph (DeviceDistGraph) of an operator",
            same_pattern,
        )?;
        let graph = RankGraph::strength(
            &ctx,
            a.diag().device_bsr()?,
            a.offd().device_bsr()?,
            threshold,
            ctx.duplicate(&ids.owned)?,
            &ids.ghost,
            &mut HaloExchange {
                halo: &mut halo,
                ctx: &ctx,
            },
        )?;
        Ok(Self {
            graph,
            serial_ids: ids.serial_ids.clone(),
            halo,
            ctx,
        })
    }

    /// Number of owned vertices.
    pub fn n_owned(&self) -> usize {
        self.graph.n_vertices()
    }

    /// Number of directed edges of the owned rows.
    pub fn n_edges(&self) -> usize {
        self.graph.n_edges()
    }

    /// Serial ids of the local vertices: owned, then the ghosts in the halo's order.
    pub fn serial_ids(&self) -> &[u64] {
        &self.serial_ids
    }

    /// The halo plan of the local vertices (block size one).
    pub fn halo_plan(&self) -> &Arc<HaloPlan> {
        self.halo.plan()
    }

    /// Collective. The owned vertices' labels of `amg::dist_aggregate` before it merges small
    /// aggregates: the MIS (distance two: MIS-2) at the serial ids' priorities, roots labelled
    /// by their serial ids, their neighbours, then the leftover rounds; `u32::MAX` for a
    /// vertex in no aggregate. Errors (agreed): a root's serial id beyond `u32`.
    pub fn aggregate(&mut self, distance_two: bool) -> Result<Vec<u32>, LinalgError> {
        let ctx = self.ctx.clone();
        self.graph.aggregate(
            &ctx,
            distance_two,
            &mut HaloExchange {
                halo: &mut self.halo,
                ctx: &ctx,
            },
        )
    }

    /// The owned rows on the host (local neighbours; counted downloads): for the rare host
    /// step that needs the edges (merging small aggregates) and tests.
    pub fn download(&self) -> Result<HostGraph, LinalgError> {
        self.graph.download(&self.ctx)
    }
}
