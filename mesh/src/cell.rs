//! Reference-cell topology: cell kinds, faces and the local nodes of a face.
//!
//! Local nodes follow ARCHITECTURE.md: node `(i, j, k)` of an order-`p` cell has index
//! `i + (p+1) j + (p+1)^2 k` and reference coordinate `xi = -1 + 2 i / p`.

/// The two supported hexahedra.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellKind {
    /// Trilinear 8-node hexahedron (Q1).
    Hex8,
    /// Triquadratic 27-node hexahedron (Q2).
    Hex27,
}

impl CellKind {
    /// Polynomial order `p` (1 or 2).
    pub fn order(self) -> usize {
        match self {
            CellKind::Hex8 => 1,
            CellKind::Hex27 => 2,
        }
    }

    /// Nodes per direction, `p + 1`.
    pub fn nodes_per_edge(self) -> usize {
        self.order() + 1
    }

    /// Nodes per cell, `(p + 1)^3`.
    pub fn nodes_per_cell(self) -> usize {
        self.nodes_per_edge().pow(3)
    }

    /// Nodes per face, `(p + 1)^2`.
    pub fn nodes_per_face(self) -> usize {
        self.nodes_per_edge().pow(2)
    }

    /// Local indices of the 8 corner nodes, in corner order `i + 2 j + 4 k`.
    pub fn corner_local_nodes(self) -> [usize; 8] {
        let p = self.order();
        let n = p + 1;
        std::array::from_fn(|c| {
            let (i, j, k) = (c & 1, (c >> 1) & 1, (c >> 2) & 1);
            p * i + n * p * j + n * n * p * k
        })
    }
}

/// A face of the reference cell `[-1, 1]^3`: `XMin` is `xi = -1`, `XMax` is `xi = +1`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Face {
    XMin,
    XMax,
    YMin,
    YMax,
    ZMin,
    ZMax,
}

impl Face {
    /// All faces in declaration order.
    pub const ALL: [Face; 6] = [
        Face::XMin,
        Face::XMax,
        Face::YMin,
        Face::YMax,
        Face::ZMin,
        Face::ZMax,
    ];

    /// Reference direction normal to the face (0 = xi, 1 = eta, 2 = zeta).
    pub fn axis(self) -> usize {
        self as usize / 2
    }

    /// `true` for the `+1` side of its axis.
    pub fn is_max(self) -> bool {
        self as usize % 2 == 1
    }

    /// The face on `axis` (0..3), on the `+1` side when `is_max`.
    pub fn from_axis(axis: usize, is_max: bool) -> Option<Face> {
        Face::ALL.get(2 * axis + usize::from(is_max)).copied()
    }

    /// Lower-case name used for generated sets: "xmin", "xmax", ...
    pub fn name(self) -> &'static str {
        ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"][self as usize]
    }
}

/// A face of one cell of a mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellFace {
    pub cell: usize,
    pub face: Face,
}

/// Local nodes of `face`, in the tensor order of the two remaining directions
/// (lower direction fastest): e.g. `YMin` lists `(i, 0, k)` with `i` fastest.
pub fn face_local_nodes(kind: CellKind, face: Face) -> Vec<usize> {
    let n = kind.nodes_per_edge();
    let fixed = if face.is_max() { n - 1 } else { 0 };
    let axis = face.axis();
    let stride = [1, n, n * n];
    let (a, b) = match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let mut nodes = Vec::with_capacity(n * n);
    for s in 0..n {
        for r in 0..n {
            nodes.push(fixed * stride[axis] + r * stride[a] + s * stride[b]);
        }
    }
    nodes
}

/// Local indices of the 4 corner nodes of `face`, in the same tensor order.
pub fn face_corner_local_nodes(kind: CellKind, face: Face) -> [usize; 4] {
    let nodes = face_local_nodes(kind, face);
    let n = kind.nodes_per_edge();
    [nodes[0], nodes[n - 1], nodes[n * (n - 1)], nodes[n * n - 1]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn face_nodes_of_hex8_follow_tensor_order() {
        assert_eq!(face_local_nodes(CellKind::Hex8, Face::XMin), [0, 2, 4, 6]);
        assert_eq!(face_local_nodes(CellKind::Hex8, Face::XMax), [1, 3, 5, 7]);
        assert_eq!(face_local_nodes(CellKind::Hex8, Face::YMin), [0, 1, 4, 5]);
        assert_eq!(face_local_nodes(CellKind::Hex8, Face::YMax), [2, 3, 6, 7]);
        assert_eq!(face_local_nodes(CellKind::Hex8, Face::ZMin), [0, 1, 2, 3]);
        assert_eq!(face_local_nodes(CellKind::Hex8, Face::ZMax), [4, 5, 6, 7]);
    }

    #[test]
    fn face_nodes_of_hex27_lie_on_the_face() {
        for face in Face::ALL {
            let nodes = face_local_nodes(CellKind::Hex27, face);
            assert_eq!(nodes.len(), 9);
            for (pos, &l) in nodes.iter().enumerate() {
                let ijk = [l % 3, (l / 3) % 3, l / 9];
                assert_eq!(ijk[face.axis()], if face.is_max() { 2 } else { 0 });
                // Tensor order of the remaining directions, lower one fastest.
                let rest: Vec<usize> = (0..3).filter(|&d| d != face.axis()).collect();
                assert_eq!(ijk[rest[0]], pos % 3);
                assert_eq!(ijk[rest[1]], pos / 3);
            }
        }
        assert_eq!(
            face_corner_local_nodes(CellKind::Hex27, Face::ZMax),
            [18, 20, 24, 26]
        );
    }

    #[test]
    fn corners_and_axes() {
        assert_eq!(
            CellKind::Hex8.corner_local_nodes(),
            [0, 1, 2, 3, 4, 5, 6, 7]
        );
        assert_eq!(
            CellKind::Hex27.corner_local_nodes(),
            [0, 2, 6, 8, 18, 20, 24, 26]
        );
        for f in Face::ALL {
            assert_eq!(Face::from_axis(f.axis(), f.is_max()), Some(f));
        }
        assert_eq!(Face::from_axis(3, false), None);
    }
}
