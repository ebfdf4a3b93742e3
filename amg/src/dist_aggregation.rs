//! Aggregation on several ranks: the rounds of [`crate::aggregation`] (MIS, roots take their
//! neighbours, leftovers join the neighbouring aggregate they have the most edges to), each
//! rank computing its owned vertices and reading its ghosts' state from their owners through a
//! halo exchange between rounds.
//!
//! Priorities hash the vertices' serial ids (the same for any rank count) and aggregates are
//! labelled by their root's serial id, which orders them as the serial run's compact numbering
//! does, so ties break alike: the roots and aggregates are the serial ones, whatever the rank
//! count (tested). Aggregates smaller than the near-null space (rare) are then merged as the
//! serial code merges them: their members' edges are gathered on every rank, which replays the
//! serial merge loop in aggregate order.
//!
//! Host cost: the graph is built as CSR arrays directly (the blocks' weights in place of their
//! norms, then a count pass and a fill pass over groups of rows, each row sorted in place); the
//! rounds keep their integer states as `f64` bits, which the halo updates in place, and visit
//! only the vertices whose state can still change. The messages are the ones of a full sweep
//! per round, in the same order.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use std::sync::Arc;

use linalg::dist::{DeviceDistGraph, HaloPlan};
use linalg::split_rows;

use crate::aggregation::{
    most_connected_aggregate, most_connected_neighbour_aggregate_by, priority, MisDistance, IN,
    OUT, UNAGGREGATED,
};
use crate::label_set::LabelSet;
use crate::strength::{check_threshold, StrengthGraph};
use crate::AmgError;

/// Rows per parallel task of the strength graph's passes.
const ROWS_PER_TASK: usize = 1024;

/// A block's weight where it is no edge (kept weights are `>= 0`).
const NO_EDGE: f64 = -1.0;

/// A rank's rows of a distributed strength graph: `graph` has one row per owned vertex whose
/// neighbours are local indices (owned `0..n_owned`, then the ghosts of `halo`, in its order);
/// `serial_ids` names every local vertex (owned and ghosts) in the serial numbering.
#[derive(Debug, Clone)]
pub struct DistGraph {
    pub graph: StrengthGraph,
    pub serial_ids: Vec<u64>,
    pub halo: Arc<HaloPlan>,
}

impl DistGraph {
    fn n_owned(&self) -> usize {
        self.graph.n_vertices()
    }

    fn check(&self) -> Result<(), AmgError> {
        let n_local = self.n_owned() + self.halo.ghosts().len();
        if self.halo.block_size() != 1 || self.halo.n_owned() != self.n_owned() {
            return Err(AmgError::DimensionMismatch {
                what: "distributed graph: halo plan (block size 1, owned vertices)",
                expected: self.n_owned(),
                found: self.halo.n_owned(),
            });
        }
        if self.serial_ids.len() != n_local {
            return Err(AmgError::DimensionMismatch {
                what: "distributed graph: serial ids of owned and ghost vertices",
                expected: n_local,
                found: self.serial_ids.len(),
            });
        }
        Ok(())
    }

    /// Copies the owners' values into the ghost tail of `state` (owned then ghosts). The
    /// integer states of the rounds (`u64`) are kept as the bits of `f64`s ([`bits`],
    /// [`f64::to_bits`]): messages copy bytes, never convert, and the update runs in place.
    fn update_ghosts(&self, state: &mut [f64]) -> Result<(), AmgError> {
        self.halo.update(state)?;
        Ok(())
    }

    /// True on every rank if any rank reports a change.
    fn any(&self, local: bool) -> Result<bool, AmgError> {
        let mut v = [f64::from(u8::from(local))];
        self.halo
            .comm()
            .allreduce_sum(&mut v)
            .map_err(linalg::LinalgError::from)?;
        Ok(v[0] > 0.0)
    }
}

/// The `f64` whose bits are `s` (a round's state as it travels and is kept).
fn bits(s: u64) -> f64 {
    f64::from_bits(s)
}

/// An aggregate label kept as the bits of an `f64` (see [`bits`]).
fn as_label(s: f64) -> u32 {
    s.to_bits() as u32
}

/// True for a status neither in nor out of the set (a priority, still undecided).
fn undecided(s: u64) -> bool {
    s != IN && s != OUT
}

/// The Luby MIS of [`crate::aggregation::mis`] on the owned vertices (collective): `true` for
/// the roots. Equal to the serial MIS of the whole graph at the serial ids.
///
/// A round computes only what the decisions read: the neighbourhood minimum of an undecided
/// vertex, and (MIS-2) the first minimum of a vertex whose closed neighbourhood was not yet
/// settled: a minimum that was `IN` (a neighbour in the set) or `OUT` (every neighbour out)
/// stays so, as decided states never change. A skipped value is either never read (the
/// minimum at a decided vertex) or already the one a full sweep would compute (a settled first
/// minimum, which neighbours on other ranks read too), so the rounds, their messages and the set
/// are a full sweep's.
pub fn dist_mis(g: &DistGraph, distance: MisDistance) -> Result<Vec<bool>, AmgError> {
    g.check()?;
    let (n, graph) = (g.n_owned(), &g.graph);
    let n_local = g.serial_ids.len();
    let mut status = vec![bits(OUT); n_local];
    status[..n].par_iter_mut().enumerate().for_each(|(v, s)| {
        if !graph.is_isolated(v) {
            *s = bits(priority(g.serial_ids[v] as usize, graph.degree(v)));
        }
    });
    g.update_ghosts(&mut status)?;
    let closed_min = |s: &[f64], v: usize| {
        graph
            .neighbours(v)
            .iter()
            .fold(s[v].to_bits(), |m, &u| m.min(s[u as usize].to_bits()))
    };
    // MIS-2's first minima: owned ones start unsettled (neither IN nor OUT), the ghosts' come
    // from their owners.
    let mut m1 = match distance {
        MisDistance::One => Vec::new(),
        MisDistance::Two => vec![bits(IN + 1); n_local],
    };
    let mut m2 = vec![OUT; n];
    loop {
        let reach: &[u64] = match distance {
            MisDistance::One => {
                m2.par_iter_mut().enumerate().for_each(|(v, m)| {
                    if undecided(status[v].to_bits()) {
                        *m = closed_min(&status, v);
                    }
                });
                &m2
            }
            MisDistance::Two => {
                m1[..n].par_iter_mut().enumerate().for_each(|(v, m)| {
                    if undecided(m.to_bits()) {
                        *m = bits(closed_min(&status, v));
                    }
                });
                g.update_ghosts(&mut m1)?;
                m2.par_iter_mut().enumerate().for_each(|(v, m)| {
                    if undecided(status[v].to_bits()) {
                        *m = closed_min(&m1, v);
                    }
                });
                &m2
            }
        };
        let changed = status[..n]
            .par_iter_mut()
            .zip(reach.par_iter())
            .map(|(s, &r)| {
                let st = s.to_bits();
                if !undecided(st) {
                    false
                } else if r == IN {
                    *s = bits(OUT);
                    true
                } else if r == st {
                    *s = bits(IN);
                    true
                } else {
                    false
                }
            })
            .reduce(|| false, |a, b| a || b);
        if !g.any(changed)? {
            break;
        }
        g.update_ghosts(&mut status)?;
    }
    Ok(status[..n].par_iter().map(|s| s.to_bits() == IN).collect())
}

/// The aggregates of the owned vertices (collective): each owned vertex's aggregate, labelled by
/// the serial id of its root, or [`UNAGGREGATED`]: the serial [`crate::aggregate`]'s aggregates
/// (`bs` unknowns per vertex, at least `min_dofs` unknowns per aggregate).
pub fn dist_aggregate(
    g: &DistGraph,
    distance: MisDistance,
    bs: usize,
    min_dofs: usize,
) -> Result<Vec<u32>, AmgError> {
    let labels = aggregate_rounds(g, distance)?;
    merge_small(g, labels, bs, min_dofs)
}

/// MIS, roots' neighbourhoods, leftover rounds. The labels (owned, then ghosts) are kept as
/// `f64` bits for the in-place halo updates; a leftover round visits only the vertices still
/// unaggregated (the others keep their label), so it makes the full sweep's changes.
fn aggregate_rounds(g: &DistGraph, distance: MisDistance) -> Result<Vec<u32>, AmgError> {
    let roots = dist_mis(g, distance)?;
    let (n, graph) = (g.n_owned(), &g.graph);
    let too_large = (0..n)
        .into_par_iter()
        .find_first(|&v| roots[v] && g.serial_ids[v] > u64::from(u32::MAX));
    if let Some(v) = too_large {
        return Err(AmgError::DimensionMismatch {
            what: "distributed aggregation: serial vertex id beyond u32",
            expected: u32::MAX as usize,
            found: g.serial_ids[v] as usize,
        });
    }
    let unaggregated = bits(u64::from(UNAGGREGATED));
    // The roots' labels (their serial ids), then every vertex's label.
    let mut state = vec![unaggregated; g.serial_ids.len()];
    state[..n].par_iter_mut().enumerate().for_each(|(v, s)| {
        if roots[v] {
            *s = bits(g.serial_ids[v]);
        }
    });
    g.update_ghosts(&mut state)?;
    // Roots take their neighbours (reading the roots' labels only).
    let first: Vec<u32> = (0..n)
        .into_par_iter()
        .map_init(Vec::new, |acc, v| {
            if roots[v] {
                as_label(state[v])
            } else if graph.is_isolated(v) {
                UNAGGREGATED
            } else {
                most_connected_neighbour_aggregate_by(acc, graph, v, |u| as_label(state[u]))
                    .unwrap_or(UNAGGREGATED)
            }
        })
        .collect();
    state[..n]
        .par_iter_mut()
        .zip(first.par_iter())
        .for_each(|(s, &a)| *s = bits(u64::from(a)));
    // Leftovers, in rounds until no rank changes.
    let mut pending: Vec<u32> = (0..n as u32)
        .into_par_iter()
        .filter(|&v| first[v as usize] == UNAGGREGATED && !graph.is_isolated(v as usize))
        .collect();
    drop(first);
    let mut next: Vec<u32> = Vec::new();
    loop {
        g.update_ghosts(&mut state)?;
        pending
            .par_iter()
            .map_init(Vec::new, |acc, &v| {
                most_connected_neighbour_aggregate_by(acc, graph, v as usize, |u| {
                    as_label(state[u])
                })
                .unwrap_or(UNAGGREGATED)
            })
            .collect_into_vec(&mut next);
        let changed = next.par_iter().any(|&a| a != UNAGGREGATED);
        if !g.any(changed)? {
            break;
        }
        for (&v, &a) in pending.iter().zip(&next) {
            state[v as usize] = bits(u64::from(a));
        }
        let mut left = next.iter();
        pending.retain(|_| left.next() == Some(&UNAGGREGATED));
    }
    Ok(state[..n].par_iter().map(|&s| as_label(s)).collect())
}

/// The strength graph of a rank's owned rows of the distributed operator `a` (collective): the
/// rows of the serial [`crate::strength_graph`] of the whole operator, with the same weights
/// and the edges in the same (serial id) order. `owned_serial_ids` names the owned block rows
/// in the serial numbering; the ghosts' ids, diagonal norms and coupled flags come from their
/// owners through `a`'s halo plan.
pub fn dist_strength_graph(
    a: &linalg::dist::DistBsr,
    threshold: f64,
    owned_serial_ids: &[u64],
) -> Result<DistGraph, AmgError> {
    check_threshold(threshold)?;
    let pattern = a.pattern();
    let halo = Arc::new(pattern.halo().with_block_size(1));
    let (diag, offd) = (a.diag(), a.offd());
    let n = diag.pattern().n_block_rows();
    if owned_serial_ids.len() != n {
        return Err(AmgError::DimensionMismatch {
            what: "distributed strength graph: serial ids of the owned rows",
            expected: n,
            found: owned_serial_ids.len(),
        });
    }
    let n_local = n + halo.ghosts().len();
    let (dp, op) = (diag.pattern(), offd.pattern());
    let (d_ptr, d_col, o_ptr, o_col) = (dp.row_ptr(), dp.col_idx(), op.row_ptr(), op.col_idx());
    // The blocks' norms where `a` lives, then (pass 1) their edge weights.
    let (d_norms, o_norms) = (diag.block_norms()?, offd.block_norms()?);
    let (d_src, mut d_w) = norms_and_weights(&d_norms)?;
    let (o_src, mut o_w) = norms_and_weights(&o_norms)?;
    // Per local vertex (owned, then ghosts from their owners): serial id and diagonal norm.
    let mut serial = vec![0.0; n_local];
    let mut dnorm = vec![0.0; n_local];
    let missing_diagonal = serial[..n]
        .par_iter_mut()
        .zip(dnorm[..n].par_iter_mut())
        .enumerate()
        .map(|(i, (s, d))| {
            *s = owned_serial_ids[i] as f64;
            match dp.find(i, i) {
                Some(k) => {
                    *d = d_src.map_or_else(|| d_w[k], |norms| norms[k]);
                    false
                }
                None => true,
            }
        })
        .reduce(|| false, |a, b| a || b);
    if missing_diagonal || dp.n_block_cols() != n {
        // The error of the first row without a diagonal block.
        dp.diagonal_positions()?;
    }
    halo.update(&mut serial)?;
    halo.update(&mut dnorm)?;
    let serial_ids: Vec<u64> = serial.par_iter().map(|&s| s as u64).collect();
    drop(serial);
    // The weight of block (i, local column j) of norm `norm`, or NO_EDGE (a kept weight is a
    // number >= threshold >= 0).
    let weight = |i: usize, j: usize, norm: f64| -> f64 {
        let denom = (dnorm[i] * dnorm[j]).sqrt();
        if j == i || norm == 0.0 || denom == 0.0 {
            return NO_EDGE;
        }
        let w = norm / denom;
        if w >= threshold {
            w
        } else {
            NO_EDGE
        }
    };
    // Pass 1: every block's weight (in place of its norm) and the coupled rows (a kept
    // off-diagonal edge), groups of rows in parallel.
    let mut coupled = vec![0.0; n_local];
    split_rows(d_ptr, 1, ROWS_PER_TASK, &mut d_w)
        .into_par_iter()
        .zip(split_rows(o_ptr, 1, ROWS_PER_TASK, &mut o_w))
        .zip(coupled[..n].par_chunks_mut(ROWS_PER_TASK))
        .for_each(|(((rows, d_w), (_, o_w)), c)| {
            let (d0, o0) = (d_ptr[rows.start], o_ptr[rows.start]);
            for (i, c) in rows.zip(c) {
                let mut any = false;
                for k in d_ptr[i]..d_ptr[i + 1] {
                    let w = &mut d_w[k - d0];
                    *w = weight(
                        i,
                        d_col[k] as usize,
                        d_src.map_or_else(|| *w, |norms| norms[k]),
                    );
                    any |= *w >= 0.0;
                }
                for k in o_ptr[i]..o_ptr[i + 1] {
                    let w = &mut o_w[k - o0];
                    *w = weight(
                        i,
                        n + o_col[k] as usize,
                        o_src.map_or_else(|| *w, |norms| norms[k]),
                    );
                    any |= *w >= 0.0;
                }
                if any {
                    *c = 1.0;
                }
            }
        });
    halo.update(&mut coupled)?;
    // Row i's edges: its weighted blocks to coupled columns (i coupled), as (local column,
    // weight), the diagonal part's then the off-diagonal part's.
    let (d_w, o_w, coupled) = (&d_w[..], &o_w[..], &coupled[..]);
    let edges = |i: usize| {
        let (d, o) = if coupled[i] == 1.0 {
            (d_ptr[i]..d_ptr[i + 1], o_ptr[i]..o_ptr[i + 1])
        } else {
            (0..0, 0..0)
        };
        let d = d.map(move |k| (d_col[k] as usize, d_w[k]));
        let o = o.map(move |k| (n + o_col[k] as usize, o_w[k]));
        d.chain(o)
            .filter(move |&(j, w)| w >= 0.0 && coupled[j] == 1.0)
    };
    // Pass 2: counts, then fill disjoint groups of rows in parallel, each row sorted by the
    // serial ids of its columns (unique, so an unstable sort gives the one order).
    let mut g_ptr = vec![0usize; n + 1];
    g_ptr[1..]
        .par_iter_mut()
        .enumerate()
        .for_each(|(i, c)| *c = edges(i).count());
    for i in 0..n {
        g_ptr[i + 1] += g_ptr[i];
    }
    let nnz = g_ptr[n];
    let mut g_col = vec![0u32; nnz];
    let mut g_w = vec![0.0; nnz];
    split_rows(&g_ptr, 1, ROWS_PER_TASK, &mut g_col)
        .into_par_iter()
        .zip(split_rows(&g_ptr, 1, ROWS_PER_TASK, &mut g_w))
        .for_each_init(
            Vec::new,
            |row: &mut Vec<(u64, u32, f64)>, ((rows, c_out), (_, w_out))| {
                let base = g_ptr[rows.start];
                for i in rows {
                    row.clear();
                    row.extend(edges(i).map(|(j, w)| (serial_ids[j], j as u32, w)));
                    row.sort_unstable_by_key(|&(s, _, _)| s);
                    let at = g_ptr[i] - base;
                    for (q, &(_, j, w)) in row.iter().enumerate() {
                        c_out[at + q] = j;
                        w_out[at + q] = w;
                    }
                }
            },
        );
    Ok(DistGraph {
        graph: StrengthGraph::from_parts(g_ptr, g_col, g_w),
        serial_ids,
        halo,
    })
}

/// Collective. [`dist_strength_graph`] of an operator on the rank's GPU, made there
/// ([`DeviceDistGraph::strength`]) with its local vertices numbered by `ids` (of `a`'s
/// pattern: [`linalg::dist::DeviceSerialIds`], made once and kept by a level): the same edges
/// and weights (and the same serial ids of the local vertices), which stay on the device.
pub fn dist_strength_graph_on_device(
    a: &linalg::dist::DistBsr,
    threshold: f64,
    ids: &linalg::dist::DeviceSerialIds,
) -> Result<DeviceDistGraph, AmgError> {
    check_threshold(threshold)?;
    Ok(DeviceDistGraph::strength(a, threshold, ids)?)
}

/// Collective. [`dist_aggregate`] of a device strength graph, on the GPU
/// ([`DeviceDistGraph::aggregate`]: the same MIS, labels and leftover rounds, with the ghosts'
/// states exchanged GPU to GPU); the owned labels come to the host, and the graph's edges too
/// where an aggregate is too small and must be merged ([`merge_small_aggregates`], rare). The
/// host's labels bit for bit.
pub fn dist_aggregate_on_device(
    g: &mut DeviceDistGraph,
    distance: MisDistance,
    bs: usize,
    min_dofs: usize,
) -> Result<Vec<u32>, AmgError> {
    let labels = g.aggregate(distance == MisDistance::Two)?;
    let halo = g.halo_plan().clone();
    let size = small_aggregates(&**halo.comm(), &labels, bs, min_dofs)?;
    if size.is_empty() {
        return Ok(labels);
    }
    let edges = g.download()?;
    let host = DistGraph {
        graph: StrengthGraph::from_parts(edges.row_ptr, edges.col, edges.weight),
        serial_ids: g.serial_ids().to_vec(),
        halo,
    };
    merge_small_aggregates(&host, labels, size, bs, min_dofs)
}

/// A part's block norms and the buffer of its weights: a host vector's norms are read where
/// they are (`Some`) and the weights go to a new buffer; a device vector's norms are downloaded
/// into the buffer (`None`), which the weights then overwrite.
fn norms_and_weights(norms: &linalg::Vector) -> Result<(Option<&[f64]>, Vec<f64>), AmgError> {
    Ok(match norms.host() {
        Ok(host) => (Some(host), vec![0.0; host.len()]),
        Err(_) => (None, norms.to_host_vec()?),
    })
}

/// One gathered member of a small aggregate: its serial id and its edges (neighbour's serial
/// id, neighbour's aggregate label), in graph order.
struct Member {
    vertex: u64,
    edges: Vec<(u64, u32)>,
}

/// The serial `merge_small`, replayed on every rank from the gathered small aggregates.
fn merge_small(
    g: &DistGraph,
    labels: Vec<u32>,
    bs: usize,
    min_dofs: usize,
) -> Result<Vec<u32>, AmgError> {
    let size = small_aggregates(&**g.halo.comm(), &labels, bs, min_dofs)?;
    if size.is_empty() {
        return Ok(labels);
    }
    merge_small_aggregates(g, labels, size, bs, min_dofs)
}

/// Collective. The aggregates too small for the near-null space (fewer than `min_dofs`
/// unknowns of `bs` a vertex) with their sizes over all ranks, by label (ascending): empty
/// where there are none (the common case: one all-gather of this rank's candidates).
fn small_aggregates(
    comm: &dyn linalg::comm::Comm,
    labels: &[u32],
    bs: usize,
    min_dofs: usize,
) -> Result<BTreeMap<u32, u64>, AmgError> {
    let small = |size: u64| (size as usize).saturating_mul(bs) < min_dofs;
    // Candidates: labels with few members here (a small aggregate is small on every rank).
    let set = LabelSet::new(labels);
    let mine: Vec<u64> = set
        .labels()
        .iter()
        .zip(set.counts())
        .filter(|&(_, &c)| small(u64::from(c)))
        .map(|(&l, _)| u64::from(l))
        .collect();
    let linalg_err = linalg::LinalgError::from;
    let mut candidates: Vec<u64> = comm.allgatherv_u64(&mine).map_err(linalg_err)?.concat();
    candidates.sort_unstable();
    candidates.dedup();
    let mut size: BTreeMap<u32, u64> = BTreeMap::new();
    if candidates.is_empty() {
        return Ok(size);
    }
    let mut sizes: Vec<f64> = candidates
        .iter()
        .map(|&l| u32::try_from(l).map_or(0, |l| set.count_of(l)) as f64)
        .collect();
    comm.allreduce_sum(&mut sizes).map_err(linalg_err)?;
    for (&l, &s) in candidates.iter().zip(&sizes) {
        if small(s as u64) {
            size.insert(l as u32, s as u64);
        }
    }
    Ok(size)
}

/// Collective. Merges the small aggregates `size` (from [`small_aggregates`], not empty) as the
/// serial `merge_small` does: their members' edges gathered on every rank, the serial merge
/// loop replayed in aggregate order.
fn merge_small_aggregates(
    g: &DistGraph,
    mut labels: Vec<u32>,
    mut size: BTreeMap<u32, u64>,
    bs: usize,
    min_dofs: usize,
) -> Result<Vec<u32>, AmgError> {
    let comm = g.halo.comm().clone();
    let small = |size: u64| (size as usize).saturating_mul(bs) < min_dofs;
    let linalg_err = linalg::LinalgError::from;
    // Gather the small aggregates' members with their edges: [label, vertex, n, (u, label)*n].
    let mut ghost_labels = vec![bits(u64::from(UNAGGREGATED)); g.serial_ids.len()];
    ghost_labels[..labels.len()]
        .par_iter_mut()
        .zip(labels.par_iter())
        .for_each(|(s, &l)| *s = bits(u64::from(l)));
    g.update_ghosts(&mut ghost_labels)?;
    let in_small: Vec<usize> = (0..labels.len())
        .into_par_iter()
        .filter(|&v| size.contains_key(&labels[v]))
        .collect();
    let mut record = Vec::new();
    for v in in_small {
        let label = labels[v];
        let nb = g.graph.neighbours(v);
        record.extend([u64::from(label), g.serial_ids[v], nb.len() as u64]);
        for &u in nb {
            let u = u as usize;
            record.extend([g.serial_ids[u], ghost_labels[u].to_bits()]);
        }
    }
    let gathered = comm.allgatherv_u64(&record).map_err(linalg_err)?;
    let mut members: BTreeMap<u32, Vec<Member>> = BTreeMap::new();
    let mut label_of: HashMap<u64, u32> = HashMap::new();
    for r in &gathered {
        let mut at = 0;
        while at < r.len() {
            let (label, vertex, k) = (r[at] as u32, r[at + 1], r[at + 2] as usize);
            let edges: Vec<(u64, u32)> = (0..k)
                .map(|e| {
                    let q = at + 3 + 2 * e;
                    (r[q], r[q + 1] as u32)
                })
                .collect();
            for &(u, lu) in &edges {
                label_of.insert(u, lu);
            }
            label_of.insert(vertex, label);
            members
                .entry(label)
                .or_default()
                .push(Member { vertex, edges });
            at += 3 + 2 * k;
        }
    }
    // Members in ascending vertex order, as the serial member lists.
    for list in members.values_mut() {
        list.sort_by_key(|m| m.vertex);
    }
    let order: Vec<u32> = size.keys().copied().collect();
    loop {
        let mut changed = false;
        for &a in &order {
            if size[&a] == 0 || !small(size[&a]) {
                continue;
            }
            let list = members.remove(&a).unwrap_or_default();
            let target = most_connected_aggregate(list.iter().flat_map(|m| {
                m.edges
                    .iter()
                    .map(|&(u, _)| label_of[&u])
                    .filter(|&b| b != UNAGGREGATED && b != a)
                    .collect::<Vec<_>>()
            }));
            let moved = list.len() as u64;
            let new = target.unwrap_or(UNAGGREGATED);
            for m in &list {
                label_of.insert(m.vertex, new);
            }
            if let Some(t) = target {
                if let Some(s) = size.get_mut(&t) {
                    *s += moved;
                }
                members.entry(t).or_default().extend(list);
            }
            size.insert(a, 0);
            changed = true;
        }
        if !changed {
            break;
        }
    }
    // Where the replay moved a member of a small aggregate.
    labels
        .par_iter_mut()
        .zip(g.serial_ids.par_iter())
        .for_each(|(label, serial)| {
            if size.contains_key(label) {
                if let Some(&l) = label_of.get(serial) {
                    *label = l;
                }
            }
        });
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregation::{aggregate, mis};
    use crate::strength::strength_graph;
    use linalg::comm::SelfComm;
    use linalg::dist::{DistBsr, DistPattern, RowPartition};
    use linalg::hash::{signed_unit, splitmix64};
    use linalg::{BlockPattern, Bsr};

    /// Grid size of the tests: 4 tasks of the graph's passes.
    const DIMS: [usize; 3] = [17, 16, 15];

    /// The serial operator's vertex `s` is local vertex `local_of(s)`: a scrambled numbering
    /// (a stride coprime to the vertex count), so a row's local columns are not in serial order.
    fn local_of(s: usize, n: usize) -> usize {
        (s * 1543 + 7) % n
    }

    /// The 3x3 block coupling serial vertices `s` and `t` (symmetric: block (t, s) is the
    /// transpose), of varied norms; Dirichlet rows (every 41st vertex) have the identity and
    /// zero couplings.
    fn block(s: usize, t: usize) -> [f64; 9] {
        let dirichlet = |v: usize| v % 41 == 5;
        let mut b = [0.0; 9];
        if s == t {
            for r in 0..3 {
                b[4 * r] = if dirichlet(s) { 1.0 } else { 8.0 };
            }
        } else if !dirichlet(s) && !dirichlet(t) {
            let (lo, hi) = (s.min(t) as u64, s.max(t) as u64);
            let scale = 0.05 + signed_unit(splitmix64(lo * 977 + hi)).abs();
            for r in 0..3 {
                for c in 0..3 {
                    let (i, j) = if s < t { (r, c) } else { (c, r) };
                    let x = signed_unit(splitmix64((lo << 32) ^ (hi << 4) ^ (3 * i + j) as u64));
                    b[3 * r + c] = -scale * (0.5 + 0.5 * x);
                }
            }
        }
        b
    }

    /// The 27-point grid operator of [`DIMS`] with vertex `s` at row `number(s)`.
    fn grid_operator(number: impl Fn(usize) -> usize) -> Bsr {
        let [nx, ny, nz] = DIMS;
        let n = nx * ny * nz;
        let mut serial_of = vec![0; n];
        for s in 0..n {
            serial_of[number(s)] = s;
        }
        let (mut row_ptr, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
        for &s in &serial_of {
            let (x, y, z) = (s % nx, (s / nx) % ny, s / (nx * ny));
            let mut row: Vec<(u32, usize)> = Vec::new();
            for zz in z.saturating_sub(1)..(z + 2).min(nz) {
                for yy in y.saturating_sub(1)..(y + 2).min(ny) {
                    for xx in x.saturating_sub(1)..(x + 2).min(nx) {
                        let t = xx + nx * (yy + ny * zz);
                        row.push((number(t) as u32, t));
                    }
                }
            }
            row.sort_unstable();
            for (j, t) in row {
                cols.push(j);
                values.extend(block(s, t));
            }
            row_ptr.push(cols.len());
        }
        let pattern = BlockPattern::new(n, n, row_ptr, cols).unwrap();
        Bsr::from_parts(Arc::new(pattern), 3, 3, values).unwrap()
    }

    /// Vertex -> the smallest serial id of its aggregate (`u64::MAX`: none), indexed by serial
    /// id: aggregates as sets, whatever their labels.
    fn by_first_member(labels: &[u64]) -> Vec<u64> {
        let mut first = std::collections::HashMap::new();
        for (s, &l) in labels.iter().enumerate() {
            first.entry(l).or_insert(s as u64);
        }
        labels
            .iter()
            .map(|l| {
                if *l == u64::from(UNAGGREGATED) {
                    u64::MAX
                } else {
                    first[l]
                }
            })
            .collect()
    }

    /// On one rank, with the rows numbered apart from the serial ids: the distributed graph,
    /// MIS and aggregates are the serial ones, and the same bits with 1 and 4 threads.
    #[test]
    fn one_rank_graph_and_aggregates_are_the_serial_ones_at_any_thread_count() {
        let n = DIMS.iter().product::<usize>();
        let whole = grid_operator(|s| s);
        let local = grid_operator(|s| local_of(s, n));
        let mut serial_ids = vec![0u64; n];
        for s in 0..n {
            serial_ids[local_of(s, n)] = s as u64;
        }
        let partition = RowPartition::new(SelfComm::shared(), n).unwrap();
        let globals: Vec<u64> = (0..n as u64).collect();
        let pattern = DistPattern::from_local(partition, local.pattern(), &globals, 3).unwrap();
        let mut a = DistBsr::zeros(pattern);
        a.set_from_local(&local).unwrap();
        let bits = |w: &[f64]| w.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let cases = [(MisDistance::One, 3, 6), (MisDistance::Two, 3, 6)];
        let cases = [
            cases[0],
            cases[1],
            (MisDistance::One, 1, 30),
            (MisDistance::Two, 1, 60),
        ];
        for threshold in [0.0, 0.1] {
            let serial = strength_graph(&whole, threshold).unwrap();
            assert!(serial.n_edges() > 0 && (0..n).any(|v| serial.is_isolated(v)));
            let run = |threads: usize| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| {
                        let g = dist_strength_graph(&a, threshold, &serial_ids).unwrap();
                        let roots: Vec<Vec<bool>> = [MisDistance::One, MisDistance::Two]
                            .iter()
                            .map(|&d| dist_mis(&g, d).unwrap())
                            .collect();
                        let labels: Vec<Vec<u32>> = cases
                            .iter()
                            .map(|&(d, bs, k)| dist_aggregate(&g, d, bs, k).unwrap())
                            .collect();
                        (g, roots, labels)
                    })
            };
            let (g, roots, labels) = run(1);
            let (g4, roots4, labels4) = run(4);
            assert_eq!(g.graph.row_ptr(), g4.graph.row_ptr());
            assert_eq!(g.graph.cols(), g4.graph.cols());
            assert_eq!(g.serial_ids, g4.serial_ids);
            assert_eq!((&roots, &labels), (&roots4, &labels4));
            for v in 0..n {
                let s = serial_ids[v] as usize;
                let mine: Vec<u64> = g
                    .graph
                    .neighbours(v)
                    .iter()
                    .map(|&u| serial_ids[u as usize])
                    .collect();
                let want: Vec<u64> = serial.neighbours(s).iter().map(|&u| u64::from(u)).collect();
                assert_eq!(mine, want, "row {s}");
                assert_eq!(bits(g.graph.weights(v)), bits(serial.weights(s)), "row {s}");
                assert_eq!(
                    bits(g4.graph.weights(v)),
                    bits(serial.weights(s)),
                    "row {s}"
                );
            }
            for (d, r) in [MisDistance::One, MisDistance::Two].into_iter().zip(&roots) {
                let want = mis(&serial, d);
                assert!(
                    (0..n).all(|v| r[v] == want[serial_ids[v] as usize]),
                    "{d:?}"
                );
            }
            for (&(d, bs, k), l) in cases.iter().zip(&labels) {
                let want = aggregate(&serial, d, bs, k);
                let want: Vec<u64> = want.assignment().iter().map(|&a| u64::from(a)).collect();
                let mut mine = vec![0u64; n];
                for v in 0..n {
                    mine[serial_ids[v] as usize] = u64::from(l[v]);
                }
                assert_eq!(
                    by_first_member(&mine),
                    by_first_member(&want),
                    "{d:?} {bs} {k}"
                );
            }
        }
    }
}
