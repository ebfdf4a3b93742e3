//! Strength graph: one vertex per block row, an edge where a block couples two rows strongly.
//!
//! Weight `w_ij = ||A_ij||_F / sqrt(||A_ii||_F ||A_jj||_F)` (symmetric scaling); an edge is kept when
//! `A_ij` is not zero and `w_ij >= threshold` (threshold 0 keeps every nonzero block). A row with no
//! kept off-diagonal edge (a Dirichlet row: identity block, zero couplings) is *isolated*, and edges
//! pointing to isolated rows are dropped too, so isolated vertices have no edges in either direction.
//! The operator is assumed (structurally and numerically) symmetric, as for any SPD operator.
//!
//! [`level_strength_graph`] builds the graph where the operator lives: on a GPU it stays there
//! ([`LevelGraph::Device`], linalg's [`DeviceGraph`]: the same edges and weights, bit for bit)
//! for the device aggregation ([`crate::aggregation::aggregate_level`]).

use crate::AmgError;
use linalg::gpu::{CudaContext, DeviceGraph};
use linalg::{split_rows, Bsr};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::Arc;

/// Rows per parallel task of the graph construction.
const ROWS_PER_TASK: usize = 1024;

/// CSR adjacency without self loops, with edge weights.
#[derive(Debug, Clone, PartialEq)]
pub struct StrengthGraph {
    row_ptr: Vec<usize>,
    col: Vec<u32>,
    weight: Vec<f64>,
}

impl StrengthGraph {
    /// Builds a graph from CSR parts (test and custom-graph use). Columns must be `< n`.
    pub fn from_parts(row_ptr: Vec<usize>, col: Vec<u32>, weight: Vec<f64>) -> Self {
        debug_assert_eq!(col.len(), weight.len());
        Self {
            row_ptr,
            col,
            weight,
        }
    }

    /// Number of vertices.
    pub fn n_vertices(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// Number of directed edges.
    pub fn n_edges(&self) -> usize {
        self.col.len()
    }

    /// CSR row offsets (`n_vertices + 1`).
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }

    /// Every vertex's neighbours, row after row.
    pub fn cols(&self) -> &[u32] {
        &self.col
    }

    /// Neighbours of `v`.
    pub fn neighbours(&self, v: usize) -> &[u32] {
        &self.col[self.row_ptr[v]..self.row_ptr[v + 1]]
    }

    /// Weights of the edges of `v`, aligned with [`Self::neighbours`].
    pub fn weights(&self, v: usize) -> &[f64] {
        &self.weight[self.row_ptr[v]..self.row_ptr[v + 1]]
    }

    /// Number of neighbours of `v`.
    pub fn degree(&self, v: usize) -> usize {
        self.row_ptr[v + 1] - self.row_ptr[v]
    }

    /// True if `v` has no edge (Dirichlet row or decoupled node).
    pub fn is_isolated(&self, v: usize) -> bool {
        self.degree(v) == 0
    }
}

/// A level's strength graph where its operator lives.
#[derive(Debug)]
pub enum LevelGraph {
    /// Built on the host (a host operator).
    Host(StrengthGraph),
    /// Built and kept on the GPU of a device operator.
    Device {
        ctx: Arc<CudaContext>,
        graph: DeviceGraph,
    },
}

impl LevelGraph {
    /// Number of vertices.
    pub fn n_vertices(&self) -> usize {
        match self {
            LevelGraph::Host(g) => g.n_vertices(),
            LevelGraph::Device { graph, .. } => graph.n_vertices(),
        }
    }

    /// The graph on the host (a device graph downloaded: its offsets, neighbours and weights).
    pub fn to_host(&self) -> Result<Cow<'_, StrengthGraph>, AmgError> {
        match self {
            LevelGraph::Host(g) => Ok(Cow::Borrowed(g)),
            LevelGraph::Device { ctx, graph } => {
                let g = graph.download(ctx)?;
                Ok(Cow::Owned(StrengthGraph::from_parts(
                    g.row_ptr, g.col, g.weight,
                )))
            }
        }
    }
}

/// [`strength_graph`] where `a` lives: on a GPU (fp64 values), built and kept there (no
/// transfer but the graph's sizes); on the host, [`strength_graph`].
pub fn level_strength_graph(a: &Bsr, threshold: f64) -> Result<LevelGraph, AmgError> {
    let device = a.device();
    match (device.cuda_context(), a.device_bsr()) {
        (Some(ctx), Ok(m)) => {
            check_input(a, threshold)?;
            let graph = DeviceGraph::strength(ctx, m, threshold)?;
            Ok(LevelGraph::Device {
                ctx: ctx.clone(),
                graph,
            })
        }
        _ => Ok(LevelGraph::Host(strength_graph(a, threshold)?)),
    }
}

/// Square blocks and a finite threshold `>= 0`.
fn check_input(a: &Bsr, threshold: f64) -> Result<(), AmgError> {
    if a.block_rows() != a.block_cols() {
        return Err(AmgError::NonSquareBlocks {
            what: "strength graph",
            block_rows: a.block_rows(),
            block_cols: a.block_cols(),
        });
    }
    check_threshold(threshold)
}

/// A strength threshold: a finite number `>= 0`.
pub(crate) fn check_threshold(threshold: f64) -> Result<(), AmgError> {
    if !(threshold >= 0.0) || !threshold.is_finite() {
        return Err(AmgError::InvalidParameter {
            name: "strength_threshold",
            value: threshold.to_string(),
            reason: "must be a finite number >= 0",
        });
    }
    Ok(())
}

/// Builds the strength graph of the square-block operator `a` (parallel over rows, deterministic).
pub fn strength_graph(a: &Bsr, threshold: f64) -> Result<StrengthGraph, AmgError> {
    check_input(a, threshold)?;
    let pattern = a.pattern();
    let n = pattern.n_block_rows();
    let diag_pos = pattern.diagonal_positions()?;
    // The block norms come from `linalg` (where the operator lives); the graph is host set-up data.
    let block_norms = a.block_norms()?;
    let downloaded;
    let norms = match block_norms.host() {
        Ok(norms) => norms,
        Err(_) => {
            // a device operator: the norms (one per block) come to the host, the graph is built here
            downloaded = block_norms.to_host_vec()?;
            &downloaded[..]
        }
    };
    let dnorm: Vec<f64> = diag_pos.iter().map(|&k| norms[k]).collect();
    let (row_ptr, cols) = (pattern.row_ptr(), pattern.col_idx());
    let weight_of = |i: usize, k: usize| -> Option<f64> {
        let j = cols[k] as usize;
        let denom = (dnorm[i] * dnorm[j]).sqrt();
        if j == i || norms[k] == 0.0 || denom == 0.0 {
            return None;
        }
        let w = norms[k] / denom;
        (w >= threshold).then_some(w)
    };
    // Pass 1: rows with at least one kept off-diagonal edge.
    let coupled: Vec<bool> = (0..n)
        .into_par_iter()
        .map(|i| (row_ptr[i]..row_ptr[i + 1]).any(|k| weight_of(i, k).is_some()))
        .collect();
    let keep =
        |i: usize, k: usize| coupled[i] && coupled[cols[k] as usize] && weight_of(i, k).is_some();
    // Pass 2: counts, then fill disjoint groups of rows in parallel.
    let counts: Vec<usize> = (0..n)
        .into_par_iter()
        .map(|i| (row_ptr[i]..row_ptr[i + 1]).filter(|&k| keep(i, k)).count())
        .collect();
    let mut g_ptr = Vec::with_capacity(n + 1);
    g_ptr.push(0);
    for c in &counts {
        g_ptr.push(g_ptr[g_ptr.len() - 1] + c);
    }
    let nnz = g_ptr[n];
    let mut g_col = vec![0u32; nnz];
    let mut g_w = vec![0.0; nnz];
    split_rows(&g_ptr, 1, ROWS_PER_TASK, &mut g_col)
        .into_par_iter()
        .zip(split_rows(&g_ptr, 1, ROWS_PER_TASK, &mut g_w))
        .for_each(|((rows, c_out), (_, w_out))| {
            let kept = rows.flat_map(|i| {
                (row_ptr[i]..row_ptr[i + 1])
                    .filter(move |&k| keep(i, k))
                    .map(move |k| (i, k))
            });
            for ((c, w), (i, k)) in c_out.iter_mut().zip(w_out.iter_mut()).zip(kept) {
                *c = cols[k];
                *w = weight_of(i, k).unwrap_or(0.0);
            }
        });
    Ok(StrengthGraph {
        row_ptr: g_ptr,
        col: g_col,
        weight: g_w,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::laplace_1d_blocks;

    #[test]
    fn weights_are_scaled_block_norms() {
        let a = laplace_1d_blocks(5, 3);
        let g = strength_graph(&a, 0.0).unwrap();
        // ||-I_3|| / sqrt(||2 I_3||^2) = sqrt(3) / (2 sqrt(3)) = 0.5
        assert_eq!(g.neighbours(0), &[1]);
        assert_eq!(g.neighbours(2), &[1, 3]);
        for v in 0..5 {
            for w in g.weights(v) {
                assert!((w - 0.5).abs() < 1e-15);
            }
        }
        // A threshold above every weight isolates everything.
        let g = strength_graph(&a, 0.6).unwrap();
        assert_eq!(g.n_edges(), 0);
        assert!(strength_graph(&a, -1.0).is_err());
    }

    #[test]
    fn dirichlet_row_is_isolated_in_both_directions() {
        let mut a = laplace_1d_blocks(5, 2);
        // Row 2 becomes a Dirichlet row (identity, zero off-diagonal blocks); its column stays.
        let p = a.pattern().clone();
        for k in p.row_ptr()[2]..p.row_ptr()[3] {
            let j = p.col_idx()[k] as usize;
            let b = a.host_block_mut(k).unwrap();
            b.fill(0.0);
            if j == 2 {
                b[0] = 1.0;
                b[3] = 1.0;
            }
        }
        let g = strength_graph(&a, 0.0).unwrap();
        assert!(g.is_isolated(2));
        assert_eq!(g.neighbours(1), &[0]);
        assert_eq!(g.neighbours(3), &[4]);
    }
}
