//! What a setup or update did: per-level sizes, complexities and stage timings (serialisable, like
//! PETSc's `-ksp_view` / `-log_view`).

use crate::Reuse;
use linalg::Bsr;
use serde::Serialize;

/// Wall-clock seconds of each setup stage, summed over levels.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SetupTimings {
    /// Strength graphs.
    pub graph_s: f64,
    /// MIS, leftover assignment, small-aggregate merging.
    pub aggregation_s: f64,
    /// Tentative prolongators (per-aggregate QR).
    pub tentative_s: f64,
    /// Prolongator smoothing (`A P0` and the update), eigenvalue estimates for it included.
    pub smoothing_s: f64,
    /// Galerkin symbolic phases (`PtapPlan`) and transposes of `P`.
    pub galerkin_symbolic_s: f64,
    /// Galerkin numeric phases (`P^T A P` values).
    pub galerkin_numeric_s: f64,
    /// Smoother setup: point-block Jacobi inverses (and eigenvalue estimates in a hot update).
    pub smoother_setup_s: f64,
    /// Dense factorisation of the coarsest level.
    pub coarse_factor_s: f64,
    /// Copy of the fine operator into a hierarchy that owns it.
    pub copy_operator_s: f64,
    /// A set-up on GPU ranks: the device plans made or uploaded (the smoothing's and the
    /// Galerkin product's), `P`'s transpose uploaded and the next operator made there.
    pub device_plans_s: f64,
    /// Scalar storage: expansion to 1x1 blocks (cold setup: every operator and prolongator; hot
    /// update: the fine operator's values); mixed precision: the cold setup's rounding of the
    /// coarse data to fp32.
    pub expansion_s: f64,
    /// The whole call.
    pub total_s: f64,
    /// Bytes each stage moved between host and device (counted by a serial set-up or renewal
    /// on a GPU; zero on the host and where a call does not count them). Boxed: timings are
    /// held in solver states beside small values.
    pub transfers: Box<StageTransfers>,
}

/// Bytes each set-up stage moved between host and device ([`SetupTimings::transfers`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StageTransfers {
    /// Strength graphs and aggregation.
    pub coarsen: TransferReport,
    /// Smoother diagonals and eigenvalue estimates.
    pub smoother: TransferReport,
    /// Tentative prolongators (the near-null space's QR).
    pub tentative: TransferReport,
    /// Prolongator smoothing.
    pub smoothing: TransferReport,
    /// Galerkin products, symbolic and numeric.
    pub galerkin: TransferReport,
    /// The coarsest level's factorisation.
    pub coarse_factor: TransferReport,
}

impl StageTransfers {
    /// Each stage's name and bytes, in the order a set-up runs them.
    pub fn stages(&self) -> [(&'static str, TransferReport); 6] {
        [
            ("coarsen", self.coarsen),
            ("smoother", self.smoother),
            ("tentative", self.tentative),
            ("smoothing", self.smoothing),
            ("Galerkin", self.galerkin),
            ("coarse factor", self.coarse_factor),
        ]
    }
}

impl SetupTimings {
    /// Each stage's name and seconds, in the order a set-up runs them (the whole call,
    /// `total_s`, left out: what the stages do not hold of it is the call's own bookkeeping).
    pub fn stages(&self) -> [(&'static str, f64); 11] {
        [
            ("copy operator", self.copy_operator_s),
            ("graph", self.graph_s),
            ("aggregation", self.aggregation_s),
            ("tentative", self.tentative_s),
            ("smoothing", self.smoothing_s),
            ("Galerkin symbolic", self.galerkin_symbolic_s),
            ("device plans", self.device_plans_s),
            ("Galerkin numeric", self.galerkin_numeric_s),
            ("smoother", self.smoother_setup_s),
            ("coarse factor", self.coarse_factor_s),
            ("expansion", self.expansion_s),
        ]
    }
}

/// One level of the hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelReport {
    /// Scalar rows (unknowns).
    pub rows: usize,
    /// Block rows (nodes or aggregates).
    pub block_rows: usize,
    /// Block size (unknowns per node or aggregate).
    pub block_size: usize,
    /// Block size of the storage: `block_size`, or 1 with scalar storage.
    pub storage_block_size: usize,
    /// Nonzero `block_size x block_size` blocks.
    pub block_nnz: usize,
    /// Stored scalar entries (`block_nnz * block_size^2`).
    pub nnz: usize,
    /// Scalar entries per scalar row.
    pub nnz_per_row: f64,
    /// Estimate of `lambda_max(D^{-1} A)` (absent on the coarsest level, which is solved directly).
    pub emax: Option<f64>,
}

impl LevelReport {
    /// Sizes of `a` with its eigenvalue estimate.
    pub fn of(a: &Bsr, emax: Option<f64>) -> Self {
        Self::with_block_size(a, a.block_rows(), emax)
    }

    /// Sizes of `a`, an operator of `bs x bs` node blocks stored as `bs x bs` or 1x1 blocks.
    pub fn with_block_size(a: &Bsr, bs: usize, emax: Option<f64>) -> Self {
        let nnz = a.pattern().nnz() * a.block_len();
        let bs = bs.max(1);
        Self {
            rows: a.n_rows(),
            block_rows: a.n_rows() / bs,
            block_size: bs,
            storage_block_size: a.block_rows(),
            block_nnz: nnz / (bs * bs),
            nnz,
            nnz_per_row: nnz as f64 / a.n_rows().max(1) as f64,
            emax,
        }
    }
}

/// Summary of a built hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HierarchyReport {
    /// Finest first.
    pub levels: Vec<LevelReport>,
    /// `sum nnz(A_l) / nnz(A_0)`.
    pub operator_complexity: f64,
    /// `sum rows(A_l) / rows(A_0)`.
    pub grid_complexity: f64,
    /// Timings of the cold setup that built the hierarchy.
    pub setup: SetupTimings,
    /// Transfers whose symbolic plans (`A P0`, `P^T A P`) a renewal for a new near-null space
    /// kept from the hierarchy before it ([`crate::Hierarchy::set_near_null_space`]); 0 after a
    /// cold set-up.
    pub plans_reused: usize,
}

impl HierarchyReport {
    /// Builds the level rows and complexities from the level reports.
    pub fn new(levels: Vec<LevelReport>, setup: SetupTimings) -> Self {
        let nnz0 = levels.first().map_or(1, |l| l.nnz.max(1)) as f64;
        let rows0 = levels.first().map_or(1, |l| l.rows.max(1)) as f64;
        Self {
            operator_complexity: levels.iter().map(|l| l.nnz as f64).sum::<f64>() / nnz0,
            grid_complexity: levels.iter().map(|l| l.rows as f64).sum::<f64>() / rows0,
            levels,
            setup,
            plans_reused: 0,
        }
    }
}

/// What [`crate::Hierarchy::set_near_null_space`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenewalReport {
    /// Transfers whose symbolic plans (`A P0`, `P^T A P` and their device copies) were kept.
    pub plans_reused: usize,
    /// Transfers whose plans were built afresh (changed aggregates or pattern, new levels).
    pub plans_built: usize,
    /// Stage timings of the renewal (the symbolic stages only where plans were built).
    pub timings: SetupTimings,
    /// Bytes moved between host and device.
    pub transfers: TransferReport,
}

/// What an update did: the one report of [`crate::Hierarchy::update`] (serial, on the host or
/// a GPU) and [`crate::dist_cycle::DistHierarchy::update`] (on ranks, on the host or their
/// GPUs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpdateReport {
    /// The reuse mode applied.
    pub reuse: Reuse,
    /// Version of each prolongator after the update (finest transfer first); unchanged versions
    /// mean the P-side data (transposes, Galerkin plans) was reused.
    pub p_versions: Vec<u64>,
    /// Number of transposes of `P` rebuilt (the restriction reads the Galerkin plan's `P^T`
    /// pattern, so this equals `galerkin_plans_rebuilt`).
    pub transposes_rebuilt: usize,
    /// Number of Galerkin symbolic plans rebuilt (P changed or the operator's pattern changed).
    pub galerkin_plans_rebuilt: usize,
    /// Stage timings of this update.
    pub timings: SetupTimings,
    /// Bytes moved between host and device during this update (zero on the host).
    pub transfers: TransferReport,
    /// This rank's messages to other ranks during this update (zero on one process).
    pub messages: MessageReport,
}

/// What one rank sent to (and received from) the others during an update.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MessageReport {
    /// Prolongator values sent: zero unless some `P` changed (a hot update reuses the
    /// off-rank rows of `P` it gathered).
    pub prolongator_values: u64,
    /// Bytes of partial coarse blocks the Galerkin products' reductions sent.
    pub sent_bytes: u64,
    /// Bytes of partial coarse blocks received (counted by a GPU update; zero on the host).
    pub received_bytes: u64,
}

/// Bytes copied between host and device during one call (a hot update, a solve): on a GPU
/// only scalars (dot products, flags) should move once the hierarchy is set up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TransferReport {
    /// Host to device.
    pub host_to_device_bytes: u64,
    /// Device to host.
    pub device_to_host_bytes: u64,
}

impl TransferReport {
    /// The bytes moved between two readings of a device's counters.
    pub fn between(before: linalg::Transfers, after: linalg::Transfers) -> Self {
        Self {
            host_to_device_bytes: after.host_to_device - before.host_to_device,
            device_to_host_bytes: after.device_to_host - before.device_to_host,
        }
    }

    /// Both directions together.
    pub fn total_bytes(&self) -> u64 {
        self.host_to_device_bytes + self.device_to_host_bytes
    }

    /// Adds `other`'s bytes.
    pub fn add(&mut self, other: TransferReport) {
        self.host_to_device_bytes += other.host_to_device_bytes;
        self.device_to_host_bytes += other.device_to_host_bytes;
    }
}
