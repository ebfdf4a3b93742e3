//! Aggregation on several ranks: the rounds of [`crate::aggregation`] (MIS, roots take their
//! neighbours, leftovers join their strongest neighbouring aggregate), each rank computing its
//! owned vertices and reading its ghosts' state from their owners through a halo exchange
//! between rounds.
//!
//! Priorities hash the vertices' serial ids (the same for any rank count) and aggregates are
//! labelled by their root's serial id, which orders them as the serial run's compact numbering
//! does, so ties break alike: the roots and aggregates are the serial ones, whatever the rank
//! count (tested). Aggregates smaller than the near-null space (rare) are then merged as the
//! serial code merges them: their members' edges are gathered on every rank, which replays the
//! serial merge loop in aggregate order.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use std::sync::Arc;

use linalg::dist::HaloPlan;

use crate::aggregation::{
    priority, strongest_aggregate, strongest_neighbour_aggregate, MisDistance, IN, OUT,
    UNAGGREGATED,
};
use crate::strength::StrengthGraph;
use crate::AmgError;

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

    /// Copies the owners' values into the ghost tail of `state` (owned then ghosts). `u64`
    /// states travel as the bits of `f64`s: messages copy bytes, never convert.
    fn update_ghosts(&self, state: &mut [u64]) -> Result<(), AmgError> {
        let mut bits: Vec<f64> = state.iter().map(|&s| f64::from_bits(s)).collect();
        self.halo.update(&mut bits)?;
        for (s, b) in state.iter_mut().zip(&bits).skip(self.n_owned()) {
            *s = b.to_bits();
        }
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

/// The Luby MIS of [`crate::aggregation::mis`] on the owned vertices (collective): `true` for
/// the roots. Equal to the serial MIS of the whole graph at the serial ids.
pub fn dist_mis(g: &DistGraph, distance: MisDistance) -> Result<Vec<bool>, AmgError> {
    g.check()?;
    let (n, graph) = (g.n_owned(), &g.graph);
    let n_local = g.serial_ids.len();
    let mut status = vec![OUT; n_local];
    for (v, s) in status[..n].iter_mut().enumerate() {
        if !graph.is_isolated(v) {
            *s = priority(g.serial_ids[v] as usize, graph.degree(v));
        }
    }
    g.update_ghosts(&mut status)?;
    let closed_min = |s: &[u64], v: usize| {
        graph
            .neighbours(v)
            .iter()
            .fold(s[v], |m, &u| m.min(s[u as usize]))
    };
    let mut m1 = vec![OUT; n_local];
    let mut m2 = vec![OUT; n];
    loop {
        m1[..n]
            .par_iter_mut()
            .enumerate()
            .for_each(|(v, m)| *m = closed_min(&status, v));
        let reach: &[u64] = match distance {
            MisDistance::One => &m1[..n],
            MisDistance::Two => {
                g.update_ghosts(&mut m1)?;
                m2.par_iter_mut()
                    .enumerate()
                    .for_each(|(v, m)| *m = closed_min(&m1, v));
                &m2
            }
        };
        let changed = status[..n]
            .par_iter_mut()
            .zip(reach.par_iter())
            .map(|(s, &r)| {
                if *s == IN || *s == OUT {
                    false
                } else if r == IN {
                    *s = OUT;
                    true
                } else if r == *s {
                    *s = IN;
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
    Ok(status[..n].iter().map(|&s| s == IN).collect())
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

/// MIS, roots' neighbourhoods, leftover rounds.
fn aggregate_rounds(g: &DistGraph, distance: MisDistance) -> Result<Vec<u32>, AmgError> {
    let roots = dist_mis(g, distance)?;
    let (n, graph) = (g.n_owned(), &g.graph);
    let label = |v: usize| -> Result<u32, AmgError> {
        u32::try_from(g.serial_ids[v]).map_err(|_| AmgError::DimensionMismatch {
            what: "distributed aggregation: serial vertex id beyond u32",
            expected: u32::MAX as usize,
            found: g.serial_ids[v] as usize,
        })
    };
    let mut root_of = vec![u64::from(UNAGGREGATED); g.serial_ids.len()];
    for v in 0..n {
        if roots[v] {
            root_of[v] = u64::from(label(v)?);
        }
    }
    g.update_ghosts(&mut root_of)?;
    let as_u32 = |s: &[u64]| s.iter().map(|&a| a as u32).collect::<Vec<u32>>();
    let root_id = as_u32(&root_of);
    let mut agg_of: Vec<u32> = vec![UNAGGREGATED; g.serial_ids.len()];
    for v in 0..n {
        agg_of[v] = if roots[v] {
            root_id[v]
        } else if graph.is_isolated(v) {
            UNAGGREGATED
        } else {
            strongest_neighbour_aggregate(graph, &root_id, v).unwrap_or(UNAGGREGATED)
        };
    }
    // Leftovers, in rounds until no rank changes.
    loop {
        let mut state: Vec<u64> = agg_of.iter().map(|&a| u64::from(a)).collect();
        g.update_ghosts(&mut state)?;
        agg_of = as_u32(&state);
        let next: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|v| {
                if agg_of[v] != UNAGGREGATED || graph.is_isolated(v) {
                    agg_of[v]
                } else {
                    strongest_neighbour_aggregate(graph, &agg_of, v).unwrap_or(UNAGGREGATED)
                }
            })
            .collect();
        let changed = next[..] != agg_of[..n];
        if !g.any(changed)? {
            break;
        }
        agg_of[..n].copy_from_slice(&next);
    }
    agg_of.truncate(n);
    Ok(agg_of)
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
    if !(threshold >= 0.0) || !threshold.is_finite() {
        return Err(AmgError::InvalidParameter {
            name: "strength_threshold",
            value: threshold.to_string(),
            reason: "must be a finite number >= 0",
        });
    }
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
    let d_norms = diag.block_norms()?.to_host_vec()?;
    let o_norms = offd.block_norms()?.to_host_vec()?;
    let diag_pos = diag.pattern().diagonal_positions()?;
    // Per local vertex (owned, then ghosts from their owners): serial id and diagonal norm.
    let mut serial = vec![0.0; n_local];
    let mut dnorm = vec![0.0; n_local];
    for i in 0..n {
        serial[i] = owned_serial_ids[i] as f64;
        dnorm[i] = d_norms[diag_pos[i]];
    }
    halo.update(&mut serial)?;
    halo.update(&mut dnorm)?;
    let serial_ids: Vec<u64> = serial.iter().map(|&s| s as u64).collect();
    // Row i's entries as (local column, block norm), by serial id of the column.
    let row = |i: usize| {
        let (dp, op) = (diag.pattern(), offd.pattern());
        let mut entries: Vec<(usize, f64)> = (dp.row_ptr()[i]..dp.row_ptr()[i + 1])
            .map(|k| (dp.col_idx()[k] as usize, d_norms[k]))
            .chain(
                (op.row_ptr()[i]..op.row_ptr()[i + 1])
                    .map(|k| (n + op.col_idx()[k] as usize, o_norms[k])),
            )
            .collect();
        entries.sort_by_key(|&(j, _)| serial_ids[j]);
        entries
    };
    let weight_of = |i: usize, j: usize, norm: f64| -> Option<f64> {
        let denom = (dnorm[i] * dnorm[j]).sqrt();
        if j == i || norm == 0.0 || denom == 0.0 {
            return None;
        }
        let w = norm / denom;
        (w >= threshold).then_some(w)
    };
    let rows: Vec<Vec<(usize, f64)>> = (0..n).into_par_iter().map(row).collect();
    let mut coupled = vec![0.0; n_local];
    coupled[..n]
        .par_iter_mut()
        .zip(rows.par_iter())
        .enumerate()
        .for_each(|(i, (c, entries))| {
            if entries
                .iter()
                .any(|&(j, norm)| weight_of(i, j, norm).is_some())
            {
                *c = 1.0;
            }
        });
    halo.update(&mut coupled)?;
    let (g_ptr, edges) = linalg::collect_rows(n, |i, out: &mut Vec<(u32, f64)>| {
        for &(j, norm) in &rows[i] {
            if coupled[i] == 1.0 && coupled[j] == 1.0 {
                if let Some(w) = weight_of(i, j, norm) {
                    out.push((j as u32, w));
                }
            }
        }
    });
    let (g_col, g_w): (Vec<u32>, Vec<f64>) = edges.into_par_iter().unzip();
    Ok(DistGraph {
        graph: StrengthGraph::from_parts(g_ptr, g_col, g_w),
        serial_ids,
        halo,
    })
}

/// One gathered member of a small aggregate: its serial id and its edges (neighbour's serial
/// id, weight, neighbour's aggregate label), in graph order.
struct Member {
    vertex: u64,
    edges: Vec<(u64, f64, u32)>,
}

/// The serial `merge_small`, replayed on every rank from the gathered small aggregates.
fn merge_small(
    g: &DistGraph,
    mut labels: Vec<u32>,
    bs: usize,
    min_dofs: usize,
) -> Result<Vec<u32>, AmgError> {
    let comm = g.halo.comm().clone();
    let small = |size: u64| (size as usize).saturating_mul(bs) < min_dofs;
    // Candidates: labels with few members here (a small aggregate is small on every rank).
    let mut local: BTreeMap<u32, u64> = BTreeMap::new();
    for &l in &labels {
        if l != UNAGGREGATED {
            *local.entry(l).or_default() += 1;
        }
    }
    let mine: Vec<u64> = local
        .iter()
        .filter(|&(_, &c)| small(c))
        .map(|(&l, _)| u64::from(l))
        .collect();
    let linalg_err = linalg::LinalgError::from;
    let mut candidates: Vec<u64> = comm.allgatherv_u64(&mine).map_err(linalg_err)?.concat();
    candidates.sort_unstable();
    candidates.dedup();
    if candidates.is_empty() {
        return Ok(labels);
    }
    let mut sizes: Vec<f64> = candidates
        .iter()
        .map(|&l| local.get(&(l as u32)).copied().unwrap_or(0) as f64)
        .collect();
    comm.allreduce_sum(&mut sizes).map_err(linalg_err)?;
    let mut size: BTreeMap<u32, u64> = BTreeMap::new();
    for (&l, &s) in candidates.iter().zip(&sizes) {
        if small(s as u64) {
            size.insert(l as u32, s as u64);
        }
    }
    if size.is_empty() {
        return Ok(labels);
    }
    // Gather the small aggregates' members with their edges: [label, vertex, n, (u, w, label)*n].
    let mut ghost_labels: Vec<u64> = labels.iter().map(|&l| u64::from(l)).collect();
    ghost_labels.resize(g.serial_ids.len(), u64::from(UNAGGREGATED));
    g.update_ghosts(&mut ghost_labels)?;
    let mut record = Vec::new();
    for (v, &label) in labels.iter().enumerate() {
        if size.contains_key(&label) {
            let (nb, w) = (g.graph.neighbours(v), g.graph.weights(v));
            record.extend([u64::from(label), g.serial_ids[v], nb.len() as u64]);
            for (&u, &w) in nb.iter().zip(w) {
                let u = u as usize;
                record.extend([g.serial_ids[u], w.to_bits(), ghost_labels[u]]);
            }
        }
    }
    let gathered = comm.allgatherv_u64(&record).map_err(linalg_err)?;
    let mut members: BTreeMap<u32, Vec<Member>> = BTreeMap::new();
    let mut label_of: HashMap<u64, u32> = HashMap::new();
    for r in &gathered {
        let mut at = 0;
        while at < r.len() {
            let (label, vertex, k) = (r[at] as u32, r[at + 1], r[at + 2] as usize);
            let edges: Vec<(u64, f64, u32)> = (0..k)
                .map(|e| {
                    let q = at + 3 + 3 * e;
                    (r[q], f64::from_bits(r[q + 1]), r[q + 2] as u32)
                })
                .collect();
            for &(u, _, lu) in &edges {
                label_of.insert(u, lu);
            }
            label_of.insert(vertex, label);
            members
                .entry(label)
                .or_default()
                .push(Member { vertex, edges });
            at += 3 + 3 * k;
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
            let target = strongest_aggregate(list.iter().flat_map(|m| {
                m.edges
                    .iter()
                    .map(|&(u, w, _)| (label_of[&u], w))
                    .filter(|&(b, _)| b != UNAGGREGATED && b != a)
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
    for (label, serial) in labels.iter_mut().zip(&g.serial_ids) {
        if let Some(&l) = label_of.get(serial) {
            if size.contains_key(label) {
                *label = l;
            }
        }
    }
    Ok(labels)
}
