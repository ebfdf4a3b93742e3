//! [`DeviceAssembler`]: residual and tangent of the whole mesh on the device.

use std::sync::Arc;

use linalg::gpu::{CudaContext, DeviceBsr, DeviceBuffer, DeviceCooPlan, DevicePattern};
use linalg::{BlockPattern, Bsr};

use super::elements::{check, scatter_node_slots};
use super::DeviceElements;
use crate::{AssemblyError, ElasticityAssembler};

/// Device times of one evaluation, by phase (CUDA events; milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceAssemblyTimes {
    /// Element kernels writing the contribution streams.
    pub elements_ms: f64,
    /// COO sums of the tangent and the residual through the uploaded plans, and the residual's
    /// scatter to node-major order.
    pub sums_ms: f64,
}

/// The device twin of [`ElasticityAssembler`]: its element loop ([`DeviceElements`]) and its two
/// COO plans (the residual's uploaded, the tangent's made on the device); the contribution streams (tangent and residual) live on the device and
/// are reused every evaluation. Sums are the host plans' sums in the host's order.
pub struct DeviceAssembler {
    elements: DeviceElements,
    /// The host assembler's tangent pattern, and its upload.
    host_pattern: Arc<BlockPattern>,
    pattern: Arc<DevicePattern>,
    matrix_plan: DeviceCooPlan,
    vector_plan: DeviceCooPlan,
    slot_of_node: DeviceBuffer<u32>,
    tangent_stream: DeviceBuffer<f64>,
    residual_stream: DeviceBuffer<f64>,
    residual_slots: DeviceBuffer<f64>,
}

impl DeviceAssembler {
    /// Uploads `assembler`'s mesh, tables and residual plan to `ctx` (once), makes the tangent's
    /// plan there (the host's is not made: [`ElasticityAssembler::pattern_made_by`]) and
    /// allocates the contribution streams.
    pub fn new(
        ctx: &Arc<CudaContext>,
        assembler: &ElasticityAssembler,
    ) -> Result<Self, AssemblyError> {
        let elements = DeviceElements::new(ctx, assembler)?;
        let vector_plan = DeviceCooPlan::upload(ctx, assembler.vector_plan())?;
        // the tangent's plan made here from the residual's (the host's entry for entry), and
        // its pattern downloaded for the host's matrices unless the host made its own
        let (pattern, matrix_plan) = DeviceCooPlan::of_cell_blocks(
            ctx,
            assembler.vector_plan(),
            &vector_plan,
            assembler.cells(),
            assembler.kernel().n_nodes(),
        )?;
        let host_pattern = assembler
            .pattern_made_by(|| pattern.download_trusted(ctx))?
            .clone();
        let slot_of_node: Vec<u32> = assembler
            .slot_of_node()
            .iter()
            .map(|s| s.map_or(u32::MAX, |s| s as u32))
            .collect();
        let vector_slots = assembler.vector_plan().pattern().nnz();
        Ok(Self {
            tangent_stream: ctx.zeros(elements.tangent_len())?,
            residual_stream: ctx.zeros(elements.residual_len())?,
            residual_slots: ctx.zeros(3 * vector_slots)?,
            slot_of_node: ctx.upload(&slot_of_node)?,
            elements,
            host_pattern,
            pattern,
            matrix_plan,
            vector_plan,
        })
    }

    /// The element loop, to read (its mesh on the device).
    pub fn elements_ref(&self) -> &DeviceElements {
        &self.elements
    }

    /// The element loop (mutable: its launches write the failure flag).
    pub fn elements(&mut self) -> &mut DeviceElements {
        &mut self.elements
    }

    /// A zero tangent (3x3 blocks) on the device with this operator's pattern.
    pub fn new_matrix(&self) -> Result<DeviceBsr, AssemblyError> {
        Ok(DeviceBsr::zeros(
            self.elements.context(),
            &self.pattern,
            3,
            3,
        )?)
    }

    /// A zero tangent as a linalg matrix on the device ([`Self::new_matrix`] on the host
    /// assembler's pattern, without a copy): what [`super::DeviceProblem`] assembles into and the
    /// solvers take as it is.
    pub fn new_tangent(&self) -> Result<Bsr, AssemblyError> {
        Ok(Bsr::from_device_bsr(
            self.elements.context().clone(),
            self.host_pattern.clone(),
            self.new_matrix()?,
        )?)
    }

    /// Device bytes held: plans, mesh tables and the contribution streams.
    pub fn bytes(&self) -> usize {
        self.matrix_plan.bytes()
            + self.vector_plan.bytes()
            + self.pattern.bytes()
            + self.slot_of_node.bytes()
            + self.tangent_stream.bytes()
            + self.residual_stream.bytes()
            + self.residual_slots.bytes()
    }

    /// Internal-force residual at `u` into `r` (node-major, zero at nodes in no cell); waits and
    /// reports a failed cell like [`ElasticityAssembler::residual`].
    pub fn residual(
        &mut self,
        u: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.elements.residual(u, &mut self.residual_stream)?;
        self.sum_residual(r)?;
        self.elements.check_failure(u)
    }

    /// Residual and tangent at `u`: `k`'s values are overwritten (its pattern must be
    /// [`Self::pattern`]). Waits and reports a failed cell like
    /// [`ElasticityAssembler::residual_tangent`].
    pub fn residual_tangent(
        &mut self,
        u: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
        k: &mut DeviceBsr,
    ) -> Result<(), AssemblyError> {
        self.queue_residual_tangent(u, r, k)?;
        self.elements.check_failure(u)
    }

    /// [`Self::residual_tangent`] with the device time of each phase.
    pub fn timed_residual_tangent(
        &mut self,
        u: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
        k: &mut DeviceBsr,
    ) -> Result<DeviceAssemblyTimes, AssemblyError> {
        let ctx = self.elements.context().clone();
        check_matrix(&self.pattern, k)?;
        let start = ctx.record_event()?;
        self.elements
            .residual_tangent(u, &mut self.residual_stream, &mut self.tangent_stream)?;
        let mid = ctx.record_event()?;
        self.matrix_plan.assemble(&ctx, &self.tangent_stream, k)?;
        self.sum_residual(r)?;
        let end = ctx.record_event()?;
        let times = DeviceAssemblyTimes {
            elements_ms: start.elapsed_ms(&mid)? as f64,
            sums_ms: mid.elapsed_ms(&end)? as f64,
        };
        self.elements.check_failure(u)?;
        Ok(times)
    }

    fn queue_residual_tangent(
        &mut self,
        u: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
        k: &mut DeviceBsr,
    ) -> Result<(), AssemblyError> {
        check_matrix(&self.pattern, k)?;
        let ctx = self.elements.context().clone();
        self.elements
            .residual_tangent(u, &mut self.residual_stream, &mut self.tangent_stream)?;
        self.matrix_plan.assemble(&ctx, &self.tangent_stream, k)?;
        self.sum_residual(r)
    }

    // the device dead loads (`loads.rs`): checked by the tests, not yet called by DeviceProblem
    #[cfg_attr(not(test), allow(dead_code))]
    /// The body-force load vector `f_a = int f N_a dV` (node-major) of `force` per quadrature
    /// point ([`DeviceElements::body_force`]): the contributions summed through the residual's
    /// plan and negated onto zeros, the host `body_force_load`'s operations.
    pub fn body_force_load(
        &mut self,
        force: &DeviceBuffer<f64>,
    ) -> Result<DeviceBuffer<f64>, AssemblyError> {
        let ctx = self.elements.context().clone();
        let n = 3 * self.slot_of_node.len();
        let mut r = ctx.zeros(n)?;
        self.elements.body_force(force, &mut self.residual_stream)?;
        self.sum_residual(&mut r)?;
        let mut f = ctx.zeros(n)?;
        linalg::gpu::axpy(&ctx, -1.0, &r, &mut f)?;
        let zero = ctx.zeros(n)?;
        self.elements.check_failure(&zero)?;
        Ok(f)
    }

    fn sum_residual(&mut self, r: &mut DeviceBuffer<f64>) -> Result<(), AssemblyError> {
        let ctx = self.elements.context().clone();
        self.vector_plan.assemble_slots(
            &ctx,
            &self.residual_stream,
            3,
            &mut self.residual_slots,
        )?;
        scatter_node_slots(
            &ctx,
            &self.elements.defines(),
            &self.slot_of_node,
            &self.residual_slots,
            r,
        )
    }
}

fn check_matrix(pattern: &Arc<DevicePattern>, k: &DeviceBsr) -> Result<(), AssemblyError> {
    if !Arc::ptr_eq(pattern, k.pattern()) && k.pattern().nnz() != pattern.nnz() {
        return Err(AssemblyError::Linalg(
            linalg::LinalgError::PatternMismatch {
                what: "DeviceAssembler: tangent",
            },
        ));
    }
    check(
        "tangent block rows",
        pattern.n_block_rows(),
        k.pattern().n_block_rows(),
    )?;
    check("tangent block size", 9, k.block_rows() * k.block_cols())
}
