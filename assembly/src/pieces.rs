//! The pieces of a mesh: its cells grouped by connection through shared nodes. A mesh with two
//! pieces (a Gmsh mesh without `Coherence`, a stray element) is two bodies, and each must be held
//! on its own: constraints on one leave the other's rigid motions free.
//!
//! A piece is named by the smallest label among its nodes (labels: the nodes' global ids).
//! [`spread_piece_labels`] lowers every node's label to the smallest one reachable through this
//! rank's cells; on ranks, repeating it with the ghosts' labels taken from their owners (never
//! raised) reaches the whole mesh's labels, because a part holds every cell of its owned nodes.

/// Lowers each node's label to the smallest label of the nodes joined to it through `cells`
/// (flat connectivity, `nodes_per_cell` entries a cell). Returns whether a label changed.
/// Nodes in no cell keep their label.
pub fn spread_piece_labels(cells: &[usize], nodes_per_cell: usize, labels: &mut [u64]) -> bool {
    let mut parent: Vec<usize> = (0..labels.len()).collect();
    for cell in cells.chunks_exact(nodes_per_cell.max(1)) {
        let mut first = find(&mut parent, cell[0]);
        for &n in &cell[1..] {
            let root = find(&mut parent, n);
            if root != first {
                // the root with the smaller label stays the root: the piece's label is its root's
                let (keep, join) = if labels[root] < labels[first] {
                    (root, first)
                } else {
                    (first, root)
                };
                parent[join] = keep;
                first = keep;
            }
        }
    }
    let mut changed = false;
    for n in 0..labels.len() {
        let root = find(&mut parent, n);
        let label = labels[root];
        if label < labels[n] {
            labels[n] = label;
            changed = true;
        }
    }
    changed
}

/// The root of `n`, halving the path on the way.
fn find(parent: &mut [usize], mut n: usize) -> usize {
    while parent[n] != n {
        parent[n] = parent[parent[n]];
        n = parent[n];
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_of_cells_is_one_piece_and_a_stray_cell_another() {
        // cells of two nodes (a chain 0-1-2-3) and a stray pair 5-4; node 6 is in no cell
        let cells = [2, 3, 1, 2, 0, 1, 5, 4];
        let mut labels: Vec<u64> = (0..7).collect();
        assert!(spread_piece_labels(&cells, 2, &mut labels));
        assert_eq!(labels, [0, 0, 0, 0, 4, 4, 6]);
        // a fixed point: nothing changes a second time
        assert!(!spread_piece_labels(&cells, 2, &mut labels));
    }

    #[test]
    fn labels_need_not_follow_the_local_numbering() {
        // a rank's part: global ids as labels, the smallest on the last local node
        let cells = [0, 1, 2, 1, 2, 3];
        let mut labels = vec![40, 30, 20, 10];
        spread_piece_labels(&cells, 3, &mut labels);
        assert_eq!(labels, [10; 4]);
    }

    #[test]
    fn unions_inside_one_cell_keep_the_smallest_root() {
        // the cell joins three pieces whose roots carry decreasing labels
        let cells = [0, 1, 2, 3, 4, 5, 0, 2, 4];
        let mut labels = vec![9, 9, 5, 5, 1, 1];
        spread_piece_labels(&cells, 3, &mut labels);
        assert_eq!(labels, [1; 6]);
    }
}
