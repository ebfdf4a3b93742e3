//! What the cases share: Dirichlet data from a field, one linear-elastic solve through the
//! production path (the assembler, [`DiscreteProblem`]'s linearisation and elimination that every
//! Newton iteration uses, the linear solver), and relative error norms.

use assembly::{
    body_force_load, CellMaterials, Constraints, DiscreteProblem, ElasticityAssembler, Prescribed,
};
use fem::{Formulation, Load, Material};
use linalg::{ops, Vector};
use mesh::HexMesh;

use solve::linear_solver::{LinearSolveReport, LinearSolver, OperatorKind};
use solve::params::{LinearSolverMethod, LinearSolverParams};
use solve::problem::near_null_space;

use crate::error::fail;
use crate::error::Context;
use crate::Result;

/// An exact solution: displacement and its gradient `g[i][j] = du_i/dX_j` at a point.
pub(crate) type ExactField<'a> = &'a (dyn Fn([f64; 3]) -> ([f64; 3], [[f64; 3]; 3]) + Sync);

/// A linear-elastic solution and the operator it was computed with.
pub(crate) struct Solution {
    pub assembler: ElasticityAssembler,
    pub u: Vector,
    pub report: LinearSolveReport,
}

/// The sparse direct solver (small meshes, round-off accuracy).
pub(crate) fn direct() -> LinearSolverParams {
    LinearSolverParams {
        method: LinearSolverMethod::Direct,
        ..LinearSolverParams::default()
    }
}

/// CG preconditioned by the smoothed-aggregation AMG (default options) to a relative residual of
/// `rtol`.
pub(crate) fn cg_amg(rtol: f64, max_iterations: usize) -> LinearSolverParams {
    LinearSolverParams {
        method: LinearSolverMethod::CgAmg,
        rtol,
        atol: 0.0,
        max_iterations,
        ..LinearSolverParams::default()
    }
}

/// The sorted, unique nodes of the six face sets `xmin..zmax` of a generated box.
pub(crate) fn boundary_nodes(mesh: &HexMesh) -> Result<Vec<usize>> {
    let mut nodes = Vec::new();
    for set in ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"] {
        nodes.extend(mesh.set_nodes(set)?);
    }
    nodes.sort_unstable();
    nodes.dedup();
    Ok(nodes)
}

/// One prescription per node: component `c` of node `n` is `value(X_n)[c]` where given.
pub(crate) fn prescribe(
    set: &str,
    mesh: &HexMesh,
    nodes: &[usize],
    value: impl Fn([f64; 3]) -> [Option<f64>; 3],
) -> Vec<Prescribed> {
    nodes
        .iter()
        .map(|&n| Prescribed::Components {
            set: set.to_owned(),
            nodes: vec![n],
            values: value(mesh.coords[n]),
        })
        .collect()
}

/// Solves the linear-elastic problem `K u = f_body + external` with `prescribed` displacements,
/// as one Newton iteration from the prescribed values (exact for a linear material):
/// [`DiscreteProblem::linearize`] at `u0 = u_D`, [`DiscreteProblem::eliminate`], one linear solve.
/// The quadrature has `order + 1` Gauss points per direction, as in `hexfem run`; the element
/// formulation is `formulation` (B-bar for the linear material where projected).
pub(crate) fn solve_linear_elastic(
    mesh: &HexMesh,
    material: Material,
    formulation: Formulation,
    prescribed: Vec<Prescribed>,
    body: Load<'_>,
    external: Option<&Vector>,
    solver: &LinearSolverParams,
) -> Result<Solution> {
    let mut assembler = ElasticityAssembler::new(
        mesh,
        CellMaterials::uniform(material, mesh.n_cells()),
        mesh.order() + 1,
    )?;
    assembler.set_formulation(formulation)?;
    let constraints = Constraints::new(mesh.n_nodes(), prescribed, &assembler.orphan_nodes())?;
    let mut loads = body_force_load(&mut assembler, body)?;
    let n = loads.len();
    if let Some(f) = external {
        if f.len() != n {
            fail!("external load has {} entries, expected {n}", f.len());
        }
        ops::axpy(1.0, f, &mut loads)?;
    }
    let mut problem = DiscreteProblem {
        assembler,
        constraints,
        external: loads,
        follower: Vec::new(),
        curved: Vec::new(),
        partition: None,
    };
    let mut u = Vector::zeros(n);
    problem
        .constraints
        .write_prescribed(1.0, &mesh.coords, &mut u)?;
    let mut system = problem.new_system()?;
    problem.linearize(&u, 1.0, &mut system)?;
    problem.eliminate(&mut system)?;
    let mut du = Vector::zeros(n);
    let report = LinearSolver::new(
        solver,
        near_null_space(&mesh.coords)?,
        OperatorKind::Serial {
            pattern: &|| system.tangent.pattern(),
        },
        problem.tangent_is_symmetric(),
    )?
    .solve(&system.tangent, &system.rhs, &mut du)
    .context("linear solve")?;
    if !report.converged {
        fail!(
            "the linear solver stopped after {} iterations without converging",
            report.iterations
        );
    }
    problem
        .constraints
        .copy_constrained(&system.lift, &mut du)?;
    ops::axpy(1.0, &du, &mut u)?;
    Ok(Solution {
        assembler: problem.assembler,
        u,
        report,
    })
}

/// Relative errors `(||u_h - u||_L2 / ||u||_L2, |u_h - u|_H1 / |u|_H1)` over the mesh, integrated
/// with the element kernel's error rule (two Gauss points per direction more than assembly).
pub(crate) fn relative_errors(solution: &Solution, exact: ExactField<'_>) -> Result<(f64, f64)> {
    let sum = |u: &Vector| -> Result<(f64, f64)> {
        let kernel = solution.assembler.kernel();
        let cells = solution
            .assembler
            .map_cells(u, |_, x, u, _| kernel.errors(x, u, exact))?;
        // cell order, whatever the thread count: the sums are deterministic
        Ok(cells
            .iter()
            .fold((0.0, 0.0), |(l2, h1), (a, b)| (l2 + a, h1 + b)))
    };
    let (l2, h1) = sum(&solution.u)?;
    let (l2_exact, h1_exact) = sum(&Vector::zeros(solution.u.len()))?;
    let nonzero = l2_exact > 0.0 && h1_exact > 0.0;
    if !nonzero {
        fail!("the exact solution has zero norm");
    }
    Ok(((l2 / l2_exact).sqrt(), (h1 / h1_exact).sqrt()))
}
