//! Structured box and mapped-box generators.
//!
//! Global nodes are numbered lexicographically on the structured node grid (x fastest), cells
//! likewise on the cell grid. The logical unit cube `[0, 1]^3` is mapped either affinely onto
//! `[lower, upper]` or trilinearly onto the 8 corners given in corner order `i + 2 j + 4 k`;
//! Q2 edge, face and centre nodes are images of the logical midpoints under the same map.

use std::collections::BTreeMap;

use crate::cell::{CellFace, CellKind, Face};
use crate::error::MeshError;
use crate::hex_mesh::HexMesh;

/// Most nodes a generated box may have: `2^31 - 1`, so that node indices fit the 32-bit
/// indices of the sparse layer (`u32` block columns) and of XDMF/HDF5 connectivity (`i32`).
pub const MAX_BOX_NODES: usize = i32::MAX as usize;

/// Most bytes a generated box may take (64 GiB), estimated as 24 bytes per node (coordinates)
/// plus 8 bytes per cell and cell node (connectivity and the cell set "all"). A guard against
/// mistyped sizes (`cells: [1000, 1000, 1000]` of Q1 needs about 96 GB): such a box is an
/// [`MeshError::InvalidSpec`] naming its size instead of an allocation failure.
pub const MAX_BOX_BYTES: usize = 64 << 30;

/// What [`generate_box`] builds.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxSpec {
    /// Cells per direction, each `>= 1`.
    pub cells: [usize; 3],
    /// Lower corner of the axis-aligned box (ignored when `corners` is set).
    pub lower: [f64; 3],
    /// Upper corner of the axis-aligned box, `upper > lower` componentwise (ignored when
    /// `corners` is set).
    pub upper: [f64; 3],
    pub kind: CellKind,
    /// Physical corners of a trilinearly mapped hexahedron, corner `i + 2 j + 4 k` the image of
    /// the logical corner `(i, j, k)`; must be right-handed (positive Jacobian at every corner).
    pub corners: Option<[[f64; 3]; 8]>,
}

impl BoxSpec {
    /// An axis-aligned box `[lower, upper]`.
    pub fn new(cells: [usize; 3], lower: [f64; 3], upper: [f64; 3], kind: CellKind) -> Self {
        BoxSpec {
            cells,
            lower,
            upper,
            kind,
            corners: None,
        }
    }

    /// A trilinearly mapped hexahedron with the given corners.
    pub fn mapped(cells: [usize; 3], corners: [[f64; 3]; 8], kind: CellKind) -> Self {
        BoxSpec {
            cells,
            lower: [0.0; 3],
            upper: [1.0; 3],
            kind,
            corners: Some(corners),
        }
    }

    /// Image of the logical point `u in [0, 1]^3`.
    pub fn map(&self, u: [f64; 3]) -> [f64; 3] {
        match &self.corners {
            None => std::array::from_fn(|d| self.lower[d] + u[d] * (self.upper[d] - self.lower[d])),
            Some(corners) => trilinear(corners, u),
        }
    }

    /// Checks the box against [`MAX_BOX_NODES`] and [`MAX_BOX_BYTES`] (in exact, checked
    /// integer arithmetic); needs every `cells[d] >= 1`.
    fn check_size(&self) -> Result<(), MeshError> {
        let product = |dims: [Option<usize>; 3]| {
            dims.iter()
                .try_fold(1usize, |acc, &n| n.and_then(|n| acc.checked_mul(n)))
        };
        let p = self.kind.order();
        let n_nodes = product(self.cells.map(|n| n.checked_mul(p)?.checked_add(1)));
        let n_cells = product(self.cells.map(Some));
        let bytes = n_nodes.zip(n_cells).and_then(|(nodes, cells)| {
            let per_cell = size_of::<usize>() * (self.kind.nodes_per_cell() + 1);
            nodes
                .checked_mul(size_of::<[f64; 3]>())?
                .checked_add(cells.checked_mul(per_cell)?)
        });
        let too_big = |what: String| {
            MeshError::InvalidSpec(format!(
                "cells {:?} of kind {:?} {what}; reduce the cell counts",
                self.cells, self.kind
            ))
        };
        match (n_nodes, bytes) {
            (Some(nodes), _) if nodes > MAX_BOX_NODES => Err(too_big(format!(
                "give {nodes} nodes, over the limit of {MAX_BOX_NODES} (2^31 - 1)"
            ))),
            (Some(_), Some(bytes)) if bytes <= MAX_BOX_BYTES => Ok(()),
            (Some(_), Some(bytes)) => Err(too_big(format!(
                "need about {:.1} GB, over the limit of {} GiB for a generated box",
                bytes as f64 / 1e9,
                MAX_BOX_BYTES >> 30
            ))),
            _ => Err(too_big(format!(
                "give more than {} nodes, over the limit of {MAX_BOX_NODES} (2^31 - 1)",
                usize::MAX
            ))),
        }
    }

    /// Nodes per direction: `order * cells + 1`.
    pub fn node_counts(&self) -> [usize; 3] {
        self.cells.map(|c| self.kind.order() * c + 1)
    }

    pub(crate) fn check(&self) -> Result<(), MeshError> {
        if let Some(d) = self.cells.iter().position(|&n| n == 0) {
            return Err(MeshError::InvalidSpec(format!(
                "cells[{d}] is 0; every direction needs at least one cell"
            )));
        }
        self.check_size()?;
        match &self.corners {
            None => {
                for d in 0..3 {
                    let (lo, hi) = (self.lower[d], self.upper[d]);
                    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                        return Err(MeshError::InvalidSpec(format!(
                            "need lower[{d}] < upper[{d}] (finite), got {lo} and {hi}"
                        )));
                    }
                }
            }
            Some(corners) => {
                if corners.iter().flatten().any(|v| !v.is_finite()) {
                    return Err(MeshError::InvalidSpec("corners must be finite".into()));
                }
                for c in 0..8 {
                    let det = corner_jacobian_det(corners, c);
                    if det.is_nan() || det <= 0.0 {
                        return Err(MeshError::InvalidSpec(format!(
                            "corners do not form a right-handed hexahedron: Jacobian \
                             determinant {det:e} at corner {c}"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Trilinear interpolation of the 8 corners at logical `u in [0, 1]^3`.
fn trilinear(corners: &[[f64; 3]; 8], u: [f64; 3]) -> [f64; 3] {
    let mut x = [0.0; 3];
    for (c, corner) in corners.iter().enumerate() {
        let w: f64 = (0..3)
            .map(|d| if (c >> d) & 1 == 1 { u[d] } else { 1.0 - u[d] })
            .product();
        for d in 0..3 {
            x[d] += w * corner[d];
        }
    }
    x
}

/// Determinant of the trilinear map's Jacobian at corner `c` (edge vectors along +u, +v, +w), up
/// to a positive factor; the map is right-handed at that corner iff it is positive.
pub fn corner_jacobian_det(corners: &[[f64; 3]; 8], c: usize) -> f64 {
    let col = |d: usize| -> [f64; 3] {
        let (lo, hi) = (c & !(1 << d), c | (1 << d));
        std::array::from_fn(|e| corners[hi][e] - corners[lo][e])
    };
    let (a, b, e) = (col(0), col(1), col(2));
    a[0] * (b[1] * e[2] - b[2] * e[1]) - a[1] * (b[0] * e[2] - b[2] * e[0])
        + a[2] * (b[0] * e[1] - b[1] * e[0])
}

/// Builds the structured mesh described by `spec`, with face sets and node sets
/// "xmin", "xmax", "ymin", "ymax", "zmin", "zmax" (logical faces) and the cell set "all".
pub fn generate_box(spec: &BoxSpec) -> Result<HexMesh, MeshError> {
    spec.check()?;
    let kind = spec.kind;
    let p = kind.order();
    let [cx, cy, cz] = spec.cells;
    let [nx, ny, nz] = spec.cells.map(|c| p * c + 1);
    let logical: [Vec<f64>; 3] = std::array::from_fn(|d| {
        (0..[nx, ny, nz][d])
            .map(|i| i as f64 / (p * spec.cells[d]) as f64)
            .collect()
    });

    let mut coords = Vec::with_capacity(nx * ny * nz);
    for &w in &logical[2] {
        for &v in &logical[1] {
            for &u in &logical[0] {
                coords.push(spec.map([u, v, w]));
            }
        }
    }

    let npe = p + 1;
    let local_offsets: Vec<usize> = (0..npe)
        .flat_map(|c| (0..npe).flat_map(move |b| (0..npe).map(move |a| a + nx * (b + ny * c))))
        .collect();
    let mut cells = Vec::with_capacity(cx * cy * cz * kind.nodes_per_cell());
    for k in 0..cz {
        for j in 0..cy {
            for i in 0..cx {
                let base = p * i + nx * (p * j + ny * p * k);
                cells.extend(local_offsets.iter().map(|&o| base + o));
            }
        }
    }

    let mut mesh = HexMesh::new(kind, coords, cells);
    let node_counts = [nx, ny, nz];
    for face in Face::ALL {
        let axis = face.axis();
        let node_layer = if face.is_max() {
            node_counts[axis] - 1
        } else {
            0
        };
        let cell_layer = if face.is_max() {
            spec.cells[axis] - 1
        } else {
            0
        };
        let nodes = grid_layer(node_counts, axis, node_layer);
        let faces = grid_layer(spec.cells, axis, cell_layer)
            .into_iter()
            .map(|cell| CellFace { cell, face })
            .collect();
        mesh.node_sets.insert(face.name().to_string(), nodes);
        mesh.face_sets.insert(face.name().to_string(), faces);
    }
    mesh.cell_sets = BTreeMap::from([("all".to_string(), (0..cx * cy * cz).collect())]);
    Ok(mesh)
}

/// Lexicographic indices (ascending) of the points of a `dims` grid with index `layer` on `axis`.
fn grid_layer(dims: [usize; 3], axis: usize, layer: usize) -> Vec<usize> {
    let stride = [1, dims[0], dims[0] * dims[1]];
    let (a, b) = match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let mut out = Vec::with_capacity(dims[a] * dims[b]);
    for s in 0..dims[b] {
        for r in 0..dims[a] {
            out.push(layer * stride[axis] + r * stride[a] + s * stride[b]);
        }
    }
    out
}
