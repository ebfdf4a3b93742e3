//! [`IterationSystem`]: what the load path's Newton iteration needs from the discretisation
//! (linearize, eliminate, residuals and their free norms, the potential, the constraints' values),
//! on the host ([`DiscreteProblem`]) or on a GPU ([`DeviceProblem`], uploaded once per run),
//! through their one API ([`NewtonProblem`], on a [`NewtonSystem`] stored where they run). One
//! [`crate::newton::LoadPath`] drives both.
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
use assembly::{AssemblyError, DiscreteProblem, NewtonProblem, NewtonSystem, Potential};
use fem::{CellFieldSet, StateCellFields};
use linalg::gpu::CudaContext;
use linalg::{Bsr, Device, LinalgError, Vector};

/// The linear system of one Newton iteration and the operations on it, where they run: every
/// operation goes through one [`NewtonProblem`], the host's [`DiscreteProblem`] or its upload
/// to a GPU ([`DeviceProblem`]), on a [`NewtonSystem`] stored there.
pub struct IterationSystem {
    /// The system's vectors and tangent, where the iteration runs.
    system: NewtonSystem,
    /// The problem uploaded to one GPU (`None`: the host's problem does every operation).
    on_device: Option<Box<DeviceProblem>>,
}

/// The problem doing the operations: the GPU's upload where there is one, else the host's.
fn problem<'a>(
    on_device: &'a mut Option<Box<DeviceProblem>>,
    discrete: &'a mut DiscreteProblem,
) -> &'a mut dyn NewtonProblem {
    match on_device {
        Some(d) => d.as_mut(),
        None => discrete,
    }
}

/// [`problem`], to read.
fn problem_ref<'a>(
    on_device: &'a Option<Box<DeviceProblem>>,
    discrete: &'a DiscreteProblem,
) -> &'a dyn NewtonProblem {
    match on_device {
        Some(d) => d.as_ref(),
        None => discrete,
    }
}

impl IterationSystem {
    /// The host system of `discrete`.
    pub fn host(discrete: &DiscreteProblem) -> Result<Self, AssemblyError> {
        Ok(Self {
            system: discrete.new_system()?,
            on_device: None,
        })
    }

    /// Uploads `discrete` to `ctx` (once; [`DeviceProblem::supports`] says what it refuses) and
    /// allocates the system there.
    pub fn device(
        ctx: &Arc<CudaContext>,
        discrete: &DiscreteProblem,
    ) -> Result<Self, AssemblyError> {
        let problem = DeviceProblem::new(ctx, discrete)?;
        let system = problem.new_system()?;
        // the hierarchy the solver builds on this tangent must fit beside it
        let (hierarchy_bytes, _) = amg::device_memory_estimate(&system.tangent);
        amg::check_device_memory(problem.device(), hierarchy_bytes).map_err(|e| {
            AssemblyError::DeviceUnsupported {
                what: e.to_string(),
            }
        })?;
        Ok(Self {
            system,
            on_device: Some(Box::new(problem)),
        })
    }

    /// Takes a new load step's state of `discrete` (after [`crate::problem::Problem::set_time`]): nothing
    /// on the host; on a GPU the curve factors (scalars) and the values of expressions of `t`
    /// ([`DeviceProblem::set_step`]; once per load step).
    pub fn set_step(&mut self, discrete: &DiscreteProblem) -> Result<(), AssemblyError> {
        self.on_device
            .as_mut()
            .map_or(Ok(()), |d| d.set_step(discrete))
    }

    /// The GPU the iteration runs on (`None`: the host).
    pub fn gpu(&self) -> Option<&Device> {
        self.on_device.as_deref().map(DeviceProblem::device)
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
    /// where `u` lives, on one GPU or a rank's (collective there): the host's modes bit for
    /// bit (on a rank `crate::problem::distributed_modes`'), left on the device (three exact
    /// sums come down, nothing goes up; `DeviceProblem::rigid_body_modes`). `None` on the
    /// host (the caller computes them there).
    pub fn rigid_body_modes(&mut self, u: &Vector) -> crate::Result<Option<amg::NearNullSpace>> {
        let Some(d) = self.on_device.as_deref_mut() else {
            return Ok(None);
        };
        let modes = d.rigid_body_modes(u)?;
        Ok(Some(amg::NearNullSpace::from_vector(
            u.len(),
            assembly::RIGID_BODY_MODES_3D,
            modes,
        )?))
    }

    /// The rigid-body modes about the undeformed positions `X` (those a solver is chosen with,
    /// `crate::problem::near_null_space` of the mesh's coordinates, on ranks
    /// `distributed_modes`) computed on the GPU, one process's or a rank's (collective): the
    /// host's bits, left on the device (the displacement added to `X` is `-0` everywhere,
    /// which leaves every coordinate as it is, a `-0` one too; nothing goes up). `None` on the
    /// host, as [`Self::rigid_body_modes`].
    pub fn undeformed_rigid_body_modes(
        &mut self,
        discrete: &DiscreteProblem,
    ) -> crate::Result<Option<amg::NearNullSpace>> {
        if !self.modes_on_device() {
            return Ok(None);
        }
        let mut minus_zero = self.zeros(discrete)?;
        minus_zero.fill(-0.0)?;
        self.rigid_body_modes(&minus_zero)
    }

    /// Whether [`Self::rigid_body_modes`] computes them where the iteration runs: on a GPU.
    pub fn modes_on_device(&self) -> bool {
        self.on_device.is_some()
    }

    /// A vector of zeros where the iteration runs.
    pub fn zeros(&self, discrete: &DiscreteProblem) -> Result<Vector, LinalgError> {
        problem_ref(&self.on_device, discrete).zeros()
    }

    /// A copy of the host vector `u` where the iteration runs (an upload on a GPU).
    pub fn upload(&self, u: &Vector) -> Result<Vector, LinalgError> {
        u.to_device(&self.system.residual.device())
    }

    /// Overwrites the host vector `into` with `u` (a download on a GPU).
    pub fn download(&self, u: &Vector, into: &mut Vector) -> Result<(), LinalgError> {
        if u.device().is_host() {
            into.copy_from(u)
        } else {
            u.copy_to_host(into.host_mut()?)
        }
    }

    /// Residual, unconstrained tangent and lifting at `u` ([`DiscreteProblem::linearize`]).
    pub fn linearize(
        &mut self,
        discrete: &mut DiscreteProblem,
        u: &Vector,
        load_factor: f64,
    ) -> Result<(), AssemblyError> {
        problem(&mut self.on_device, discrete).linearize(u, load_factor, &mut self.system)
    }

    /// Right-hand side and eliminated tangent ([`DiscreteProblem::eliminate`]); the free part's
    /// norm.
    pub fn eliminate(&mut self, discrete: &mut DiscreteProblem) -> Result<f64, AssemblyError> {
        problem(&mut self.on_device, discrete).eliminate(&mut self.system)
    }

    /// Whether the state meets the Dirichlet values exactly (the lifting is zero).
    pub fn constraints_met(&self) -> Result<bool, AssemblyError> {
        self.system.constraints_met()
    }

    /// The residual of the last [`Self::linearize`].
    pub fn residual(&self) -> &Vector {
        &self.system.residual
    }

    /// The eliminated tangent of the last [`Self::eliminate`].
    pub fn tangent(&self) -> &Bsr {
        &self.system.tangent
    }

    /// The right-hand side of the last [`Self::eliminate`].
    pub fn rhs(&self) -> &Vector {
        &self.system.rhs
    }

    /// The lifting `u_D - u` of the constrained entries (zero elsewhere).
    pub fn lift(&self) -> &Vector {
        &self.system.lift
    }

    /// `r = r_int(u) - load_factor f_ext` ([`DiscreteProblem::residual`]).
    pub fn residual_at(
        &mut self,
        discrete: &mut DiscreteProblem,
        u: &Vector,
        load_factor: f64,
        r: &mut Vector,
    ) -> Result<(), AssemblyError> {
        problem(&mut self.on_device, discrete).residual(u, load_factor, r)
    }

    /// Norm of `r` restricted to the free entries (`scratch` is overwritten).
    pub fn free_norm(
        &self,
        discrete: &DiscreteProblem,
        r: &Vector,
        scratch: &mut Vector,
    ) -> Result<f64, AssemblyError> {
        problem_ref(&self.on_device, discrete).free_norm(r, scratch)
    }

    /// The potential energy at `u` ([`DiscreteProblem::potential`]); an error for an inverted
    /// element.
    pub fn potential(
        &mut self,
        discrete: &mut DiscreteProblem,
        u: &Vector,
        load_factor: f64,
    ) -> Result<Potential, AssemblyError> {
        problem(&mut self.on_device, discrete).potential(u, load_factor)
    }

    /// Copies the constrained entries of `from` into `to`.
    pub fn copy_constrained(
        &self,
        discrete: &DiscreteProblem,
        from: &Vector,
        to: &mut Vector,
    ) -> Result<(), AssemblyError> {
        problem_ref(&self.on_device, discrete).copy_constrained(from, to)
    }

    /// Writes the prescribed values at `load_factor` into `u`'s constrained entries.
    pub fn write_prescribed(
        &self,
        discrete: &DiscreteProblem,
        load_factor: f64,
        u: &mut Vector,
    ) -> Result<(), AssemblyError> {
        problem_ref(&self.on_device, discrete).write_prescribed(load_factor, u)
    }

    /// The output fields `set` of every cell at `u` computed where the iteration runs: `Some` on a
    /// GPU, one process's or a rank's (computed there for every local cell, ghost cells
    /// included, from the device state whose ghost entries the iteration keeps current; only
    /// the fields come down), `None` on the host (the caller computes them from the host state
    /// as ever). On ranks a failure is one rank's: the caller agrees on it.
    pub fn cell_fields(
        &mut self,
        u: &Vector,
        set: CellFieldSet,
    ) -> Result<Option<StateCellFields>, AssemblyError> {
        self.on_device
            .as_deref_mut()
            .map(|d| d.cell_fields(u, set))
            .transpose()
    }

    /// The strains `measures` (each a [`fem::StrainMeasure`]) of every cell at `u` that the GPU
    /// computes ([`DeviceProblem::computes_strain`]; the host's values bit for bit), one
    /// process's or a rank's, in the order of `measures`, each downloaded; the others are left
    /// to the caller, as on the host.
    pub fn cell_strains(
        &mut self,
        u: &Vector,
        measures: &[fem::StrainMeasure],
    ) -> Result<crate::newton::CellStrains, AssemblyError> {
        let Some(d) = self.on_device.as_deref_mut() else {
            return Ok(Vec::new());
        };
        let on_device: Vec<_> = measures
            .iter()
            .copied()
            .filter(|&m| d.computes_strain(m))
            .collect();
        on_device
            .into_iter()
            .map(|m| Ok((m, d.cell_strains(u, m)?)))
            .collect()
    }

    /// The reactions of the last linearized state (the residual at the constrained entries, zero
    /// elsewhere), on the host (on a GPU only the constrained entries come down).
    pub fn reactions(&self, discrete: &DiscreteProblem) -> Result<Vector, AssemblyError> {
        if let Some(d) = self.on_device.as_deref() {
            let mut on_host = discrete.zeros()?;
            d.copy_constrained_to_host(&self.system.residual, on_host.host_mut()?)?;
            return Ok(on_host);
        }
        let mut reactions = self.zeros(discrete)?;
        self.copy_constrained(discrete, &self.system.residual, &mut reactions)?;
        Ok(reactions)
    }
}
