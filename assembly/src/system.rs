//! The discrete problem (element loop, Dirichlet constraints, dead loads) and the linear system of
//! one Newton iteration: the one "assemble, eliminate" path that Newton, the verification suite and
//! the ex56 model problem share.
//!
//! Calling order per iteration: [`DiscreteProblem::linearize`] (residual, unconstrained tangent,
//! lifting of the Dirichlet values), read what the residual says (norms, reactions), then
//! [`DiscreteProblem::eliminate`] (right-hand side with the lifting, constraints eliminated from
//! the tangent), solve `tangent du = rhs`; the correction's constrained entries are `lift`.
//!
//! Dirichlet values enter by lifting: the correction's constrained entries are `u_D(load factor) - u`,
//! so a step's prescribed motion acts through the linearised problem (the tangent's constrained
//! columns carry it into the right-hand side) instead of being pushed onto the boundary nodes alone.

use std::sync::Arc;

use fem::Load;
use linalg::exact::ExactSum;
use linalg::{ops, Bsr, Layout, LinalgError, Vector};

use crate::{AssemblyError, Constraints, ElasticityAssembler};

/// A discretised elasticity problem: the element loop over the mesh with its materials, the
/// Dirichlet constraints and the dead loads. Knows nothing of load stepping or linear solvers.
pub struct DiscreteProblem {
    pub assembler: ElasticityAssembler,
    pub constraints: Constraints,
    /// Dead loads (body force and tractions) at load factor one, node-major.
    pub external: Vector,
    /// Follower pressures: their forces depend on the displacement and are added to the residual
    /// and the tangent of every evaluation.
    pub follower: Vec<crate::FollowerPressure>,
    /// Dead loads on load curves of their own: scaled by their `factor` (set by the caller for
    /// the current pseudo-time) instead of the load factor.
    pub curved: Vec<CurvedLoad>,
    /// On one rank of a distributed run: the layout of every vector (owned nodes' entries, then
    /// the ghost nodes') and which local cells the rank owns. `None`: serial.
    pub partition: Option<RankPart>,
}

/// A rank's share of a distributed problem: the mesh part's owned nodes come first, so the
/// reductions of `linalg::ops` (owned entries, then over the ranks) are the global ones; the
/// potential sums the owned cells' energies, then over the ranks.
#[derive(Clone, Debug)]
pub struct RankPart {
    pub layout: Arc<Layout>,
    pub owned_cells: Vec<bool>,
    /// The serial number of each local cell, ascending ([`mesh::MeshPart::cell_serial_ids`]):
    /// an element failure names the cell as the serial run does.
    pub cell_serial_ids: Vec<u64>,
}

/// A dead load (node-major, at factor one) with the factor of its own load curve.
#[derive(Clone, Debug)]
pub struct CurvedLoad {
    pub vector: Vector,
    pub factor: f64,
    /// Whether `vector` itself is recomputed at every pseudo-time (an expression of the time `t`;
    /// its factor stays one): a copy elsewhere (the device's) must take it again per load step.
    pub timed: bool,
}

/// The potential energy of a state (see [`DiscreteProblem::potential`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Potential {
    pub value: f64,
    /// Sum of the magnitudes of the cell energies and the external work.
    pub magnitude: f64,
}

/// The linear system of one Newton iteration at a state `u` and a load factor, and the buffers it
/// is built in (allocated once, reused every iteration), on the device of the problem that made
/// it ([`DiscreteProblem::new_system`] on the host, [`crate::device::DeviceProblem::new_system`]
/// on a GPU).
pub struct NewtonSystem {
    /// `r(u) - load_factor f_ext`, every entry (the constrained ones are the support reactions).
    pub residual: Vector,
    /// The tangent at `u`; its constraints are eliminated by [`DiscreteProblem::eliminate`].
    pub tangent: Bsr,
    /// `u_D(load factor) - u` on the constrained entries, zero on the free ones.
    pub lift: Vector,
    /// After [`DiscreteProblem::eliminate`]: `-r - K lift` on the free entries, zero on the
    /// constrained ones (the solve's answer there is zero; Newton's correction takes `lift`).
    pub rhs: Vector,
    pub(crate) scratch: Vector,
}

impl NewtonSystem {
    /// Whether the state meets the Dirichlet values exactly (`lift` is zero).
    pub fn constraints_met(&self) -> Result<bool, AssemblyError> {
        Ok(ops::norm_inf(&self.lift)? == 0.0)
    }
}

impl DiscreteProblem {
    /// Unknowns: three per node, constrained ones included.
    pub fn n_dofs(&self) -> usize {
        3 * self.assembler.n_nodes()
    }

    /// A zero vector of the problem's unknowns, with the problem's layout (serial, or a rank's
    /// owned and ghost entries). Errors where a rank's layout does not hold the part's
    /// unknowns.
    pub fn zeros(&self) -> Result<Vector, LinalgError> {
        let n = self.n_dofs();
        Ok(match &self.partition {
            None => Vector::zeros(n),
            Some(part) => Vector::from_vec_with_layout(part.layout.clone(), vec![0.0; n])?,
        })
    }

    /// Zeroed buffers of a Newton system on this problem's tangent pattern.
    pub fn new_system(&self) -> Result<NewtonSystem, AssemblyError> {
        Ok(NewtonSystem {
            residual: self.zeros()?,
            tangent: self.assembler.new_matrix(),
            lift: self.zeros()?,
            rhs: self.zeros()?,
            scratch: self.zeros()?,
        })
    }

    /// `r = r_int(u) - load_factor * f_ext`.
    pub fn residual(
        &mut self,
        u: &Vector,
        load_factor: f64,
        r: &mut Vector,
    ) -> Result<(), AssemblyError> {
        let assembled = self.assembler.residual(u, Load::None, r);
        self.agreed(assembled)?;
        ops::axpy(-load_factor, &self.external, r)?;
        for c in &self.curved {
            ops::axpy(-c.factor, &c.vector, r)?;
        }
        for f in &self.follower {
            f.add(self.assembler.coords(), u, load_factor, r, None)?;
        }
        Ok(())
    }

    /// Assembles the residual and the (unconstrained) tangent at `u` and the lifting
    /// `u_D(load_factor) - u` of the constrained entries into `system`.
    pub fn linearize(
        &mut self,
        u: &Vector,
        load_factor: f64,
        system: &mut NewtonSystem,
    ) -> Result<(), AssemblyError> {
        let assembled = self.assembler.residual_tangent(
            u,
            Load::None,
            &mut system.residual,
            &mut system.tangent,
        );
        self.agreed(assembled)?;
        ops::axpy(-load_factor, &self.external, &mut system.residual)?;
        for c in &self.curved {
            ops::axpy(-c.factor, &c.vector, &mut system.residual)?;
        }
        for f in &self.follower {
            f.add(
                self.assembler.coords(),
                u,
                load_factor,
                &mut system.residual,
                Some(&mut system.tangent),
            )?;
        }
        system.lift.fill(0.0)?;
        system.scratch.copy_from(u)?;
        self.constraints.write_prescribed(
            load_factor,
            self.assembler.coords(),
            &mut system.scratch,
        )?;
        ops::axpy(-1.0, u, &mut system.scratch)?;
        self.constraints
            .copy_constrained(&system.scratch, &mut system.lift)?;
        Ok(())
    }

    /// Forms the right-hand side `-r - K lift` (free entries; zero at the constrained ones) and
    /// eliminates the constraints from the tangent symmetrically, each constrained diagonal
    /// entry keeping a fixed fraction of its magnitude
    /// (`linalg::ELIMINATED_DIAGONAL_FRACTION`): the linear system is the same in any consistent units up to
    /// their factors (a constrained entry's `lift` in the right-hand side, or a diagonal of one,
    /// would weigh a length against forces in the solver's tolerance and its AMG). Returns the norm of the free part
    /// of the right-hand side (the out-of-balance force, lifting included), which Newton uses as
    /// its reference norm.
    pub fn eliminate(&self, system: &mut NewtonSystem) -> Result<f64, AssemblyError> {
        system.tangent.spmv(&system.lift, &mut system.rhs)?;
        ops::axpby(-1.0, &system.residual, -1.0, &mut system.rhs)?;
        self.constraints.zero_constrained(&mut system.rhs)?;
        let free_norm = ops::norm2(&system.rhs)?;
        self.constraints.eliminate_in_matrix(&mut system.tangent)?;
        Ok(free_norm)
    }

    /// Whether the tangent of [`DiscreteProblem::linearize`] is symmetric: it is not where a
    /// follower pressure adds its load stiffness (solvers then need GMRES, not CG or `LDL^T`).
    pub fn tangent_is_symmetric(&self) -> bool {
        self.follower.is_empty()
    }

    /// Whether the loads derive from a potential that [`DiscreteProblem::potential`] evaluates
    /// (dead loads do; follower pressures are not included there).
    pub fn has_potential(&self) -> bool {
        self.follower.is_empty()
    }

    /// The potential energy `Pi(u) = W_int(u) - load_factor f_ext . u` of the dead loads (whose
    /// gradient is the residual of [`DiscreteProblem::residual`]), and the sum of the magnitudes
    /// of its terms (what round-off in `Pi` is relative to). Cell energies are summed exactly
    /// (`linalg::exact::ExactSum`): the same bits for any thread count, partition or rank count.
    pub fn potential(&self, u: &Vector, load_factor: f64) -> Result<Potential, AssemblyError> {
        let assembler = &self.assembler;
        let energies = self.agreed(assembler.map_cells(u, |c, x, ue, material| {
            assembler.kernel_of(c).strain_energy(x, ue, material)
        }))?;
        // exact sums: the same bits in any cell order, so for any partition and rank count
        let (mut internal, mut magnitude) = (ExactSum::new(), ExactSum::new());
        for (c, e) in energies.into_iter().enumerate() {
            if self.partition.as_ref().is_some_and(|p| !p.owned_cells[c]) {
                continue;
            }
            internal.add(e);
            magnitude.add(e.abs());
        }
        let mut sums = [internal, magnitude];
        if let Some(part) = &self.partition {
            ExactSum::allreduce(&**part.layout.comm(), &mut sums)
                .map_err(linalg::LinalgError::from)?;
        }
        let [internal, magnitude] = sums.map(|s| s.value());
        let mut external = load_factor * ops::dot(&self.external, u)?;
        for c in &self.curved {
            external += c.factor * ops::dot(&c.vector, u)?;
        }
        Ok(Potential {
            value: internal - external,
            magnitude: magnitude + external.abs(),
        })
    }

    /// On a rank: [`crate::error::agree_on_serial_element_failure`] (collective: the serial
    /// run's failure on every rank); serial: `local`.
    fn agreed<T>(&self, local: Result<T, AssemblyError>) -> Result<T, AssemblyError> {
        match &self.partition {
            Some(part) => crate::error::agree_on_serial_element_failure(
                &**part.layout.comm(),
                &part.cell_serial_ids,
                self.assembler.cell_tags(),
                local,
            ),
            None => local,
        }
    }

    /// Norm of `r` restricted to the free entries (`scratch` is overwritten).
    pub fn free_norm(&self, r: &Vector, scratch: &mut Vector) -> Result<f64, AssemblyError> {
        scratch.copy_from(r)?;
        self.constraints.zero_constrained(scratch)?;
        Ok(ops::norm2(scratch)?)
    }

    /// Copies the constrained entries of `from` into `to` (free entries of `to` untouched).
    pub fn copy_constrained(&self, from: &Vector, to: &mut Vector) -> Result<(), AssemblyError> {
        self.constraints.copy_constrained(from, to)
    }

    /// Writes the prescribed values at `load_factor` into `u`'s constrained entries
    /// ([`Constraints::write_prescribed`] at the mesh's coordinates).
    pub fn write_prescribed(&self, load_factor: f64, u: &mut Vector) -> Result<(), AssemblyError> {
        self.constraints
            .write_prescribed(load_factor, self.assembler.coords(), u)
    }
}
