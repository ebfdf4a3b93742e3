//! `hexfem check`: validate a configuration and build everything a run needs except the solve,
//! then summarise it.

use std::fmt::Write;
use std::path::Path;

use anyhow::Result;
use linalg::ops;

use config::{self, MeshSource};
use solve::problem::Problem;

/// Validates `input` (with `overrides`) and returns a human-readable summary.
pub fn check(input: &Path, overrides: &[String]) -> Result<String> {
    let config = config::load_with_overrides(input, overrides)?;
    let problem = Problem::new(&config.problem_params()?)?;
    let mesh = &problem.mesh;
    let mut s = String::new();
    writeln!(s, "{}: valid", input.display())?;
    let source = match &config.mesh {
        MeshSource::Box(b) => format!("box {}x{}x{} cells", b.cells[0], b.cells[1], b.cells[2]),
        MeshSource::Gmsh(g) => format!("gmsh {}", g.file.display()),
    };
    writeln!(
        s,
        "  mesh       {source}, Q{} hexahedra: {} cells, {} nodes, {} unknowns",
        mesh.order(),
        mesh.n_cells(),
        mesh.n_nodes(),
        problem.n_dofs()
    )?;
    writeln!(
        s,
        "  sets       nodes [{}]  faces [{}]  cells [{}]",
        keys(mesh.node_sets.keys()),
        keys(mesh.face_sets.keys()),
        keys(mesh.cell_sets.keys())
    )?;
    for (i, m) in config.materials.iter().enumerate() {
        writeln!(s, "  material   [{i}] {} on {:?}", m.model.name(), m.cells)?;
    }
    writeln!(
        s,
        "  dirichlet  {} constrained unknowns",
        problem.discrete.constraints.n_constrained()
    )?;
    let external = problem.discrete.external.host()?;
    let total: [f64; 3] = std::array::from_fn(|d| external.iter().skip(d).step_by(3).sum());
    writeln!(
        s,
        "  loads      total dead load at factor 1: [{:.6e}, {:.6e}, {:.6e}] (|f| = {:.3e})",
        total[0],
        total[1],
        total[2],
        ops::norm2(&problem.discrete.external)?
    )?;
    writeln!(
        s,
        "  loading    {} steps, linear solver {:?}",
        config.loading.steps, config.linear_solver.method
    )?;
    Ok(s)
}

fn keys<'a>(names: impl Iterator<Item = &'a String>) -> String {
    names.map(String::as_str).collect::<Vec<_>>().join(", ")
}
