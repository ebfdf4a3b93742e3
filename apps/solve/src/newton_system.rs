//! [`IterationSystem`]: what the load path's Newton iteration needs from the discretisation
//! (linearize, eliminate, residuals and their free norms, the potential, the constraints' values),
//! on the host ([`assembly::NewtonSystem`] through [`DiscreteProblem`]) or on a GPU
//! ([`DeviceProblem`], uploaded once per run). One [`crate::newton::LoadPath`] drives both.
//!
//! On the GPU the state, the residuals, the tangent (handed to the AMG and CG as a device [`Bsr`]
//! without a copy), the line search's trial states and every norm stay on the device: an iteration
//! moves scalars only (norms, the energy's sums, the element failure flag). The displacement and
//! the reactions and the cells' output fields (computed there) come down at converged steps only
//! ([`IterationSystem::download`], [`IterationSystem::reactions`], [`IterationSystem::cell_fields`]).
//!
//! On the ranks of a distributed run each rank's part (owned and ghost cells) goes up to its
//! GPU the same way; its vectors carry the rank's layout, and every norm, dot and the
//! potential reduce the owned entries and cells over the ranks exactly (the host rank path's
//! bits): a few exact accumulators cross per reduction, no vector and no tangent.

use std::sync::Arc;

use assembly::device::DeviceProblem;
use assembly::{AssemblyError, DiscreteProblem, NewtonSystem, Potential};
use fem::CellFields;
use linalg::gpu::CudaContext;
use linalg::{ops, Bsr, Device, LinalgError, Vector};

/// The linear system of one Newton iteration and the operations on it, where they run.
pub enum IterationSystem {
    /// Host vectors and tangent; every operation goes through the [`DiscreteProblem`].
    Host(Box<NewtonSystem>),
    /// Everything on one GPU.
    Device(Box<DeviceSystem>),
}

/// The device side of [`IterationSystem::Device`]: the uploaded problem and the system's buffers
/// as linalg values on the device (so the solver takes them as they are).
pub struct DeviceSystem {
    problem: DeviceProblem,
    device: Device,
    residual: Vector,
    tangent: Bsr,
    lift: Vector,
    rhs: Vector,
    scratch: Vector,
}

/// Zeros of `problem`'s unknowns on `device`: on a rank, with its layout (owned entries, then
/// ghosts), so `linalg::ops` reduces over the owned entries and the ranks as on the host.
fn zeros_of(problem: &DeviceProblem, device: &Device) -> Result<Vector, LinalgError> {
    match problem.rank_layout() {
        Some(layout) => Vector::zeros_with_layout(device, layout.clone()),
        None => Vector::zeros_on(device, problem.n_dofs()),
    }
}

impl IterationSystem {
    /// The host system of `discrete`.
    pub fn host(discrete: &DiscreteProblem) -> Result<Self, AssemblyError> {
        Ok(IterationSystem::Host(Box::new(discrete.new_system()?)))
    }

    /// Uploads `discrete` to `ctx` (once; [`DeviceProblem::supports`] says what it refuses) and
    /// allocates the system there.
    pub fn device(
        ctx: &Arc<CudaContext>,
        discrete: &DiscreteProblem,
    ) -> Result<Self, AssemblyError> {
        let problem = DeviceProblem::new(ctx, discrete)?;
        let device = Device::Cuda(ctx.clone());
        let vector = || zeros_of(&problem, &device);
        let tangent = Bsr::from_device_bsr(
            ctx.clone(),
            discrete.assembler.pattern().clone(),
            problem.assembler.new_matrix()?,
        )?;
        // the hierarchy the solver builds on this tangent must fit beside it
        let (hierarchy_bytes, _) = amg::device_memory_estimate(&tangent);
        amg::check_device_memory(&device, hierarchy_bytes).map_err(|e| {
            AssemblyError::DeviceUnsupported {
                what: e.to_string(),
            }
        })?;
        Ok(IterationSystem::Device(Box::new(DeviceSystem {
            residual: vector()?,
            lift: vector()?,
            rhs: vector()?,
            scratch: vector()?,
            tangent,
            device,
            problem,
        })))
    }

    /// Takes a new load step's state of `discrete` (after [`crate::Problem::set_time`]): nothing
    /// on the host; on a GPU the curve factors (scalars) and the values of expressions of `t`
    /// ([`DeviceProblem::set_step`]; once per load step).
    pub fn set_step(&mut self, discrete: &DiscreteProblem) -> Result<(), AssemblyError> {
        match self {
            IterationSystem::Host(_) => Ok(()),
            IterationSystem::Device(d) => d.problem.set_step(discrete),
        }
    }

    /// The GPU the iteration runs on (`None`: the host).
    pub fn gpu(&self) -> Option<&Device> {
        match self {
            IterationSystem::Host(_) => None,
            IterationSystem::Device(d) => Some(&d.device),
        }
    }

    /// Bytes moved between host and GPU so far, both ways (`None` on the host).
    pub fn transferred_bytes(&self) -> Option<u64> {
        self.gpu().map(|d| {
            let t = d.transfers();
            t.host_to_device + t.device_to_host
        })
    }

    /// Bytes moved host to device so far (`None` on the host).
    pub fn uploaded_bytes(&self) -> Option<u64> {
        self.gpu().map(|d| d.transfers().host_to_device)
    }

    /// The rigid-body modes about `X + u` (the AMG's near-null space of a load step) computed
    /// where `u` lives, on one GPU: the host's modes bit for bit, left on the device (three
    /// scalars come down, nothing goes up; `DeviceProblem::rigid_body_modes`). `None` on the
    /// host and on a rank's GPU (the caller computes them on the host).
    pub fn rigid_body_modes(&self, u: &Vector) -> crate::Result<Option<amg::NearNullSpace>> {
        let IterationSystem::Device(d) = self else {
            return Ok(None);
        };
        let Some(ctx) = d.device.cuda_context() else {
            return Ok(None);
        };
        if d.problem.rank_layout().is_some() {
            return Ok(None);
        }
        let modes = d.problem.rigid_body_modes(u.device_buffer()?)?;
        let n_rows = u.len();
        let modes = Vector::from_device_buffer(ctx.clone(), modes);
        Ok(Some(amg::NearNullSpace::from_vector(
            n_rows,
            assembly::RIGID_BODY_MODES_3D,
            modes,
        )?))
    }

    /// The rigid-body modes about the undeformed positions `X` (those a solver is chosen with,
    /// `crate::problem::near_null_space` of the mesh's coordinates) computed on one GPU: the
    /// host's bits, left on the device (the displacement added to `X` is `-0` everywhere,
    /// which leaves every coordinate as it is, a `-0` one too; nothing goes up). `None` on the
    /// host and on a rank's GPU, as [`Self::rigid_body_modes`].
    pub fn undeformed_rigid_body_modes(
        &self,
        discrete: &DiscreteProblem,
    ) -> crate::Result<Option<amg::NearNullSpace>> {
        if !self.modes_on_device() {
            return Ok(None);
        }
        let mut minus_zero = self.zeros(discrete)?;
        minus_zero.fill(-0.0)?;
        self.rigid_body_modes(&minus_zero)
    }

    /// Whether [`Self::rigid_body_modes`] computes them where the iteration runs: on one GPU,
    /// not a rank's.
    pub fn modes_on_device(&self) -> bool {
        match self {
            IterationSystem::Device(d) => {
                d.device.cuda_context().is_some() && d.problem.rank_layout().is_none()
            }
            IterationSystem::Host(_) => false,
        }
    }

    /// A vector of zeros where the iteration runs.
    pub fn zeros(&self, discrete: &DiscreteProblem) -> Result<Vector, LinalgError> {
        match self {
            IterationSystem::Host(_) => discrete.zeros(),
            IterationSystem::Device(d) => zeros_of(&d.problem, &d.device),
        }
    }

    /// A copy of the host vector `u` where the iteration runs (an upload on a GPU).
    pub fn upload(&self, u: &Vector) -> Result<Vector, LinalgError> {
        match self {
            IterationSystem::Host(_) => u.try_clone(),
            IterationSystem::Device(d) => u.to_device(&d.device),
        }
    }

    /// Overwrites the host vector `into` with `u` (a download on a GPU).
    pub fn download(&self, u: &Vector, into: &mut Vector) -> Result<(), LinalgError> {
        match self {
            IterationSystem::Host(_) => into.copy_from(u),
            IterationSystem::Device(_) => into.copy_from_host(&u.to_host_vec()?),
        }
    }

    /// Residual, unconstrained tangent and lifting at `u` ([`DiscreteProblem::linearize`]).
    pub fn linearize(
        &mut self,
        discrete: &mut DiscreteProblem,
        u: &Vector,
        load_factor: f64,
    ) -> Result<(), AssemblyError> {
        match self {
            IterationSystem::Host(system) => discrete.linearize(u, load_factor, system),
            IterationSystem::Device(d) => d.problem.linearize_into(
                u.device_buffer()?,
                load_factor,
                d.residual.device_buffer_mut()?,
                d.tangent.device_bsr_mut()?,
                d.lift.device_buffer_mut()?,
                d.scratch.device_buffer_mut()?,
            ),
        }
    }

    /// Right-hand side and eliminated tangent ([`DiscreteProblem::eliminate`]); the free part's
    /// norm.
    pub fn eliminate(&mut self, discrete: &mut DiscreteProblem) -> Result<f64, AssemblyError> {
        match self {
            IterationSystem::Host(system) => discrete.eliminate(system),
            IterationSystem::Device(d) => d.problem.eliminate_into(
                d.residual.device_buffer()?,
                d.tangent.device_bsr_mut()?,
                d.lift.device_buffer()?,
                d.rhs.device_buffer_mut()?,
            ),
        }
    }

    /// Whether the state meets the Dirichlet values exactly (the lifting is zero).
    pub fn constraints_met(&self) -> Result<bool, AssemblyError> {
        Ok(ops::norm_inf(self.lift())? == 0.0)
    }

    /// The residual of the last [`Self::linearize`].
    pub fn residual(&self) -> &Vector {
        match self {
            IterationSystem::Host(system) => &system.residual,
            IterationSystem::Device(d) => &d.residual,
        }
    }

    /// The eliminated tangent of the last [`Self::eliminate`].
    pub fn tangent(&self) -> &Bsr {
        match self {
            IterationSystem::Host(system) => &system.tangent,
            IterationSystem::Device(d) => &d.tangent,
        }
    }

    /// The right-hand side of the last [`Self::eliminate`].
    pub fn rhs(&self) -> &Vector {
        match self {
            IterationSystem::Host(system) => &system.rhs,
            IterationSystem::Device(d) => &d.rhs,
        }
    }

    /// The lifting `u_D - u` of the constrained entries (zero elsewhere).
    pub fn lift(&self) -> &Vector {
        match self {
            IterationSystem::Host(system) => &system.lift,
            IterationSystem::Device(d) => &d.lift,
        }
    }

    /// `r = r_int(u) - load_factor f_ext` ([`DiscreteProblem::residual`]).
    pub fn residual_at(
        &mut self,
        discrete: &mut DiscreteProblem,
        u: &Vector,
        load_factor: f64,
        r: &mut Vector,
    ) -> Result<(), AssemblyError> {
        match self {
            IterationSystem::Host(_) => discrete.residual(u, load_factor, r),
            IterationSystem::Device(d) => {
                d.problem
                    .residual(u.device_buffer()?, load_factor, r.device_buffer_mut()?)
            }
        }
    }

    /// Norm of `r` restricted to the free entries (`scratch` is overwritten).
    pub fn free_norm(
        &self,
        discrete: &DiscreteProblem,
        r: &Vector,
        scratch: &mut Vector,
    ) -> Result<f64, AssemblyError> {
        match self {
            IterationSystem::Host(_) => discrete.free_norm(r, scratch),
            IterationSystem::Device(d) => d
                .problem
                .free_norm(r.device_buffer()?, scratch.device_buffer_mut()?),
        }
    }

    /// The potential energy at `u` ([`DiscreteProblem::potential`]); an error for an inverted
    /// element.
    pub fn potential(
        &mut self,
        discrete: &DiscreteProblem,
        u: &Vector,
        load_factor: f64,
    ) -> Result<Potential, AssemblyError> {
        match self {
            IterationSystem::Host(_) => discrete.potential(u, load_factor),
            IterationSystem::Device(d) => d.problem.potential(u.device_buffer()?, load_factor),
        }
    }

    /// Copies the constrained entries of `from` into `to`.
    pub fn copy_constrained(
        &self,
        discrete: &DiscreteProblem,
        from: &Vector,
        to: &mut Vector,
    ) -> Result<(), AssemblyError> {
        match self {
            IterationSystem::Host(_) => discrete.constraints.copy_constrained(from, to),
            IterationSystem::Device(d) => d
                .problem
                .constraints
                .copy(from.device_buffer()?, to.device_buffer_mut()?),
        }
    }

    /// Writes the prescribed values at `load_factor` into `u`'s constrained entries.
    pub fn write_prescribed(
        &self,
        discrete: &DiscreteProblem,
        load_factor: f64,
        u: &mut Vector,
    ) -> Result<(), AssemblyError> {
        match self {
            IterationSystem::Host(_) => {
                discrete
                    .constraints
                    .write_prescribed(load_factor, discrete.assembler.coords(), u)
            }
            IterationSystem::Device(d) => d
                .problem
                .constraints
                .write_prescribed(load_factor, u.device_buffer_mut()?),
        }
    }

    /// The output fields of every cell at `u` computed where the iteration runs, on the host:
    /// `Some` on a GPU (computed there; only the fields come down), `None` on the host (the
    /// caller computes them from the host state as ever).
    /// On a rank's GPU `None` too: a distributed run's output computes its cells' fields from
    /// the downloaded state (as the host rank path does), so they need not come down.
    pub fn cell_fields(&mut self, u: &Vector) -> Result<Option<Vec<CellFields>>, AssemblyError> {
        match self {
            IterationSystem::Host(_) => Ok(None),
            IterationSystem::Device(d) if d.problem.rank_layout().is_some() => Ok(None),
            IterationSystem::Device(d) => d
                .problem
                .assembler
                .elements()
                .download_cell_fields(u.device_buffer()?)
                .map(Some),
        }
    }

    /// The strains `measures` (each a [`fem::StrainMeasure`]) of every cell at `u` that the GPU
    /// computes ([`assembly::device::DeviceElements::computes_strain`]; the host's values bit for
    /// bit), in the order of `measures`, each downloaded; the others are left to the caller, as
    /// on the host and on a rank's GPU (empty there).
    pub fn cell_strains(
        &mut self,
        u: &Vector,
        measures: &[fem::StrainMeasure],
    ) -> Result<crate::newton::CellStrains, AssemblyError> {
        match self {
            IterationSystem::Host(_) => Ok(Vec::new()),
            IterationSystem::Device(d) if d.problem.rank_layout().is_some() => Ok(Vec::new()),
            IterationSystem::Device(d) => {
                let elements = d.problem.assembler.elements();
                let on_device: Vec<_> = measures
                    .iter()
                    .copied()
                    .filter(|&m| elements.computes_strain(m))
                    .collect();
                on_device
                    .into_iter()
                    .map(|m| Ok((m, elements.download_cell_strains(u.device_buffer()?, m)?)))
                    .collect()
            }
        }
    }

    /// The reactions of the last linearized state (the residual at the constrained entries, zero
    /// elsewhere), on the host (a download on a GPU).
    pub fn reactions(&self, discrete: &DiscreteProblem) -> Result<Vector, AssemblyError> {
        let mut reactions = discrete.zeros()?;
        match self {
            IterationSystem::Host(system) => discrete
                .constraints
                .copy_constrained(&system.residual, &mut reactions)?,
            IterationSystem::Device(_) => {
                let mut on_device = self.zeros(discrete)?;
                self.copy_constrained(discrete, self.residual(), &mut on_device)?;
                reactions.copy_from_host(&on_device.to_host_vec()?)?;
            }
        }
        Ok(reactions)
    }
}
