//! The output fields derived from a state beyond the element loop's cell fields: the cell-averaged
//! strains (computed on the host from the displacement, also in GPU runs, so every device and
//! rank count writes the same values) and the principal stresses (from the cell-averaged or nodal
//! Cauchy stress, wherever that was computed).

use config::{Config, OutputField};
use linalg::Vector;
use solve::problem::Problem;

use crate::Result;

/// The strain fields `config` writes or probes, in [`OutputField`] order.
pub fn strain_fields(config: &Config) -> Vec<OutputField> {
    OutputField::OPTIONAL
        .into_iter()
        .filter(|f| f.strain_measure().is_some())
        .filter(|&f| config.output.wants(f) || crate::probes::reads_field(config, f))
        .collect()
}

/// Each strain field of [`strain_fields`] for every cell of `problem`'s element loop at the
/// state `u` (on a rank's part: owned and ghost cells; `u`'s ghost entries current): the
/// reference-volume average over the cell, full 3x3 row-major.
pub fn cell_strains(
    problem: &Problem,
    u: &Vector,
    config: &Config,
) -> Result<Vec<(OutputField, Vec<[f64; 9]>)>> {
    let assembler = &problem.discrete.assembler;
    strain_fields(config)
        .into_iter()
        .filter_map(|f| f.strain_measure().map(|m| (f, m)))
        .map(|(field, measure)| {
            let values = assembler.map_cells(u, |c, x, ue, material| {
                assembler.kernel_of(c).cell_strain(x, ue, material, measure)
            })?;
            Ok((field, values))
        })
        .collect()
}

/// Named sets, each with its sorted members.
pub type SetMembers = Vec<(String, Vec<usize>)>;

/// With `sets` in `output.fields`: the member nodes of each node or face set of `mesh` by name
/// (sorted names; a name of both kinds: its node set), shown as 0/1 attributes.
pub fn set_indicator_nodes(config: &Config, mesh: &mesh::HexMesh) -> Result<Option<SetMembers>> {
    if !config.output.wants(OutputField::Sets) {
        return Ok(None);
    }
    let mut names: Vec<&String> = mesh.node_sets.keys().chain(mesh.face_sets.keys()).collect();
    names.sort_unstable();
    names.dedup();
    let list = names
        .into_iter()
        .map(|n| Ok((n.clone(), mesh.set_nodes(n)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(list))
}

/// The principal values of each full 3x3 (row-major) stress, largest first.
pub fn principal(stresses: &[[f64; 9]]) -> Vec<[f64; 3]> {
    stresses.iter().map(fem::principal_values_of).collect()
}
