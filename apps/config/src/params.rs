//! The typed parameters of a run, one struct per YAML section.
//!
//! Every struct rejects unknown keys; defaults are stated on each field. Values are checked for
//! range and consistency by [`Config::validate`](super::Config::validate), not here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::material::MaterialParams;
use super::tree::Origin;

/// All parameters of a run.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where the mesh comes from (required).
    pub mesh: MeshSource,
    /// Material assignments (required, at least one); a later entry overrides earlier ones on
    /// the cells they share.
    pub materials: Vec<MaterialParams>,
    /// Body force per unit reference volume at load factor 1 (scaled by the load factor); each
    /// component a number or an expression of `x, y, z, t`. Default `[0, 0, 0]`.
    #[serde(default)]
    pub body_force: [Scalar; 3],
    /// Boundary conditions. Default: none (the problem is then singular unless a set is fixed).
    #[serde(default)]
    pub boundary: BoundaryParams,
    /// Sets defined by geometry, by name (a box, a plane, an outward normal, an expression of
    /// `x, y, z`), usable wherever a set name is. Default: none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sets: BTreeMap<String, GeometricSet>,
    /// Load stepping. Defaults: see [`LoadingParams`].
    #[serde(default)]
    pub loading: LoadingParams,
    /// Newton iteration. Defaults: see [`NewtonParams`].
    #[serde(default)]
    pub newton: NewtonParams,
    /// Where the run is computed: `auto` (default: the Newton loop on the first CUDA GPU when one
    /// is usable and supports the problem, else the CPU, the header saying why), `cpu`, or `cuda`
    /// (the GPU; an error at this key where none is usable or the problem needs what it lacks).
    #[serde(default)]
    pub device: ComputeDevice,
    /// Linear solver of each Newton step. Defaults: see [`LinearSolverParams`].
    #[serde(default)]
    pub linear_solver: LinearSolverParams,
    /// Quadrature. Default: `order + 1` Gauss points per direction.
    #[serde(default)]
    pub quadrature: QuadratureParams,
    /// The element formulation: `auto` (default: per material, projected where the displacement
    /// formulation would lock), `displacement` or `projected` (see [`ElementFormulation`]).
    #[serde(default)]
    pub formulation: ElementFormulation,
    /// Output files. Defaults: see [`OutputParams`].
    #[serde(default)]
    pub output: OutputParams,
    /// Where the configuration was read from; not part of the YAML schema.
    #[serde(skip)]
    pub source: Source,
}

/// The file a [`Config`] was read from and the origin of each of its values, used to point
/// semantic errors at the line that holds the offending value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Source {
    /// The configuration file as given to `load` (`<memory>` for a config built in code).
    pub file: PathBuf,
    /// The file's text, quoted in error messages (empty for a config built in code).
    pub(crate) text: String,
    /// Origin of every value by key path (`materials[1].mu`).
    pub(crate) origins: BTreeMap<String, Origin>,
}

impl Source {
    /// The origin of the value at `path`, or of its nearest ancestor present in the file (a key
    /// left at its default has no origin of its own).
    pub fn origin(&self, path: &str) -> Option<&Origin> {
        let mut path = path;
        loop {
            if let Some(origin) = self.origins.get(path) {
                return Some(origin);
            }
            path = &path[..path.rfind(['.', '['])?];
        }
    }
}

/// Exactly one mesh source, written as a one-key mapping: `mesh: { box: {...} }` or
/// `mesh: { gmsh: {...} }`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[allow(clippy::large_enum_variant)] // one per run; boxing would only complicate matching
pub enum MeshSource {
    /// A structured box, optionally mapped trilinearly onto eight corners.
    Box(BoxMesh),
    /// A Gmsh 4.1 file.
    Gmsh(GmshMesh),
}

/// A structured hexahedral box mesh.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BoxMesh {
    /// Number of cells in x, y, z (required, each > 0).
    pub cells: [usize; 3],
    /// Lower corner of the axis-aligned box. Default `[0, 0, 0]`; not allowed with `corners`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<[f64; 3]>,
    /// Upper corner of the axis-aligned box. Default `[1, 1, 1]`; not allowed with `corners`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<[f64; 3]>,
    /// Element order: 1 (8-node Q1) or 2 (27-node Q2). Default 1.
    #[serde(default = "default_order")]
    pub order: usize,
    /// The eight corners of a trilinearly mapped box in lexicographic order (corner
    /// `i + 2j + 4k` is the image of reference corner `(i, j, k)`). Default: the axis-aligned
    /// box `lower`..`upper`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corners: Option<[[f64; 3]; 8]>,
}

impl BoxMesh {
    /// The eight corners, resolved from `corners` or from `lower`/`upper` and their defaults.
    pub fn corner_points(&self) -> [[f64; 3]; 8] {
        if let Some(corners) = self.corners {
            return corners;
        }
        let lower = self.lower.unwrap_or([0.0; 3]);
        let upper = self.upper.unwrap_or([1.0; 3]);
        std::array::from_fn(|c| {
            std::array::from_fn(|d| if c >> d & 1 == 0 { lower[d] } else { upper[d] })
        })
    }
}

fn default_order() -> usize {
    1
}

/// A mesh read from a Gmsh 4.1 file.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GmshMesh {
    /// The `.msh` file (required). Written relative to the YAML file's directory; `load`
    /// resolves it, so after loading it is usable as is.
    pub file: PathBuf,
    /// Factor applied to the file's node coordinates (e.g. 0.001 for a mesh drawn in mm and a
    /// run in m). Default 1.
    #[serde(default = "unit_scale")]
    pub scale: f64,
}

fn unit_scale() -> f64 {
    1.0
}

/// A set of the mesh's nodes, boundary faces or cells, selected by geometry: every criterion
/// given must hold. A node is tested at its position, a face by all its nodes (and its outward
/// normal), a cell at its centroid.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GeometricSet {
    /// What the set holds: `nodes`, `faces` (boundary faces) or `cells` (required).
    pub kind: GeometricSetKind,
    /// Points inside the box `lower`..`upper` (widened by `tolerance`).
    #[serde(rename = "box", default, skip_serializing_if = "Option::is_none")]
    pub within: Option<RegionBox>,
    /// Points on the plane through `point` with normal `normal` (to `tolerance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plane: Option<RegionPlane>,
    /// Faces whose unit outward normal is within `angle_deg` of this direction (faces only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normal: Option<[f64; 3]>,
    /// Largest angle between a face's outward normal and `normal`, in degrees. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub angle_deg: Option<f64>,
    /// Points where this expression of `x, y, z` is at most `tolerance`: `x - 5` selects
    /// `x <= 5`, `abs(sqrt(x^2 + y^2) - 1)` the cylinder of radius 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// Absolute length tolerance of `box`, `plane` and `expression`. Default: 1e-6 times the
    /// diagonal of the mesh's bounding box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
}

/// What a [`GeometricSet`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GeometricSetKind {
    Nodes,
    Faces,
    Cells,
}

/// An axis-aligned box.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegionBox {
    pub lower: [f64; 3],
    pub upper: [f64; 3],
}

/// A plane through `point` with normal `normal` (any length but zero).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegionPlane {
    pub point: [f64; 3],
    pub normal: [f64; 3],
}

/// Boundary conditions; every list defaults to empty.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BoundaryParams {
    /// Prescribed displacement components on node sets.
    pub dirichlet: Vec<DirichletParams>,
    /// Rigid rotations of node sets about an axis.
    pub twist: Vec<TwistParams>,
    /// Dead tractions on face sets.
    pub traction: Vec<TractionParams>,
    /// Follower pressures on face sets: `{ set: inner, value: 1.0 }`, per unit deformed area,
    /// positive pushing into the body (against the outward normal), turning with the surface.
    pub pressure: Vec<PressureParams>,
    /// Dead forces on every node of a node (or face) set.
    pub nodal_force: Vec<NodalForceParams>,
    /// Dead forces at points: `{ at: [x, y, z], value: [fx, fy, fz] }`, applied at the mesh node
    /// there (an error names the nearest node where there is none).
    pub point_load: Vec<PointLoadParams>,
}

/// A dead force on every node of a node (or face) set, at load factor 1.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodalForceParams {
    /// Node (or face) set (required): its name, or its numeric id (Exodus II).
    #[serde(deserialize_with = "set_name")]
    pub set: String,
    /// The force on each node (required).
    pub value: [f64; 3],
    /// A load curve of its own, `[[time, factor], ...]` on the run's pseudo-time (as
    /// `loading.curve`), replacing the load factor for this entry. Default: the load factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<[f64; 2]>,
}

/// A set reference: a name, or a number taken as the set's id (Exodus II numbers its node sets,
/// side sets and element blocks; Cubit often leaves them unnamed). An integer is kept as its
/// decimal text (`12` and `"12"` are the same reference); the mesh resolves it
/// (`mesh::HexMesh::set_name`).
pub(crate) fn set_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct V;
    impl serde::de::Visitor<'_> for V {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a set name, or a set id (an integer)")
        }
        fn visit_str<E>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }
        fn visit_i64<E>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_u64<E>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<String, E> {
            // an integer written with a point (`12.0`) is still an id; a fraction is not
            if v.fract() == 0.0 && v.abs() < 9.0e15 {
                Ok((v as i64).to_string())
            } else {
                Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
            }
        }
    }
    d.deserialize_any(V)
}

/// A number, or a math expression of the reference position `x, y, z` and pseudo-time `t`
/// written as a string (`"2 * sin(PI * x)"`); see `solve::expression`.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Number(f64),
    Expression(String),
}

impl PartialEq<f64> for Scalar {
    fn eq(&self, other: &f64) -> bool {
        matches!(self, Scalar::Number(v) if v == other)
    }
}

impl Default for Scalar {
    fn default() -> Self {
        Scalar::Number(0.0)
    }
}

impl Serialize for Scalar {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Scalar::Number(v) => s.serialize_f64(*v),
            Scalar::Expression(e) => s.serialize_str(e),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number or an expression of x, y, z, t in quotes")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v as f64))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Expression(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A follower pressure on a face set, at load factor 1.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PressureParams {
    /// Face set (required): its name, or its numeric id (Exodus II).
    #[serde(deserialize_with = "set_name")]
    pub set: String,
    /// Pressure (required), positive into the body.
    pub value: f64,
    /// A load curve of its own, `[[time, factor], ...]` on the run's pseudo-time (as
    /// `loading.curve`), replacing the load factor for this entry. Default: the load factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<[f64; 2]>,
}

/// A dead force at a point (a mesh node), at load factor 1.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PointLoadParams {
    /// The point (required): must be a mesh node.
    pub at: [f64; 3],
    /// The force (required).
    pub value: [f64; 3],
    /// A load curve of its own, `[[time, factor], ...]` on the run's pseudo-time (as
    /// `loading.curve`), replacing the load factor for this entry. Default: the load factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<[f64; 2]>,
}

/// Prescribed displacement components on a node set, reached at load factor 1 (scaled by the
/// load factor). Omitted components are free; at least one must be given.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DirichletParams {
    /// Node set (required): its name, or its numeric id (Exodus II).
    #[serde(deserialize_with = "set_name")]
    pub set: String,
    /// x displacement: a number or an expression of `x, y, z` (reference position) and `t`. Default: free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<Scalar>,
    /// y displacement. Default: free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<Scalar>,
    /// z displacement. Default: free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<Scalar>,
    /// A load curve of its own, `[[time, factor], ...]` on the run's pseudo-time (as
    /// `loading.curve`), replacing the load factor for this entry. Default: the load factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<[f64; 2]>,
}

impl DirichletParams {
    /// The prescribed components, `None` for free ones.
    pub fn components(&self) -> [Option<Scalar>; 3] {
        [self.x.clone(), self.y.clone(), self.z.clone()]
    }
}

/// Rotation of a node set about the axis through `center` along `axis` by
/// `angle_deg * load_factor` degrees (right-hand rule), plus a translation `axial * load_factor`
/// along the unit axis. All three displacement components of the set are prescribed.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TwistParams {
    /// Node set (required): its name, or its numeric id (Exodus II).
    #[serde(deserialize_with = "set_name")]
    pub set: String,
    /// Axis direction (required, nonzero; normalised by the user of these parameters).
    pub axis: [f64; 3],
    /// A point on the axis (required).
    pub center: [f64; 3],
    /// Rotation angle at load factor 1, in degrees (required).
    pub angle_deg: f64,
    /// Displacement along the axis at load factor 1. Default 0.
    #[serde(default)]
    pub axial: f64,
    /// A load curve of its own, `[[time, factor], ...]` on the run's pseudo-time (as
    /// `loading.curve`), replacing the load factor for this entry. Default: the load factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<[f64; 2]>,
}

/// Dead load: traction per unit reference area on a face set, at load factor 1.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TractionParams {
    /// Face set (required): its name, or its numeric id (Exodus II).
    #[serde(deserialize_with = "set_name")]
    pub set: String,
    /// Traction vector (required); each component a number or an expression of `x, y, z, t`.
    pub value: [Scalar; 3],
    /// A load curve of its own, `[[time, factor], ...]` on the run's pseudo-time (as
    /// `loading.curve`), replacing the load factor for this entry. Default: the load factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<[f64; 2]>,
}

/// Load stepping: the load factor goes from 0 to 1 in `steps` equal increments, each cut back
/// (halved) on Newton failure and regrown by `growth` after a success.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoadingParams {
    /// Number of nominal load increments (1 to `solve::params::MAX_LOAD_STEPS`). Default 1.
    pub steps: usize,
    /// Smallest load increment before the run gives up (0 < value <= 1). Default 1e-3.
    pub min_increment: f64,
    /// Most consecutive cutbacks of one increment. Default 10.
    pub max_cutbacks: usize,
    /// Factor by which an increment grows after a converged step, capped at the nominal
    /// increment (>= 1). Default 1.5.
    pub growth: f64,
    /// The load factor as a piecewise-linear function of pseudo-time, `[[time, factor], ...]`
    /// with times strictly increasing from 0 (at least two points); the steps divide
    /// `0..=last time` and every load and Dirichlet value is scaled by the factor (a curve back
    /// to 0 unloads). Default (empty): the factor goes from 0 to 1.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<[f64; 2]>,
}

impl Default for LoadingParams {
    /// `solve`'s defaults (one source for the schema and the solver).
    fn default() -> Self {
        solve::params::LoadingParams::default().into()
    }
}

/// Newton iteration of one load step. Converged, after at least one update, once the Dirichlet
/// values hold and the free residual satisfies `|r| <= rtol r_ref` (`r_ref`: the step's first
/// right-hand side) or `|r| <= atol`, or the update satisfies `|du| <= stol |u|` (see
/// `solve::newton`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NewtonParams {
    /// Relative residual tolerance (0 < rtol < 1). Default 1e-8.
    pub rtol: f64,
    /// Absolute residual tolerance (>= 0), a force in the input's units, tested only after a
    /// Newton update. Default 0 (off: the relative tests are independent of the unit system).
    pub atol: f64,
    /// Update-norm tolerance (>= 0). Default 1e-12.
    pub stol: f64,
    /// Most Newton iterations per load step (>= 1). Default 25.
    pub max_iterations: usize,
    /// Damping of the Newton update: `energy` (backtracking on the potential energy; full steps
    /// where the loads have none), `residual` (backtracking on the residual norm) or `none`.
    /// Default `energy`.
    pub line_search: LineSearch,
    /// Most step-length reductions per Newton iteration (>= 1), also used to back off from an
    /// inverted element. Default 8.
    pub max_line_search: usize,
    /// Tolerance of each linear solve: `eisenstat_walker` (inexact Newton, as PETSc's
    /// `-snes_ksp_ew`, never below `linear_solver.rtol`) or `fixed` (`linear_solver.rtol`).
    /// Default `eisenstat_walker`.
    pub forcing: Forcing,
}

/// Newton's line search (see `solve::params::LineSearch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineSearch {
    Energy,
    Residual,
    None,
}

/// Linear tolerance per Newton iteration (see `solve::params::Forcing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Forcing {
    EisenstatWalker,
    Fixed,
}

impl Default for NewtonParams {
    /// `solve`'s defaults (one source for the schema and the solver).
    fn default() -> Self {
        solve::params::NewtonParams::default().into()
    }
}

/// Linear solver method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinearSolverMethod {
    /// `direct` where the factor is small and fast to compute (estimated from the tangent's
    /// pattern; the estimate is in the run header), `cg_amg` above.
    Auto,
    /// Conjugate gradients preconditioned by one V-cycle of blocked smoothed-aggregation AMG
    /// (options under `amg`); the hierarchy is reused across Newton iterations.
    CgAmg,
    /// Conjugate gradients preconditioned by point-block (3x3) Jacobi.
    CgJacobi,
    /// Sparse direct factorisation.
    Direct,
}

/// The precision of the fields written (the key `output.precision`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputPrecision {
    /// IEEE binary64: the values as computed.
    #[default]
    Double,
    /// IEEE binary32: each value rounded to nearest (the displacement and mesh stay double).
    Single,
}

/// Where a run is computed (the top-level key `device`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeDevice {
    /// The first CUDA GPU when one is usable, else the CPU.
    #[default]
    Auto,
    /// The CPU.
    Cpu,
    /// The first CUDA GPU.
    Cuda,
}

/// How the cells' volume change enters the energy (the top-level key `formulation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ElementFormulation {
    /// Per `materials` entry, from its small-strain Poisson's ratio (whatever moduli it is given
    /// by) and the cell order: `projected` where `displacement` would lock (Q1 from `nu = 0.45`,
    /// Q2 from 0.49: [`fem::LOCKING_POISSON_RATIO`]), `displacement` otherwise, as Abaqus picks
    /// C3D8H over C3D8 for rubber. Compressible inputs run exactly as with `displacement`.
    #[default]
    Auto,
    /// The standard displacement formulation, `psi(F)` at every Gauss point. It locks
    /// volumetrically as Poisson's ratio nears 1/2: Q1 cells are too stiff from about
    /// `nu = 0.45` on (`hexfem check` warns), Q2 cells less so.
    Displacement,
    /// The projected volume ratio (mean dilatation / F-bar for Q1, Q2-P1 for Q2, B-bar for the
    /// `linear` model): each cell's `J` is replaced by its L2 projection onto constants (Q1) or
    /// linear functions (Q2). No volumetric locking, symmetric tangent, the same unknowns and
    /// solvers, on the CPU and the GPU.
    Projected,
}

/// Linear solver of each Newton step. Iterative methods stop when
/// `|b - A x| <= max(atol, rtol |b|)`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinearSolverParams {
    /// Method. Default `auto`.
    pub method: LinearSolverMethod,
    /// Relative tolerance (0 < rtol < 1). Default 1e-8.
    pub rtol: f64,
    /// Absolute tolerance (>= 0). Default 0.
    pub atol: f64,
    /// Most iterations (>= 1). Default 2000.
    pub max_iterations: usize,
    /// Options of the AMG preconditioner (`method: cg_amg`); every key has a documented default,
    /// see `amg::AmgParams`.
    pub amg: amg::AmgParams,
}

impl Default for LinearSolverParams {
    /// `solve`'s defaults (one source for the schema and the solver).
    fn default() -> Self {
        solve::params::LinearSolverParams::default().into()
    }
}

/// Quadrature rule of the cells.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuadratureParams {
    /// Gauss points per direction (1..=6). Default (`null`): element order + 1.
    pub points: Option<usize>,
}

impl QuadratureParams {
    /// Largest number of points per direction accepted.
    pub const MAX_POINTS: usize = fem::quadrature::MAX_POINTS;

    /// Points per direction for cells of the given order.
    pub fn points_for(&self, order: usize) -> usize {
        self.points.unwrap_or(order + 1)
    }
}

/// A result field written at each converged step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputField {
    /// Nodal displacement (vector).
    Displacement,
    /// Nodal reaction force, nonzero on constrained nodes (vector).
    Reaction,
    /// Cell-averaged Cauchy stress (tensor).
    CauchyStress,
    /// Cell-averaged von Mises stress (scalar).
    VonMises,
    /// Cell-averaged deformation Jacobian `det F` (scalar).
    Jacobian,
    /// Cell-averaged strain energy density per reference volume (scalar).
    EnergyDensity,
    /// Cauchy stress at the nodes: the mean of the cell-averaged stresses of the cells around
    /// each node (tensor; smooth pictures where the cell field is blocky).
    NodalCauchyStress,
    /// Von Mises stress of the nodal Cauchy stress (scalar).
    NodalVonMises,
    /// Cell-averaged strain of the cell's material model (tensor): the small strain
    /// `(h + h^T) / 2` for `linear`, Green-Lagrange for the hyperelastic models.
    Strain,
    /// Cell-averaged Green-Lagrange strain `(F^T F - I) / 2` (tensor, reference frame).
    GreenLagrangeStrain,
    /// Cell-averaged logarithmic (Hencky) strain `ln V` (tensor, deformed frame).
    LogarithmicStrain,
    /// Principal values of the cell-averaged Cauchy stress, largest first (vector).
    PrincipalStress,
    /// Principal values of the nodal Cauchy stress, largest first (vector).
    NodalPrincipalStress,
    /// The mesh's node, face and cell sets as 0/1 attributes `set:<name>` of every step (node
    /// attributes for node and face sets, cell attributes for cell sets), for ParaView's
    /// Threshold and meshio; written once under `/mesh/indicators/`.
    Sets,
}

impl OutputField {
    /// Every field, in the order they are listed by default.
    pub const ALL: [OutputField; 8] = [
        OutputField::Displacement,
        OutputField::Reaction,
        OutputField::CauchyStress,
        OutputField::VonMises,
        OutputField::Jacobian,
        OutputField::EnergyDensity,
        OutputField::NodalCauchyStress,
        OutputField::NodalVonMises,
    ];

    /// Fields written only when listed (the default list, [`OutputField::ALL`], leaves them
    /// out, so that the files of inputs without `output.fields` stay as they were).
    pub const OPTIONAL: [OutputField; 6] = [
        OutputField::Strain,
        OutputField::GreenLagrangeStrain,
        OutputField::LogarithmicStrain,
        OutputField::PrincipalStress,
        OutputField::NodalPrincipalStress,
        OutputField::Sets,
    ];

    /// The field's name in the input (and its dataset's).
    pub fn name(self) -> &'static str {
        match self {
            OutputField::Displacement => "displacement",
            OutputField::Reaction => "reaction",
            OutputField::CauchyStress => "cauchy_stress",
            OutputField::VonMises => "von_mises",
            OutputField::Jacobian => "jacobian",
            OutputField::EnergyDensity => "energy_density",
            OutputField::NodalCauchyStress => "nodal_cauchy_stress",
            OutputField::NodalVonMises => "nodal_von_mises",
            OutputField::Strain => "strain",
            OutputField::GreenLagrangeStrain => "green_lagrange_strain",
            OutputField::LogarithmicStrain => "logarithmic_strain",
            OutputField::PrincipalStress => "principal_stress",
            OutputField::NodalPrincipalStress => "nodal_principal_stress",
            OutputField::Sets => "sets",
        }
    }

    /// The strain measure of a strain field (`None`: not a strain).
    pub fn strain_measure(self) -> Option<fem::StrainMeasure> {
        match self {
            OutputField::Strain => Some(fem::StrainMeasure::Model),
            OutputField::GreenLagrangeStrain => Some(fem::StrainMeasure::GreenLagrange),
            OutputField::LogarithmicStrain => Some(fem::StrainMeasure::Logarithmic),
            _ => None,
        }
    }
}

/// Output files: `<directory>/<name>.h5`, `.xdmf`, `.last.xdmf`, `.summary.json` and
/// `.steps.jsonl`; with `vtu`, also `<name>.pvd` and `<name>_vtu/step_NNNNNN.vtu`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutputParams {
    /// Output directory, relative to the working directory. Default `results`.
    pub directory: PathBuf,
    /// Base name of the files (no path separators). Default (`null`): the configuration file's
    /// stem; `load` fills it in, so after loading it is `Some`.
    pub name: Option<String>,
    /// Fields to write (no repeats). Default: all of [`OutputField::ALL`].
    pub fields: Vec<OutputField>,
    /// Also write each step as a VTK XML file (`.vtu`) listed in a ParaView collection (`.pvd`).
    /// Default `false`.
    pub vtu: bool,
    /// The floating-point precision of the fields in the HDF5 file: `double` (default) or
    /// `single` (float32, for viewing: half the bytes). The displacement, which a restart
    /// continues from, and the mesh stay double.
    pub precision: OutputPrecision,
    /// Quantities recorded at step 0 and every converged step in the step log, the summary and
    /// `<name>.probes.csv`. Default: none.
    pub probes: ProbesParams,
}

impl Default for OutputParams {
    fn default() -> Self {
        OutputParams {
            directory: PathBuf::from("results"),
            name: None,
            fields: OutputField::ALL.to_vec(),
            vtu: false,
            precision: OutputPrecision::Double,
            probes: ProbesParams::default(),
        }
    }
}

impl OutputParams {
    /// Whether `field` is to be written.
    pub fn wants(&self, field: OutputField) -> bool {
        self.fields.contains(&field)
    }
}

/// Probes: point displacements, set averages and reactions, global quantities. Each becomes
/// columns of `<name>.probes.csv` (one row per step, step 0 included) and entries of every step
/// record's `probes` (`name.component`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProbesParams {
    /// Displacement interpolated at points of the mesh: columns `<name>.ux`, `.uy`, `.uz`.
    pub points: Vec<PointProbe>,
    /// Node sets: mean displacement `<name>.ux..uz`, total reaction force `<name>.fx..fz` and
    /// its moment `<name>.mx..mz` about `about`.
    pub sets: Vec<SetProbe>,
    /// Whole-model quantities: a column each.
    pub globals: Vec<GlobalProbe>,
}

impl ProbesParams {
    /// Whether no probe is defined.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty() && self.sets.is_empty() && self.globals.is_empty()
    }
}

/// The displacement at a point of the reference configuration, interpolated in the cell that
/// contains it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PointProbe {
    /// Column prefix (required; letters, digits, `_`, `-`; unique among probes).
    pub name: String,
    /// Reference coordinates of the point (required; inside or on the boundary of the mesh).
    pub at: [f64; 3],
    /// Fields read at the point: `displacement` (interpolated: `<name>.ux..uz`) and the cell
    /// fields (the value of the cell holding the point: `<name>.<field>[.<component>]`).
    /// Default: `[displacement]`.
    #[serde(default = "point_probe_fields")]
    pub fields: Vec<OutputField>,
}

fn point_probe_fields() -> Vec<OutputField> {
    vec![OutputField::Displacement]
}

/// Averages and resultants over a node set (or the nodes of a face or cell set).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SetProbe {
    /// The set (required): its name, or its numeric id (Exodus II).
    #[serde(deserialize_with = "set_name")]
    pub set: String,
    /// Column prefix. Default: the set's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Point about which the moment of the reactions is taken, `sum (x + u - about) x f` over
    /// the set's nodes (`x` reference position, `f` reaction). Default: the set's reference
    /// centroid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<[f64; 3]>,
    /// Fields whose least, largest and mean value over the set are recorded
    /// (`<name>.<field>[.<component>].min`, `.max`, `.mean`): a cell field over the set's
    /// cells (a face set's cells, a node set's cells touching it), a nodal field over its nodes.
    /// Default: none.
    #[serde(default)]
    pub fields: Vec<OutputField>,
}

impl SetProbe {
    /// The column prefix: `name`, or the set's name.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.set)
    }
}

/// A whole-model quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GlobalProbe {
    /// Total strain energy.
    StrainEnergy,
    /// Largest nodal displacement magnitude.
    MaxDisplacement,
    /// Largest cell-averaged von Mises stress.
    MaxVonMises,
    /// Largest principal value of any cell-averaged Cauchy stress.
    MaxPrincipalStress,
    /// Least principal value of any cell-averaged Cauchy stress.
    MinPrincipalStress,
    /// Least cell-averaged `det F`.
    MinJacobian,
}

impl GlobalProbe {
    /// The column name.
    pub fn label(self) -> &'static str {
        match self {
            GlobalProbe::StrainEnergy => "strain_energy",
            GlobalProbe::MaxDisplacement => "max_displacement",
            GlobalProbe::MaxVonMises => "max_von_mises",
            GlobalProbe::MaxPrincipalStress => "max_principal_stress",
            GlobalProbe::MinPrincipalStress => "min_principal_stress",
            GlobalProbe::MinJacobian => "min_jacobian",
        }
    }
}
