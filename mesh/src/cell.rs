//! Cells and faces of a mesh. The reference cell (cell kinds, faces, local node numbering) is
//! `fem`'s: a mesh is a set of instances of it, so this crate names cells and faces with the
//! element layer's types instead of keeping its own copy of the topology.

pub use fem::reference::{face_corner_local_nodes, face_local_nodes, CellKind, Face};

/// A face of one cell of a mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellFace {
    pub cell: usize,
    pub face: Face,
}
