//! [`NewtonProblem`]: the one discrete-problem API of a Newton iteration, over either assembly
//! backend (libCEED's way): the host's [`DiscreteProblem`] or its upload to a GPU,
//! [`crate::device::DeviceProblem`]. Both take and give linalg's [`Vector`] and a
//! [`NewtonSystem`] stored where the problem is (its [`NewtonProblem::zeros`] and
//! [`NewtonProblem::new_system`]); a caller drives either through `&mut dyn NewtonProblem`.
//!
//! Each method is the implementor's inherent method of the same name (documented there); the
//! results are the same bits on either backend wherever the element values are.

use linalg::{LinalgError, Vector};

use crate::{AssemblyError, DiscreteProblem, NewtonSystem, Potential};

/// What a Newton iteration needs of a discretised problem, wherever it is assembled. Every
/// vector and system handed in must be on the problem's device, with its layout (made by
/// [`Self::zeros`] / [`Self::new_system`] or copied from one).
pub trait NewtonProblem {
    /// Zeros of the unknowns (constrained ones included), on the problem's device and layout.
    fn zeros(&self) -> Result<Vector, LinalgError>;

    /// A zeroed Newton system on the tangent pattern, on the problem's device.
    fn new_system(&self) -> Result<NewtonSystem, AssemblyError>;

    /// Residual, unconstrained tangent and lifting `u_D(load_factor) - u` into `system`.
    fn linearize(
        &mut self,
        u: &Vector,
        load_factor: f64,
        system: &mut NewtonSystem,
    ) -> Result<(), AssemblyError>;

    /// Right-hand side and eliminated tangent; the free part's norm.
    fn eliminate(&self, system: &mut NewtonSystem) -> Result<f64, AssemblyError>;

    /// `r = r_int(u) - load_factor f_ext` (curved loads and follower pressures included).
    fn residual(
        &mut self,
        u: &Vector,
        load_factor: f64,
        r: &mut Vector,
    ) -> Result<(), AssemblyError>;

    /// Norm of `r` restricted to the free entries (`scratch` is overwritten).
    fn free_norm(&self, r: &Vector, scratch: &mut Vector) -> Result<f64, AssemblyError>;

    /// The potential energy of the dead loads at `u` (exact sums).
    fn potential(&mut self, u: &Vector, load_factor: f64) -> Result<Potential, AssemblyError>;

    /// Copies the constrained entries of `from` into `to` (free entries of `to` untouched).
    fn copy_constrained(&self, from: &Vector, to: &mut Vector) -> Result<(), AssemblyError>;

    /// Writes the prescribed values at `load_factor` into `u`'s constrained entries.
    fn write_prescribed(&self, load_factor: f64, u: &mut Vector) -> Result<(), AssemblyError>;
}

/// Implements [`NewtonProblem`] for `$problem` by its inherent methods of the same names (the
/// host's and the device's problem have the same API; the trait only names it).
macro_rules! newton_problem_by_inherent_methods {
    ($problem:ty) => {
        impl NewtonProblem for $problem {
            fn zeros(&self) -> Result<Vector, LinalgError> {
                <$problem>::zeros(self)
            }

            fn new_system(&self) -> Result<NewtonSystem, AssemblyError> {
                <$problem>::new_system(self)
            }

            fn linearize(
                &mut self,
                u: &Vector,
                load_factor: f64,
                system: &mut NewtonSystem,
            ) -> Result<(), AssemblyError> {
                <$problem>::linearize(self, u, load_factor, system)
            }

            fn eliminate(&self, system: &mut NewtonSystem) -> Result<f64, AssemblyError> {
                <$problem>::eliminate(self, system)
            }

            fn residual(
                &mut self,
                u: &Vector,
                load_factor: f64,
                r: &mut Vector,
            ) -> Result<(), AssemblyError> {
                <$problem>::residual(self, u, load_factor, r)
            }

            fn free_norm(&self, r: &Vector, scratch: &mut Vector) -> Result<f64, AssemblyError> {
                <$problem>::free_norm(self, r, scratch)
            }

            fn potential(
                &mut self,
                u: &Vector,
                load_factor: f64,
            ) -> Result<Potential, AssemblyError> {
                <$problem>::potential(self, u, load_factor)
            }

            fn copy_constrained(
                &self,
                from: &Vector,
                to: &mut Vector,
            ) -> Result<(), AssemblyError> {
                <$problem>::copy_constrained(self, from, to)
            }

            fn write_prescribed(
                &self,
                load_factor: f64,
                u: &mut Vector,
            ) -> Result<(), AssemblyError> {
                <$problem>::write_prescribed(self, load_factor, u)
            }
        }
    };
}

newton_problem_by_inherent_methods!(DiscreteProblem);
newton_problem_by_inherent_methods!(crate::device::DeviceProblem);
