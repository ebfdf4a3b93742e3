//! Tentative prolongator `P0` and coarse near-null space by per-aggregate thin QR.
//!
//! For aggregate `a` with members `v_1 < ... < v_m`, the rows of the near-null space `B` of those
//! nodes are stacked (`m bs x k`) and factored `Q R`: `Q`'s rows fill the `bs x k` blocks
//! `P0(v_i, a)`, `R` (`k x k`) becomes the coarse near-null space rows of coarse node `a`. Hence
//! `P0 Bc = B` on every aggregated row (unaggregated rows of `P0` are empty). Aggregates have at
//! least `k` unknowns (see [`crate::aggregation`]), so `Q` has orthonormal columns and every coarse
//! diagonal block `Q^T A_aa Q` is non-singular for SPD `A`, rank-deficient `B` rows included.

use crate::aggregation::{Aggregates, UNAGGREGATED};
use crate::qr::thin_qr;
use crate::{AmgError, NearNullSpace};
use linalg::{split_rows, BlockPattern, Bsr};
use rayon::prelude::*;
use std::sync::Arc;

/// Builds `P0` (`n_vertices x n_aggregates` blocks of `bs x k`) and the coarse near-null space
/// (`n_aggregates * k` rows, `k` vectors).
pub fn tentative_prolongator(
    aggs: &Aggregates,
    nns: &NearNullSpace,
    bs: usize,
) -> Result<(Bsr, NearNullSpace), AmgError> {
    let n = aggs.n_vertices();
    let k = nns.n_vectors();
    if nns.n_rows() != n * bs {
        return Err(AmgError::DimensionMismatch {
            what: "near-null space rows vs operator rows",
            expected: n * bs,
            found: nns.n_rows(),
        });
    }
    let n_agg = aggs.n_aggregates();
    let asg = aggs.assignment();
    // Pattern: one block per aggregated row.
    let mut row_ptr = Vec::with_capacity(n + 1);
    row_ptr.push(0usize);
    let mut cols = Vec::new();
    for &a in asg {
        if a != UNAGGREGATED {
            cols.push(a);
        }
        row_ptr.push(cols.len());
    }
    let pattern = Arc::new(BlockPattern::new(n, n_agg, row_ptr, cols)?);
    // Per-aggregate QR into a member-ordered buffer, in parallel over aggregates.
    let offsets = aggs.member_offsets();
    let slab = bs * k;
    let mut q_buf = vec![0.0; offsets[n_agg] * slab];
    let mut r_buf = vec![0.0; n_agg * k * k];
    let b = nns.row_major();
    split_rows(offsets, slab, 1, &mut q_buf)
        .into_par_iter()
        .zip(r_buf.par_chunks_mut(k * k))
        .for_each(|((aggregate, q), r)| {
            for (i, &v) in aggs.members(aggregate.start).iter().enumerate() {
                q[i * slab..(i + 1) * slab]
                    .copy_from_slice(&b[v as usize * slab..(v as usize + 1) * slab]);
            }
            let m = q.len() / k;
            let mut work = vec![0.0; m * k];
            thin_qr(q, m, k, r, &mut work);
        });
    // Scatter member-ordered Q slabs into P0's row-ordered blocks.
    let mut pos_in_buf = vec![0usize; n];
    for (a, &start) in offsets[..n_agg].iter().enumerate() {
        for (i, &v) in aggs.members(a).iter().enumerate() {
            pos_in_buf[v as usize] = start + i;
        }
    }
    // Aggregated rows own exactly one block, in row order.
    let block_row: Vec<usize> = (0..n).filter(|&v| asg[v] != UNAGGREGATED).collect();
    let mut values = vec![0.0; block_row.len() * slab];
    values
        .par_chunks_mut(slab)
        .zip(block_row.par_iter())
        .for_each(|(dst, &v)| {
            let s = pos_in_buf[v] * slab;
            dst.copy_from_slice(&q_buf[s..s + slab]);
        });
    drop(q_buf);
    let p0 = Bsr::from_parts(pattern, bs, k, values)?;
    let coarse = NearNullSpace::from_row_major(n_agg * k, k, r_buf)?;
    Ok((p0, coarse))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregation::{aggregate, MisDistance};
    use crate::strength::StrengthGraph;
    use crate::test_util::rand_vec;

    fn line_graph(n: usize) -> StrengthGraph {
        let mut row_ptr = vec![0];
        let mut col = Vec::new();
        for v in 0..n {
            if v > 0 {
                col.push(v as u32 - 1);
            }
            if v + 1 < n {
                col.push(v as u32 + 1);
            }
            row_ptr.push(col.len());
        }
        let w = vec![1.0; col.len()];
        StrengthGraph::from_parts(row_ptr, col, w)
    }

    #[test]
    fn p0_reproduces_near_null_space_and_has_orthonormal_columns() {
        let (n, bs, k) = (40, 3, 6);
        let g = line_graph(n);
        let aggs = aggregate(&g, MisDistance::One, bs, k);
        // Generic vectors (full column rank on every aggregate of >= 2 nodes).
        let nns = NearNullSpace::from_row_major(n * bs, k, rand_vec(11, n * bs * k)).unwrap();
        let (p0, bc) = tentative_prolongator(&aggs, &nns, bs).unwrap();
        assert_eq!((p0.block_rows(), p0.block_cols()), (bs, k));
        // P0 Bc == B, column by column (every vertex aggregated here).
        let d = p0.to_dense().unwrap();
        let (rows, cols) = (n * bs, aggs.n_aggregates() * k);
        for j in 0..k {
            let bcj = bc.column(j);
            let bcj = bcj.host().unwrap();
            let bj = nns.column(j);
            let bj = bj.host().unwrap();
            for i in 0..rows {
                let s: f64 = (0..cols).map(|c| d[i * cols + c] * bcj[c]).sum();
                assert!(
                    (s - bj[i]).abs() < 1e-12,
                    "row {i} vector {j}: {s} vs {}",
                    bj[i]
                );
            }
        }
        // P0^T P0 = I.
        for c1 in 0..cols {
            for c2 in 0..cols {
                let s: f64 = (0..rows).map(|i| d[i * cols + c1] * d[i * cols + c2]).sum();
                assert!((s - if c1 == c2 { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn unaggregated_rows_are_empty_and_user_vectors_accepted() {
        // Vertex 5 isolated (no edges) in a graph of two paths.
        let mut g_edges: Vec<Vec<u32>> =
            vec![vec![1], vec![0, 2], vec![1, 3], vec![2, 4], vec![3], vec![]];
        g_edges.extend([vec![7], vec![6, 8], vec![7]]);
        let mut row_ptr = vec![0];
        let mut col = Vec::new();
        for e in &g_edges {
            col.extend_from_slice(e);
            row_ptr.push(col.len());
        }
        let g = StrengthGraph::from_parts(row_ptr, col.clone(), vec![1.0; col.len()]);
        let aggs = aggregate(&g, MisDistance::One, 2, 2);
        let nns = NearNullSpace::from_row_major(18, 2, rand_vec(3, 36)).unwrap();
        let (p0, _) = tentative_prolongator(&aggs, &nns, 2).unwrap();
        assert_eq!(p0.pattern().row(5).len(), 0);
        let wrong = NearNullSpace::from_row_major(16, 2, rand_vec(3, 32)).unwrap();
        assert!(tentative_prolongator(&aggs, &wrong, 2).is_err());
    }
}
