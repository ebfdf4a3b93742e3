//! Nodal averages of cell values through the cells around each node: the symbolic phase
//! ([`NodeCells::of`], once per mesh) and the numeric one ([`NodeCells::average`], per state),
//! for the output writer's nodal fields. The values are [`crate::run::nodal_average`]'s bit for
//! bit: each node's sum runs over its cells in ascending order, then is divided by their count.

use mesh::HexMesh;
use rayon::prelude::*;

use crate::error::fail;
use crate::Result;

/// The cells around each node in ascending order (a cell that lists a node twice, twice): node
/// `n`'s are `cells[offsets[n]..offsets[n + 1]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCells {
    offsets: Vec<usize>,
    cells: Vec<usize>,
    n_cells: usize,
}

impl NodeCells {
    /// The cells around each node of `mesh` (a counting sort of its connectivity).
    pub fn of(mesh: &HexMesh) -> Self {
        let n_nodes = mesh.n_nodes();
        let mut offsets = vec![0usize; n_nodes + 1];
        for c in 0..mesh.n_cells() {
            for &n in mesh.cell_nodes(c) {
                offsets[n + 1] += 1;
            }
        }
        let mut total = 0;
        for offset in offsets.iter_mut() {
            total += *offset;
            *offset = total;
        }
        let mut next = offsets[..n_nodes].to_vec();
        let mut cells = vec![0; offsets[n_nodes]];
        for c in 0..mesh.n_cells() {
            for &n in mesh.cell_nodes(c) {
                cells[next[n]] = c;
                next[n] += 1;
            }
        }
        NodeCells {
            offsets,
            cells,
            n_cells: mesh.n_cells(),
        }
    }

    /// Nodes of the mesh.
    pub fn n_nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Each node's mean of `per_cell` (one value per cell of the mesh) over the cells around it
    /// (zero at a node of no cell), in parallel over nodes.
    pub fn average(&self, per_cell: &[[f64; 9]]) -> Result<Vec<[f64; 9]>> {
        if per_cell.len() != self.n_cells {
            fail!(
                "{} cell values for a nodal average over {} cells",
                per_cell.len(),
                self.n_cells
            );
        }
        Ok(self
            .offsets
            .par_windows(2)
            .map(|range| {
                let cells = &self.cells[range[0]..range[1]];
                let mut sum = [0.0; 9];
                for &c in cells {
                    for (s, v) in sum.iter_mut().zip(&per_cell[c]) {
                        *s += v;
                    }
                }
                if !cells.is_empty() {
                    let count = cells.len() as f64;
                    sum.iter_mut().for_each(|v| *v /= count);
                }
                sum
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh::CellKind;

    /// On Q1 and Q2 boxes, with one thread and with four, the values of
    /// [`crate::run::nodal_average`] bit for bit; a short list of cell values is an error.
    #[test]
    fn the_average_is_the_scatters_bit_for_bit() {
        for (kind, cells) in [(CellKind::Hex8, [30, 20, 12]), (CellKind::Hex27, [6, 5, 4])] {
            let mesh = mesh::generate_box(&mesh::BoxSpec {
                cells,
                lower: [0.0; 3],
                upper: [3.0, 2.0, 1.0],
                kind,
                corners: None,
            })
            .unwrap();
            let per_cell: Vec<[f64; 9]> = (0..mesh.n_cells())
                .map(|c| std::array::from_fn(|i| ((c * 9 + i) as f64 * 0.618_033_988_7).sin()))
                .collect();
            let plan = NodeCells::of(&mesh);
            assert_eq!(plan.n_nodes(), mesh.n_nodes());
            let bits =
                |v: &[[f64; 9]]| -> Vec<u64> { v.iter().flatten().map(|x| x.to_bits()).collect() };
            let want = bits(&crate::run::nodal_average(&mesh, &per_cell));
            for threads in [1, 4] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let got = pool.install(|| plan.average(&per_cell)).unwrap();
                assert_eq!(bits(&got), want, "{kind:?}, {threads} threads");
            }
            let error = plan.average(&per_cell[1..]).unwrap_err();
            assert!(format!("{error:#}").contains("cell values"), "{error:#}");
        }
    }
}
