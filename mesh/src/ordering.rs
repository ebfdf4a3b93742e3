//! Node orderings of other formats and their permutations to and from the lexicographic order.
//!
//! Each foreign ordering is written down as the list of reference coordinates of its nodes
//! (in `{-1, 0, 1}`, the reference cell `[-1, 1]^d`), exactly as the format defines it; the
//! permutations are derived by matching those coordinates against the lexicographic order of
//! ARCHITECTURE.md (`i` fastest, `xi = -1 + 2 i / p`). Quadrilaterals use `[xi, eta, 0]`.
//!
//! Sources: Gmsh reference manual, "Node ordering" (confirmed against
//! `gmsh.model.mesh.getElementProperties` of Gmsh 4.15); VTK `vtkHexahedron` and
//! `vtkTriQuadraticHexahedron` (confirmed against `GetParametricCoords` of VTK 9.7).
//! XDMF's "Hexahedron" and "Hexahedron_27" use the VTK orderings. Exodus II: the SEACAS element
//! types page (HEX8, HEX27: mid-edge nodes 9-20 on edges 1-2, 2-3, 3-4, 4-1, 1-5, 2-6, 3-7,
//! 4-8, 5-6, 6-7, 7-8, 8-5; node 21 the centroid; 22-27 the centres of faces 1234, 5678, 1485,
//! 2376, 1265, 3487), as libMesh's Exodus node map also reads it. Abaqus: "Three-dimensional
//! solid element library" (C3D20/C3D27 mid-edge nodes 9-20 on edges 1-2, 2-3, 3-4, 4-1, 5-6,
//! 6-7, 7-8, 8-5, 1-5, 2-6, 3-7, 4-8; C3D27 nodes 21-26 the centres of faces S1..S6, 27 the
//! centroid). The hexahedron side (face) numberings of both formats are [`EXODUS_HEX_SIDES`] and
//! [`ABAQUS_HEX_FACES`]; [`side_face`] turns a side into this crate's [`crate::Face`].

/// A node ordering of another format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeOrdering {
    /// Gmsh element type 5 (8-node hexahedron).
    GmshHex8,
    /// Gmsh element type 12 (27-node hexahedron).
    GmshHex27,
    /// Gmsh element type 3 (4-node quadrangle).
    GmshQuad4,
    /// Gmsh element type 10 (9-node quadrangle).
    GmshQuad9,
    /// VTK_HEXAHEDRON (12) = XDMF "Hexahedron".
    VtkHex8,
    /// VTK_TRIQUADRATIC_HEXAHEDRON (29) = XDMF "Hexahedron_27".
    VtkHex27,
    /// Exodus II HEX8 (= Abaqus C3D8: the shared corner order).
    ExodusHex8,
    /// Exodus II HEX27.
    ExodusHex27,
    /// Abaqus C3D27.
    AbaqusHex27,
}

/// The 8 corners shared by Gmsh and VTK hexahedra: counter-clockwise on zeta = -1, then on +1.
const HEX_CORNERS: [[i8; 3]; 8] = [
    [-1, -1, -1],
    [1, -1, -1],
    [1, 1, -1],
    [-1, 1, -1],
    [-1, -1, 1],
    [1, -1, 1],
    [1, 1, 1],
    [-1, 1, 1],
];

/// Gmsh hexahedron 27: corners; edge midpoints of edges 0-1, 0-3, 0-4, 1-2, 1-5, 2-3, 2-6, 3-7,
/// 4-5, 4-7, 5-6, 6-7; face centres of faces 0321 (zeta-), 0154 (eta-), 0473 (xi-), 1265 (xi+),
/// 2376 (eta+), 4567 (zeta+); the cell centre.
const GMSH_HEX27: [[i8; 3]; 27] = [
    [-1, -1, -1],
    [1, -1, -1],
    [1, 1, -1],
    [-1, 1, -1],
    [-1, -1, 1],
    [1, -1, 1],
    [1, 1, 1],
    [-1, 1, 1],
    [0, -1, -1],
    [-1, 0, -1],
    [-1, -1, 0],
    [1, 0, -1],
    [1, -1, 0],
    [0, 1, -1],
    [1, 1, 0],
    [-1, 1, 0],
    [0, -1, 1],
    [-1, 0, 1],
    [1, 0, 1],
    [0, 1, 1],
    [0, 0, -1],
    [0, -1, 0],
    [-1, 0, 0],
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [0, 0, 0],
];

/// VTK triquadratic hexahedron: corners; edge midpoints of edges 0-1, 1-2, 2-3, 3-0, 4-5, 5-6,
/// 6-7, 7-4, 0-4, 1-5, 2-6, 3-7; face centres of faces 0473 (xi-), 1562 (xi+), 0154 (eta-),
/// 3267 (eta+), 0123 (zeta-), 4567 (zeta+); the cell centre.
const VTK_HEX27: [[i8; 3]; 27] = [
    [-1, -1, -1],
    [1, -1, -1],
    [1, 1, -1],
    [-1, 1, -1],
    [-1, -1, 1],
    [1, -1, 1],
    [1, 1, 1],
    [-1, 1, 1],
    [0, -1, -1],
    [1, 0, -1],
    [0, 1, -1],
    [-1, 0, -1],
    [0, -1, 1],
    [1, 0, 1],
    [0, 1, 1],
    [-1, 0, 1],
    [-1, -1, 0],
    [1, -1, 0],
    [1, 1, 0],
    [-1, 1, 0],
    [-1, 0, 0],
    [1, 0, 0],
    [0, -1, 0],
    [0, 1, 0],
    [0, 0, -1],
    [0, 0, 1],
    [0, 0, 0],
];

/// Exodus II HEX27: corners; mid-edges 1-2, 2-3, 3-4, 4-1, 1-5, 2-6, 3-7, 4-8, 5-6, 6-7, 7-8,
/// 8-5; the centroid (node 21); centres of faces 1234 (zeta-), 5678 (zeta+), 1485 (xi-), 2376
/// (xi+), 1265 (eta-), 3487 (eta+).
const EXODUS_HEX27: [[i8; 3]; 27] = [
    [-1, -1, -1],
    [1, -1, -1],
    [1, 1, -1],
    [-1, 1, -1],
    [-1, -1, 1],
    [1, -1, 1],
    [1, 1, 1],
    [-1, 1, 1],
    [0, -1, -1],
    [1, 0, -1],
    [0, 1, -1],
    [-1, 0, -1],
    [-1, -1, 0],
    [1, -1, 0],
    [1, 1, 0],
    [-1, 1, 0],
    [0, -1, 1],
    [1, 0, 1],
    [0, 1, 1],
    [-1, 0, 1],
    [0, 0, 0],
    [0, 0, -1],
    [0, 0, 1],
    [-1, 0, 0],
    [1, 0, 0],
    [0, -1, 0],
    [0, 1, 0],
];

/// Abaqus C3D27: corners; mid-edges 1-2, 2-3, 3-4, 4-1, 5-6, 6-7, 7-8, 8-5, 1-5, 2-6, 3-7, 4-8
/// (those of C3D20); centres of faces S1 (1234, zeta-), S2 (5876, zeta+), S3 (1562, eta-), S4
/// (2673, xi+), S5 (3784, eta+), S6 (4851, xi-); the centroid.
const ABAQUS_HEX27: [[i8; 3]; 27] = [
    [-1, -1, -1],
    [1, -1, -1],
    [1, 1, -1],
    [-1, 1, -1],
    [-1, -1, 1],
    [1, -1, 1],
    [1, 1, 1],
    [-1, 1, 1],
    [0, -1, -1],
    [1, 0, -1],
    [0, 1, -1],
    [-1, 0, -1],
    [0, -1, 1],
    [1, 0, 1],
    [0, 1, 1],
    [-1, 0, 1],
    [-1, -1, 0],
    [1, -1, 0],
    [1, 1, 0],
    [-1, 1, 0],
    [0, 0, -1],
    [0, 0, 1],
    [0, -1, 0],
    [1, 0, 0],
    [0, 1, 0],
    [-1, 0, 0],
    [0, 0, 0],
];

/// Exodus II hexahedron sides 1..6 by their corner nodes (1-based, as the Exodus II manual
/// lists them): 1 = 1265, 2 = 2376, 3 = 3487, 4 = 1584, 5 = 1432, 6 = 5678.
pub const EXODUS_HEX_SIDES: [[usize; 4]; 6] = [
    [1, 2, 6, 5],
    [2, 3, 7, 6],
    [3, 4, 8, 7],
    [1, 5, 8, 4],
    [1, 4, 3, 2],
    [5, 6, 7, 8],
];

/// Abaqus hexahedron faces S1..S6 by their corner nodes (1-based, as the Abaqus manual lists
/// them): S1 = 1234, S2 = 5876, S3 = 1562, S4 = 2673, S5 = 3784, S6 = 4851.
pub const ABAQUS_HEX_FACES: [[usize; 4]; 6] = [
    [1, 2, 3, 4],
    [5, 8, 7, 6],
    [1, 5, 6, 2],
    [2, 6, 7, 3],
    [3, 7, 8, 4],
    [4, 8, 5, 1],
];

/// The reference-cell face whose corners are the given 1-based corner nodes of the shared
/// hexahedron corner order (counter-clockwise on zeta = -1, then on +1): the one coordinate the
/// four corners share. `None` if they share none (not a face).
pub fn side_face(corners: [usize; 4]) -> Option<crate::Face> {
    let coords = corners.map(|c| c.checked_sub(1).and_then(|i| HEX_CORNERS.get(i)));
    (0..3).find_map(|axis| {
        let first = coords[0]?[axis];
        coords
            .iter()
            .all(|x| x.is_some_and(|x| x[axis] == first))
            .then(|| crate::Face::from_axis(axis, first > 0))
            .flatten()
    })
}

/// Gmsh quadrangle 9: corners counter-clockwise, midpoints of edges 0-1, 1-2, 2-3, 3-0, centre.
const GMSH_QUAD9: [[i8; 3]; 9] = [
    [-1, -1, 0],
    [1, -1, 0],
    [1, 1, 0],
    [-1, 1, 0],
    [0, -1, 0],
    [1, 0, 0],
    [0, 1, 0],
    [-1, 0, 0],
    [0, 0, 0],
];

impl NodeOrdering {
    /// Reference coordinates of the nodes in this format's order.
    pub fn reference_coords(self) -> &'static [[i8; 3]] {
        match self {
            NodeOrdering::GmshHex8 | NodeOrdering::VtkHex8 | NodeOrdering::ExodusHex8 => {
                &HEX_CORNERS
            }
            NodeOrdering::ExodusHex27 => &EXODUS_HEX27,
            NodeOrdering::AbaqusHex27 => &ABAQUS_HEX27,
            NodeOrdering::GmshHex27 => &GMSH_HEX27,
            NodeOrdering::VtkHex27 => &VTK_HEX27,
            NodeOrdering::GmshQuad4 => &GMSH_QUAD9[..4],
            NodeOrdering::GmshQuad9 => &GMSH_QUAD9,
        }
    }

    /// Spatial dimension of the element (2 for quadrilaterals, 3 for hexahedra).
    pub fn dim(self) -> usize {
        match self {
            NodeOrdering::GmshQuad4 | NodeOrdering::GmshQuad9 => 2,
            _ => 3,
        }
    }

    /// Polynomial order (1 or 2).
    pub fn order(self) -> usize {
        match self {
            NodeOrdering::GmshHex8
            | NodeOrdering::VtkHex8
            | NodeOrdering::ExodusHex8
            | NodeOrdering::GmshQuad4 => 1,
            _ => 2,
        }
    }

    /// `perm` with `lex[i] = foreign[perm[i]]`: use with [`gather`] to convert a foreign node
    /// list into lexicographic order.
    pub fn to_lexicographic(self) -> Vec<usize> {
        let foreign = self.reference_coords();
        lexicographic_coords(self.dim(), self.order())
            .iter()
            .map(|x| {
                foreign
                    .iter()
                    .position(|y| y == x)
                    .expect("foreign ordering lists every lexicographic node")
            })
            .collect()
    }

    /// `perm` with `foreign[j] = lex[perm[j]]`: use with [`gather`] to write a lexicographic
    /// node list in this format's order.
    pub fn from_lexicographic(self) -> Vec<usize> {
        let to_lex = self.to_lexicographic();
        let mut inv = vec![0; to_lex.len()];
        for (i, &f) in to_lex.iter().enumerate() {
            inv[f] = i;
        }
        inv
    }
}

/// Reference coordinates of the lexicographic nodes of a `dim`-cube of order `p` (1 or 2).
pub fn lexicographic_coords(dim: usize, p: usize) -> Vec<[i8; 3]> {
    let n = p + 1;
    let coord = |i: usize| (2 * i as i32 / p as i32 - 1) as i8;
    let nz = if dim == 3 { n } else { 1 };
    let mut out = Vec::with_capacity(n * n * nz);
    for k in 0..nz {
        for j in 0..n {
            for i in 0..n {
                out.push([coord(i), coord(j), if dim == 3 { coord(k) } else { 0 }]);
            }
        }
    }
    out
}

/// `out[i] = src[perm[i]]`.
pub fn gather<T: Copy>(src: &[T], perm: &[usize]) -> Vec<T> {
    perm.iter().map(|&p| src[p]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [NodeOrdering; 9] = [
        NodeOrdering::ExodusHex8,
        NodeOrdering::ExodusHex27,
        NodeOrdering::AbaqusHex27,
        NodeOrdering::GmshHex8,
        NodeOrdering::GmshHex27,
        NodeOrdering::GmshQuad4,
        NodeOrdering::GmshQuad9,
        NodeOrdering::VtkHex8,
        NodeOrdering::VtkHex27,
    ];

    #[test]
    fn permutations_are_inverse_bijections() {
        for ord in ALL {
            let n = ord.reference_coords().len();
            assert_eq!(n, (ord.order() + 1).pow(ord.dim() as u32), "{ord:?}");
            let to = ord.to_lexicographic();
            let from = ord.from_lexicographic();
            let mut seen = vec![false; n];
            for &t in &to {
                assert!(!seen[t], "{ord:?} repeats {t}");
                seen[t] = true;
            }
            for i in 0..n {
                assert_eq!(from[to[i]], i, "{ord:?}");
            }
            // Round trip of a labelled list.
            let lex: Vec<usize> = (100..100 + n).collect();
            assert_eq!(gather(&gather(&lex, &from), &to), lex, "{ord:?}");
        }
    }

    #[test]
    fn corners_map_as_the_specs_say() {
        // Hexahedra: foreign corner f = counter-clockwise bottom then top; lexicographic corner
        // of (i, j, k) is i + 2 j + 4 k for Q1 and 2 i + 6 j + 18 k for Q2.
        let ccw = [
            (0, 0, 0),
            (1, 0, 0),
            (1, 1, 0),
            (0, 1, 0),
            (0, 0, 1),
            (1, 0, 1),
            (1, 1, 1),
            (0, 1, 1),
        ];
        for ord in [
            NodeOrdering::GmshHex8,
            NodeOrdering::VtkHex8,
            NodeOrdering::GmshHex27,
            NodeOrdering::VtkHex27,
            NodeOrdering::ExodusHex8,
            NodeOrdering::ExodusHex27,
            NodeOrdering::AbaqusHex27,
        ] {
            let p = ord.order();
            let n = p + 1;
            let from = ord.from_lexicographic();
            for (f, &(i, j, k)) in ccw.iter().enumerate() {
                assert_eq!(from[f], p * (i + n * j + n * n * k), "{ord:?} corner {f}");
            }
        }
        assert_eq!(
            NodeOrdering::GmshHex8.to_lexicographic(),
            [0, 1, 3, 2, 4, 5, 7, 6]
        );
        assert_eq!(NodeOrdering::GmshQuad4.to_lexicographic(), [0, 1, 3, 2]);
        assert_eq!(
            NodeOrdering::GmshQuad9.to_lexicographic(),
            [0, 4, 1, 7, 8, 5, 3, 6, 2]
        );
    }

    #[test]
    fn higher_order_nodes_match_the_specs() {
        let lex = |i: usize, j: usize, k: usize| i + 3 * j + 9 * k;
        let gmsh = NodeOrdering::GmshHex27.from_lexicographic();
        // Edge 0-1 midpoint, edge 0-3 (eta), edge 0-4 (zeta); face zeta- is node 20; centre 26.
        assert_eq!(gmsh[8], lex(1, 0, 0));
        assert_eq!(gmsh[9], lex(0, 1, 0));
        assert_eq!(gmsh[10], lex(0, 0, 1));
        assert_eq!(gmsh[19], lex(1, 2, 2));
        assert_eq!(gmsh[20], lex(1, 1, 0));
        assert_eq!(gmsh[22], lex(0, 1, 1));
        assert_eq!(gmsh[25], lex(1, 1, 2));
        assert_eq!(gmsh[26], lex(1, 1, 1));
        let vtk = NodeOrdering::VtkHex27.from_lexicographic();
        assert_eq!(vtk[9], lex(2, 1, 0));
        assert_eq!(vtk[11], lex(0, 1, 0));
        assert_eq!(vtk[16], lex(0, 0, 1));
        assert_eq!(vtk[20], lex(0, 1, 1));
        assert_eq!(vtk[21], lex(2, 1, 1));
        assert_eq!(vtk[22], lex(1, 0, 1));
        assert_eq!(vtk[24], lex(1, 1, 0));
        assert_eq!(vtk[26], lex(1, 1, 1));
    }

    /// The side tables against the manuals' figures: Exodus side 1 is eta = -1 (nodes 1, 2, 6,
    /// 5), 2 xi = +1, 3 eta = +1, 4 xi = -1, 5 zeta = -1, 6 zeta = +1; Abaqus S1 zeta = -1, S2
    /// zeta = +1, S3 eta = -1, S4 xi = +1, S5 eta = +1, S6 xi = -1.
    #[test]
    fn side_tables_name_the_faces_of_the_manuals() {
        use crate::Face::*;
        let exodus = EXODUS_HEX_SIDES.map(|s| side_face(s).unwrap());
        assert_eq!(exodus, [YMin, XMax, YMax, XMin, ZMin, ZMax]);
        let abaqus = ABAQUS_HEX_FACES.map(|s| side_face(s).unwrap());
        assert_eq!(abaqus, [ZMin, ZMax, YMin, XMax, YMax, XMin]);
        assert_eq!(side_face([1, 2, 3, 5]), None);
        assert_eq!(side_face([0, 2, 3, 4]), None);
    }

    /// The face-centre nodes of the 27-node orderings sit on the faces their tables name: the
    /// centre of each side is the mean of its corners.
    #[test]
    fn face_centres_of_27_node_orderings_follow_the_side_tables() {
        let centre = |coords: &[[i8; 3]], side: [usize; 4]| -> [i8; 3] {
            std::array::from_fn(|d| side.iter().map(|&c| coords[c - 1][d]).sum::<i8>() / 4)
        };
        let exo = NodeOrdering::ExodusHex27.reference_coords();
        // Exodus nodes 22..27 are the centres of sides 5, 6, 4, 2, 1, 3.
        for (node, side) in [(22, 5), (23, 6), (24, 4), (25, 2), (26, 1), (27, 3)] {
            assert_eq!(
                exo[node - 1],
                centre(exo, EXODUS_HEX_SIDES[side - 1]),
                "{node}"
            );
        }
        assert_eq!(exo[20], [0, 0, 0]);
        let abq = NodeOrdering::AbaqusHex27.reference_coords();
        for (k, side) in ABAQUS_HEX_FACES.iter().enumerate() {
            assert_eq!(abq[20 + k], centre(abq, *side), "S{}", k + 1);
        }
        assert_eq!(abq[26], [0, 0, 0]);
    }
}
