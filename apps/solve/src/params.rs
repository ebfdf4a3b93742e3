//! The plain parameters of a solve: what the problem is (mesh, materials, boundary conditions,
//! loads, quadrature) and how to solve it (load stepping, Newton, linear solver). Plain values with
//! documented defaults; reading and validating an input file is `config`'s job, which converts its
//! schema into these.

use std::path::PathBuf;

use amg::AmgParams;
use fem::Material;
use mesh::BoxSpec;

pub use crate::expression::{Component, Expression};

/// Everything that defines the discrete problem of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct ProblemParams {
    pub mesh: MeshSource,
    /// Material assignments in order; a later one overrides earlier ones on the cells they share.
    /// Every cell must be covered.
    pub materials: Vec<MaterialAssignment>,
    /// Body force per unit reference volume at load factor one (numbers or expressions of the
    /// reference position; an expression of `t` is the value at each time, not scaled).
    pub body_force: [Component; 3],
    /// Prescribed displacement components on node (or face) sets.
    pub dirichlet: Vec<DirichletCondition>,
    /// Rigid rotations of node (or face) sets.
    pub twist: Vec<TwistCondition>,
    /// Dead tractions on face sets.
    pub traction: Vec<TractionLoad>,
    /// Follower pressures on face sets.
    pub pressure: Vec<PressureLoad>,
    /// Dead forces on every node of node (or face) sets.
    pub nodal_forces: Vec<NodalForce>,
    /// Dead forces at points (each on the mesh node there).
    pub point_loads: Vec<PointLoad>,
    /// Gauss points per direction; `None`: cell order + 1 (fewer than that is an error).
    pub quadrature_points: Option<usize>,
    /// How each material's element formulation is chosen (the projected volume ratio removes
    /// volumetric locking).
    pub formulation: FormulationChoice,
    /// Sets defined by geometry, added to the mesh's sets once it is read or generated.
    pub sets: Vec<GeometricSet>,
}

/// A named set selected by geometry ([`crate::geometric_sets`]): every criterion given holds.
#[derive(Clone, Debug, PartialEq)]
pub struct GeometricSet {
    pub name: String,
    pub kind: GeometricSetKind,
    /// `(lower, upper)`: inside the box, widened by the tolerance.
    pub within: Option<([f64; 3], [f64; 3])>,
    /// `(point, normal)`: on the plane, to the tolerance.
    pub plane: Option<([f64; 3], [f64; 3])>,
    /// Faces whose outward normal is within `angle` (radians) of this direction.
    pub normal: Option<[f64; 3]>,
    pub angle: f64,
    /// Where the expression of `x, y, z` is at most the tolerance.
    pub expression: Option<Expression>,
    /// Absolute length tolerance; `None`: 1e-6 times the mesh's bounding-box diagonal.
    pub tolerance: Option<f64>,
}

/// What a [`GeometricSet`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeometricSetKind {
    Nodes,
    /// Boundary faces.
    Faces,
    /// Cells, tested at their centroid.
    Cells,
}

/// How the element formulation of each material is chosen (the input's `formulation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FormulationChoice {
    /// Per material, from its small-strain Poisson's ratio and the cell order: projected where
    /// the displacement formulation locks ([`fem::Formulation::for_material`]), displacement
    /// otherwise.
    #[default]
    Auto,
    /// This formulation for every material.
    Every(fem::Formulation),
}

impl FormulationChoice {
    /// The formulation of each of `materials` (in order) on cells of `order`.
    pub fn resolve(&self, order: usize, materials: &[MaterialAssignment]) -> Vec<fem::Formulation> {
        materials
            .iter()
            .map(|m| match *self {
                FormulationChoice::Auto => fem::Formulation::for_material(order, &m.material),
                FormulationChoice::Every(f) => f,
            })
            .collect()
    }
}

/// Where the mesh comes from.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per run; boxing would only complicate matching
pub enum MeshSource {
    /// A generated (possibly trilinearly mapped) box.
    Box(BoxSpec),
    /// A Gmsh file (MSH 4.1 or 2.2), its node coordinates multiplied by `scale`.
    Gmsh { file: PathBuf, scale: f64 },
}

/// The cells a material applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CellSelection {
    /// Every cell.
    #[default]
    All,
    /// The cells of a named cell set.
    Set(String),
}

/// A material and the cells it applies to.
#[derive(Clone, Debug, PartialEq)]
pub struct MaterialAssignment {
    pub cells: CellSelection,
    pub material: Material,
}

/// `u_c = load_factor * value_c(X)` on the nodes of `set` for each given component (`X` the
/// node's reference position).
#[derive(Clone, Debug, PartialEq)]
pub struct DirichletCondition {
    pub set: String,
    /// Prescribed value (a number or an expression of the position) of each component at load
    /// factor one (an expression of `t`: the value at each time, not scaled); `None` leaves it
    /// free.
    pub values: [Option<Component>; 3],
    /// A load curve of its own (`(time, factor)` points on the run's pseudo-time, see
    /// [`LoadingParams::curve`]); empty: the run's load factor.
    pub curve: Vec<[f64; 2]>,
}

/// Rotation of the nodes of `set` about the axis through `center` along `axis` by
/// `load_factor * angle` radians (right-hand rule), plus `load_factor * axial` along the unit axis.
#[derive(Clone, Debug, PartialEq)]
pub struct TwistCondition {
    pub set: String,
    pub axis: [f64; 3],
    pub center: [f64; 3],
    /// Radians at load factor one.
    pub angle: f64,
    pub axial: f64,
    /// A load curve of its own (`(time, factor)` points on the run's pseudo-time, see
    /// [`LoadingParams::curve`]); empty: the run's load factor.
    pub curve: Vec<[f64; 2]>,
}

/// A dead traction per unit reference area on the faces of `set`, at load factor one.
#[derive(Clone, Debug, PartialEq)]
pub struct TractionLoad {
    pub set: String,
    pub value: [Component; 3],
    /// A load curve of its own (`(time, factor)` points on the run's pseudo-time, see
    /// [`LoadingParams::curve`]); empty: the run's load factor.
    pub curve: Vec<[f64; 2]>,
}

/// A follower pressure `value` (per unit current area, positive into the body: it acts against
/// the outward normal of the deformed surface) on the faces of `set`, at load factor one.
#[derive(Clone, Debug, PartialEq)]
pub struct PressureLoad {
    pub set: String,
    pub value: f64,
    /// A load curve of its own (`(time, factor)` points on the run's pseudo-time, see
    /// [`LoadingParams::curve`]); empty: the run's load factor.
    pub curve: Vec<[f64; 2]>,
}

/// A dead force `value` on every node of `set`, at load factor one.
#[derive(Clone, Debug, PartialEq)]
pub struct NodalForce {
    pub set: String,
    pub value: [f64; 3],
    /// A load curve of its own (`(time, factor)` points on the run's pseudo-time, see
    /// [`LoadingParams::curve`]); empty: the run's load factor.
    pub curve: Vec<[f64; 2]>,
}

/// A dead force `value` on the mesh node at `at` (which must be a node, to a relative tolerance
/// of 1e-9 of the mesh's size), at load factor one.
#[derive(Clone, Debug, PartialEq)]
pub struct PointLoad {
    pub at: [f64; 3],
    pub value: [f64; 3],
    /// A load curve of its own (`(time, factor)` points on the run's pseudo-time, see
    /// [`LoadingParams::curve`]); empty: the run's load factor.
    pub curve: Vec<[f64; 2]>,
}

/// The most load steps a run may ask for (`loading.steps`), and the fewest increments of the load
/// path that automatic sub-stepping may need: beyond, the run would fill the disk rather than end.
pub const MAX_LOAD_STEPS: usize = 1_000_000;

/// Load stepping: the load factor goes from 0 to 1 in `steps` equal increments, each halved on
/// Newton failure and regrown by `growth` after a success.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadingParams {
    /// Nominal increments (>= 1). Default 1.
    pub steps: usize,
    /// Smallest increment before the run gives up. Default 1e-3.
    pub min_increment: f64,
    /// Most consecutive cutbacks of one increment. Default 10.
    pub max_cutbacks: usize,
    /// Growth of an increment after an easy step, capped at the nominal increment. Default 1.5.
    pub growth: f64,
    /// The load factor as a piecewise-linear function of pseudo-time: `(time, factor)` points,
    /// times strictly increasing from 0. The steps divide `0..=last time`; every load and
    /// Dirichlet value is scaled by the factor, so a curve that returns to zero unloads. Empty
    /// (the default): the factor is the pseudo-time, from 0 to 1.
    pub curve: Vec<[f64; 2]>,
}

impl LoadingParams {
    /// The pseudo-time at the end of the load path: the curve's last time, or 1.
    pub fn end_time(&self) -> f64 {
        self.curve.last().map_or(1.0, |p| p[0])
    }

    /// The load factor at pseudo-time `t` (linear between the curve's points, constant beyond
    /// its ends).
    pub fn factor_at(&self, t: f64) -> f64 {
        curve_factor(&self.curve, t)
    }

    /// The pseudo-times at the start and the end of the nominal steps: `0`, then `k / steps` of
    /// the path's end time for `k = 1..=steps`; for more than `most` steps, `most` of them
    /// spread evenly, the last step's end among them. Ascending, starting at 0.
    pub fn step_times(&self, most: usize) -> Vec<f64> {
        let (steps, end) = (self.steps.max(1) as u128, self.end_time());
        let shown = (most.max(1) as u128).min(steps);
        std::iter::once(0.0)
            .chain((1..=shown).map(|j| {
                let k = j * steps / shown;
                if k == steps {
                    end
                } else {
                    end * (k as f64 / steps as f64)
                }
            }))
            .collect()
    }
}

/// The value at `t` of the piecewise-linear curve through `(time, factor)` points (constant
/// beyond its ends; `t` itself where the curve is empty).
pub fn curve_factor(c: &[[f64; 2]], t: f64) -> f64 {
    match c.iter().position(|p| p[0] >= t) {
        None if c.is_empty() => t,
        None => c[c.len() - 1][1],
        Some(0) => c[0][1],
        Some(i) => {
            let ([t0, f0], [t1, f1]) = (c[i - 1], c[i]);
            f0 + (f1 - f0) * (t - t0) / (t1 - t0)
        }
    }
}

/// The largest `|f(s) - f(t0)|` for `s` in `[t0, t1]` of the piecewise-linear curve `c` (as
/// [`curve_factor`]): how far the factor strays from its value at `t0` on the way to `t1`. It is
/// reached at `t1` or at one of the curve's points in between.
pub fn curve_swing(c: &[[f64; 2]], t0: f64, t1: f64) -> f64 {
    let start = curve_factor(c, t0);
    c.iter()
        .map(|p| p[0])
        .filter(|&t| t0 < t && t < t1)
        .chain(std::iter::once(t1))
        .map(|t| (curve_factor(c, t) - start).abs())
        .fold(0.0, f64::max)
}

impl Default for LoadingParams {
    fn default() -> Self {
        LoadingParams {
            steps: 1,
            min_increment: 1.0e-3,
            max_cutbacks: 10,
            growth: 1.5,
            curve: Vec::new(),
        }
    }
}

/// Newton iteration of one load step (convergence tests: see [`crate::newton`]).
#[derive(Clone, Debug, PartialEq)]
pub struct NewtonParams {
    /// Relative residual tolerance. Default 1e-8.
    pub rtol: f64,
    /// Absolute residual tolerance, a force in the input's units, tested only after an update.
    /// Default 0 (off: an absolute force depends on the unit system).
    pub atol: f64,
    /// Update-norm tolerance. Default 1e-12.
    pub stol: f64,
    /// Most iterations per load step. Default 25.
    pub max_iterations: usize,
    /// How a Newton update is damped. Default [`LineSearch::Energy`].
    pub line_search: LineSearch,
    /// Most step-length reductions per iteration (also for an inverted element). Default 8.
    pub max_line_search: usize,
    /// Tolerance of each linear solve. Default [`Forcing::EisenstatWalker`].
    pub forcing: Forcing,
}

/// Damping of the Newton update `du`: the accepted state is `u + alpha du`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineSearch {
    /// Backtracking with sufficient decrease of the potential energy
    /// `Pi(u) = W_int(u) - lambda f_ext . u` (Armijo, safeguarded quadratic interpolation): in
    /// bending and large rotation the full Newton step lowers the energy while it may raise the
    /// residual norm. Where the loads have no potential (follower pressure) the full step is
    /// taken, as with [`LineSearch::None`].
    #[default]
    Energy,
    /// Backtracking on the norm of the free residual (halving).
    Residual,
    /// The full step; shortened only where it would invert an element.
    None,
}

impl LineSearch {
    /// The name used in input files.
    pub fn name(self) -> &'static str {
        match self {
            LineSearch::Energy => "energy",
            LineSearch::Residual => "residual",
            LineSearch::None => "none",
        }
    }
}

/// The relative tolerance of the linear solve of each Newton iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Forcing {
    /// Inexact Newton: Eisenstat-Walker's choice 2 (as PETSc's `-snes_ksp_ew`: `gamma = 1`,
    /// `alpha = (1 + sqrt 5) / 2`, safeguard above 0.1; but `eta_0 = eta_max = 0.1` where PETSc
    /// has 0.3 and 0.9, see `newton`), never below `linear_solver.rtol` and never tighter than
    /// the step's convergence test needs. Iterative solvers only; a direct solve is exact anyway.
    #[default]
    EisenstatWalker,
    /// Every solve to `linear_solver.rtol`.
    Fixed,
}

impl Forcing {
    /// The name used in input files.
    pub fn name(self) -> &'static str {
        match self {
            Forcing::EisenstatWalker => "eisenstat_walker",
            Forcing::Fixed => "fixed",
        }
    }
}

impl Default for NewtonParams {
    fn default() -> Self {
        NewtonParams {
            rtol: 1.0e-8,
            atol: 0.0,
            stol: 1.0e-12,
            max_iterations: 25,
            line_search: LineSearch::Energy,
            max_line_search: 8,
            forcing: Forcing::EisenstatWalker,
        }
    }
}

/// The linear solver of each Newton iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinearSolverMethod {
    /// The direct solver where its factor is small and fast to compute (estimated from the
    /// tangent's pattern), CG with AMG otherwise (see `LinearSolver::choose`).
    Auto,
    /// CG preconditioned by one V-cycle of blocked smoothed-aggregation AMG.
    CgAmg,
    /// CG preconditioned by point-block (3x3) Jacobi.
    CgJacobi,
    /// Sparse direct factorisation.
    Direct,
}

/// Where the linear solver runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The CPU (the default).
    #[default]
    Cpu,
    /// The first CUDA GPU if one is usable, else the CPU.
    Auto,
    /// The first CUDA GPU; an error where there is none.
    Cuda,
}

/// Linear solver of each Newton iteration. Iterative methods stop when
/// `|b - A x| <= max(atol, rtol |b|)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearSolverParams {
    /// Default `Auto`.
    pub method: LinearSolverMethod,
    /// Where the iterative solvers run. Default `Cpu`.
    pub device: DeviceChoice,
    /// Default 1e-8.
    pub rtol: f64,
    /// Default 0.
    pub atol: f64,
    /// Default 2000.
    pub max_iterations: usize,
    /// The AMG preconditioner's options (`CgAmg`).
    pub amg: AmgParams,
}

impl Default for LinearSolverParams {
    fn default() -> Self {
        LinearSolverParams {
            method: LinearSolverMethod::Auto,
            device: DeviceChoice::Cpu,
            rtol: 1.0e-8,
            atol: 0.0,
            max_iterations: 2000,
            amg: AmgParams::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_curves_interpolate_linearly_and_unload() {
        let ramp = LoadingParams::default();
        assert_eq!(ramp.end_time(), 1.0);
        assert_eq!(ramp.factor_at(0.25), 0.25);
        let up_down = LoadingParams {
            curve: vec![[0.0, 0.0], [1.0, 2.0], [3.0, 0.0]],
            ..LoadingParams::default()
        };
        assert_eq!(up_down.end_time(), 3.0);
        for (t, f) in [
            (0.0, 0.0),
            (0.5, 1.0),
            (1.0, 2.0),
            (2.0, 1.0),
            (2.5, 0.5),
            (3.0, 0.0),
        ] {
            assert!((up_down.factor_at(t) - f).abs() < 1e-15, "t {t}");
        }
        assert_eq!(up_down.factor_at(4.0), 0.0);
    }

    /// The swing of a curve over an interval counts the peaks inside it, not only its ends.
    #[test]
    fn a_curves_swing_reaches_its_peaks_inside_the_interval() {
        assert_eq!(curve_swing(&[], 0.25, 0.75), 0.5);
        let up_down = [[0.0, 0.0], [1.0, 2.0], [3.0, 0.0]];
        assert_eq!(curve_swing(&up_down, 0.0, 3.0), 2.0);
        assert_eq!(curve_swing(&up_down, 0.5, 2.0), 1.0);
        assert_eq!(curve_swing(&up_down, 2.0, 3.0), 1.0);
        assert_eq!(curve_swing(&up_down, 3.0, 4.0), 0.0);
    }
}
