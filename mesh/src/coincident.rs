//! Distinct nodes of cells at the same point: where a mesher did not merge the nodes of cells
//! that meet (a Gmsh mesh without `Coherence Mesh`), the cells are not joined there and the
//! mesh holds a crack that changes the answer without any other sign.
//!
//! Points are compared after rounding each coordinate to a grid of [`COINCIDENCE_TOLERANCE`]
//! times the mesh's size (so exact duplicates and round-off twins are found; two points that
//! straddle a grid line may be missed): one sort of 64-bit keys, linear in practice.

use crate::hex_mesh::HexMesh;

/// Nodes closer than this fraction of the mesh's size (in every coordinate) are coincident.
pub const COINCIDENCE_TOLERANCE: f64 = 1e-9;

/// Pairs `[a, b]` (`a < b`) of distinct nodes of cells at the same point, each node paired with
/// the first node of its point; ascending. Nodes of no cell are ignored.
pub fn coincident_nodes(mesh: &HexMesh) -> Vec<[usize; 2]> {
    let mut used = vec![false; mesh.n_nodes()];
    for &n in &mesh.cells {
        used[n] = true;
    }
    let (mut lower, mut upper) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for (x, _) in mesh.coords.iter().zip(&used).filter(|(_, &u)| u) {
        for d in 0..3 {
            lower[d] = lower[d].min(x[d]);
            upper[d] = upper[d].max(x[d]);
        }
    }
    let size = (0..3).map(|d| upper[d] - lower[d]).fold(0.0, f64::max);
    if !(size.is_finite() && size > 0.0) {
        return Vec::new();
    }
    let grid = COINCIDENCE_TOLERANCE * size;
    let cell_of = |x: &[f64; 3]| [0, 1, 2].map(|d| ((x[d] - lower[d]) / grid).round() as i64);
    let key = |c: [i64; 3]| {
        let mut h = 0xcbf2_9ce4_8422_2325_u64;
        for v in c {
            h = (h ^ v as u64).wrapping_mul(0x0000_0100_0000_01b3);
            h ^= h >> 29;
        }
        h
    };
    let mut keyed: Vec<(u64, usize)> = (0..mesh.n_nodes())
        .filter(|&n| used[n])
        .map(|n| (key(cell_of(&mesh.coords[n])), n))
        .collect();
    keyed.sort_unstable();
    let mut pairs = Vec::new();
    let mut start = 0;
    while start < keyed.len() {
        let mut end = start + 1;
        while end < keyed.len() && keyed[end].0 == keyed[start].0 {
            end += 1;
        }
        // a run of equal keys: group its nodes by grid cell (a hash collision is no coincidence)
        let run = &keyed[start..end];
        for (i, &(_, a)) in run.iter().enumerate() {
            let cell = cell_of(&mesh.coords[a]);
            let earlier = run[..i]
                .iter()
                .map(|&(_, b)| b)
                .find(|&b| cell_of(&mesh.coords[b]) == cell);
            if let Some(first) = earlier {
                pairs.push([first.min(a), first.max(a)]);
            }
        }
        start = end;
    }
    pairs.sort_unstable();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{generate_box, BoxSpec, CellKind};

    fn two_cubes(gap: f64) -> HexMesh {
        let cube = |shift: f64| {
            let mut c = Vec::new();
            for k in 0..2 {
                for j in 0..2 {
                    for i in 0..2 {
                        c.push([i as f64 + shift, j as f64, k as f64]);
                    }
                }
            }
            c
        };
        let mut coords = cube(0.0);
        coords.extend(cube(1.0 + gap));
        HexMesh::new(CellKind::Hex8, coords, (0..16).collect())
    }

    #[test]
    fn unmerged_twins_are_found_and_merged_meshes_pass() {
        // the second cube's face x = 1 duplicates the first cube's: four pairs
        assert_eq!(
            coincident_nodes(&two_cubes(0.0)),
            vec![[1, 8], [3, 10], [5, 12], [7, 14]]
        );
        // round-off twins count too
        assert_eq!(coincident_nodes(&two_cubes(1e-14)).len(), 4);
        // a real gap does not
        assert!(coincident_nodes(&two_cubes(1e-3)).is_empty());
        let spec = BoxSpec::new([6, 5, 4], [0.0; 3], [1e-3, 2e-3, 1e-3], CellKind::Hex27);
        assert!(coincident_nodes(&generate_box(&spec).unwrap()).is_empty());
    }

    #[test]
    fn nodes_of_no_cell_are_ignored() {
        let mut mesh = two_cubes(1e-3);
        mesh.coords.push(mesh.coords[0]);
        assert!(coincident_nodes(&mesh).is_empty());
    }
}
