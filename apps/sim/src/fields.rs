//! The output fields derived from a state beyond the element loop's cell fields: the cell-averaged
//! strains and the principal stresses (from the cell-averaged or nodal Cauchy stress, wherever
//! that was computed). Every device and rank count writes the same strain values, wherever they
//! are computed: on the host from the displacement ([`cell_strains`]; in one process those no
//! probe reads on the output writer's thread, [`StrainCells`]), or, in a one-process GPU run, the
//! model's and the Green-Lagrange strain by the device (the host's operations, bit for bit).

use std::sync::Arc;

use assembly::{AssemblyError, CellMaterials};
use config::{Config, OutputField};
use fem::{CellFieldSet, ElementKernel, FemError, Formulation, Material, StrainMeasure};
use linalg::Vector;
use mesh::HexMesh;
use rayon::prelude::*;
use solve::newton::CellStrains;
use solve::problem::Problem;

use crate::error::fail;
use crate::Result;

/// The strain fields `config` writes or probes, in [`OutputField`] order.
pub fn strain_fields(config: &Config) -> Vec<OutputField> {
    OutputField::OPTIONAL
        .into_iter()
        .filter(|f| f.strain_measure().is_some())
        .filter(|&f| config.output.wants(f) || crate::probes::reads_field(config, f))
        .collect()
}

/// The element loop's cell fields a state's output needs: [`CellFieldSet::Checks`] (`J` and
/// the strain energy, what every state's checks and figures read) where `config` writes only
/// node fields (displacement, reactions, set indicators) and no probe reads a field of the
/// cells (a point's other than the displacement, any set probe's, a cell global); else
/// [`CellFieldSet::Every`].
pub fn cell_field_set(config: &Config) -> CellFieldSet {
    let node_fields_only = config.output.fields.iter().all(|f| {
        matches!(
            f,
            OutputField::Displacement | OutputField::Reaction | OutputField::Sets
        )
    });
    if node_fields_only && !crate::probes::reads_cell_outputs(config, false) {
        CellFieldSet::Checks
    } else {
        CellFieldSet::Every
    }
}

/// The strain measures of [`strain_fields`], in the same order.
pub fn strain_measures(config: &Config) -> Vec<StrainMeasure> {
    strain_fields(config)
        .into_iter()
        .filter_map(OutputField::strain_measure)
        .collect()
}

/// Each strain field of [`strain_fields`] for every cell of `problem`'s element loop at the
/// state `u` (on a rank's part: owned and ghost cells; `u`'s ghost entries current): the
/// reference-volume average over the cell, full 3x3 row-major. A measure of `computed` (the
/// device's, in cell order) is taken as it is; the others are computed on the host.
pub fn cell_strains(
    problem: &Problem,
    u: &Vector,
    config: &Config,
    computed: CellStrains,
) -> Result<Vec<(OutputField, Vec<[f64; 9]>)>> {
    cell_strains_of(problem, u, &strain_fields(config), computed)
}

/// [`cell_strains`] of the strain fields `fields` (in their order).
pub(crate) fn cell_strains_of(
    problem: &Problem,
    u: &Vector,
    fields: &[OutputField],
    mut computed: CellStrains,
) -> Result<Vec<(OutputField, Vec<[f64; 9]>)>> {
    let assembler = &problem.discrete.assembler;
    fields
        .iter()
        .filter_map(|&f| f.strain_measure().map(|m| (f, m)))
        .map(|(field, measure)| {
            if let Some(k) = computed.iter().position(|(m, _)| *m == measure) {
                let (_, values) = computed.swap_remove(k);
                if values.len() != assembler.n_cells() {
                    fail!(
                        "{} {measure:?} strains from the GPU for {} cells",
                        values.len(),
                        assembler.n_cells()
                    );
                }
                return Ok((field, values));
            }
            let values = assembler.map_cells(u, |c, x, ue, material| {
                assembler.kernel_of(c).cell_strain(x, ue, material, measure)
            })?;
            Ok((field, values))
        })
        .collect()
}

/// The strains (and the first state's cell fields) of a state computed away from the problem, on
/// the output writer's thread from the state's displacement (one process): the materials and
/// element kernels of the problem's element loop over the writer's copy of the mesh, whose cells
/// and nodes the loop's are.
pub(crate) struct StrainCells {
    mesh: Arc<HexMesh>,
    materials: CellMaterials,
    kernel: ElementKernel,
    projected: Option<ElementKernel>,
}

impl StrainCells {
    /// `None` where `problem`'s element loop is not over `mesh`'s cells and nodes as they are
    /// (then the strains stay with the problem).
    pub(crate) fn of(problem: &Problem, mesh: Arc<HexMesh>) -> Option<Self> {
        let assembler = &problem.discrete.assembler;
        // compared in parallel (once per run; the whole connectivity and coordinates)
        fn equal<T: PartialEq + Sync>(a: &[T], b: &[T]) -> bool {
            a.len() == b.len() && a.par_iter().zip(b).all(|(x, y)| x == y)
        }
        let same = equal(assembler.cells(), &mesh.cells) && equal(assembler.coords(), &mesh.coords);
        same.then(|| StrainCells {
            materials: assembler.materials().clone(),
            kernel: assembler.kernel().clone(),
            projected: assembler
                .kernel_of_formulation(Formulation::Projected)
                .cloned(),
            mesh,
        })
    }

    /// The strain `field` of every cell at the displacement `u` (per node), in parallel: the
    /// values of [`cell_strains`] bit for bit (the same kernel of each cell, from the same
    /// coordinates and displacements).
    pub(crate) fn strains(&self, u: &[[f64; 3]], field: OutputField) -> Result<Vec<[f64; 9]>> {
        let Some(measure) = field.strain_measure() else {
            fail!("{} is not a strain field", field.name());
        };
        self.map_cells(u, |kernel, xe, ue, material| {
            kernel.cell_strain(xe, ue, material, measure)
        })
    }

    /// The element loop's output fields of every cell at the displacement `u` (per node), in
    /// parallel: those of the problem's element loop (`map_cells` with the cell's kernel's
    /// `cell_fields`) bit for bit, and its error (the first failing cell's) where one fails.
    pub(crate) fn fields(&self, u: &[[f64; 3]]) -> Result<Vec<fem::CellFields>> {
        self.map_cells(u, |kernel, xe, ue, material| {
            kernel.cell_fields(xe, ue, material)
        })
    }

    /// `f` of every cell's kernel, coordinates, displacements and material, in cell order; an
    /// error is the first failing cell's in cell order (as the element loop's `map_cells`).
    fn map_cells<T: Send>(
        &self,
        u: &[[f64; 3]],
        f: impl Fn(
                &ElementKernel,
                &[[f64; 3]],
                &[[f64; 3]],
                &Material,
            ) -> std::result::Result<T, FemError>
            + Sync,
    ) -> Result<Vec<T>> {
        let mesh = &*self.mesh;
        let npc = mesh.nodes_per_cell();
        if u.len() != mesh.n_nodes() || npc > MAX_NODES {
            fail!(
                "a displacement of {} nodes for a mesh of {} nodes",
                u.len(),
                mesh.n_nodes()
            );
        }
        let cell = |c: usize| {
            let nodes = mesh.cell_nodes(c);
            let (mut xe, mut ue) = ([[0.0; 3]; MAX_NODES], [[0.0; 3]; MAX_NODES]);
            for (k, &n) in nodes.iter().enumerate() {
                xe[k] = mesh.coords[n];
                ue[k] = u[n];
            }
            let kernel = match (self.materials.formulation_of(c), &self.projected) {
                (Formulation::Projected, Some(projected)) => projected,
                _ => &self.kernel,
            };
            f(kernel, &xe[..npc], &ue[..npc], self.materials.of(c)).map_err(|source| {
                AssemblyError::element_failure(mesh.cell_tags.as_ref(), c, source)
            })
        };
        // rayon returns any failing cell's error: the first one is looked for after a failure
        let values = (0..mesh.n_cells())
            .into_par_iter()
            .map(cell)
            .collect::<std::result::Result<Vec<T>, AssemblyError>>()
            .map_err(|any| {
                (0..mesh.n_cells())
                    .into_par_iter()
                    .find_first(|&c| cell(c).is_err())
                    .and_then(|c| cell(c).err())
                    .unwrap_or(any)
            })?;
        Ok(values)
    }
}

/// Nodes per cell, at most (Q2).
const MAX_NODES: usize = 27;

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

/// The principal values of each full 3x3 (row-major) stress, largest first (in parallel: each
/// tensor's values are its own).
pub fn principal(stresses: &[[f64; 9]]) -> Vec<[f64; 3]> {
    stresses.par_iter().map(fem::principal_values_of).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stretched and sheared Q1 block of linear cells that writes every strain field.
    fn block() -> (Config, Problem, Vector) {
        let text = "mesh:\n  box: { cells: [2, 2, 2], lower: [0, 0, 0], upper: [1, 1, 1] }\n\
            materials:\n  - { model: linear, young_modulus: 10.0, poisson_ratio: 0.3 }\n\
            boundary:\n  dirichlet:\n    - { set: zmin, x: 0.0, y: 0.0, z: 0.0 }\n\
            output: { fields: [displacement, strain, green_lagrange_strain, logarithmic_strain] }\n";
        let config = config::load_str(text, std::path::Path::new("block.yaml"), &[]).unwrap();
        let problem = crate::locate::build_problem(&config).unwrap();
        let u: Vec<f64> = problem
            .mesh
            .coords
            .iter()
            .flat_map(|x| [0.1 * x[2] + 0.05 * x[0], -0.02 * x[1], 0.03 * x[0] * x[2]])
            .collect();
        (config, problem, Vector::from_vec(u))
    }

    /// The checks' pair comes down where only node fields are written and no probe reads a
    /// cell's field (the strain energy and the largest displacement are no cell's field); any
    /// cell field or strain written, or a probe reading one, takes every field.
    #[test]
    fn cell_field_set_takes_every_field_where_one_is_written_or_probed() {
        let set_of = |output: &str| {
            let text = format!(
                "mesh:\n  box: {{ cells: [2, 2, 2], lower: [0, 0, 0], upper: [1, 1, 1] }}\n\
                 materials:\n  - {{ model: linear, young_modulus: 10.0, poisson_ratio: 0.3 }}\n\
                 boundary:\n  dirichlet:\n    - {{ set: zmin, x: 0.0, y: 0.0, z: 0.0 }}\n\
                 output: {output}\n"
            );
            let config = config::load_str(&text, std::path::Path::new("b.yaml"), &[])
                .unwrap_or_else(|e| panic!("{output}: {e}"));
            cell_field_set(&config)
        };
        let checks = [
            "{ fields: [displacement] }",
            "{ fields: [displacement, reaction, sets] }",
            "{ fields: [displacement], probes: { points: [{ name: p, at: [1, 1, 1] }], \
             sets: [{ set: zmin }], globals: [strain_energy, max_displacement] } }",
        ];
        for output in checks {
            assert_eq!(set_of(output), CellFieldSet::Checks, "{output}");
        }
        let every = [
            "{}",
            "{ fields: [displacement, jacobian] }",
            "{ fields: [displacement, nodal_von_mises] }",
            "{ fields: [displacement, strain] }",
            "{ fields: [displacement], probes: { points: [{ name: p, at: [1, 1, 1], \
             fields: [von_mises] }] } }",
            "{ fields: [displacement], probes: { sets: [{ set: zmin, fields: [jacobian] }] } }",
            "{ fields: [displacement], probes: { globals: [min_jacobian] } }",
        ];
        for output in every {
            assert_eq!(set_of(output), CellFieldSet::Every, "{output}");
        }
    }

    /// The first state's outputs left to the writer ([`crate::run::CellOutputs::fields_later`]),
    /// computed there over its copy of the mesh, are the element loop's bit for bit; where a
    /// cell fails (inverted neo-Hookean cells), the error is the element loop's (its first
    /// failing cell's).
    #[test]
    fn the_writers_cell_fields_are_the_element_loops_bit_for_bit() {
        let (config, problem, u) = block();
        let cells = StrainCells::of(&problem, Arc::new(problem.mesh.clone())).unwrap();
        let nodal = |u: &Vector| u.host().unwrap().as_chunks::<3>().0.to_vec();
        let mut later = crate::run::CellOutputs::fields_later(&config);
        later.add_later(&cells, &nodal(&u)).unwrap();
        let now = crate::run::CellOutputs::compute(&problem, &u, &config, false).unwrap();
        // Debug prints each f64 exactly (shortest round trip, the sign of zero)
        assert_eq!(format!("{later:?}"), format!("{now:?}"));
        assert!(!later.fields_later && later.later.is_empty());

        let text = "mesh:\n  box: { cells: [3, 2, 2], lower: [0, 0, 0], upper: [1, 1, 1] }\n\
            materials:\n  - { model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }\n\
            boundary:\n  dirichlet:\n    - { set: zmin, x: 0.0, y: 0.0, z: 0.0 }\n";
        let config = config::load_str(text, std::path::Path::new("neo.yaml"), &[]).unwrap();
        let problem = crate::locate::build_problem(&config).unwrap();
        // the nodes at x = 1 pushed back past x = 0: the last column of cells inverts
        let u: Vec<f64> = problem
            .mesh
            .coords
            .iter()
            .flat_map(|x| [if x[0] > 0.9 { -1.5 } else { 0.0 }, 0.0, 0.0])
            .collect();
        let u = Vector::from_vec(u);
        let cells = StrainCells::of(&problem, Arc::new(problem.mesh.clone())).unwrap();
        let mut later = crate::run::CellOutputs::fields_later(&config);
        let writer = later.add_later(&cells, &nodal(&u)).unwrap_err();
        let host = crate::run::CellOutputs::compute(&problem, &u, &config, false).unwrap_err();
        assert_eq!(format!("{writer:#}"), format!("{host:#}"));
        assert!(format!("{host:#}").contains("cell 2"), "{host:#}");
    }

    /// A measure the device computed is taken as it is (here a stand-in), the others computed on
    /// the host, in `output.fields` order; a count of cells that is not the mesh's is an error.
    #[test]
    fn computed_strains_are_taken_and_the_others_computed_on_the_host() {
        let (config, problem, u) = block();
        assert_eq!(
            strain_measures(&config),
            [
                StrainMeasure::Model,
                StrainMeasure::GreenLagrange,
                StrainMeasure::Logarithmic
            ]
        );
        let host = cell_strains(&problem, &u, &config, Vec::new()).unwrap();
        let fields: Vec<OutputField> = host.iter().map(|(f, _)| *f).collect();
        assert_eq!(fields, strain_fields(&config));
        // the small strain of the linear model differs from the Green-Lagrange strain
        assert_ne!(host[0].1, host[1].1);
        let stand_in = vec![[7.0; 9]; problem.discrete.assembler.n_cells()];
        let mixed = cell_strains(
            &problem,
            &u,
            &config,
            vec![(StrainMeasure::GreenLagrange, stand_in.clone())],
        )
        .unwrap();
        assert_eq!(mixed[0], host[0]);
        assert_eq!(mixed[1].1, stand_in);
        assert_eq!(mixed[2], host[2]);
        let short = vec![(StrainMeasure::Model, vec![[0.0; 9]; 3])];
        let error = cell_strains(&problem, &u, &config, short).unwrap_err();
        assert!(
            format!("{error:#}").contains("strains from the GPU"),
            "{error:#}"
        );
    }
}
