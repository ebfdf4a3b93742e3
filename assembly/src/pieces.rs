//! The pieces of a mesh: its cells grouped by connection through shared nodes. A mesh with two
//! pieces (a Gmsh mesh without `Coherence`, a stray element) is two bodies, and each must be held
//! on its own: constraints on one leave the other's rigid motions free.
//!
//! A piece is named by the smallest label among its nodes (labels: the nodes' global ids).
//! [`MeshPieces`] joins the nodes of this rank's cells once; [`MeshPieces::lower_labels`] lowers
//! every node's label to the smallest one of its piece on this rank. On ranks, repeating the
//! lowering with the ghosts' labels taken from their owners (never raised) reaches the whole
//! mesh's labels, because a part holds every cell of its owned nodes.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rayon::prelude::*;

use crate::AssemblyError;

/// Nodes a parallel task of [`MeshPieces::lower_labels`] takes.
const NODES_PER_TASK: usize = 1 << 14;

/// The pieces of a set of cells: each node's root, the smallest node index of its piece (a node
/// in no cell is its own). The same roots whatever the order in which the joins ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeshPieces {
    root: Vec<u32>,
}

impl MeshPieces {
    /// Joins the nodes of each cell of `cells` (flat connectivity, `nodes_per_cell` entries a
    /// cell, every entry below `n_nodes`), cells in parallel: a concurrent union-find whose
    /// links point from a larger root to a smaller one, so a tree's root is its smallest node.
    pub fn of_cells(
        cells: &[usize],
        nodes_per_cell: usize,
        n_nodes: usize,
    ) -> Result<Self, AssemblyError> {
        if n_nodes > u32::MAX as usize {
            return Err(AssemblyError::SizeMismatch {
                what: "nodes of a mesh's pieces (at most 2^32 - 1)",
                expected: u32::MAX as usize,
                got: n_nodes,
            });
        }
        if let Some(&n) = cells.par_iter().find_any(|&&n| n >= n_nodes) {
            return Err(AssemblyError::SizeMismatch {
                what: "a cell's node of a mesh's pieces (below the node count)",
                expected: n_nodes,
                got: n,
            });
        }
        let parent: Vec<AtomicU32> = (0..n_nodes as u32)
            .into_par_iter()
            .map(AtomicU32::new)
            .collect();
        cells
            .par_chunks_exact(nodes_per_cell.max(1))
            .for_each(|cell| {
                let mut joined = cell[0] as u32;
                for &n in &cell[1..] {
                    joined = unite(&parent, joined, n as u32);
                }
            });
        // the joins are over: every node's root is found through the final links
        let root = (0..n_nodes as u32)
            .into_par_iter()
            .map(|n| find(&parent, n))
            .collect();
        Ok(Self { root })
    }

    /// Lowers each node's label to the smallest label of its piece (`labels`: one per node).
    /// Returns whether a label changed.
    pub fn lower_labels(&self, labels: &mut [u64]) -> Result<bool, AssemblyError> {
        if labels.len() != self.root.len() {
            return Err(AssemblyError::SizeMismatch {
                what: "piece labels",
                expected: self.root.len(),
                got: labels.len(),
            });
        }
        let lowest: Vec<AtomicU64> = labels.par_iter().map(|&l| AtomicU64::new(l)).collect();
        // a root's lowest label: each task's runs of nodes of one piece lower it once, and only
        // where they would (a one-piece mesh's nodes would all write its root's slot)
        let lower = |(root, label): (u32, u64)| {
            let slot = &lowest[root as usize];
            if label < slot.load(Ordering::Relaxed) {
                slot.fetch_min(label, Ordering::Relaxed);
            }
        };
        labels
            .par_chunks(NODES_PER_TASK)
            .zip(self.root.par_chunks(NODES_PER_TASK))
            .for_each(|(labels, roots)| {
                let mut run: Option<(u32, u64)> = None;
                for (&label, &root) in labels.iter().zip(roots) {
                    run = match run {
                        Some((r, lowest)) if r == root => Some((r, lowest.min(label))),
                        Some(done) => {
                            lower(done);
                            Some((root, label))
                        }
                        None => Some((root, label)),
                    };
                }
                run.map(lower);
            });
        Ok(labels
            .par_iter_mut()
            .zip(&self.root)
            .map(|(l, &r)| {
                let piece = lowest[r as usize].load(Ordering::Relaxed);
                let lowered = piece < *l;
                *l = piece.min(*l);
                lowered
            })
            .reduce(|| false, |a, b| a || b))
    }
}

/// The root of `n` (a node whose link is itself), halving the path on the way. Links only ever
/// point to smaller nodes of the same piece and a linked node never becomes a root again, so a
/// stale read is an ancestor still, and a halving store (of an ancestor, into a node that is
/// not a root) can race with another only to leave a valid link.
fn find(parent: &[AtomicU32], mut n: u32) -> u32 {
    loop {
        let p = parent[n as usize].load(Ordering::Relaxed);
        if p == n {
            return n;
        }
        let grand = parent[p as usize].load(Ordering::Relaxed);
        if grand != p {
            parent[n as usize].store(grand, Ordering::Relaxed);
        }
        n = grand;
    }
}

/// Joins the pieces of `a` and `b`, and returns a node of the joined piece from which its
/// root is found soonest: the larger root is linked to the smaller one, retried where another
/// thread linked the larger root first.
fn unite(parent: &[AtomicU32], mut a: u32, mut b: u32) -> u32 {
    loop {
        a = find(parent, a);
        b = find(parent, b);
        if a == b {
            return a;
        }
        let (low, high) = (a.min(b), a.max(b));
        match parent[high as usize].compare_exchange(
            high,
            low,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => return low,
            Err(_) => (a, b) = (high, low),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(cells: &[usize], npc: usize, labels: &mut [u64]) -> bool {
        MeshPieces::of_cells(cells, npc, labels.len())
            .unwrap()
            .lower_labels(labels)
            .unwrap()
    }

    #[test]
    fn a_chain_of_cells_is_one_piece_and_a_stray_cell_another() {
        // cells of two nodes (a chain 0-1-2-3) and a stray pair 5-4; node 6 is in no cell
        let cells = [2, 3, 1, 2, 0, 1, 5, 4];
        let mut labels: Vec<u64> = (0..7).collect();
        assert!(lowered(&cells, 2, &mut labels));
        assert_eq!(labels, [0, 0, 0, 0, 4, 4, 6]);
        // a fixed point: nothing changes a second time
        assert!(!lowered(&cells, 2, &mut labels));
    }

    #[test]
    fn labels_need_not_follow_the_local_numbering() {
        // a rank's part: global ids as labels, the smallest on the last local node
        let cells = [0, 1, 2, 1, 2, 3];
        let mut labels = vec![40, 30, 20, 10];
        lowered(&cells, 3, &mut labels);
        assert_eq!(labels, [10; 4]);
    }

    #[test]
    fn unions_inside_one_cell_keep_the_smallest_root() {
        // the cell joins three pieces whose roots carry decreasing labels
        let cells = [0, 1, 2, 3, 4, 5, 0, 2, 4];
        let mut labels = vec![9, 9, 5, 5, 1, 1];
        lowered(&cells, 3, &mut labels);
        assert_eq!(labels, [1; 6]);
    }

    /// Many small pieces joined in parallel in a scrambled order: each node's root is the
    /// smallest node of its piece as a breadth-first search finds the pieces.
    #[test]
    fn parallel_joins_find_the_pieces_of_a_search() {
        let n_nodes = 20_000;
        // a pseudo-random permutation strings the nodes into chains of 7 cells of 4 nodes
        let perm: Vec<usize> = (0..n_nodes).map(|i| (i * 7919 + 13) % n_nodes).collect();
        let cells: Vec<usize> = perm
            .chunks(25)
            .flat_map(|c| {
                c.windows(4)
                    .step_by(3)
                    .flatten()
                    .copied()
                    .collect::<Vec<_>>()
            })
            .collect();
        let pieces = MeshPieces::of_cells(&cells, 4, n_nodes).unwrap();
        // the reference: a search over the nodes' neighbours
        let mut neighbours = vec![Vec::new(); n_nodes];
        for cell in cells.chunks_exact(4) {
            for &a in cell {
                neighbours[a].extend(cell.iter().copied().filter(|&b| b != a));
            }
        }
        let mut smallest = vec![usize::MAX; n_nodes];
        for start in 0..n_nodes {
            if smallest[start] != usize::MAX {
                continue;
            }
            let mut stack = vec![start];
            smallest[start] = start;
            while let Some(a) = stack.pop() {
                for &b in &neighbours[a] {
                    if smallest[b] == usize::MAX {
                        smallest[b] = start;
                        stack.push(b);
                    }
                }
            }
        }
        let roots: Vec<usize> = pieces.root.iter().map(|&r| r as usize).collect();
        assert_eq!(roots, smallest);
        let mut distinct = roots.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), n_nodes / 25);
        // labels against the numbering (the largest node the smallest label), lowered in tasks
        // whose runs cross pieces: each node gets its piece's smallest label
        let mut labels: Vec<u64> = (0..n_nodes as u64)
            .map(|i| 3 * (n_nodes as u64 - i))
            .collect();
        let mut expected = labels.clone();
        for (node, &root) in smallest.iter().enumerate() {
            expected[root] = expected[root].min(labels[node]);
        }
        let expected: Vec<u64> = smallest.iter().map(|&root| expected[root]).collect();
        assert!(pieces.lower_labels(&mut labels).unwrap());
        assert_eq!(labels, expected);
    }

    #[test]
    fn a_node_beyond_the_count_is_an_error() {
        assert!(MeshPieces::of_cells(&[0, 1, 5], 3, 4).is_err());
        let pieces = MeshPieces::of_cells(&[0, 1], 2, 3).unwrap();
        assert!(pieces.lower_labels(&mut [0, 1]).is_err());
    }
}
