//! The text of `hexfem check`: what the check of a valid input found.

use std::fmt::Write;

use config::{CellSelection, MeshSource};
use sim::check::{CheckReport, CheckScope, PartitionReport, ProblemReport};

/// The report as `hexfem check` prints it.
pub fn render(report: &CheckReport) -> String {
    let mut s = String::new();
    let input = report.input.display();
    match &report.scope {
        CheckScope::Process(p) => problem(&mut s, &input.to_string(), p),
        CheckScope::Ranks(p) => partition(&mut s, &input.to_string(), p),
    }
    let _ = writeln!(s, "  output     {}", report.output.display());
    if let Some(warning) = report.overwrite_warning() {
        let _ = writeln!(s, "  warning    {warning}");
    }
    if let CheckScope::Process(p) = &report.scope {
        let available = p.memory_available.map_or(String::new(), |a| {
            format!(" ({} available)", sim::memory::human(a))
        });
        let needed = sim::memory::human(p.memory_needed);
        let _ = writeln!(s, "  memory     about {needed} needed{available}");
    }
    s
}

fn problem(s: &mut String, input: &str, p: &ProblemReport) {
    let _ = writeln!(s, "{input}: valid");
    let source = match &p.mesh {
        MeshSource::Box(b) => format!("box {}x{}x{} cells", b.cells[0], b.cells[1], b.cells[2]),
        MeshSource::Gmsh(g) => format!("gmsh {}", g.file.display()),
    };
    let _ = writeln!(
        s,
        "  mesh       {source}, Q{} hexahedra: {} cells, {} nodes, {} unknowns",
        p.order, p.cells, p.nodes, p.unknowns
    );
    let _ = writeln!(
        s,
        "  sets       nodes [{}]  faces [{}]  cells [{}]",
        p.node_sets.join(", "),
        p.face_sets.join(", "),
        p.cell_sets.join(", ")
    );
    let _ = writeln!(s, "  formulation {}", p.formulation);
    if let Some(warning) = &p.locking_warning {
        let _ = writeln!(s, "  warning    {warning}");
    }
    for (i, (model, cells)) in p.materials.iter().enumerate() {
        let cells = match cells {
            CellSelection::All => "all cells".to_string(),
            CellSelection::Set(name) => format!("cell set '{name}'"),
        };
        let _ = writeln!(s, "  material   [{i}] {} on {cells}", model.name());
    }
    let _ = writeln!(s, "  dirichlet  {} constrained unknowns", p.constrained);
    let [x, y, z] = p.dead_load;
    let _ = writeln!(
        s,
        "  loads      total dead load at factor 1: [{x:.6e}, {y:.6e}, {z:.6e}] (|f| = {:.3e})",
        p.dead_load_norm
    );
    let _ = writeln!(
        s,
        "  loading    {} step{}, linear solver {}",
        p.steps,
        if p.steps == 1 { "" } else { "s" },
        sim::solver_text::render(&p.solver)
    );
    if p.follower_pressures > 0 {
        let _ = writeln!(
            s,
            "  pressure   {} follower pressure loads (no potential: the energy line search takes full steps)",
            p.follower_pressures
        );
    }
    if !p.probes.is_empty() {
        let _ = writeln!(s, "  probes     {}", p.probes.join(", "));
    }
}

fn partition(s: &mut String, input: &str, p: &PartitionReport) {
    let _ = writeln!(s, "{input}: valid on {} MPI ranks", p.ranks.len());
    let _ = writeln!(
        s,
        "  mesh       Q{} hexahedra: {} cells, {} nodes, {} unknowns",
        p.order,
        p.cells,
        p.nodes,
        3 * p.nodes
    );
    let _ = writeln!(
        s,
        "  rank   owned nodes   ghost nodes   owned cells   ghost cells"
    );
    for (r, c) in p.ranks.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {r:>4}   {:>11}   {:>11}   {:>11}   {:>11}",
            c[0], c[1], c[2], c[3]
        );
    }
    let _ = writeln!(
        s,
        "  balance    max/mean owned nodes {:.3}, owned cells {:.3}",
        p.imbalance(0),
        p.imbalance(2)
    );
}
