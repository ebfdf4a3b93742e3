//! The reference hexahedron `[-1, 1]^3`: the supported cell kinds, their local node numbering, the
//! six faces and the local nodes of each face. Meshes (`mesh`) name cells and faces with these
//! types; the bases, element and face kernels of this crate are built on them.
//!
//! Local nodes follow ARCHITECTURE.md: node `(i, j, k)` of an order-`p` cell has index
//! `i + (p+1) j + (p+1)^2 k` and reference coordinate `xi = -1 + 2 i / p`.

use crate::error::{FemError, Result};

/// The two supported hexahedra.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellKind {
    /// Trilinear 8-node hexahedron (Q1).
    Hex8,
    /// Triquadratic 27-node hexahedron (Q2).
    Hex27,
}

impl CellKind {
    /// The cell of Lagrange order `order` (1 or 2).
    pub fn from_order(order: usize) -> Result<Self> {
        match order {
            1 => Ok(CellKind::Hex8),
            2 => Ok(CellKind::Hex27),
            _ => Err(FemError::UnsupportedOrder { order }),
        }
    }

    /// Polynomial order `p` (1 or 2).
    pub const fn order(self) -> usize {
        match self {
            CellKind::Hex8 => 1,
            CellKind::Hex27 => 2,
        }
    }

    /// Nodes per direction, `p + 1`.
    pub const fn nodes_per_edge(self) -> usize {
        self.order() + 1
    }

    /// Nodes per cell, `(p + 1)^3`.
    pub const fn nodes_per_cell(self) -> usize {
        self.nodes_per_edge().pow(3)
    }

    /// Nodes per face, `(p + 1)^2`.
    pub const fn nodes_per_face(self) -> usize {
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

/// Largest number of nodes of a supported cell (Q2).
pub const MAX_NODES: usize = CellKind::Hex27.nodes_per_cell();

/// A face of the reference cell: `XMin` is `xi_0 = -1`, `XMax` is `xi_0 = +1`, and so on. The
/// declaration order is the face numbering of the output (`xmin, xmax, ..., zmax` = 0..5).
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
    /// All faces, in declaration order.
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

    /// Sign of the outward reference normal along [`Face::axis`]: -1 for `*Min`, +1 for `*Max`.
    pub fn normal_sign(self) -> f64 {
        if self.is_max() {
            1.0
        } else {
            -1.0
        }
    }

    /// The two in-face reference directions `(eta_1, eta_2)`, ascending.
    pub fn tangent_axes(self) -> [usize; 2] {
        match self.axis() {
            0 => [1, 2],
            1 => [0, 2],
            _ => [0, 1],
        }
    }

    /// `+1` if `dX/deta_1 x dX/deta_2` points out of the cell (for a positively oriented map),
    /// `-1` if it points in. Needed for follower loads such as pressure.
    pub fn orientation(self) -> f64 {
        // e_y x e_z = e_x, e_x x e_z = -e_y, e_x x e_y = e_z.
        let cross_sign = if self.axis() == 1 { -1.0 } else { 1.0 };
        cross_sign * self.normal_sign()
    }

    /// Cell reference coordinates of the face point with face coordinates `eta`.
    pub fn reference_point(self, eta: [f64; 2]) -> [f64; 3] {
        let mut xi = [0.0; 3];
        let [t1, t2] = self.tangent_axes();
        xi[self.axis()] = self.normal_sign();
        xi[t1] = eta[0];
        xi[t2] = eta[1];
        xi
    }
}

/// Local nodes of `face` of a `kind` cell, in the tensor order of the two in-face directions
/// (lower direction fastest), which is the node order of the face basis
/// ([`LagrangeQuad`](crate::LagrangeQuad)): e.g. `YMin` lists `(i, 0, k)` with `i` fastest.
pub fn face_local_nodes(kind: CellKind, face: Face) -> Vec<usize> {
    let n = kind.nodes_per_edge();
    let fixed = if face.is_max() { n - 1 } else { 0 };
    let stride = [1, n, n * n];
    let [t1, t2] = face.tangent_axes();
    let mut nodes = Vec::with_capacity(n * n);
    for s in 0..n {
        for r in 0..n {
            nodes.push(fixed * stride[face.axis()] + r * stride[t1] + s * stride[t2]);
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
    use crate::basis::{LagrangeHex, LagrangeQuad};

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
            assert_eq!(nodes.len(), CellKind::Hex27.nodes_per_face());
            for (pos, &l) in nodes.iter().enumerate() {
                let ijk = [l % 3, (l / 3) % 3, l / 9];
                assert_eq!(ijk[face.axis()], if face.is_max() { 2 } else { 0 });
                // Tensor order of the remaining directions, lower one fastest.
                let [t1, t2] = face.tangent_axes();
                assert_eq!(ijk[t1], pos % 3);
                assert_eq!(ijk[t2], pos / 3);
            }
        }
        assert_eq!(
            face_corner_local_nodes(CellKind::Hex27, Face::ZMax),
            [18, 20, 24, 26]
        );
    }

    /// The face nodes are the face basis' nodes in order: the `k`-th node of a face sits at the
    /// cell reference point of the `k`-th node of [`LagrangeQuad`], so the face kernel can take
    /// them as they are listed.
    #[test]
    fn face_nodes_are_the_quadrilateral_nodes_in_order() {
        for kind in [CellKind::Hex8, CellKind::Hex27] {
            let cell = LagrangeHex::new(kind.order()).unwrap().node_coords();
            let quad = LagrangeQuad::new(kind.order()).unwrap().node_coords();
            for face in Face::ALL {
                let nodes = face_local_nodes(kind, face);
                assert_eq!(nodes.len(), quad.len());
                for (a, &c) in nodes.iter().enumerate() {
                    assert_eq!(
                        cell[c],
                        face.reference_point(quad[a]),
                        "{face:?} of {kind:?}, node {a}"
                    );
                }
                // The corners are the face's corner nodes of the cell.
                let corners = face_corner_local_nodes(kind, face);
                assert!(corners
                    .iter()
                    .all(|c| kind.corner_local_nodes().contains(c)));
            }
        }
    }

    #[test]
    fn corners_axes_names_and_sides() {
        assert_eq!(
            CellKind::Hex8.corner_local_nodes(),
            [0, 1, 2, 3, 4, 5, 6, 7]
        );
        assert_eq!(
            CellKind::Hex27.corner_local_nodes(),
            [0, 2, 6, 8, 18, 20, 24, 26]
        );
        let names = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"];
        for (index, f) in Face::ALL.into_iter().enumerate() {
            assert_eq!(Face::from_axis(f.axis(), f.is_max()), Some(f));
            assert_eq!(f as usize, index);
            assert_eq!(f.name(), names[index]);
            assert_eq!(f.normal_sign() > 0.0, f.is_max());
        }
        assert_eq!(Face::from_axis(3, false), None);
    }

    #[test]
    fn face_orientation_matches_cross_product() {
        for face in Face::ALL {
            let [t1, t2] = face.tangent_axes();
            let (mut e1, mut e2) = ([0.0; 3], [0.0; 3]);
            e1[t1] = 1.0;
            e2[t2] = 1.0;
            let c = [
                e1[1] * e2[2] - e1[2] * e2[1],
                e1[2] * e2[0] - e1[0] * e2[2],
                e1[0] * e2[1] - e1[1] * e2[0],
            ];
            assert_eq!(
                c[face.axis()] * face.normal_sign(),
                face.orientation(),
                "{face:?}"
            );
        }
    }

    #[test]
    fn orders_map_to_kinds() {
        for kind in [CellKind::Hex8, CellKind::Hex27] {
            assert_eq!(CellKind::from_order(kind.order()), Ok(kind));
        }
        assert_eq!(
            CellKind::from_order(3),
            Err(FemError::UnsupportedOrder { order: 3 })
        );
        assert_eq!(MAX_NODES, 27);
    }
}
