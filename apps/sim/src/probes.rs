//! Probes of a run (`output.probes`): the displacement and cell fields at points of the mesh,
//! the mean displacement, total reaction force and its moment over node sets, the least, largest
//! and mean values of fields over sets, and global quantities, evaluated at step 0 and after
//! every converged step.
//!
//! [`Probes::new`] resolves the configuration once per mesh (locates each point in its cell and
//! keeps the cell's interpolation weights; looks the sets up); [`Probes::evaluate`] is then a
//! few sums per step. Errors (a point outside the mesh, an unknown set) name the configuration
//! key.

use std::collections::BTreeSet;

use config::{Config, GlobalProbe, OutputField};
use fem::basis::LagrangeHex;
use mesh::HexMesh;

use crate::error::{fail, Context};
use crate::Result;

/// Newton iterations of the inverse cell map.
const LOCATE_ITERATIONS: usize = 50;
/// Reference-coordinate slack accepted as "inside" a cell, and the inverse map's tolerance.
const LOCATE_SLACK: f64 = 1e-9;

/// The resolved probes of a run on one mesh.
#[derive(Clone, Debug)]
pub struct Probes {
    columns: Vec<String>,
    points: Vec<Interpolation>,
    /// The cell holding each point and the fields read there, in input order.
    point_fields: Vec<(usize, Vec<OutputField>)>,
    sets: Vec<SetNodes>,
    /// Each set probe's fields with the cells or nodes their statistics run over.
    set_fields: Vec<Vec<(OutputField, Vec<usize>)>>,
    globals: Vec<GlobalProbe>,
    /// The sets whose reactions the run reports: those a Dirichlet or twist condition names.
    reaction_sets: BTreeSet<String>,
}

/// A point as a weighted sum of nodal values.
#[derive(Clone, Debug)]
struct Interpolation {
    nodes: Vec<usize>,
    weights: Vec<f64>,
}

#[derive(Clone, Debug)]
struct SetNodes {
    nodes: Vec<usize>,
    about: [f64; 3],
}

/// The state a probe reads.
pub struct ProbeState<'a> {
    pub displacement: &'a [[f64; 3]],
    pub reactions: &'a [[f64; 3]],
    pub strain_energy: f64,
    pub max_displacement: f64,
    /// The cell outputs of the state (the serial run's cells), for the field probes.
    pub(crate) cells: Option<&'a crate::run::CellOutputs>,
}

impl Probes {
    /// Resolves `config.output.probes` on `mesh` (the mesh built from `config`).
    pub fn new(config: &Config, mesh: &HexMesh) -> Result<Self> {
        let spec = &config.output.probes;
        let mut points = Vec::new();
        let mut point_fields = Vec::new();
        for (i, p) in spec.points.iter().enumerate() {
            let (cell, interpolation) =
                locate(mesh, 0..mesh.n_cells(), p.at)?.ok_or_else(|| outside(config, i))?;
            points.push(interpolation);
            point_fields.push((cell, p.fields.clone()));
        }
        let mut sets = Vec::new();
        let mut set_fields = Vec::new();
        for (i, s) in spec.sets.iter().enumerate() {
            // a set's id (Exodus II) stands for its name
            let set_name = mesh.set_name(&s.set);
            let nodes = set_or_cell_set_nodes(mesh, set_name).map_err(|e| {
                config.error_at(&format!("output.probes.sets[{i}].set"), e.to_string())
            })?;
            let about = s.about.unwrap_or_else(|| centroid(mesh, &nodes));
            set_fields.push(
                s.fields
                    .iter()
                    .map(|&f| {
                        let members = if is_nodal(f) {
                            // ascending, the order a run on ranks meets them in
                            let mut sorted = nodes.clone();
                            sorted.sort_unstable();
                            sorted
                        } else {
                            set_cells(mesh, set_name, &nodes)
                        };
                        (f, members)
                    })
                    .collect(),
            );
            sets.push(SetNodes { nodes, about });
        }
        Ok(Probes {
            columns: columns(config),
            points,
            point_fields,
            sets,
            set_fields,
            globals: spec.globals.clone(),
            reaction_sets: crate::run::reaction_components(config)
                .into_keys()
                .collect(),
        })
    }

    /// Whether the run reports the reaction of `set` (a set some condition constrains).
    pub fn reports_reaction(&self, set: &str) -> bool {
        self.reaction_sets.contains(set)
    }

    /// Column names, in the order of [`Probes::evaluate`]'s values.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Whether a probe reads a cell output (a cell field or a statistic of one).
    fn reads_fields(&self) -> bool {
        self.point_fields
            .iter()
            .any(|(_, f)| f != &[OutputField::Displacement])
            || self.set_fields.iter().any(|f| !f.is_empty())
            || self.globals.iter().any(|g| cell_global(*g).is_some())
    }

    /// Whether a probe reads what the cells' outputs give: a cell field (or a statistic of
    /// one) or the total strain energy.
    pub(crate) fn reads_cells(&self) -> bool {
        self.reads_fields() || self.globals.contains(&GlobalProbe::StrainEnergy)
    }

    /// Whether there are no probes.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The probe values of a state on the mesh the probes were resolved on (`mesh`: for the
    /// nodal fields of set probes).
    pub fn evaluate(&self, mesh: &HexMesh, state: &ProbeState) -> Result<Vec<f64>> {
        if !self.reads_fields() {
            return Ok(self.evaluate_displacements(&mesh.coords, state));
        }
        let cells = state
            .cells
            .context("field probes need the state's cell outputs")?;
        let nodal = self
            .set_fields
            .iter()
            .flatten()
            .any(|(f, _)| is_nodal(*f))
            .then(|| crate::run::nodal_average(mesh, &cells.cauchy));
        let nodal = nodal.as_deref().unwrap_or_default();
        let mut out = Vec::with_capacity(self.columns.len());
        for (p, (cell, fields)) in self.points.iter().zip(&self.point_fields) {
            for &f in fields {
                match f {
                    OutputField::Displacement => out.extend(p.value(state.displacement)),
                    _ => out.extend(components(f, cells, nodal, *cell)?),
                }
            }
        }
        for (s, fields) in self.sets.iter().zip(&self.set_fields) {
            let mut sum = SetSum::default();
            for &n in &s.nodes {
                sum.add(
                    mesh.coords[n],
                    state.displacement[n],
                    state.reactions[n],
                    s.about,
                );
            }
            out.extend(sum.values());
            for (f, members) in fields {
                out.extend(statistics(*f, cells, nodal, members)?);
            }
        }
        for &g in &self.globals {
            out.push(match g {
                GlobalProbe::StrainEnergy => state.strain_energy,
                GlobalProbe::MaxDisplacement => state.max_displacement,
                _ => global_of_cells(g, cells),
            });
        }
        Ok(out)
    }

    /// [`Probes::evaluate`] of probes that read no field but the displacement and reactions.
    fn evaluate_displacements(&self, coords: &[[f64; 3]], state: &ProbeState) -> Vec<f64> {
        let points: Vec<Vec<f64>> = self
            .points
            .iter()
            .map(|p| p.value(state.displacement).to_vec())
            .collect();
        let sets: Vec<(SetSum, Vec<f64>)> = self
            .sets
            .iter()
            .map(|s| {
                let mut sum = SetSum::default();
                for &n in &s.nodes {
                    sum.add(
                        coords[n],
                        state.displacement[n],
                        state.reactions[n],
                        s.about,
                    );
                }
                (sum, Vec::new())
            })
            .collect();
        let globals: Vec<f64> = self
            .globals
            .iter()
            .map(|&g| match g {
                GlobalProbe::StrainEnergy => state.strain_energy,
                GlobalProbe::MaxDisplacement => state.max_displacement,
                _ => f64::NAN,
            })
            .collect();
        compose(&points, &sets, &globals)
    }
}

/// The probes' columns of `config`: each point's fields (displacement `ux..uz`, a cell field's
/// components), each set's mean displacement, force and moment and its fields' least, largest
/// and mean values, the globals.
pub fn columns(config: &Config) -> Vec<String> {
    let spec = &config.output.probes;
    let mut columns = Vec::new();
    for p in &spec.points {
        for &f in &p.fields {
            match f {
                OutputField::Displacement => {
                    columns.extend(["ux", "uy", "uz"].map(|c| format!("{}.{c}", p.name)))
                }
                _ => columns.extend(field_columns(&p.name, f)),
            }
        }
    }
    for s in &spec.sets {
        for c in ["ux", "uy", "uz", "fx", "fy", "fz", "mx", "my", "mz"] {
            columns.push(format!("{}.{c}", s.label()));
        }
        for &f in &s.fields {
            for column in field_columns(s.label(), f) {
                columns.extend(["min", "max", "mean"].map(|m| format!("{column}.{m}")));
            }
        }
    }
    columns.extend(spec.globals.iter().map(|g| g.label().to_owned()));
    columns
}

/// The probe values in [`columns`] order from their parts: each point's values (its fields'
/// components, in order), each set's sums (mean displacement, force, moment) with its fields'
/// statistics ([`FieldStats::values`], in order), each global's value.
pub fn compose(points: &[Vec<f64>], sets: &[(SetSum, Vec<f64>)], globals: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    for p in points {
        out.extend_from_slice(p);
    }
    for (sum, stats) in sets {
        out.extend(sum.values());
        out.extend_from_slice(stats);
    }
    out.extend_from_slice(globals);
    out
}

/// Whether a probe of `config` reads what the cells' outputs give: a point's field other than
/// the displacement, any set probe's field, a cell-field global, and, with `strain_energy`, the
/// total strain energy.
pub(crate) fn reads_cell_outputs(config: &Config, strain_energy: bool) -> bool {
    let probes = &config.output.probes;
    probes
        .points
        .iter()
        .any(|p| p.fields.iter().any(|&f| f != OutputField::Displacement))
        || probes.sets.iter().any(|s| !s.fields.is_empty())
        || probes
            .globals
            .iter()
            .any(|&g| (strain_energy && g == GlobalProbe::StrainEnergy) || cell_global(g).is_some())
}

/// Whether a probe of `config` reads the output field `field`.
pub fn reads_field(config: &Config, field: OutputField) -> bool {
    let spec = &config.output.probes;
    spec.points.iter().any(|p| p.fields.contains(&field))
        || spec.sets.iter().any(|s| s.fields.contains(&field))
}

/// Whether `field` lives on the nodes among the fields probes read over sets.
pub(crate) fn is_nodal(field: OutputField) -> bool {
    matches!(
        field,
        OutputField::NodalCauchyStress
            | OutputField::NodalVonMises
            | OutputField::NodalPrincipalStress
    )
}

/// The component names of `field`'s values: tensors `xx, yy, zz, xy, yz, xz`, principal values
/// `1, 2, 3`, none for a scalar.
pub(crate) fn component_names(field: OutputField) -> &'static [&'static str] {
    match field {
        OutputField::VonMises
        | OutputField::Jacobian
        | OutputField::EnergyDensity
        | OutputField::NodalVonMises => &[],
        OutputField::PrincipalStress | OutputField::NodalPrincipalStress => &["1", "2", "3"],
        OutputField::Displacement | OutputField::Reaction => &["x", "y", "z"],
        _ => &["xx", "yy", "zz", "xy", "yz", "xz"],
    }
}

/// The columns `<label>.<field>[.<component>]` of a field probe.
fn field_columns(label: &str, field: OutputField) -> Vec<String> {
    let names = component_names(field);
    if names.is_empty() {
        return vec![format!("{label}.{}", field.name())];
    }
    names
        .iter()
        .map(|c| format!("{label}.{}.{c}", field.name()))
        .collect()
}

/// The symmetric components `xx, yy, zz, xy, yz, xz` of a full 3x3 row-major tensor.
fn symmetric(t: &[f64; 9]) -> Vec<f64> {
    vec![t[0], t[4], t[8], t[1], t[5], t[2]]
}

/// The values of `field` (in [`component_names`] order) at cell or node `at`.
pub(crate) fn components(
    field: OutputField,
    cells: &crate::run::CellOutputs,
    nodal: &[[f64; 9]],
    at: usize,
) -> Result<Vec<f64>> {
    if is_nodal(field) {
        return nodal_components(field, &nodal[at]);
    }
    cell_components(
        field,
        &cells.cauchy[at],
        [
            cells.von_mises[at],
            cells.jacobian[at],
            cells.energy_density[at],
        ],
        |f| {
            cells
                .strains
                .iter()
                .find(|(g, _)| *g == f)
                .map(|(_, values)| &values[at])
        },
    )
}

/// The values of the cell field `field` in a cell record ([`crate::run::CellOutputs::record`],
/// whose strains are `strains`, in record order): the same numbers [`components`] gives.
pub(crate) fn record_components(
    field: OutputField,
    record: &[f64],
    strains: &[OutputField],
) -> Result<Vec<f64>> {
    let tensor = |at: usize| -> Option<&[f64; 9]> { record.get(at..at + 9)?.try_into().ok() };
    let cauchy = tensor(0).context("a cell record without its stress")?;
    cell_components(field, cauchy, [record[9], record[10], record[11]], |f| {
        let k = strains.iter().position(|&g| g == f)?;
        tensor(crate::run::CellOutputs::WIDTH + 9 * k)
    })
}

/// The values of a nodal field at a node of averaged stress `t`.
pub(crate) fn nodal_components(field: OutputField, t: &[f64; 9]) -> Result<Vec<f64>> {
    Ok(match field {
        OutputField::NodalCauchyStress => symmetric(t),
        OutputField::NodalVonMises => vec![crate::run::von_mises_of(t)],
        OutputField::NodalPrincipalStress => fem::principal_values_of(t).to_vec(),
        _ => fail!("`{}` is not a nodal field", field.name()),
    })
}

/// The values of the cell field `field` of a cell with stress `cauchy`, von Mises stress,
/// Jacobian and energy density `scalars`, and the strains `strain` finds.
fn cell_components<'a>(
    field: OutputField,
    cauchy: &[f64; 9],
    scalars: [f64; 3],
    strain: impl Fn(OutputField) -> Option<&'a [f64; 9]>,
) -> Result<Vec<f64>> {
    let [von_mises, jacobian, energy_density] = scalars;
    Ok(match field {
        OutputField::CauchyStress => symmetric(cauchy),
        OutputField::VonMises => vec![von_mises],
        OutputField::Jacobian => vec![jacobian],
        OutputField::EnergyDensity => vec![energy_density],
        OutputField::PrincipalStress => fem::principal_values_of(cauchy).to_vec(),
        OutputField::Strain | OutputField::GreenLagrangeStrain | OutputField::LogarithmicStrain => {
            let values = strain(field)
                .with_context(|| format!("the strain `{}` was not computed", field.name()))?;
            symmetric(values)
        }
        OutputField::NodalCauchyStress
        | OutputField::NodalVonMises
        | OutputField::NodalPrincipalStress
        | OutputField::Displacement
        | OutputField::Reaction
        | OutputField::Sets => {
            fail!("`{}` is not a cell field", field.name())
        }
    })
}

/// The least, largest and mean value of each component of `field` over `members` (cells, or
/// nodes for a nodal field; summed in their order): `min, max, mean` per component.
fn statistics(
    field: OutputField,
    cells: &crate::run::CellOutputs,
    nodal: &[[f64; 9]],
    members: &[usize],
) -> Result<Vec<f64>> {
    let mut stats = FieldStats::new(field);
    for &m in members {
        stats.add(&components(field, cells, nodal, m)?);
    }
    Ok(stats.values())
}

/// The running least, largest and summed value of each component of a field over a set's
/// members, added in their order.
#[derive(Clone, Debug)]
pub(crate) struct FieldStats {
    min: Vec<f64>,
    max: Vec<f64>,
    sum: Vec<f64>,
    count: usize,
}

impl FieldStats {
    pub(crate) fn new(field: OutputField) -> Self {
        let width = component_names(field).len().max(1);
        FieldStats {
            min: vec![f64::INFINITY; width],
            max: vec![f64::NEG_INFINITY; width],
            sum: vec![0.0; width],
            count: 0,
        }
    }

    /// Adds a member's components.
    pub(crate) fn add(&mut self, values: &[f64]) {
        for (k, &v) in values.iter().enumerate() {
            self.min[k] = self.min[k].min(v);
            self.max[k] = self.max[k].max(v);
            self.sum[k] += v;
        }
        self.count += 1;
    }

    /// `min, max, mean` per component (the mean NaN over no member).
    pub(crate) fn values(&self) -> Vec<f64> {
        let count = self.count as f64;
        (0..self.sum.len())
            .flat_map(|k| [self.min[k], self.max[k], self.sum[k] / count])
            .collect()
    }
}

/// The cell field and the extreme a global probe takes over every cell (`None`: not a cell
/// field's): `(field, component, largest)`.
pub(crate) fn cell_global(g: GlobalProbe) -> Option<(OutputField, usize, bool)> {
    match g {
        GlobalProbe::StrainEnergy | GlobalProbe::MaxDisplacement => None,
        GlobalProbe::MaxVonMises => Some((OutputField::VonMises, 0, true)),
        GlobalProbe::MaxPrincipalStress => Some((OutputField::PrincipalStress, 0, true)),
        GlobalProbe::MinPrincipalStress => Some((OutputField::PrincipalStress, 2, false)),
        GlobalProbe::MinJacobian => Some((OutputField::Jacobian, 0, false)),
    }
}

/// The value of the cell-field global `g` over every cell (NaN where a cell's is).
fn global_of_cells(g: GlobalProbe, cells: &crate::run::CellOutputs) -> f64 {
    let mut extreme = CellExtreme::new(g);
    for c in 0..cells.jacobian.len() {
        extreme.add(|field| components(field, cells, &[], c));
    }
    extreme.value()
}

/// The running extreme of a cell-field global over cells added in their order: NaN once a
/// cell's value is (or cannot be computed), else the largest or least value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CellExtreme {
    of: Option<(OutputField, usize, bool)>,
    extreme: f64,
    nan: bool,
}

impl CellExtreme {
    pub(crate) fn new(g: GlobalProbe) -> Self {
        let of = cell_global(g);
        let largest = of.is_some_and(|(_, _, largest)| largest);
        CellExtreme {
            of,
            extreme: if largest {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            },
            nan: of.is_none(),
        }
    }

    /// Adds a cell whose field values `values_of` gives.
    pub(crate) fn add(&mut self, values_of: impl Fn(OutputField) -> Result<Vec<f64>>) {
        let Some((field, k, largest)) = self.of else {
            return;
        };
        if self.nan {
            return;
        }
        let v = values_of(field).map_or(f64::NAN, |values| values[k]);
        if v.is_nan() {
            self.nan = true;
            return;
        }
        self.extreme = if largest {
            self.extreme.max(v)
        } else {
            self.extreme.min(v)
        };
    }

    pub(crate) fn value(&self) -> f64 {
        if self.nan {
            f64::NAN
        } else {
            self.extreme
        }
    }
}

/// The nodes of the node or face set `name`, or else of the cell set `name` (its cells' nodes).
pub(crate) fn set_or_cell_set_nodes(
    mesh: &HexMesh,
    name: &str,
) -> Result<Vec<usize>, mesh::MeshError> {
    match mesh.set_nodes(name) {
        Ok(nodes) => Ok(nodes),
        Err(e) => {
            let Some(cells) = mesh.cell_sets.get(name) else {
                return Err(e);
            };
            let mut nodes: Vec<usize> = cells
                .iter()
                .flat_map(|&c| mesh.cell_nodes(c).iter().copied())
                .collect();
            nodes.sort_unstable();
            nodes.dedup();
            Ok(nodes)
        }
    }
}

/// The cells a cell field's statistics over the set `name` (with nodes `nodes`) run over, in
/// increasing order: a cell set's cells, a face set's cells, else the cells touching the nodes.
pub(crate) fn set_cells(mesh: &HexMesh, name: &str, nodes: &[usize]) -> Vec<usize> {
    let node_or_face = mesh.node_sets.contains_key(name) || mesh.face_sets.contains_key(name);
    let mut cells: Vec<usize> = match (mesh.cell_sets.get(name), mesh.face_sets.get(name)) {
        (Some(cells), _) if !node_or_face => cells.clone(),
        (_, Some(faces)) if !mesh.node_sets.contains_key(name) => {
            faces.iter().map(|f| f.cell).collect()
        }
        _ => {
            let mut member = vec![false; mesh.n_nodes()];
            nodes.iter().for_each(|&n| member[n] = true);
            (0..mesh.n_cells())
                .filter(|&c| mesh.cell_nodes(c).iter().any(|&n| member[n]))
                .collect()
        }
    };
    cells.sort_unstable();
    cells.dedup();
    cells
}

/// The error of a probe point `i` that lies in no cell (located at its key).
pub fn outside(config: &Config, i: usize) -> crate::Error {
    let at = config.output.probes.points[i].at;
    crate::Error::Input(config.error_at(
        &format!("output.probes.points[{i}].at"),
        format!("the point {at:?} lies in no cell of the mesh"),
    ))
}

/// Sums over a set's nodes, added in the set's order: displacements, forces, and the forces'
/// moment about a point, each force acting at its node's deformed position.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SetSum {
    pub nodes: usize,
    pub displacement: [f64; 3],
    pub force: [f64; 3],
    pub moment: [f64; 3],
}

impl SetSum {
    /// The set's columns: mean displacement, force, moment.
    pub fn values(&self) -> [f64; 9] {
        let count = self.nodes.max(1) as f64;
        let u = self.displacement.map(|v| v / count);
        [
            u[0],
            u[1],
            u[2],
            self.force[0],
            self.force[1],
            self.force[2],
            self.moment[0],
            self.moment[1],
            self.moment[2],
        ]
    }

    /// Adds a node at `x` displaced by `u`, loaded by `f`; the moment is taken about `about`.
    pub fn add(&mut self, x: [f64; 3], u: [f64; 3], f: [f64; 3], about: [f64; 3]) {
        let arm: [f64; 3] = std::array::from_fn(|d| x[d] + u[d] - about[d]);
        let m = cross(arm, f);
        for d in 0..3 {
            self.displacement[d] += u[d];
            self.force[d] += f[d];
            self.moment[d] += m[d];
        }
        self.nodes += 1;
    }
}

/// A probe point located in one cell: its displacement is a weighted sum of the cell's nodes'.
#[derive(Clone, Debug)]
pub struct PointInCell {
    /// The cell (of the mesh it was located on).
    pub cell: usize,
    interpolation: Interpolation,
}

impl PointInCell {
    /// The first of `cells` (in their order) of `mesh` holding `at`, or `None`.
    pub fn locate(
        mesh: &HexMesh,
        cells: impl IntoIterator<Item = usize>,
        at: [f64; 3],
    ) -> Result<Option<Self>> {
        Ok(
            locate(mesh, cells, at)?.map(|(cell, interpolation)| PointInCell {
                cell,
                interpolation,
            }),
        )
    }

    /// The displacement at the point.
    pub fn value(&self, displacement: &[[f64; 3]]) -> [f64; 3] {
        self.interpolation.value(displacement)
    }
}

impl Interpolation {
    fn value(&self, displacement: &[[f64; 3]]) -> [f64; 3] {
        let mut u = [0.0; 3];
        for (&n, &w) in self.nodes.iter().zip(&self.weights) {
            for (ud, un) in u.iter_mut().zip(displacement[n]) {
                *ud += w * un;
            }
        }
        u
    }
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn centroid(mesh: &HexMesh, nodes: &[usize]) -> [f64; 3] {
    let mut c = [0.0; 3];
    for &n in nodes {
        for (cd, x) in c.iter_mut().zip(mesh.coords[n]) {
            *cd += x;
        }
    }
    c.map(|v| v / nodes.len().max(1) as f64)
}

/// The first of `cells` (in their order) that contains the point `at`, with the point's
/// interpolation in it (cells whose bounding box holds the point are tried; the inverse map is
/// solved by Newton's method), or `None` if none does. On a face shared by cells any of them
/// gives the same values of a continuous field.
fn locate(
    mesh: &HexMesh,
    cells: impl IntoIterator<Item = usize>,
    at: [f64; 3],
) -> Result<Option<(usize, Interpolation)>> {
    let basis = LagrangeHex::new(mesh.order())?;
    let n = basis.n_nodes();
    let (mut values, mut grads) = (vec![0.0; n], vec![[0.0; 3]; n]);
    for c in cells {
        let nodes = mesh.cell_nodes(c);
        let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        for &a in nodes {
            for d in 0..3 {
                lo[d] = lo[d].min(mesh.coords[a][d]);
                hi[d] = hi[d].max(mesh.coords[a][d]);
            }
        }
        let slack = 1e-9 * (0..3).map(|d| hi[d] - lo[d]).fold(0.0, f64::max);
        if (0..3).any(|d| at[d] < lo[d] - slack || at[d] > hi[d] + slack) {
            continue;
        }
        let mut xi = [0.0; 3];
        for _ in 0..LOCATE_ITERATIONS {
            basis.eval(xi, &mut values, &mut grads)?;
            let mut x = [0.0; 3];
            let mut jac = [[0.0; 3]; 3];
            for (a, &node) in nodes.iter().enumerate() {
                for i in 0..3 {
                    x[i] += values[a] * mesh.coords[node][i];
                    for j in 0..3 {
                        jac[i][j] += mesh.coords[node][i] * grads[a][j];
                    }
                }
            }
            let r: [f64; 3] = std::array::from_fn(|d| at[d] - x[d]);
            let Some(dxi) = solve3(jac, r) else { break };
            for d in 0..3 {
                // stay near the cell: a point far outside it is not this cell's
                xi[d] = (xi[d] + dxi[d]).clamp(-2.0, 2.0);
            }
            if dxi.iter().all(|v| v.abs() < 1e-13) {
                break;
            }
        }
        if xi.iter().all(|v| v.abs() <= 1.0 + LOCATE_SLACK) {
            basis.eval(xi.map(|v| v.clamp(-1.0, 1.0)), &mut values, &mut grads)?;
            return Ok(Some((
                c,
                Interpolation {
                    nodes: nodes.to_vec(),
                    weights: values,
                },
            )));
        }
    }
    Ok(None)
}

/// `a x = b` by Cramer's rule; `None` for a singular `a`.
fn solve3(a: [[f64; 3]; 3], b: [f64; 3]) -> Option<[f64; 3]> {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(a);
    if d == 0.0 || !d.is_finite() {
        return None;
    }
    Some(std::array::from_fn(|k| {
        let mut m = a;
        for i in 0..3 {
            m[i][k] = b[i];
        }
        det(m) / d
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh::CellKind;

    fn mapped_box(kind: CellKind) -> HexMesh {
        // a skewed trilinear box, so the inverse map is not affine
        let corners = [
            [0.0, 0.0, 0.0],
            [2.0, 0.2, 0.0],
            [0.1, 1.0, 0.0],
            [2.3, 1.4, 0.1],
            [0.0, 0.1, 1.0],
            [2.1, 0.0, 1.2],
            [0.2, 1.1, 1.1],
            [2.0, 1.3, 1.4],
        ];
        mesh::generate_box(&mesh::BoxSpec {
            cells: [3, 2, 2],
            lower: [0.0; 3],
            upper: [1.0; 3],
            kind,
            corners: Some(corners),
        })
        .unwrap()
    }

    /// A field linear in x (in the span of every cell's basis) is interpolated exactly at
    /// points anywhere in a mapped mesh, Q1 and Q2; points outside are refused.
    #[test]
    fn points_interpolate_linear_fields_exactly() {
        for kind in [CellKind::Hex8, CellKind::Hex27] {
            let mesh = mapped_box(kind);
            let field = |x: [f64; 3]| [1.0 + 2.0 * x[0] - x[1], 0.5 * x[2], x[0] + x[1] + x[2]];
            let u: Vec<[f64; 3]> = mesh.coords.iter().map(|&x| field(x)).collect();
            for at in [
                [1.0, 0.6, 0.5],
                [0.3, 0.3, 0.4],
                [1.9, 0.9, 0.9],
                [0.0, 0.0, 0.0],
            ] {
                let p = locate(&mesh, 0..mesh.n_cells(), at)
                    .unwrap()
                    .expect("inside")
                    .1;
                let mut got = [0.0; 3];
                for (&n, &w) in p.nodes.iter().zip(&p.weights) {
                    for d in 0..3 {
                        got[d] += w * u[n][d];
                    }
                }
                let want = field(at);
                for d in 0..3 {
                    assert!(
                        (got[d] - want[d]).abs() < 1e-12,
                        "{kind:?} {at:?}: {got:?} vs {want:?}"
                    );
                }
            }
            assert!(locate(&mesh, 0..mesh.n_cells(), [5.0, 0.5, 0.5])
                .unwrap()
                .is_none());
            assert!(locate(&mesh, 0..mesh.n_cells(), [1.0, 0.6, -0.5])
                .unwrap()
                .is_none());
        }
    }

    #[test]
    fn solve3_solves_and_refuses_singular() {
        let x = solve3(
            [[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 4.0]],
            [3.0, 4.0, 5.0],
        )
        .unwrap();
        assert!(
            (x[0] - 1.0).abs() < 1e-14 && (x[1] - 1.0).abs() < 1e-14 && (x[2] - 1.0).abs() < 1e-14
        );
        assert!(solve3(
            [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]],
            [1.0, 1.0, 1.0]
        )
        .is_none());
    }

    /// A cell record (what the ranks send rank 0) gives every cell field's components bit for
    /// bit as the cell outputs do; the statistics and extremes are the serial ones over the
    /// same values in the same order.
    #[test]
    fn record_components_are_the_cell_outputs_components() {
        let strains = [OutputField::Strain, OutputField::LogarithmicStrain];
        let tensor = |c: usize, s: f64| -> [f64; 9] {
            let t: [f64; 6] = std::array::from_fn(|k| (s * (c * 7 + k) as f64).sin());
            [t[0], t[3], t[5], t[3], t[1], t[4], t[5], t[4], t[2]]
        };
        let n = 5;
        let cells = crate::run::CellOutputs {
            cauchy: (0..n).map(|c| tensor(c, 1.3)).collect(),
            von_mises: (0..n).map(|c| 1.0 + c as f64 / 3.0).collect(),
            jacobian: (0..n).map(|c| 0.9 + c as f64 / 7.0).collect(),
            energy_density: (0..n).map(|c| c as f64 / 11.0).collect(),
            strain_energy: vec![0.5; n],
            strains: strains
                .iter()
                .enumerate()
                .map(|(k, &f)| (f, (0..n).map(|c| tensor(c, 0.7 + k as f64)).collect()))
                .collect(),
            later: Vec::new(),
            fields_later: false,
        };
        let width = crate::run::CellOutputs::WIDTH + 9 * strains.len();
        let cell_fields = [
            OutputField::CauchyStress,
            OutputField::VonMises,
            OutputField::Jacobian,
            OutputField::EnergyDensity,
            OutputField::PrincipalStress,
            OutputField::Strain,
            OutputField::LogarithmicStrain,
        ];
        for field in cell_fields {
            let mut stats = FieldStats::new(field);
            for c in 0..n {
                let mut record = vec![0.0; width];
                cells.record(c, &mut record);
                let from_record = record_components(field, &record, &strains).unwrap();
                assert_eq!(from_record, components(field, &cells, &[], c).unwrap());
                stats.add(&from_record);
            }
            let members: Vec<usize> = (0..n).collect();
            assert_eq!(
                stats.values(),
                statistics(field, &cells, &[], &members).unwrap()
            );
        }
        // a strain the record lacks is an error, not a panic
        let mut record = vec![0.0; width];
        cells.record(0, &mut record);
        assert!(record_components(OutputField::GreenLagrangeStrain, &record, &strains).is_err());
        for g in [
            GlobalProbe::MaxVonMises,
            GlobalProbe::MaxPrincipalStress,
            GlobalProbe::MinPrincipalStress,
            GlobalProbe::MinJacobian,
        ] {
            let mut extreme = CellExtreme::new(g);
            for c in 0..n {
                cells.record(c, &mut record);
                extreme.add(|f| record_components(f, &record, &strains));
            }
            assert_eq!(extreme.value(), global_of_cells(g, &cells), "{g:?}");
        }
    }
}
