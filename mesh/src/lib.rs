//! Hexahedral meshes for hexfem: Q1 (8-node) and Q2 (27-node) cells in lexicographic local
//! order, structured and mapped-box generators, a Gmsh MSH reader (4.1 and 2.2, ASCII, binary,
//! gzip), Exodus II (netCDF classic and netCDF-4) and Abaqus input readers, [`read_mesh`] for any of them
//! (the format recognised from the content), named node/face/cell sets, and the node orderings of Gmsh and VTK/XDMF. Cells and faces
//! are instances of `fem`'s reference cell ([`CellKind`], [`Face`], re-exported here).

pub mod abaqus;
pub mod cell;
pub mod coincident;
pub mod error;
pub mod exodus;
mod foreign;
pub mod format;
pub mod generate;
pub mod gmsh;
pub mod hex_mesh;
pub mod ordering;
pub mod partition;
pub mod select;

pub use abaqus::{parse_abaqus, parse_abaqus_bytes, read_abaqus};
pub use cell::{face_corner_local_nodes, face_local_nodes, CellFace, CellKind, Face};
pub use coincident::{coincident_nodes, COINCIDENCE_TOLERANCE};
pub use error::MeshError;
pub use exodus::{parse_exodus_bytes, read_exodus};
pub use format::{detect_format, read_mesh, MeshFormat, READABLE_FORMATS};
pub use generate::{corner_jacobian_det, generate_box, BoxSpec, MAX_BOX_BYTES, MAX_BOX_NODES};
pub use gmsh::{
    gzip_inflate_limit, parse_gmsh, parse_gmsh_bytes, read_gmsh, read_gmsh_with_inflate_limit,
    GZIP_ALLOWANCE, GZIP_RATIO, MAX_MSH_BYTES,
};
pub use hex_mesh::{cell_name, part_cell_name, ElementTags, HexMesh, SetIds};
pub use ordering::NodeOrdering;
pub use partition::{
    generate_box_part, generate_box_part_on, metis_cell_parts, partition_mesh, BoxRankGrid,
    MeshPart,
};
