//! [`DeviceProblem`] and [`DeviceNewtonSystem`]: the host's [`crate::DiscreteProblem`] /
//! [`crate::NewtonSystem`] calling order ("linearize, read the residual, eliminate, solve") with
//! every vector and the tangent on the device. Only scalars come back (norms, the failure flag).

use std::sync::Arc;

use linalg::backend::cuda::{ops, spmv, vector, CudaContext, DeviceBsr, DeviceBuffer};

use super::{DeviceAssembler, DeviceConstraints};
use crate::{AssemblyError, DiscreteProblem};

/// A [`DiscreteProblem`] on the device: its element loop, its constraints and its dead loads,
/// uploaded once.
pub struct DeviceProblem {
    ctx: Arc<CudaContext>,
    pub assembler: DeviceAssembler,
    pub constraints: DeviceConstraints,
    /// Dead loads at load factor one, node-major.
    pub external: DeviceBuffer<f64>,
}

/// The device twin of [`crate::NewtonSystem`] (same fields, same meaning).
pub struct DeviceNewtonSystem {
    pub residual: DeviceBuffer<f64>,
    pub tangent: DeviceBsr,
    pub lift: DeviceBuffer<f64>,
    pub rhs: DeviceBuffer<f64>,
    scratch: DeviceBuffer<f64>,
}

impl DeviceNewtonSystem {
    /// Whether the state meets the Dirichlet values exactly (`lift` is zero); one scalar down.
    pub fn constraints_met(&self, ctx: &CudaContext) -> Result<bool, AssemblyError> {
        Ok(ops::norm_inf(ctx, &self.lift, self.lift.len())? == 0.0)
    }
}

impl DeviceProblem {
    /// Uploads `problem` (mesh, plans, constraints, dead loads) to `ctx`.
    /// Follower pressures and loads on load curves of their own are not on the device yet
    /// ([`AssemblyError::DeviceUnsupported`]).
    pub fn new(ctx: &Arc<CudaContext>, problem: &DiscreteProblem) -> Result<Self, AssemblyError> {
        if !problem.follower.is_empty() {
            return Err(AssemblyError::DeviceUnsupported {
                what: "follower pressure loads are assembled on the host only; use device: cpu"
                    .into(),
            });
        }
        if problem.constraints.uses_time() {
            return Err(AssemblyError::DeviceUnsupported {
                what: "Dirichlet values that depend on the time t are evaluated on the host only; use device: cpu".into(),
            });
        }
        if !problem.curved.is_empty() {
            return Err(AssemblyError::DeviceUnsupported {
                what: "loads with a load curve of their own are host-only; use device: cpu".into(),
            });
        }
        let assembler = DeviceAssembler::new(ctx, &problem.assembler)?;
        let constraints = DeviceConstraints::new(
            ctx,
            &problem.constraints,
            problem.assembler.pattern(),
            problem.assembler.coords(),
        )?;
        Ok(Self {
            ctx: ctx.clone(),
            assembler,
            constraints,
            external: ctx.upload(problem.external.host()?)?,
        })
    }

    /// From parts already on `ctx` (an assembler, its constraints, dead loads of `3 n_nodes`).
    pub fn from_parts(
        ctx: &Arc<CudaContext>,
        assembler: DeviceAssembler,
        constraints: DeviceConstraints,
        external: DeviceBuffer<f64>,
    ) -> Self {
        Self {
            ctx: ctx.clone(),
            assembler,
            constraints,
            external,
        }
    }

    /// The device.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Unknowns, constrained ones included.
    pub fn n_dofs(&self) -> usize {
        self.external.len()
    }

    /// Zeroed buffers of a Newton system on this problem's tangent pattern.
    pub fn new_system(&self) -> Result<DeviceNewtonSystem, AssemblyError> {
        let n = self.n_dofs();
        Ok(DeviceNewtonSystem {
            residual: self.ctx.zeros(n)?,
            tangent: self.assembler.new_matrix()?,
            lift: self.ctx.zeros(n)?,
            rhs: self.ctx.zeros(n)?,
            scratch: self.ctx.zeros(n)?,
        })
    }

    /// `r = r_int(u) - load_factor f_ext`.
    pub fn residual(
        &mut self,
        u: &DeviceBuffer<f64>,
        load_factor: f64,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.assembler.residual(u, r)?;
        vector::axpy(&self.ctx, -load_factor, &self.external, r)?;
        Ok(())
    }

    /// [`DiscreteProblem::linearize`] on the device: residual, unconstrained tangent and the
    /// lifting `u_D(load_factor) - u` of the constrained entries.
    pub fn linearize(
        &mut self,
        u: &DeviceBuffer<f64>,
        load_factor: f64,
        system: &mut DeviceNewtonSystem,
    ) -> Result<(), AssemblyError> {
        self.assembler
            .residual_tangent(u, &mut system.residual, &mut system.tangent)?;
        vector::axpy(
            &self.ctx,
            -load_factor,
            &self.external,
            &mut system.residual,
        )?;
        vector::fill(&self.ctx, 0.0, &mut system.lift)?;
        self.ctx.copy(u, &mut system.scratch)?;
        self.constraints
            .write_prescribed(load_factor, &mut system.scratch)?;
        vector::axpy(&self.ctx, -1.0, u, &mut system.scratch)?;
        self.constraints.copy(&system.scratch, &mut system.lift)?;
        Ok(())
    }

    /// [`DiscreteProblem::eliminate`] on the device: right-hand side `-r - K lift` (free entries)
    /// and `lift` (constrained ones), constraints eliminated from the tangent; returns the free
    /// part's norm (one scalar down).
    pub fn eliminate(&self, system: &mut DeviceNewtonSystem) -> Result<f64, AssemblyError> {
        spmv(
            &self.ctx,
            &system.tangent,
            1.0,
            &system.lift,
            0.0,
            &mut system.rhs,
        )?;
        vector::axpby(&self.ctx, -1.0, &system.residual, -1.0, &mut system.rhs)?;
        self.constraints.zero(&mut system.rhs)?;
        let free_norm = vector::norm2(&self.ctx, &system.rhs)?;
        vector::axpy(&self.ctx, 1.0, &system.lift, &mut system.rhs)?;
        self.constraints.eliminate(&mut system.tangent)?;
        Ok(free_norm)
    }

    /// Norm of `r` restricted to the free entries (`scratch` is overwritten).
    pub fn free_norm(
        &self,
        r: &DeviceBuffer<f64>,
        scratch: &mut DeviceBuffer<f64>,
    ) -> Result<f64, AssemblyError> {
        self.ctx.copy(r, scratch)?;
        self.constraints.zero(scratch)?;
        Ok(vector::norm2(&self.ctx, scratch)?)
    }
}
