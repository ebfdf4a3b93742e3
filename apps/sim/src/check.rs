//! `hexfem check`: validate a configuration and build everything a run needs except the solve,
//! then summarise it.

use std::fmt::Write;
use std::path::Path;

use anyhow::Result;
use linalg::ops;

use config::{self, MeshSource};

/// Validates `input` (with `overrides`): everything `run` checks before solving (the
/// configuration, the output files in `output_dir` or the configured directory, the mesh,
/// materials, constraints and loads); returns a human-readable summary.
pub fn check(input: &Path, overrides: &[String], output_dir: Option<&Path>) -> Result<String> {
    check_source(&crate::Input::File(input), overrides, output_dir)
}

/// [`check`] of an input file or of standard input's text.
pub fn check_source(
    source: &crate::Input,
    overrides: &[String],
    output_dir: Option<&Path>,
) -> Result<String> {
    let input = source.path();
    let config = source.load(overrides)?;
    let dir = crate::run::output_dir(&config, output_dir);
    let name = crate::run::output_name(&config, input);
    crate::run::check_output(&config, output_dir, &dir, &name)?;
    let memory = crate::memory::guard(&config)?;
    let problem = crate::locate::build_problem(&config)?;
    // the linear solver's device must be there (`cuda`) or is chosen now (`auto`), and must run
    // this problem's Newton loop (`cuda`: an error otherwise); `method: auto` is resolved for
    // this problem
    let (solver_params, _) = crate::run::newton_device(&config, &problem)?;
    let (_, choice) = crate::locate::located(
        &config,
        solve::linear_solver::LinearSolver::choose(
            &solver_params,
            solve::problem::near_null_space(&problem.mesh.coords)?,
            solve::linear_solver::OperatorKind::Serial {
                pattern: problem.discrete.assembler.pattern(),
            },
            problem.discrete.tangent_is_symmetric(),
        ),
    )?;
    let solver = crate::solver_text::render(&choice);
    let probes = crate::probes::Probes::new(&config, &problem.mesh)?;
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
    writeln!(
        s,
        "  formulation {}",
        crate::formulation::describe(&config, mesh.order())
    )?;
    if let Some(warning) = crate::formulation::locking_warning(&config, mesh.order()) {
        writeln!(s, "  warning    {warning}")?;
    }
    for (i, m) in config.materials.iter().enumerate() {
        let cells = match &m.cells {
            config::CellSelection::All => "all cells".to_string(),
            config::CellSelection::Set(name) => format!("cell set '{name}'"),
        };
        writeln!(s, "  material   [{i}] {} on {cells}", m.model.name())?;
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
        "  loading    {} step{}, linear solver {solver}",
        config.loading.steps,
        if config.loading.steps == 1 { "" } else { "s" },
    )?;
    if !problem.discrete.follower.is_empty() {
        writeln!(
            s,
            "  pressure   {} follower pressure loads (no potential: the energy line search takes full steps)",
            problem.discrete.follower.len()
        )?;
    }
    if !probes.is_empty() {
        writeln!(s, "  probes     {}", probes.columns().join(", "))?;
    }
    writeln!(
        s,
        "  output     {}",
        dir.join(format!("{name}.h5")).display()
    )?;
    let available = crate::memory::available().map_or(String::new(), |a| {
        format!(" ({} available)", crate::memory::human(a))
    });
    writeln!(
        s,
        "  memory     about {} needed{available}",
        crate::memory::human(memory.total)
    )?;
    Ok(s)
}

fn keys<'a>(names: impl Iterator<Item = &'a String>) -> String {
    names.map(String::as_str).collect::<Vec<_>>().join(", ")
}
