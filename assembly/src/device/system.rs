//! [`DeviceProblem`] and [`DeviceNewtonSystem`]: the host's [`crate::DiscreteProblem`] /
//! [`crate::NewtonSystem`] calling order ("linearize, read the residual, eliminate, solve") with
//! every vector and the tangent on the device. Only scalars come back (norms, the failure flag).
//! Follower pressures add their residual and (nonsymmetric) load stiffness after the loads, in
//! the host's order ([`DevicePressure`]).
//!
//! Loads and constraints on load curves of their own: each [`crate::CurvedLoad`] vector is
//! uploaded once and combined with its factor (a scalar per load step) in the host's order;
//! [`DeviceProblem::set_step`] takes a load step's factors and, once per load step, the values
//! the host evaluated at the new time (curved loads and Dirichlet values that are expressions of
//! `t`).

use std::sync::Arc;

use linalg::exact::ExactSum;
use linalg::gpu::{self, CudaContext, DeviceBsr, DeviceBuffer, Term};
use linalg::{Layout, LinalgError};

use super::elements::check;
use super::{DeviceAssembler, DeviceConstraints, DevicePressure};
use crate::{AssemblyError, DiscreteProblem, Potential};

/// A [`DiscreteProblem`] on the device: its element loop, its constraints and its dead loads,
/// uploaded once.
pub struct DeviceProblem {
    ctx: Arc<CudaContext>,
    pub assembler: DeviceAssembler,
    pub constraints: DeviceConstraints,
    /// Dead loads at load factor one, node-major.
    pub external: DeviceBuffer<f64>,
    /// Dead loads on load curves of their own, in [`DiscreteProblem::curved`]'s order.
    curved: Vec<DeviceCurvedLoad>,
    /// Follower pressures, in [`DiscreteProblem::follower`]'s order.
    follower: Vec<DevicePressure>,
    /// Cell energies of the last [`DeviceProblem::potential`].
    energies: DeviceBuffer<f64>,
    /// On one rank of a distributed run: what its reductions cover (`None`: serial).
    rank: Option<DeviceRankShare>,
}

/// A rank's share of a distributed problem on its GPU ([`crate::RankPart`] on the device): the
/// norms, dots and the potential sum the owned entries and the owned cells exactly and add
/// every rank's exact sums before the one rounding (`ExactSum::allreduce`, as the host's
/// `linalg::ops` and [`DiscreteProblem::potential`] do): the host rank path's bits, with a few
/// exact accumulators (552 bytes each) crossing per reduction.
struct DeviceRankShare {
    layout: Arc<Layout>,
    /// The owned cells' indices, ascending.
    owned_cells: DeviceBuffer<u32>,
    /// The owned cells' energies, gathered for their sums.
    owned_energies: DeviceBuffer<f64>,
    /// The serial number of each local cell and the local cells' element tags: an element
    /// failure names the cell as the serial run does ([`crate::RankPart::cell_serial_ids`]).
    cell_serial_ids: Vec<u64>,
    cell_tags: Option<mesh::ElementTags>,
}

/// A [`crate::CurvedLoad`] on the device: its vector (re-uploaded per load step where `timed`)
/// and the factor of the current load step.
struct DeviceCurvedLoad {
    vector: DeviceBuffer<f64>,
    factor: f64,
    timed: bool,
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
    /// Whether the state meets the Dirichlet values exactly (`lift` is zero); one scalar down
    /// (on a rank: its owned entries', then the maximum over the ranks).
    pub fn constraints_met(&self, problem: &DeviceProblem) -> Result<bool, AssemblyError> {
        Ok(problem.norm_inf(&self.lift)? == 0.0)
    }
}

impl DeviceProblem {
    /// Uploads `problem` (mesh, plans, constraints, dead loads, curved loads at their current
    /// factors, follower pressures) to `ctx`.
    pub fn new(ctx: &Arc<CudaContext>, problem: &DiscreteProblem) -> Result<Self, AssemblyError> {
        Self::supports(problem)?;
        let assembler = DeviceAssembler::new(ctx, &problem.assembler)?;
        let constraints = DeviceConstraints::new(
            ctx,
            &problem.constraints,
            problem.assembler.pattern(),
            problem.assembler.coords(),
        )?;
        let mut device = Self::from_parts(
            ctx,
            assembler,
            constraints,
            ctx.upload(problem.external.host()?)?,
        )?;
        for f in &problem.follower {
            let pressure = DevicePressure::new(
                ctx,
                f,
                problem.assembler.coords(),
                problem.assembler.pattern(),
            )?;
            device.follower.push(pressure);
        }
        if let Some(part) = &problem.partition {
            check(
                "rank's cells",
                device.energies.len(),
                part.owned_cells.len(),
            )?;
            check("rank's unknowns", device.n_dofs(), part.layout.len())?;
            let owned: Vec<u32> = (0..part.owned_cells.len())
                .filter(|&c| part.owned_cells[c])
                .map(|c| c as u32)
                .collect();
            device.rank = Some(DeviceRankShare {
                layout: part.layout.clone(),
                owned_energies: ctx.zeros(owned.len())?,
                owned_cells: ctx.upload(&owned)?,
                cell_serial_ids: part.cell_serial_ids.clone(),
                cell_tags: problem.assembler.cell_tags().cloned(),
            });
        }
        for c in &problem.curved {
            check("curved load", device.n_dofs(), c.vector.len())?;
            device.curved.push(DeviceCurvedLoad {
                vector: ctx.upload(c.vector.host()?)?,
                factor: c.factor,
                timed: c.timed,
            });
        }
        Ok(device)
    }

    /// Takes `problem`'s state at a new load step (after the host's `set_time`: curve factors,
    /// constraint factors, values of expressions of `t`): the factors go up as scalars; the
    /// vectors of timed curved loads (`3 n_nodes` values each) and the Dirichlet values of
    /// expressions of `t` (3 per node of such a set) are uploaded again. Call once per load step,
    /// never per Newton iteration. `problem` must be the one uploaded.
    pub fn set_step(&mut self, problem: &DiscreteProblem) -> Result<(), AssemblyError> {
        check("curved loads", self.curved.len(), problem.curved.len())?;
        check(
            "follower pressures",
            self.follower.len(),
            problem.follower.len(),
        )?;
        for (device, host) in self.follower.iter_mut().zip(&problem.follower) {
            device.own_factor = host.own_factor;
        }
        for (device, host) in self.curved.iter_mut().zip(&problem.curved) {
            device.factor = host.factor;
            if device.timed {
                self.ctx
                    .upload_into(host.vector.host()?, &mut device.vector)?;
            }
        }
        self.constraints
            .set_step(&problem.constraints, problem.assembler.coords())
    }

    /// Whether [`DeviceProblem::new`] can upload `problem` (checked on the host, no GPU needed):
    /// [`AssemblyError::DeviceUnsupported`] naming the first feature the device lacks (meshes beyond
    /// 32-bit indices; the projected formulation on rules of more than 27 points per Q2 cell, which
    /// the kernels' shared memory does not hold). Both formulations run on the device otherwise. A rank's share of a distributed problem goes up whole (owned and ghost
    /// cells, assembled as on the host); its reductions cover the owned entries and cells and every
    /// rank.
    pub fn supports(problem: &DiscreteProblem) -> Result<(), AssemblyError> {
        let kernel = problem.assembler.kernel();
        super::elements::check_projected_fits(&problem.assembler)?;
        let npc = kernel.n_nodes();
        if problem.assembler.n_nodes() >= u32::MAX as usize
            || problem.assembler.n_cells() * npc * npc >= u32::MAX as usize
        {
            return Err(AssemblyError::DeviceUnsupported {
                what: format!(
                    "{} nodes and {} cells exceed the device plans' 32-bit indices",
                    problem.assembler.n_nodes(),
                    problem.assembler.n_cells()
                ),
            });
        }
        Ok(())
    }

    /// From parts already on `ctx` (an assembler, its constraints, dead loads of `3 n_nodes`).
    pub fn from_parts(
        ctx: &Arc<CudaContext>,
        mut assembler: DeviceAssembler,
        constraints: DeviceConstraints,
        external: DeviceBuffer<f64>,
    ) -> Result<Self, AssemblyError> {
        let n_cells = assembler.elements().n_cells();
        Ok(Self {
            ctx: ctx.clone(),
            assembler,
            constraints,
            external,
            curved: Vec::new(),
            follower: Vec::new(),
            energies: ctx.zeros(n_cells)?,
            rank: None,
        })
    }

    /// The rigid-body modes about the deformed positions `X + u` (`u`: the displacement on
    /// the device, every node's), node-major on the device: the AMG's near-null space of a
    /// load step, [`crate::rigid_body_modes`] at the host's `X + u` bit for bit
    /// ([`super::deformed_rigid_body_modes`]; three scalars come down). Serial problems only:
    /// on a rank the centroid is every rank's, which the host computes.
    pub fn rigid_body_modes(
        &self,
        u: &DeviceBuffer<f64>,
    ) -> Result<DeviceBuffer<f64>, AssemblyError> {
        if self.rank.is_some() {
            return Err(AssemblyError::DeviceUnsupported {
                what: "rigid-body modes of a rank's part on its GPU (the centroid is all ranks')"
                    .into(),
            });
        }
        super::deformed_rigid_body_modes(&self.ctx, self.assembler.elements_ref().coords(), u)
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

    /// `r = r_int(u) - load_factor f_ext - sum_c factor_c f_c` (curved loads).
    pub fn residual(
        &mut self,
        u: &DeviceBuffer<f64>,
        load_factor: f64,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        let assembled = self.assembler.residual(u, r);
        self.agree_on_failure(assembled)?;
        self.subtract_loads(load_factor, r)?;
        for f in &mut self.follower {
            f.add(u, load_factor, r, None)?;
        }
        Ok(())
    }

    /// `r -= load_factor f_ext`, then `r -= factor_c f_c` per curved load: the host's order.
    fn subtract_loads(
        &self,
        load_factor: f64,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        gpu::axpy(&self.ctx, -load_factor, &self.external, r)?;
        for c in &self.curved {
            gpu::axpy(&self.ctx, -c.factor, &c.vector, r)?;
        }
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
        self.linearize_into(
            u,
            load_factor,
            &mut system.residual,
            &mut system.tangent,
            &mut system.lift,
            &mut system.scratch,
        )
    }

    /// [`Self::linearize`] into buffers held elsewhere (for a caller that owns the system's
    /// vectors and tangent in other wrappers); `scratch` is overwritten.
    pub fn linearize_into(
        &mut self,
        u: &DeviceBuffer<f64>,
        load_factor: f64,
        residual: &mut DeviceBuffer<f64>,
        tangent: &mut DeviceBsr,
        lift: &mut DeviceBuffer<f64>,
        scratch: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        let assembled = self.assembler.residual_tangent(u, residual, tangent);
        self.agree_on_failure(assembled)?;
        self.subtract_loads(load_factor, residual)?;
        for f in &mut self.follower {
            f.add(u, load_factor, residual, Some(&mut *tangent))?;
        }
        gpu::fill(&self.ctx, 0.0, lift)?;
        self.ctx.copy(u, scratch)?;
        self.constraints.write_prescribed(load_factor, scratch)?;
        gpu::axpy(&self.ctx, -1.0, u, scratch)?;
        self.constraints.copy(scratch, lift)?;
        Ok(())
    }

    /// [`DiscreteProblem::eliminate`] on the device: right-hand side `-r - K lift` (free entries)
    /// and `lift` (constrained ones), constraints eliminated from the tangent; returns the free
    /// part's norm (one scalar down).
    pub fn eliminate(&self, system: &mut DeviceNewtonSystem) -> Result<f64, AssemblyError> {
        self.eliminate_into(
            &system.residual,
            &mut system.tangent,
            &system.lift,
            &mut system.rhs,
        )
    }

    /// [`Self::eliminate`] on buffers held elsewhere.
    pub fn eliminate_into(
        &self,
        residual: &DeviceBuffer<f64>,
        tangent: &mut DeviceBsr,
        lift: &DeviceBuffer<f64>,
        rhs: &mut DeviceBuffer<f64>,
    ) -> Result<f64, AssemblyError> {
        gpu::spmv(&self.ctx, tangent, 1.0, lift, 0.0, rhs)?;
        gpu::axpby(&self.ctx, -1.0, residual, -1.0, rhs)?;
        self.constraints.zero(rhs)?;
        let free_norm = self.norm2(rhs)?;
        gpu::axpy(&self.ctx, 1.0, lift, rhs)?;
        self.constraints.eliminate(tangent)?;
        Ok(free_norm)
    }

    /// [`DiscreteProblem::potential`] on the device: the strain energy of every cell at `u`,
    /// summed exactly and rounded once (the host's sums: its bits whenever the cell energies are
    /// its bits), less the dead loads' work `load_factor f_ext . u` (an exact dot). An inverted
    /// cell is reported as the host reports it. Three scalars and the failure flag come down.
    pub fn potential(
        &mut self,
        u: &DeviceBuffer<f64>,
        load_factor: f64,
    ) -> Result<Potential, AssemblyError> {
        self.assembler.elements().energies(u, &mut self.energies)?;
        let checked = self.assembler.elements().check_failure(u);
        self.agree_on_failure(checked)?;
        // exact sums, as the host's: the same bits when the cell energies are
        let (internal, magnitude) = match &mut self.rank {
            None => (
                gpu::sum(&self.ctx, &self.energies, Term::Value)?,
                gpu::sum(&self.ctx, &self.energies, Term::Magnitude)?,
            ),
            Some(share) => {
                // the owned cells' energies, every rank's exact sums added, rounded once
                gpu::gather_blocks(
                    &self.ctx,
                    1,
                    &share.owned_cells,
                    &self.energies,
                    &mut share.owned_energies,
                )?;
                let n = share.owned_energies.len();
                let e = &share.owned_energies;
                let mut sums = [
                    gpu::sum_exact_prefix(&self.ctx, e, Term::Value, n)?,
                    gpu::sum_exact_prefix(&self.ctx, e, Term::Magnitude, n)?,
                ];
                ExactSum::allreduce(&**share.layout.comm(), &mut sums)
                    .map_err(LinalgError::from)?;
                (sums[0].value(), sums[1].value())
            }
        };
        let mut external = load_factor * self.dot(&self.external, u)?;
        for c in &self.curved {
            external += c.factor * self.dot(&c.vector, u)?;
        }
        Ok(Potential {
            value: internal - external,
            magnitude: magnitude + external.abs(),
        })
    }

    /// Norm of `r` restricted to the free entries (`scratch` is overwritten).
    pub fn free_norm(
        &self,
        r: &DeviceBuffer<f64>,
        scratch: &mut DeviceBuffer<f64>,
    ) -> Result<f64, AssemblyError> {
        self.ctx.copy(r, scratch)?;
        self.constraints.zero(scratch)?;
        self.norm2(scratch)
    }

    /// `x . y` over every entry, or on a rank over its owned entries and every rank (an exact
    /// sum rounded once: the host's `linalg::ops::dot` bits either way).
    pub fn dot(&self, x: &DeviceBuffer<f64>, y: &DeviceBuffer<f64>) -> Result<f64, AssemblyError> {
        let Some(share) = &self.rank else {
            return Ok(gpu::dot(&self.ctx, x, y)?);
        };
        let mut sum = [gpu::dot_exact_prefix(
            &self.ctx,
            x,
            y,
            share.layout.owned(),
        )?];
        ExactSum::allreduce(&**share.layout.comm(), &mut sum).map_err(LinalgError::from)?;
        Ok(sum[0].value())
    }

    /// `sqrt(x . x)` as [`Self::dot`].
    pub fn norm2(&self, x: &DeviceBuffer<f64>) -> Result<f64, AssemblyError> {
        Ok(self.dot(x, x)?.sqrt())
    }

    /// `max |x_i|` over every entry, or on a rank over its owned entries and every rank.
    pub fn norm_inf(&self, x: &DeviceBuffer<f64>) -> Result<f64, AssemblyError> {
        let Some(share) = &self.rank else {
            return Ok(gpu::norm_inf(&self.ctx, x, x.len())?);
        };
        let mut max = [gpu::norm_inf(&self.ctx, x, share.layout.owned())?];
        share
            .layout
            .comm()
            .allreduce_max(&mut max)
            .map_err(LinalgError::from)?;
        Ok(max[0])
    }

    /// On a rank: [`crate::error::agree_on_serial_element_failure`] (collective: the serial
    /// run's failure on every rank, as the host rank path's); serial: `local` as it is. The
    /// device's failing cell is the lowest local one (the flag's minimum), as the host's.
    fn agree_on_failure<T>(&self, local: Result<T, AssemblyError>) -> Result<T, AssemblyError> {
        match &self.rank {
            Some(share) => crate::error::agree_on_serial_element_failure(
                &**share.layout.comm(),
                &share.cell_serial_ids,
                share.cell_tags.as_ref(),
                local,
            ),
            None => local,
        }
    }

    /// On one rank of a distributed run: the layout of its vectors (owned entries, then
    /// ghosts); `None` for a serial problem.
    pub fn rank_layout(&self) -> Option<&Arc<Layout>> {
        self.rank.as_ref().map(|r| &r.layout)
    }
}
