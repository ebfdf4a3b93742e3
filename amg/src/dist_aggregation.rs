//! Aggregation on several ranks: the rounds of [`crate::aggregation`] (MIS, roots take their
//! neighbours, leftovers join their strongest neighbouring aggregate), each rank computing its
//! owned vertices and reading its ghosts' state from their owners through a halo exchange
//! between rounds.
//!
//! Priorities hash the vertices' serial ids (the same for any rank count) and aggregates are
//! labelled by their root's serial id, which orders them as the serial run's compact numbering
//! does, so ties break alike: the roots and aggregates are the serial ones, whatever the rank
//! count (tested). Not distributed yet: the merging of aggregates smaller than the near-null
//! space (`merge_small`), which the serial code runs after these rounds.

use std::sync::Arc;

use linalg::dist::HaloPlan;

use crate::aggregation::{
    priority, strongest_neighbour_aggregate, MisDistance, IN, OUT, UNAGGREGATED,
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
    for v in 0..n {
        if !graph.is_isolated(v) {
            status[v] = priority(g.serial_ids[v] as usize, graph.degree(v));
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
        for v in 0..n {
            m1[v] = closed_min(&status, v);
        }
        let reach: &[u64] = match distance {
            MisDistance::One => &m1[..n],
            MisDistance::Two => {
                g.update_ghosts(&mut m1)?;
                for v in 0..n {
                    m2[v] = closed_min(&m1, v);
                }
                &m2
            }
        };
        let mut changed = false;
        for (s, &r) in status[..n].iter_mut().zip(reach) {
            if *s == IN || *s == OUT {
                continue;
            }
            if r == IN {
                *s = OUT;
                changed = true;
            } else if r == *s {
                *s = IN;
                changed = true;
            }
        }
        if !g.any(changed)? {
            break;
        }
        g.update_ghosts(&mut status)?;
    }
    Ok(status[..n].iter().map(|&s| s == IN).collect())
}

/// The aggregates of the owned vertices (collective): each owned vertex's aggregate, labelled by
/// the serial id of its root, or [`UNAGGREGATED`]. The serial [`crate::aggregate`]'s
/// aggregates before small ones are merged.
pub fn dist_aggregate(g: &DistGraph, distance: MisDistance) -> Result<Vec<u32>, AmgError> {
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
