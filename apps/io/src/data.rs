//! The plain data the results writer takes: a mesh in VTK node order and the fields of a step.

use super::OutputError;

/// A hexahedral mesh ready for output. Connectivity is in VTK/XDMF node order (the caller
/// converts from the lexicographic order of `mesh`), cell-major.
#[derive(Clone, Copy, Debug)]
pub struct MeshData<'a> {
    /// 8 (`Hexahedron`) or 27 (`Hexahedron_27`).
    pub nodes_per_cell: usize,
    /// Node coordinates.
    pub coordinates: &'a [[f64; 3]],
    /// `n_cells * nodes_per_cell` node indices.
    pub connectivity: &'a [usize],
    /// Material (region) index of every cell, written as `/mesh/material` and shown as the
    /// cell attribute `material` of every step; `None` to leave it out.
    pub material: Option<&'a [usize]>,
    /// Named node sets: (name, node indices).
    pub node_sets: &'a [(&'a str, &'a [usize])],
    /// Named cell sets: (name, cell indices).
    pub cell_sets: &'a [(&'a str, &'a [usize])],
    /// Named face sets: (name, `[cell, local face]` pairs), local faces numbered
    /// `XMin, XMax, YMin, YMax, ZMin, ZMax` = 0..5 (reference-cell directions).
    pub face_sets: &'a [(&'a str, &'a [[usize; 2]])],
    /// The sets as 0/1 attributes `set:<name>` for viewers (`/mesh/indicators/{nodes,cells}/`):
    /// the member nodes of each node or face set by name, and then every cell set too; `None`:
    /// none written.
    pub node_indicators: Option<&'a [(&'a str, &'a [usize])]>,
}

impl MeshData<'_> {
    /// Number of cells; call after [`MeshData::check`].
    pub fn n_cells(&self) -> usize {
        self.connectivity.len() / self.nodes_per_cell.max(1)
    }

    /// Checks the cell type, connectivity length, index ranges and set names.
    pub(crate) fn check(&self) -> Result<(), OutputError> {
        let invalid = |m: String| Err(OutputError::InvalidData(m));
        if self.nodes_per_cell != 8 && self.nodes_per_cell != 27 {
            return invalid(format!(
                "{} nodes per cell; only 8 and 27 are supported",
                self.nodes_per_cell
            ));
        }
        if !self.connectivity.len().is_multiple_of(self.nodes_per_cell) {
            return invalid(format!(
                "connectivity length {} is not a multiple of {} nodes per cell",
                self.connectivity.len(),
                self.nodes_per_cell
            ));
        }
        let n_nodes = self.coordinates.len();
        check_indices("connectivity", self.connectivity, n_nodes, "nodes")?;
        if let Some(material) = self.material {
            if material.len() != self.n_cells() {
                return invalid(format!(
                    "{} material indices for {} cells",
                    material.len(),
                    self.n_cells()
                ));
            }
        }
        for (kind, sets, bound) in [
            ("node set", self.node_sets, n_nodes),
            ("cell set", self.cell_sets, self.n_cells()),
        ] {
            for (name, indices) in sets {
                check_name(name)?;
                check_indices(&format!("{kind} `{name}`"), indices, bound, "entries")?;
            }
        }
        for (name, nodes) in self.node_indicators.unwrap_or_default() {
            check_name(name)?;
            check_indices(&format!("indicator `{name}`"), nodes, n_nodes, "nodes")?;
        }
        for (name, faces) in self.face_sets {
            check_name(name)?;
            let what = format!("face set `{name}`");
            let cells: Vec<usize> = faces.iter().map(|f| f[0]).collect();
            check_indices(&what, &cells, self.n_cells(), "cells")?;
            let local: Vec<usize> = faces.iter().map(|f| f[1]).collect();
            check_indices(&what, &local, FACES_PER_CELL, "faces per cell")?;
        }
        Ok(())
    }
}

/// Faces of a hexahedron.
const FACES_PER_CELL: usize = 6;

fn check_indices(what: &str, indices: &[usize], bound: usize, of: &str) -> Result<(), OutputError> {
    match indices.iter().find(|&&i| i >= bound) {
        Some(i) => Err(OutputError::InvalidData(format!(
            "{what} refers to index {i}, but there are {bound} {of}"
        ))),
        None => Ok(()),
    }
}

/// A set name must be a valid HDF5 link name.
pub(crate) fn check_name(name: &str) -> Result<(), OutputError> {
    if name.is_empty() || name == "." || name.contains(['/', '\0']) {
        return Err(OutputError::InvalidData(format!(
            "set name `{name}` cannot name an HDF5 dataset (empty, `.` or containing `/` or NUL)"
        )));
    }
    Ok(())
}

/// Cell tensors: full 3x3 row-major, or symmetric in XDMF `Tensor6` order
/// (xx, xy, xz, yy, yz, zz).
#[derive(Clone, Copy, Debug)]
pub enum CellTensor<'a> {
    Full(&'a [[f64; 9]]),
    Symmetric(&'a [[f64; 6]]),
}

/// The results of one converged load step; fields left `None` are not written.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepData<'a> {
    /// Step index; strictly increasing over the calls of one writer.
    pub step: usize,
    /// Load factor reached (the XDMF time value).
    pub load_factor: f64,
    /// Nodal displacement.
    pub displacement: Option<&'a [[f64; 3]]>,
    /// Nodal reaction force.
    pub reaction: Option<&'a [[f64; 3]]>,
    /// Cell-averaged Cauchy stress.
    pub cauchy_stress: Option<CellTensor<'a>>,
    /// Cell-averaged von Mises stress.
    pub von_mises: Option<&'a [f64]>,
    /// Cell-averaged `det F`.
    pub jacobian: Option<&'a [f64]>,
    /// Cell-averaged strain energy density.
    pub energy_density: Option<&'a [f64]>,
    /// Nodal Cauchy stress (full 3x3, row-major).
    pub nodal_cauchy_stress: Option<&'a [[f64; 9]]>,
    /// Nodal von Mises stress.
    pub nodal_von_mises: Option<&'a [f64]>,
    /// Cell-averaged strain of the material model (full 3x3, row-major).
    pub strain: Option<&'a [[f64; 9]]>,
    /// Cell-averaged Green-Lagrange strain (full 3x3, row-major).
    pub green_lagrange_strain: Option<&'a [[f64; 9]]>,
    /// Cell-averaged logarithmic strain (full 3x3, row-major).
    pub logarithmic_strain: Option<&'a [[f64; 9]]>,
    /// Principal values of the cell-averaged Cauchy stress, largest first.
    pub principal_stress: Option<&'a [[f64; 3]]>,
    /// Principal values of the nodal Cauchy stress, largest first.
    pub nodal_principal_stress: Option<&'a [[f64; 3]]>,
    /// The increment the load path tries next (attribute `next_increment`): with the load
    /// factor, the step index and the displacement, what a restart continues from.
    pub next_increment: Option<f64>,
    /// The pseudo-time of the step (attribute `time`; the load factor is `loading.curve` at it,
    /// equal to it where there is no curve): where on the load path a restart continues.
    pub time: Option<f64>,
}

/// Where a field lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Center {
    Node,
    Cell,
}

/// XDMF attribute type, which fixes the number of components.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttributeType {
    Scalar,
    Vector,
    Tensor,
    Tensor6,
}

impl AttributeType {
    pub fn components(self) -> usize {
        match self {
            AttributeType::Scalar => 1,
            AttributeType::Vector => 3,
            AttributeType::Tensor => 9,
            AttributeType::Tensor6 => 6,
        }
    }
}

/// A field a step can hold, in the order of a step's datasets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepField {
    /// Nodal displacement (3 values a node).
    Displacement,
    /// Nodal reaction force (3 values a node).
    Reaction,
    /// Cell-averaged Cauchy stress, full 3x3 row-major (9 values a cell).
    CauchyStress,
    /// Cell-averaged Cauchy stress in XDMF `Tensor6` order (6 values a cell).
    CauchyStress6,
    /// Cell-averaged von Mises stress.
    VonMises,
    /// Cell-averaged `det F`.
    Jacobian,
    /// Cell-averaged strain energy density.
    EnergyDensity,
    /// Nodal Cauchy stress, full 3x3 row-major (9 values a node).
    NodalCauchyStress,
    /// Nodal von Mises stress.
    NodalVonMises,
    /// Cell-averaged strain of the material model, full 3x3 row-major (9 values a cell).
    Strain,
    /// Cell-averaged Green-Lagrange strain, full 3x3 row-major (9 values a cell).
    GreenLagrangeStrain,
    /// Cell-averaged logarithmic strain, full 3x3 row-major (9 values a cell).
    LogarithmicStrain,
    /// Principal values of the cell-averaged Cauchy stress, largest first (3 values a cell).
    PrincipalStress,
    /// Principal values of the nodal Cauchy stress, largest first (3 values a node).
    NodalPrincipalStress,
}

impl StepField {
    /// Position in a step's dataset order (both Cauchy stresses share one: a step holds one).
    pub(crate) fn order(self) -> usize {
        match self {
            StepField::Displacement => 0,
            StepField::Reaction => 1,
            StepField::CauchyStress | StepField::CauchyStress6 => 2,
            StepField::VonMises => 3,
            StepField::Jacobian => 4,
            StepField::EnergyDensity => 5,
            StepField::NodalCauchyStress => 6,
            StepField::NodalVonMises => 7,
            StepField::Strain => 8,
            StepField::GreenLagrangeStrain => 9,
            StepField::LogarithmicStrain => 10,
            StepField::PrincipalStress => 11,
            StepField::NodalPrincipalStress => 12,
        }
    }

    /// The dataset's name.
    pub fn name(self) -> &'static str {
        match self {
            StepField::Displacement => "displacement",
            StepField::Reaction => "reaction",
            StepField::CauchyStress | StepField::CauchyStress6 => "cauchy_stress",
            StepField::VonMises => "von_mises",
            StepField::Jacobian => "jacobian",
            StepField::EnergyDensity => "energy_density",
            StepField::NodalCauchyStress => "nodal_cauchy_stress",
            StepField::NodalVonMises => "nodal_von_mises",
            StepField::Strain => "strain",
            StepField::GreenLagrangeStrain => "green_lagrange_strain",
            StepField::LogarithmicStrain => "logarithmic_strain",
            StepField::PrincipalStress => "principal_stress",
            StepField::NodalPrincipalStress => "nodal_principal_stress",
        }
    }

    /// Whether the field has a row per node (else per cell).
    pub fn on_nodes(self) -> bool {
        self.center() == Center::Node
    }

    /// Values per row.
    pub fn components(self) -> usize {
        self.kind().components()
    }

    pub(crate) fn center(self) -> Center {
        match self {
            StepField::Displacement
            | StepField::Reaction
            | StepField::NodalCauchyStress
            | StepField::NodalVonMises
            | StepField::NodalPrincipalStress => Center::Node,
            _ => Center::Cell,
        }
    }

    pub(crate) fn kind(self) -> AttributeType {
        match self {
            StepField::Displacement
            | StepField::Reaction
            | StepField::PrincipalStress
            | StepField::NodalPrincipalStress => AttributeType::Vector,
            StepField::CauchyStress
            | StepField::NodalCauchyStress
            | StepField::Strain
            | StepField::GreenLagrangeStrain
            | StepField::LogarithmicStrain => AttributeType::Tensor,
            StepField::CauchyStress6 => AttributeType::Tensor6,
            _ => AttributeType::Scalar,
        }
    }
}

/// One field of a step, flattened: `values.len() == entities * components`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field<'a> {
    pub which: StepField,
    pub name: &'static str,
    pub center: Center,
    pub kind: AttributeType,
    pub values: &'a [f64],
}

impl<'a> Field<'a> {
    fn of(which: StepField, values: &'a [f64]) -> Self {
        Field {
            which,
            name: which.name(),
            center: which.center(),
            kind: which.kind(),
            values,
        }
    }
}

impl<'a> StepData<'a> {
    /// The fields present, in a fixed order.
    pub(crate) fn fields(&self) -> Vec<Field<'a>> {
        let vectors =
            |which, v: Option<&'a [[f64; 3]]>| v.map(|v| Field::of(which, v.as_flattened()));
        let scalars = |which, v: Option<&'a [f64]>| v.map(|v| Field::of(which, v));
        let tensors =
            |which, v: Option<&'a [[f64; 9]]>| v.map(|v| Field::of(which, v.as_flattened()));
        let stress = self.cauchy_stress.map(|t| match t {
            CellTensor::Full(v) => Field::of(StepField::CauchyStress, v.as_flattened()),
            CellTensor::Symmetric(v) => Field::of(StepField::CauchyStress6, v.as_flattened()),
        });
        [
            vectors(StepField::Displacement, self.displacement),
            vectors(StepField::Reaction, self.reaction),
            stress,
            scalars(StepField::VonMises, self.von_mises),
            scalars(StepField::Jacobian, self.jacobian),
            scalars(StepField::EnergyDensity, self.energy_density),
            self.nodal_cauchy_stress
                .map(|v| Field::of(StepField::NodalCauchyStress, v.as_flattened())),
            scalars(StepField::NodalVonMises, self.nodal_von_mises),
            tensors(StepField::Strain, self.strain),
            tensors(StepField::GreenLagrangeStrain, self.green_lagrange_strain),
            tensors(StepField::LogarithmicStrain, self.logarithmic_strain),
            vectors(StepField::PrincipalStress, self.principal_stress),
            vectors(StepField::NodalPrincipalStress, self.nodal_principal_stress),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}
