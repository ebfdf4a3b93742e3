//! Tentative prolongator `P0` and coarse near-null space by per-aggregate thin QR.
//!
//! For aggregate `a` with members `v_1 < ... < v_m`, the rows of the near-null space `B` of those
//! nodes are stacked (`m bs x k`) and factored `Q R`: `Q`'s rows fill the `bs x k` blocks
//! `P0(v_i, a)`, `R` (`k x k`) becomes the coarse near-null space rows of coarse node `a`. Hence
//! `P0 Bc = B` on every aggregated row (unaggregated rows of `P0` are empty). Aggregates have at
//! least `k` unknowns (see [`crate::aggregation`]), so `Q` has orthonormal columns and every coarse
//! diagonal block `Q^T A_aa Q` is non-singular for SPD `A`, rank-deficient `B` rows included.

use crate::aggregation::{Aggregates, UNAGGREGATED};
use crate::{AmgError, NearNullSpace};
use linalg::{BlockPattern, Bsr, Device, GroupedQrPlan};
use std::sync::Arc;

/// The symbolic part of `P0` for fixed aggregates: its pattern (one block per aggregated
/// vertex, in the column of its aggregate) and the grouped QR plan (one group per aggregate,
/// members ascending; `Q`'s rows to the members' block rows). A renewal that keeps the
/// aggregates keeps it; [`TentativePlan::build`] is the numeric phase, where the level lives.
#[derive(Debug)]
pub struct TentativePlan {
    pattern: Arc<BlockPattern>,
    qr: GroupedQrPlan,
    n_vertices: usize,
    bs: usize,
    k: usize,
}

// the aggregation's "no aggregate" is the grouped QR's "no group"
const _: () = assert!(UNAGGREGATED == linalg::grouped_qr::NO_GROUP);

impl TentativePlan {
    /// The plan of `aggs` for `bs` unknowns per vertex and `k` near-null vectors, on the host.
    pub fn new(aggs: &Aggregates, bs: usize, k: usize) -> Result<Self, AmgError> {
        Self::new_on(aggs, bs, k, &Device::Host)
    }

    /// [`Self::new`] for a level on `device`: on a GPU `P0`'s pattern and the QR's member
    /// lists are also built there from the vertex -> aggregate map, which is all that goes up
    /// (4 bytes a vertex; [`GroupedQrPlan::from_assignment`]), and [`Self::build`] uploads
    /// neither. The host plan is made too: `P0`'s host pattern is what the smoothing and
    /// Galerkin plans, the level reports and a renewal's pattern checks read.
    pub fn new_on(
        aggs: &Aggregates,
        bs: usize,
        k: usize,
        device: &Device,
    ) -> Result<Self, AmgError> {
        let (pattern, qr) =
            GroupedQrPlan::from_assignment(aggs.assignment(), aggs.n_aggregates(), bs, k, device)?;
        Ok(Self {
            pattern,
            qr,
            n_vertices: aggs.n_vertices(),
            bs,
            k,
        })
    }

    /// `P0` on `device` (`n_vertices x n_aggregates` blocks of `bs x k`; its values computed
    /// there, the same bits on the host and a GPU) and the coarse near-null space
    /// (`n_aggregates * k` rows, `k` vectors), on `device` too. On a GPU the QR reads `nns`
    /// where it lives: no transfer for a near-null space already there (a host one is
    /// uploaded), none for `P0`'s pattern and the QR plan where [`Self::new_on`] built them
    /// on this GPU or after their first use (both are kept with the plan, so a renewal that
    /// keeps the plan moves neither), no wait.
    pub fn build(
        &self,
        nns: &NearNullSpace,
        device: &Device,
    ) -> Result<(Bsr, NearNullSpace), AmgError> {
        let (bs, k) = (self.bs, self.k);
        if nns.n_rows() != self.n_vertices * bs || nns.n_vectors() != k {
            return Err(AmgError::DimensionMismatch {
                what: "near-null space rows vs operator rows",
                expected: self.n_vertices * bs,
                found: nns.n_rows(),
            });
        }
        let mut p0 = Bsr::zeros_on(device, self.pattern.clone(), bs, k)?;
        let r = self.qr.factor_vector(nns.values(), &mut p0)?;
        let coarse = NearNullSpace::from_factors(self.qr.n_groups() * k, k, r)?;
        Ok((p0, coarse))
    }
}

/// Builds `P0` (`n_vertices x n_aggregates` blocks of `bs x k`) and the coarse near-null space
/// (`n_aggregates * k` rows, `k` vectors) on the host.
pub fn tentative_prolongator(
    aggs: &Aggregates,
    nns: &NearNullSpace,
    bs: usize,
) -> Result<(Bsr, NearNullSpace), AmgError> {
    if nns.n_rows() != aggs.n_vertices() * bs {
        return Err(AmgError::DimensionMismatch {
            what: "near-null space rows vs operator rows",
            expected: aggs.n_vertices() * bs,
            found: nns.n_rows(),
        });
    }
    TentativePlan::new(aggs, bs, nns.n_vectors())?.build(nns, &Device::Host)
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
            let bcj = bc.column(j).unwrap();
            let bcj = bcj.host().unwrap();
            let bj = nns.column(j).unwrap();
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

    /// The plan made from the assignment is the aggregates' own: `P0`'s pattern one block per
    /// aggregated vertex in its aggregate's column, and the groups the aggregates' member lists
    /// (`Aggregates::members`, their blocks' slots beside them), so `P0` and the coarse space
    /// are the bits of a grouped QR on those lists.
    #[test]
    fn the_plan_is_the_aggregates_member_lists() {
        let (n, bs, k) = (300, 3, 6);
        let aggs = aggregate(&line_graph(n), MisDistance::Two, bs, k);
        let nns = NearNullSpace::from_row_major(n * bs, k, rand_vec(8, n * bs * k)).unwrap();
        let plan = TentativePlan::new(&aggs, bs, k).unwrap();
        let (p0, bc) = plan.build(&nns, &Device::Host).unwrap();
        // the lists as the aggregates hold them
        let mut slot_of = vec![u32::MAX; n];
        let mut row_ptr = vec![0usize];
        let mut cols = Vec::new();
        for (v, &a) in aggs.assignment().iter().enumerate() {
            if a != UNAGGREGATED {
                slot_of[v] = cols.len() as u32;
                cols.push(a);
            }
            row_ptr.push(cols.len());
        }
        let pattern = BlockPattern::new(n, aggs.n_aggregates(), row_ptr, cols).unwrap();
        assert_eq!(*plan.pattern, pattern);
        let members: Vec<u32> = (0..aggs.n_aggregates())
            .flat_map(|a| aggs.members(a).iter().copied())
            .collect();
        let slots = members.iter().map(|&v| slot_of[v as usize]).collect();
        let offsets = aggs.member_offsets().to_vec();
        let lists = GroupedQrPlan::new(offsets, members, slots, bs, k).unwrap();
        let mut q = Bsr::zeros(Arc::new(pattern), bs, k);
        let r = lists.factor(nns.row_major().unwrap(), &mut q).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(p0.host().unwrap()), bits(q.host().unwrap()), "P0");
        assert_eq!(
            bits(bc.row_major().unwrap()),
            bits(&r),
            "coarse near-null space"
        );
    }

    /// On a GPU, the tentative stage of a level whose near-null space is there: the plan built
    /// from the assignment (all that goes up: 4 bytes a vertex; a few totals come down), the
    /// host plan's pattern, and `P0` and the coarse near-null space the host's bits.
    #[test]
    fn device_tentative_stage_moves_only_the_assignment_and_gives_the_hosts_bits() {
        let name = "device_tentative_stage_moves_only_the_assignment_and_gives_the_hosts_bits";
        let device = match Device::cuda(0) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("SKIP {name}: no GPU ({e})");
                return;
            }
        };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (n, bs, k, distance) in [
            (40, 3, 6, MisDistance::One),
            (2000, 3, 6, MisDistance::Two),
            (600, 6, 6, MisDistance::One),
        ] {
            let aggs = aggregate(&line_graph(n), distance, bs, k);
            let values = rand_vec(n as u64, n * bs * k);
            let nns = NearNullSpace::from_row_major(n * bs, k, values.clone()).unwrap();
            let host_plan = TentativePlan::new(&aggs, bs, k).unwrap();
            let (p0_host, bc_host) = host_plan.build(&nns, &Device::Host).unwrap();
            let on_device = linalg::Vector::from_vec(values).to_device(&device).unwrap();
            let nns_device = NearNullSpace::from_vector(n * bs, k, on_device).unwrap();
            let before = device.transfers();
            let plan = TentativePlan::new_on(&aggs, bs, k, &device).unwrap();
            let (p0, bc) = plan.build(&nns_device, &device).unwrap();
            let moved = device.transfers();
            assert_eq!(
                moved.host_to_device - before.host_to_device,
                4 * n as u64,
                "n {n}: the assignment alone goes up"
            );
            assert!(
                moved.device_to_host - before.device_to_host <= 32,
                "n {n}: two totals come down"
            );
            assert!(p0.device().same_as(&device) && bc.device().same_as(&device));
            assert_eq!(plan.pattern, host_plan.pattern, "n {n}: P0's pattern");
            assert_eq!(
                bits(&p0.to_host_vec().unwrap()),
                bits(&p0_host.to_host_vec().unwrap()),
                "n {n}: P0"
            );
            assert_eq!(
                bits(&bc.values().to_host_vec().unwrap()),
                bits(&bc_host.values().to_host_vec().unwrap()),
                "n {n}: coarse near-null space"
            );
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
