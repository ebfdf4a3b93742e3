//! [`DeviceProblem`]: the host's [`crate::DiscreteProblem`] on a GPU, with the same operations
//! under the same names and in the same calling order ("linearize, read the residual,
//! eliminate, solve"; [`crate::NewtonProblem`] over both). Every vector is a linalg [`Vector`]
//! and the system a [`NewtonSystem`] stored on the device ([`DeviceProblem::zeros`],
//! [`DeviceProblem::new_system`]); the BLAS-1 steps and the reductions are linalg's typed
//! operations (`linalg::ops`, [`linalg::Bsr::spmv`]: the same kernels and exact sums as the
//! host's bits), the element loop, the constraints and the pressures this crate's kernels. Only
//! scalars come back (norms, the failure flag). Follower pressures add their residual and
//! (nonsymmetric) load stiffness after the loads, in the host's order (`DevicePressure`).
//!
//! Loads and constraints on load curves of their own: each [`crate::CurvedLoad`] vector is
//! uploaded once and combined with its factor (a scalar per load step) in the host's order;
//! [`DeviceProblem::set_step`] takes a load step's factors and, once per load step, the values
//! the host evaluated at the new time (curved loads and Dirichlet values that are expressions of
//! `t`).

use std::sync::Arc;

use fem::{CellFieldSet, StateCellFields, StrainMeasure};
use linalg::exact::ExactSum;
use linalg::gpu::{self, CudaContext, DeviceBuffer, Term};
use linalg::{ops, Device, Layout, LinalgError, Vector};

use super::elements::check;
use super::{DeviceAssembler, DeviceAssemblyTimes, DeviceConstraints, DevicePressure};
use crate::{AssemblyError, DiscreteProblem, NewtonSystem, Potential};

/// A [`DiscreteProblem`] on the device: its element loop, its constraints and its dead loads,
/// uploaded once. Its operations take and give linalg values on its GPU, with its layout.
pub struct DeviceProblem {
    device: Device,
    ctx: Arc<CudaContext>,
    assembler: DeviceAssembler,
    constraints: DeviceConstraints,
    /// Dead loads at load factor one, node-major.
    external: Vector,
    /// Dead loads on load curves of their own, in [`DiscreteProblem::curved`]'s order.
    curved: Vec<DeviceCurvedLoad>,
    /// Follower pressures, in [`DiscreteProblem::follower`]'s order.
    follower: Vec<DevicePressure>,
    /// Cell energies of the last [`DeviceProblem::potential`].
    energies: DeviceBuffer<f64>,
    /// On one rank of a distributed run: what its potential sums (`None`: serial); the vectors'
    /// reductions follow their layout ([`Self::zeros`]).
    rank: Option<DeviceRankShare>,
}

/// A rank's share of a distributed problem on its GPU ([`crate::RankPart`] on the device): the
/// potential sums the owned cells' energies exactly and adds every rank's exact sums before the
/// one rounding (`ExactSum::allreduce`, as [`DiscreteProblem::potential`] does); the norms and
/// dots are linalg's over the vectors' layout (the owned entries, then every rank): the host
/// rank path's bits, with a few exact accumulators (552 bytes each) crossing per reduction.
struct DeviceRankShare {
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
    vector: Vector,
    factor: f64,
    timed: bool,
}

/// `values` (a host vector of `layout`'s length) uploaded into a device vector of `layout`: one
/// upload, no other transfer.
fn upload_with_layout(
    device: &Device,
    layout: &Arc<Layout>,
    values: &Vector,
) -> Result<Vector, AssemblyError> {
    let mut v = Vector::zeros_with_layout(device, layout.clone())?;
    v.copy_from_host(values.host()?)?;
    Ok(v)
}

impl DeviceProblem {
    /// Uploads `problem` (mesh, plans, constraints, dead loads, curved loads at their current
    /// factors, follower pressures) to `ctx`.
    pub fn new(ctx: &Arc<CudaContext>, problem: &DiscreteProblem) -> Result<Self, AssemblyError> {
        Self::supports(problem)?;
        let device = Device::Cuda(ctx.clone());
        let n = problem.n_dofs();
        let layout = match &problem.partition {
            Some(part) => part.layout.clone(),
            None => Arc::new(Layout::serial(n)),
        };
        let assembler = DeviceAssembler::new(ctx, &problem.assembler)?;
        let constraints = DeviceConstraints::new(
            ctx,
            &problem.constraints,
            problem.assembler.pattern(),
            problem.assembler.coords(),
        )?;
        check("dead loads", n, problem.external.len())?;
        let external = upload_with_layout(&device, &layout, &problem.external)?;
        let mut device_problem = Self::from_parts(ctx, assembler, constraints, external)?;
        for f in &problem.follower {
            let pressure = DevicePressure::new(
                ctx,
                f,
                problem.assembler.coords(),
                problem.assembler.pattern(),
            )?;
            device_problem.follower.push(pressure);
        }
        if let Some(part) = &problem.partition {
            check(
                "rank's cells",
                device_problem.energies.len(),
                part.owned_cells.len(),
            )?;
            check("rank's unknowns", n, part.layout.len())?;
            let owned: Vec<u32> = (0..part.owned_cells.len())
                .filter(|&c| part.owned_cells[c])
                .map(|c| c as u32)
                .collect();
            device_problem.rank = Some(DeviceRankShare {
                owned_energies: ctx.zeros(owned.len())?,
                owned_cells: ctx.upload(&owned)?,
                cell_serial_ids: part.cell_serial_ids.clone(),
                cell_tags: problem.assembler.cell_tags().cloned(),
            });
        }
        for c in &problem.curved {
            check("curved load", n, c.vector.len())?;
            device_problem.curved.push(DeviceCurvedLoad {
                vector: upload_with_layout(&device, &layout, &c.vector)?,
                factor: c.factor,
                timed: c.timed,
            });
        }
        Ok(device_problem)
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
                device.vector.copy_from_host(host.vector.host()?)?;
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

    /// From parts already on `ctx`: an assembler, its constraints, and dead loads of `3 n_nodes`
    /// on `ctx` (their layout is the problem's vectors'; serial: no rank share).
    fn from_parts(
        ctx: &Arc<CudaContext>,
        mut assembler: DeviceAssembler,
        constraints: DeviceConstraints,
        external: Vector,
    ) -> Result<Self, AssemblyError> {
        // on a GPU (linalg's operations check it is this one), one value per coordinate
        let n = external.device_buffer()?.len();
        check("dead loads", assembler.elements_ref().coords().len(), n)?;
        let n_cells = assembler.elements().n_cells();
        Ok(Self {
            device: Device::Cuda(ctx.clone()),
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
    /// the device, every local node's), node-major on the device (`18 n_nodes` values, serial layout):
    /// the AMG's near-null space of a load step, [`crate::rigid_body_modes`] at the host's `X + u`
    /// bit for bit (the crate's `deformed_rigid_body_modes`; three exact sums come down). On a
    /// rank (collective): every local node's rows about the centroid of all ranks' owned
    /// nodes, the host's distributed modes (`solve::problem::distributed_modes`) bit for bit.
    pub fn rigid_body_modes(&self, u: &Vector) -> Result<Vector, AssemblyError> {
        let modes = super::deformed_rigid_body_modes(
            &self.ctx,
            self.assembler.elements_ref().coords(),
            u.device_buffer()?,
            self.rank_layout().map(|l| &**l),
        )?;
        Ok(Vector::from_device_buffer(self.ctx.clone(), modes))
    }

    /// The output fields `set` of every cell at `u`, computed on the device and downloaded (only
    /// the fields come down; `DeviceElements::download_state_cell_fields`).
    pub fn cell_fields(
        &mut self,
        u: &Vector,
        set: CellFieldSet,
    ) -> Result<StateCellFields, AssemblyError> {
        self.assembler
            .elements()
            .download_state_cell_fields(u.device_buffer()?, set)
    }

    /// Whether [`Self::cell_strains`] computes the strain `measure` here, the host's values bit
    /// for bit (`DeviceElements::computes_strain`).
    pub fn computes_strain(&self, measure: StrainMeasure) -> bool {
        self.assembler.elements_ref().computes_strain(measure)
    }

    /// The strain `measure` of every cell at `u`, computed on the device and downloaded (see
    /// [`Self::computes_strain`]).
    pub fn cell_strains(
        &mut self,
        u: &Vector,
        measure: StrainMeasure,
    ) -> Result<Vec<[f64; 9]>, AssemblyError> {
        self.assembler
            .elements()
            .download_cell_strains(u.device_buffer()?, measure)
    }

    /// The GPU's handle.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device the problem's vectors and system live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Unknowns, constrained ones included.
    pub fn n_dofs(&self) -> usize {
        self.external.len()
    }

    /// Zeros of the unknowns on the device, with the problem's layout (on a rank: its owned
    /// entries, then the ghosts, so `linalg::ops` reduces over the owned entries and the ranks
    /// as on the host).
    pub fn zeros(&self) -> Result<Vector, LinalgError> {
        Vector::zeros_with_layout(&self.device, self.external.layout().clone())
    }

    /// A zeroed Newton system on the device, on this problem's tangent pattern (the tangent a
    /// linalg [`linalg::Bsr`] the solvers take as it is).
    pub fn new_system(&self) -> Result<NewtonSystem, AssemblyError> {
        Ok(NewtonSystem {
            residual: self.zeros()?,
            tangent: self.assembler.new_tangent()?,
            lift: self.zeros()?,
            rhs: self.zeros()?,
            scratch: self.zeros()?,
        })
    }

    /// The internal forces `r_int(u)` alone into `r` (no loads, no constraints): the host
    /// [`crate::ElasticityAssembler::residual`] without a load, on the device (element kernels,
    /// the residual's COO sum, one 4-byte failure flag down). A failing cell is reported as
    /// [`Self::residual`] reports it.
    pub fn internal_residual(&mut self, u: &Vector, r: &mut Vector) -> Result<(), AssemblyError> {
        let assembled = self
            .assembler
            .residual(u.device_buffer()?, r.device_buffer_mut()?);
        self.agree_on_failure(assembled)
    }

    /// The internal forces `r_int(u)` into `r` and the unconstrained tangent into `tangent`
    /// (made by [`Self::new_system`]: this problem's pattern), no loads and no constraints: the
    /// host [`crate::ElasticityAssembler::residual_tangent`] without a load, on the device.
    pub fn internal_residual_tangent(
        &mut self,
        u: &Vector,
        r: &mut Vector,
        tangent: &mut linalg::Bsr,
    ) -> Result<(), AssemblyError> {
        let assembled = self.assembler.residual_tangent(
            u.device_buffer()?,
            r.device_buffer_mut()?,
            tangent.device_bsr_mut()?,
        );
        self.agree_on_failure(assembled)
    }

    /// [`Self::internal_residual_tangent`] with the device time of each phase of the element
    /// loop (element kernels; COO sums and the residual's scatter), for the benchmarks: the
    /// same values.
    pub fn timed_internal_residual_tangent(
        &mut self,
        u: &Vector,
        r: &mut Vector,
        tangent: &mut linalg::Bsr,
    ) -> Result<DeviceAssemblyTimes, AssemblyError> {
        let timed = self.assembler.timed_residual_tangent(
            u.device_buffer()?,
            r.device_buffer_mut()?,
            tangent.device_bsr_mut()?,
        );
        self.agree_on_failure(timed)
    }

    /// Device bytes the element loop holds: its plans, mesh tables and contribution streams
    /// (what [`Self::new`] uploads and allocates for the assembly, the constraints and loads
    /// aside).
    pub fn assembly_bytes(&self) -> usize {
        self.assembler.bytes()
    }

    /// Blocks of the tangent that the constraints' elimination writes
    /// ([`Self::eliminate`]).
    pub fn eliminated_blocks(&self) -> usize {
        self.constraints.n_touched()
    }

    /// [`DiscreteProblem::residual`] on the device: `r = r_int(u) - load_factor f_ext - sum_c
    /// factor_c f_c` (curved loads), follower pressures added.
    pub fn residual(
        &mut self,
        u: &Vector,
        load_factor: f64,
        r: &mut Vector,
    ) -> Result<(), AssemblyError> {
        let assembled = self
            .assembler
            .residual(u.device_buffer()?, r.device_buffer_mut()?);
        self.agree_on_failure(assembled)?;
        self.subtract_loads(load_factor, r)?;
        for f in &mut self.follower {
            f.add(
                u.device_buffer()?,
                load_factor,
                r.device_buffer_mut()?,
                None,
            )?;
        }
        Ok(())
    }

    /// `r -= load_factor f_ext`, then `r -= factor_c f_c` per curved load: the host's order.
    fn subtract_loads(&self, load_factor: f64, r: &mut Vector) -> Result<(), AssemblyError> {
        ops::axpy(-load_factor, &self.external, r)?;
        for c in &self.curved {
            ops::axpy(-c.factor, &c.vector, r)?;
        }
        Ok(())
    }

    /// [`DiscreteProblem::linearize`] on the device: residual, unconstrained tangent and the
    /// lifting `u_D(load_factor) - u` of the constrained entries, in the host's steps.
    pub fn linearize(
        &mut self,
        u: &Vector,
        load_factor: f64,
        system: &mut NewtonSystem,
    ) -> Result<(), AssemblyError> {
        let assembled = self.assembler.residual_tangent(
            u.device_buffer()?,
            system.residual.device_buffer_mut()?,
            system.tangent.device_bsr_mut()?,
        );
        self.agree_on_failure(assembled)?;
        self.subtract_loads(load_factor, &mut system.residual)?;
        for f in &mut self.follower {
            f.add(
                u.device_buffer()?,
                load_factor,
                system.residual.device_buffer_mut()?,
                Some(system.tangent.device_bsr_mut()?),
            )?;
        }
        system.lift.fill(0.0)?;
        system.scratch.copy_from(u)?;
        self.write_prescribed(load_factor, &mut system.scratch)?;
        ops::axpy(-1.0, u, &mut system.scratch)?;
        self.copy_constrained(&system.scratch, &mut system.lift)
    }

    /// [`DiscreteProblem::eliminate`] on the device: right-hand side `-r - K lift` (free entries;
    /// zero at the constrained ones), constraints eliminated from the tangent keeping the
    /// diagonal's scale (the host's); returns the free
    /// part's norm (one scalar down).
    pub fn eliminate(&self, system: &mut NewtonSystem) -> Result<f64, AssemblyError> {
        system.tangent.spmv(&system.lift, &mut system.rhs)?;
        ops::axpby(-1.0, &system.residual, -1.0, &mut system.rhs)?;
        self.constraints.zero(system.rhs.device_buffer_mut()?)?;
        let free_norm = ops::norm2(&system.rhs)?;
        self.constraints
            .eliminate(system.tangent.device_bsr_mut()?)?;
        Ok(free_norm)
    }

    /// [`DiscreteProblem::potential`] on the device: the strain energy of every cell at `u`,
    /// summed exactly and rounded once (the host's sums: its bits whenever the cell energies are
    /// its bits), less the dead loads' work `load_factor f_ext . u` (an exact dot). An inverted
    /// cell is reported as the host reports it. Three scalars and the failure flag come down.
    pub fn potential(&mut self, u: &Vector, load_factor: f64) -> Result<Potential, AssemblyError> {
        let ud = u.device_buffer()?;
        self.assembler.elements().energies(ud, &mut self.energies)?;
        let checked = self.assembler.elements().check_failure(ud);
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
                ExactSum::allreduce(&**self.external.layout().comm(), &mut sums)
                    .map_err(LinalgError::from)?;
                (sums[0].value(), sums[1].value())
            }
        };
        let mut external = load_factor * ops::dot(&self.external, u)?;
        for c in &self.curved {
            external += c.factor * ops::dot(&c.vector, u)?;
        }
        Ok(Potential {
            value: internal - external,
            magnitude: magnitude + external.abs(),
        })
    }

    /// Norm of `r` restricted to the free entries (`scratch` is overwritten).
    pub fn free_norm(&self, r: &Vector, scratch: &mut Vector) -> Result<f64, AssemblyError> {
        scratch.copy_from(r)?;
        self.constraints.zero(scratch.device_buffer_mut()?)?;
        Ok(ops::norm2(scratch)?)
    }

    /// Copies the constrained entries of `from` into `to` (free entries of `to` untouched).
    pub fn copy_constrained(&self, from: &Vector, to: &mut Vector) -> Result<(), AssemblyError> {
        self.constraints
            .copy(from.device_buffer()?, to.device_buffer_mut()?)
    }

    /// The constrained entries of `from` written into the host vector `to` (same length; its
    /// free entries untouched): only those come down (`DeviceConstraints::copy_to_host`).
    pub fn copy_constrained_to_host(
        &self,
        from: &Vector,
        to: &mut [f64],
    ) -> Result<(), AssemblyError> {
        self.constraints.copy_to_host(from.device_buffer()?, to)
    }

    /// Writes the prescribed values at `load_factor` into `u`'s constrained entries
    /// (`DeviceConstraints::write_prescribed`: only the twists' rotations go up).
    pub fn write_prescribed(&self, load_factor: f64, u: &mut Vector) -> Result<(), AssemblyError> {
        self.constraints
            .write_prescribed(load_factor, u.device_buffer_mut()?)
    }

    /// On a rank: [`crate::error::agree_on_serial_element_failure`] (collective: the serial
    /// run's failure on every rank, as the host rank path's); serial: `local` as it is. The
    /// device's failing cell is the lowest local one (the flag's minimum), as the host's.
    fn agree_on_failure<T>(&self, local: Result<T, AssemblyError>) -> Result<T, AssemblyError> {
        match &self.rank {
            Some(share) => crate::error::agree_on_serial_element_failure(
                &**self.external.layout().comm(),
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
        self.rank.as_ref().map(|_| self.external.layout())
    }
}
