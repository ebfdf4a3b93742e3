//! Aggregation: Luby-style maximal independent sets with deterministic priorities, root
//! neighbourhoods, leftover assignment and small-aggregate merging.
//!
//! Calling order inside [`aggregate`]: [`mis`] -> roots take their neighbours -> leftovers join the
//! neighbouring aggregate they have the most edges to -> aggregates with fewer than `min_dofs`
//! unknowns merge into the neighbour they have the most edges to (or dissolve when they have
//! none) -> compact numbering in ascending order of the aggregates' first vertex. The edges'
//! weights only decide which edges the strength graph keeps ([`most_connected_aggregate`]).
//!
//! Every step is a sequence of Jacobi-style rounds (each round reads the previous round's state
//! only), so the result does not depend on the number of threads.

use crate::strength::{LevelGraph, StrengthGraph};
use crate::AmgError;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Marker of a vertex in no aggregate (isolated or Dirichlet rows; they get a zero row in P).
pub const UNAGGREGATED: u32 = u32::MAX;

/// Distance of the independent set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MisDistance {
    /// MIS-1: roots are not neighbours (aggregates of a root and its neighbours).
    One,
    /// MIS-2: roots are at distance >= 3 (aggressive coarsening, MIS of the squared graph).
    Two,
}

/// Vertex -> aggregate map with member lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aggregates {
    /// Aggregate of each vertex, or [`UNAGGREGATED`].
    agg_of: Vec<u32>,
    /// CSR of members: aggregate `a` holds `members[ptr[a]..ptr[a + 1]]`, ascending.
    ptr: Vec<usize>,
    members: Vec<u32>,
}

impl Aggregates {
    /// Builds the member lists of a vertex -> aggregate map (aggregates numbered `0..n_aggregates`).
    pub fn from_assignment(agg_of: Vec<u32>, n_aggregates: usize) -> Self {
        let mut ptr = vec![0usize; n_aggregates + 1];
        for &a in &agg_of {
            if a != UNAGGREGATED {
                ptr[a as usize + 1] += 1;
            }
        }
        for a in 0..n_aggregates {
            ptr[a + 1] += ptr[a];
        }
        let mut fill = ptr.clone();
        let mut members = vec![0u32; ptr[n_aggregates]];
        for (v, &a) in agg_of.iter().enumerate() {
            if a != UNAGGREGATED {
                members[fill[a as usize]] = v as u32;
                fill[a as usize] += 1;
            }
        }
        Self {
            agg_of,
            ptr,
            members,
        }
    }

    /// Number of aggregates (coarse block rows).
    pub fn n_aggregates(&self) -> usize {
        self.ptr.len() - 1
    }

    /// Number of fine vertices.
    pub fn n_vertices(&self) -> usize {
        self.agg_of.len()
    }

    /// Aggregate of each vertex ([`UNAGGREGATED`] for none).
    pub fn assignment(&self) -> &[u32] {
        &self.agg_of
    }

    /// Vertices of aggregate `a`, ascending.
    pub fn members(&self, a: usize) -> &[u32] {
        &self.members[self.ptr[a]..self.ptr[a + 1]]
    }

    /// Offsets of the member lists (`n_aggregates + 1` entries).
    pub fn member_offsets(&self) -> &[usize] {
        &self.ptr
    }
}

/// Bits of a priority below the degree field: 16 hash bits above 32 bits of vertex id.
const DEGREE_SHIFT: u32 = 48;
/// Bits of a priority below the hash field: the vertex id.
const HASH_SHIFT: u32 = 32;
/// Hash bits in a priority.
const HASH_MASK: u64 = (1 << (DEGREE_SHIFT - HASH_SHIFT)) - 1;
/// Largest degree a priority distinguishes (14 bits, so `1 + priority` never reaches `u64::MAX`).
const MAX_PRIORITY_DEGREE: u64 = (1 << 14) - 1;

/// Deterministic priority of vertex `v` (smaller wins): ascending degree first (boundary vertices
/// become roots first, as in PETSc), then a hash of the vertex id ([`linalg::hash::splitmix64`]),
/// then the id (unique). Never 0 (reserved for "in the set") nor `u64::MAX` ("out").
pub(crate) fn priority(v: usize, degree: usize) -> u64 {
    let z = linalg::hash::splitmix64(v as u64);
    let deg = (degree as u64).min(MAX_PRIORITY_DEGREE);
    1 + ((deg << DEGREE_SHIFT) | ((z & HASH_MASK) << HASH_SHIFT) | v as u64)
}

pub(crate) const IN: u64 = 0;
pub(crate) const OUT: u64 = u64::MAX;

/// Luby-style maximal independent set of distance 1 or 2 over the non-isolated vertices.
/// Returns `true` for the roots. Isolated vertices are never roots.
pub fn mis(graph: &StrengthGraph, distance: MisDistance) -> Vec<bool> {
    let status = initial_status(graph);
    mis_rounds(graph, distance, status)
}

/// Every vertex's priority, or `OUT` for isolated vertices.
fn initial_status(graph: &StrengthGraph) -> Vec<u64> {
    (0..graph.n_vertices())
        .into_par_iter()
        .map(|v| {
            if graph.is_isolated(v) {
                OUT
            } else {
                priority(v, graph.degree(v))
            }
        })
        .collect()
}

/// The rounds of [`mis`] on the host from `status`.
fn mis_rounds(graph: &StrengthGraph, distance: MisDistance, mut status: Vec<u64>) -> Vec<bool> {
    let n = graph.n_vertices();
    // Min over the closed neighbourhood of `v` of `s`.
    let closed_min = |s: &[u64], v: usize| {
        graph
            .neighbours(v)
            .iter()
            .fold(s[v], |m, &u| m.min(s[u as usize]))
    };
    let mut m1 = vec![OUT; n];
    let mut m2 = vec![OUT; n];
    loop {
        m1.par_iter_mut()
            .enumerate()
            .for_each(|(v, m)| *m = closed_min(&status, v));
        let reach: &[u64] = match distance {
            MisDistance::One => &m1,
            MisDistance::Two => {
                m2.par_iter_mut()
                    .enumerate()
                    .for_each(|(v, m)| *m = closed_min(&m1, v));
                &m2
            }
        };
        let changed: usize = status
            .par_iter_mut()
            .zip(reach.par_iter())
            .map(|(s, &r)| {
                if *s == IN || *s == OUT {
                    0
                } else if r == IN {
                    *s = OUT;
                    1
                } else if r == *s {
                    *s = IN;
                    1
                } else {
                    0
                }
            })
            .sum();
        if changed == 0 {
            break;
        }
    }
    status.into_par_iter().map(|s| s == IN).collect()
}

/// The aggregate most connected through `edges` (the aggregate at the far end of each kept
/// edge): the most edges, ties to the smallest aggregate id; `None` without edges. The edges are
/// counted, their weights never read: the weights decide which edges the strength graph keeps
/// (`strength_threshold`), the structure of what it kept decides the aggregates. With the
/// default threshold 0 every nonzero block is an edge, so a level's aggregates depend on its
/// operator's pattern alone, as with PETSc's MIS-k coarsening: new values (the next load step's
/// tangent) give the same aggregates and a renewal keeps every plan; summed weights had flipped
/// near ties, a few percent of the joins at each load step, and every plan with them.
pub(crate) fn most_connected_aggregate(edges: impl Iterator<Item = u32>) -> Option<u32> {
    most_connected_aggregate_in(&mut Vec::new(), edges)
}

/// [`most_connected_aggregate`] with the caller's scratch `acc` (cleared first), so that a loop
/// over many vertices allocates once.
pub(crate) fn most_connected_aggregate_in(
    acc: &mut Vec<(u32, u32)>,
    edges: impl Iterator<Item = u32>,
) -> Option<u32> {
    acc.clear();
    for a in edges {
        match acc.iter_mut().find(|(b, _)| *b == a) {
            Some(e) => e.1 += 1,
            None => acc.push((a, 1)),
        }
    }
    acc.iter()
        .fold(None, |best: Option<(u32, u32)>, &(a, n)| match best {
            Some((ba, bn)) if bn > n || (bn == n && ba < a) => Some((ba, bn)),
            _ => Some((a, n)),
        })
        .map(|(a, _)| a)
}

/// The aggregate `v` joins this round: the neighbouring aggregate it has the most edges to
/// (ties: smallest aggregate id), `None` when no neighbour is aggregated.
pub(crate) fn most_connected_neighbour_aggregate(
    graph: &StrengthGraph,
    agg_of: &[u32],
    v: usize,
) -> Option<u32> {
    most_connected_neighbour_aggregate_by(&mut Vec::new(), graph, v, |u| agg_of[u])
}

/// [`most_connected_neighbour_aggregate`] with the neighbours' aggregates read through `agg_of`
/// and the caller's scratch `acc` (see [`most_connected_aggregate_in`]).
pub(crate) fn most_connected_neighbour_aggregate_by(
    acc: &mut Vec<(u32, u32)>,
    graph: &StrengthGraph,
    v: usize,
    agg_of: impl Fn(usize) -> u32,
) -> Option<u32> {
    most_connected_aggregate_in(
        acc,
        graph
            .neighbours(v)
            .iter()
            .map(|&u| agg_of(u as usize))
            .filter(|&a| a != UNAGGREGATED),
    )
}

/// Aggregates the vertices of `graph`.
///
/// `bs` unknowns per vertex; an aggregate needs at least `min_dofs` unknowns (the number of
/// near-null vectors), so that its tentative-prolongator block has full column rank.
pub fn aggregate(
    graph: &StrengthGraph,
    distance: MisDistance,
    bs: usize,
    min_dofs: usize,
) -> Aggregates {
    aggregate_with_roots(graph, bs, min_dofs, mis(graph, distance))
}

/// [`aggregate`] where `graph` lives. A device graph is aggregated on its GPU
/// ([`linalg::gpu::DeviceGraph::aggregate`]: the same MIS, root numbering and leftover rounds,
/// hence the same assignment); only the vertex -> aggregate map comes to the host (4 bytes a
/// vertex), and the graph too where an aggregate is too small and [`merge_small`] needs its
/// edges. The same aggregates as the host's, bit for bit.
pub fn aggregate_level(
    graph: &LevelGraph,
    distance: MisDistance,
    bs: usize,
    min_dofs: usize,
) -> Result<Aggregates, AmgError> {
    match graph {
        LevelGraph::Host(g) => Ok(aggregate(g, distance, bs, min_dofs)),
        LevelGraph::Device { ctx, graph: g } => {
            let (agg_of, n_agg) = g.aggregate(ctx, distance == MisDistance::Two)?;
            let aggs = Aggregates::from_assignment(agg_of, n_agg);
            if !has_small(&aggs, bs, min_dofs) {
                return Ok(aggs);
            }
            let host = graph.to_host()?;
            Ok(merge_small(&host, aggs, bs, min_dofs))
        }
    }
}

/// [`mis`] where `graph` lives (on a GPU: the set downloaded).
pub fn mis_level(graph: &LevelGraph, distance: MisDistance) -> Result<Vec<bool>, AmgError> {
    match graph {
        LevelGraph::Host(g) => Ok(mis(g, distance)),
        LevelGraph::Device { ctx, graph: g } => Ok(g.mis_roots(ctx, distance == MisDistance::Two)?),
    }
}

/// True if an aggregate has fewer than `min_dofs` unknowns (`bs` per vertex).
fn has_small(aggs: &Aggregates, bs: usize, min_dofs: usize) -> bool {
    (0..aggs.n_aggregates()).any(|a| aggs.members(a).len() * bs < min_dofs)
}

/// Aggregation around the given roots (see [`aggregate`]).
fn aggregate_with_roots(
    graph: &StrengthGraph,
    bs: usize,
    min_dofs: usize,
    roots: Vec<bool>,
) -> Aggregates {
    let n = graph.n_vertices();
    // Roots numbered in ascending vertex order.
    let mut root_id = vec![UNAGGREGATED; n];
    let mut n_agg = 0u32;
    for v in 0..n {
        if roots[v] {
            root_id[v] = n_agg;
            n_agg += 1;
        }
    }
    // Roots take their neighbours (a vertex next to several roots, possible with MIS-1, joins the one
    // it has the most edges to).
    let mut agg_of: Vec<u32> = (0..n)
        .into_par_iter()
        .map(|v| {
            if roots[v] {
                root_id[v]
            } else if graph.is_isolated(v) {
                UNAGGREGATED
            } else {
                most_connected_neighbour_aggregate(graph, &root_id, v).unwrap_or(UNAGGREGATED)
            }
        })
        .collect();
    // Leftovers, in rounds until nothing changes.
    loop {
        let next: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|v| {
                if agg_of[v] != UNAGGREGATED || graph.is_isolated(v) {
                    agg_of[v]
                } else {
                    most_connected_neighbour_aggregate(graph, &agg_of, v).unwrap_or(UNAGGREGATED)
                }
            })
            .collect();
        if next == agg_of {
            break;
        }
        agg_of = next;
    }
    let aggs = Aggregates::from_assignment(agg_of, n_agg as usize);
    merge_small(graph, aggs, bs, min_dofs)
}

/// Merges every aggregate with fewer than `min_dofs` unknowns into the neighbouring aggregate it has
/// the most edges to; an aggregate with no neighbouring aggregate is dissolved (its vertices
/// become unaggregated: a decoupled component smaller than the near-null space, which the smoother
/// handles). Sequential in aggregate order (small aggregates are rare), then renumbered compactly.
fn merge_small(graph: &StrengthGraph, aggs: Aggregates, bs: usize, min_dofs: usize) -> Aggregates {
    if !has_small(&aggs, bs, min_dofs) {
        return aggs;
    }
    let n_agg = aggs.n_aggregates();
    let mut size: Vec<usize> = (0..n_agg).map(|a| aggs.members(a).len()).collect();
    let mut agg_of = aggs.agg_of.clone();
    let mut members: Vec<Vec<u32>> = (0..n_agg).map(|a| aggs.members(a).to_vec()).collect();
    loop {
        let mut changed = false;
        for a in 0..n_agg {
            if size[a] == 0 || size[a] * bs >= min_dofs {
                continue;
            }
            // The other aggregate that aggregate a has the most edges to.
            let target = most_connected_aggregate(
                members[a]
                    .iter()
                    .flat_map(|&v| graph.neighbours(v as usize))
                    .map(|&u| agg_of[u as usize])
                    .filter(|&b| b != UNAGGREGATED && b as usize != a),
            )
            .map(|b| b as usize);
            let moved = std::mem::take(&mut members[a]);
            match target {
                Some(t) => {
                    for &v in &moved {
                        agg_of[v as usize] = t as u32;
                    }
                    size[t] += moved.len();
                    members[t].extend_from_slice(&moved);
                }
                None => {
                    for &v in &moved {
                        agg_of[v as usize] = UNAGGREGATED;
                    }
                }
            }
            size[a] = 0;
            changed = true;
        }
        if !changed {
            break;
        }
    }
    // Compact numbering: surviving aggregates keep their relative order.
    let mut new_id = vec![UNAGGREGATED; n_agg];
    let mut next = 0u32;
    for a in 0..n_agg {
        if size[a] > 0 {
            new_id[a] = next;
            next += 1;
        }
    }
    for g in agg_of.iter_mut() {
        if *g != UNAGGREGATED {
            *g = new_id[*g as usize];
        }
    }
    Aggregates::from_assignment(agg_of, next as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Graph of a structured `nx x ny x nz` grid with 27-point (full box) connectivity, unit weights.
    pub(crate) fn grid_graph(nx: usize, ny: usize, nz: usize) -> StrengthGraph {
        let id = |i: usize, j: usize, k: usize| i + nx * (j + ny * k);
        let mut row_ptr = vec![0];
        let mut col = Vec::new();
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    for kk in k.saturating_sub(1)..(k + 2).min(nz) {
                        for jj in j.saturating_sub(1)..(j + 2).min(ny) {
                            for ii in i.saturating_sub(1)..(i + 2).min(nx) {
                                if (ii, jj, kk) != (i, j, k) {
                                    col.push(id(ii, jj, kk) as u32);
                                }
                            }
                        }
                    }
                    row_ptr.push(col.len());
                }
            }
        }
        let w = vec![1.0; col.len()];
        StrengthGraph::from_parts(row_ptr, col, w)
    }

    /// Breadth-first distances from `v`, up to `max`.
    fn within(graph: &StrengthGraph, v: usize, max: usize) -> Vec<usize> {
        let mut seen = vec![v];
        let mut frontier = vec![v];
        for _ in 0..max {
            let mut next = Vec::new();
            for &x in &frontier {
                for &u in graph.neighbours(x) {
                    if !seen.contains(&(u as usize)) {
                        seen.push(u as usize);
                        next.push(u as usize);
                    }
                }
            }
            frontier = next;
        }
        seen
    }

    #[test]
    fn mis_is_independent_and_maximal_at_both_distances() {
        let g = grid_graph(7, 6, 5);
        for (distance, d) in [(MisDistance::One, 1), (MisDistance::Two, 2)] {
            let roots = mis(&g, distance);
            for v in 0..g.n_vertices() {
                let near = within(&g, v, d);
                let near_roots = near.iter().filter(|&&u| u != v && roots[u]).count();
                if roots[v] {
                    assert_eq!(near_roots, 0, "independence broken at {v} (distance {d})");
                } else {
                    assert!(near_roots > 0, "maximality broken at {v} (distance {d})");
                }
            }
        }
    }

    #[test]
    fn every_vertex_aggregated_and_aggregates_connected() {
        let g = grid_graph(9, 9, 9);
        let aggs = aggregate(&g, MisDistance::Two, 3, 6);
        assert!(aggs.assignment().iter().all(|&a| a != UNAGGREGATED));
        // MIS-2 on a 27-point grid: aggregates of roughly 3^3 nodes.
        let mean = 729.0 / aggs.n_aggregates() as f64;
        assert!((8.0..60.0).contains(&mean), "mean aggregate size {mean}");
        for a in 0..aggs.n_aggregates() {
            let m = aggs.members(a);
            assert!(m.len() * 3 >= 6);
            // Connected: BFS inside the aggregate reaches every member.
            let mut seen = vec![m[0] as usize];
            let mut i = 0;
            while i < seen.len() {
                for &u in g.neighbours(seen[i]) {
                    if aggs.assignment()[u as usize] as usize == a && !seen.contains(&(u as usize))
                    {
                        seen.push(u as usize);
                    }
                }
                i += 1;
            }
            assert_eq!(seen.len(), m.len(), "aggregate {a} not connected");
        }
    }

    #[test]
    fn aggregation_identical_with_one_and_many_threads() {
        let g = grid_graph(12, 11, 10);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    (
                        aggregate(&g, MisDistance::Two, 3, 6),
                        aggregate(&g, MisDistance::One, 6, 6),
                    )
                })
        };
        assert_eq!(run(1), run(4));
    }

    #[test]
    fn isolated_vertices_and_tiny_components_are_left_out_small_aggregates_merged() {
        // Path 0-1-2-3-4-5, isolated vertex 6, pair 7-8 (a component of 2 vertices).
        let edges: Vec<Vec<u32>> = vec![
            vec![1],
            vec![0, 2],
            vec![1, 3],
            vec![2, 4],
            vec![3, 5],
            vec![4],
            vec![],
            vec![8],
            vec![7],
        ];
        let mut row_ptr = vec![0];
        let mut col = Vec::new();
        for e in &edges {
            col.extend_from_slice(e);
            row_ptr.push(col.len());
        }
        let w = vec![1.0; col.len()];
        let g = StrengthGraph::from_parts(row_ptr, col, w);
        // bs 1, 3 near-null vectors: every aggregate needs 3 vertices.
        let aggs = aggregate(&g, MisDistance::One, 1, 3);
        let asg = aggs.assignment();
        assert_eq!(asg[6], UNAGGREGATED);
        assert_eq!(asg[7], UNAGGREGATED);
        assert_eq!(asg[8], UNAGGREGATED);
        for a in 0..aggs.n_aggregates() {
            assert!(
                aggs.members(a).len() >= 3,
                "aggregate {a}: {:?}",
                aggs.members(a)
            );
        }
        assert!((0..6).all(|v| asg[v] != UNAGGREGATED));
    }
}
