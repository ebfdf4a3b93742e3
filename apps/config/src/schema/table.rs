//! The tables: every key of a run input and of a campaign file, in the order of the types that
//! parse them (the resolved input and the reference page keep this order).

use super::{Bound, Bounds, Choice, Default, Elem, KeyDoc, Type, Unit};

use Default::{Required, Unset, Value};

const fn key(path: &'static str, ty: Type, default: Default, doc: &'static str) -> KeyDoc {
    KeyDoc {
        path,
        ty,
        default,
        bounds: Bounds::NONE,
        nullable: false,
        rule: "",
        unit: Unit::None,
        doc,
    }
}

impl KeyDoc {
    const fn unit(mut self, unit: Unit) -> Self {
        self.unit = unit;
        self
    }
    /// `value >= v`.
    const fn min(mut self, v: f64) -> Self {
        self.bounds.min = Bound::Inclusive(v);
        self
    }
    /// `value > v`.
    const fn above(mut self, v: f64) -> Self {
        self.bounds.min = Bound::Exclusive(v);
        self
    }
    /// `value <= v`.
    const fn max(mut self, v: f64) -> Self {
        self.bounds.max = Bound::Inclusive(v);
        self
    }
    /// `value < v`.
    const fn below(mut self, v: f64) -> Self {
        self.bounds.max = Bound::Exclusive(v);
        self
    }
    const fn nullable(mut self) -> Self {
        self.nullable = true;
        self
    }
    const fn rule(mut self, rule: &'static str) -> Self {
        self.rule = rule;
        self
    }
}

const fn choice(name: &'static str, doc: &'static str) -> Choice {
    Choice { name, doc }
}

const CURVE_DOC: &str = "a load curve of its own, `[[time, factor], ...]` on the run's \
                         pseudo-time (rules as `loading.curve`), followed instead of the load factor";
const CURVE_RULE: &str = "at least two points, the first at time 0, times strictly increasing";
const CURVE_DEFAULT: Default = Unset("the run's load factor");
const SCALAR_RULE: &str = "a number or an expression of `x, y, z, t` in quotes";

const SET_KINDS: &[Choice] = &[
    choice(
        "nodes",
        "nodes (Dirichlet conditions, nodal forces, probes)",
    ),
    choice(
        "faces",
        "boundary faces (tractions, pressures; their nodes serve as a node set)",
    ),
    choice("cells", "cells (materials)"),
];

const MODELS: &[Choice] = &[
    choice(
        "linear",
        "small-strain linear elasticity: (E, nu) or (lambda, mu)",
    ),
    choice(
        "saint_venant_kirchhoff",
        "St. Venant-Kirchhoff, linear in the Green-Lagrange strain: (E, nu) or (lambda, mu)",
    ),
    choice(
        "neo_hookean",
        "compressible neo-Hookean, `psi = lambda/2 (ln J)^2 - mu ln J + mu/2 (I1 - 3)`: \
         (E, nu) or (lambda, mu)",
    ),
    choice(
        "decoupled_neo_hookean",
        "neo-Hookean with an isochoric/volumetric split, \
         `psi = kappa/4 (J^2 - 1 - 2 ln J) + mu/2 (I1bar - 3)`: (E, nu) or (kappa, mu)",
    ),
    choice(
        "mooney_rivlin",
        "compressible Mooney-Rivlin, `psi = lambda/2 (ln J)^2 - (mu1 + 2 mu2) ln J + \
         mu1/2 (I1 - 3) + mu2/2 (I2 - 3)`: (lambda, mu1, mu2) or (E, nu, mu2_fraction)",
    ),
];

const DEVICES: &[Choice] = &[
    choice(
        "auto",
        "the Newton loop on the first CUDA GPU when one is usable and supports the problem, \
         else the CPU (the run header says which and why)",
    ),
    choice("cpu", "the CPU"),
    choice(
        "cuda",
        "the first CUDA GPU; an error where none is usable or the problem needs what it lacks",
    ),
];

const OUTPUT_PRECISIONS: &[Choice] = &[
    choice("double", "IEEE float64: the values as computed"),
    choice(
        "single",
        "IEEE float32, each value rounded to nearest: half the bytes, for viewing \
         (XDMF `Precision=\"4\"`)",
    ),
];

const FORMULATIONS: &[Choice] = &[
    choice(
        "auto",
        "per material entry: `projected` where `displacement` locks (Q1 at nu >= 0.45, Q2 at \
         nu >= 0.49, from the material's small-strain moduli), `displacement` otherwise",
    ),
    choice(
        "displacement",
        "`psi(F)` at every Gauss point; locks volumetrically as nu nears 1/2 (Q1 from about 0.45)",
    ),
    choice(
        "projected",
        "each cell's `J` replaced by its L2 projection (mean dilatation / F-bar for Q1, Q2-P1 \
         for Q2, B-bar for `linear`): no volumetric locking, symmetric tangent",
    ),
];

const LINE_SEARCHES: &[Choice] = &[
    choice(
        "energy",
        "backtracking on the potential energy (full steps where the loads have none)",
    ),
    choice("residual", "backtracking on the residual norm"),
    choice("none", "full Newton steps"),
];

const FORCINGS: &[Choice] = &[
    choice(
        "eisenstat_walker",
        "inexact Newton (as PETSc's `-snes_ksp_ew`), never below `linear_solver.rtol`",
    ),
    choice("fixed", "every linear solve to `linear_solver.rtol`"),
];

const METHODS: &[Choice] = &[
    choice(
        "auto",
        "`direct` where the estimated factor is small and fast to compute, else `cg_amg`",
    ),
    choice(
        "cg_amg",
        "CG preconditioned by one V-cycle of blocked smoothed-aggregation AMG (GMRES for a \
         nonsymmetric tangent)",
    ),
    choice("cg_jacobi", "CG preconditioned by point-block (3x3) Jacobi"),
    choice(
        "direct",
        "sparse direct factorisation (host only, one process)",
    ),
];

const SMOOTHERS: &[Choice] = &[
    choice("chebyshev", "Chebyshev polynomial on point-block Jacobi"),
    choice("jacobi", "damped point-block Jacobi"),
];

const REUSES: &[Choice] = &[
    choice("none", "rebuild everything for each new operator"),
    choice(
        "interpolation",
        "keep aggregates and prolongators; recompute Galerkin products, smoother diagonals, \
         coarse factor and (with `recompute_eigs`) eigenvalue estimates",
    ),
    choice("full", "keep the whole preconditioner (modified Newton)"),
];

const RENEWALS: &[Choice] = &[
    choice(
        "recompute",
        "a cold set-up's values for each load step's new rigid-body modes (strength graph and \
         aggregates recomputed; plans kept where the aggregates come out the same)",
    ),
    choice(
        "keep_aggregates",
        "keep every level's aggregates and plans; recompute tentative and smoothed prolongators, \
         Galerkin products, smoothers and coarse factor from the new modes (faster, above all on \
         a GPU; a restart matches the uninterrupted run to the solver's tolerance only)",
    ),
];

const STORAGES: &[Choice] = &[
    choice("blocked", "3x3 operator blocks, 3x6 prolongator blocks"),
    choice(
        "scalar",
        "everything expanded to 1x1 blocks (benchmark mode: the same iterates to round-off; \
         one process)",
    ),
];

const PRECISIONS: &[Choice] = &[
    choice("double", "everything in fp64"),
    choice(
        "mixed",
        "prolongators, coarse operators and smoother inverses stored in fp32, read widened to \
         fp64 (one process)",
    ),
];

const FIELDS: &[Choice] = &[
    choice("displacement", "nodal displacement (vector)"),
    choice(
        "reaction",
        "nodal reaction force, nonzero on constrained nodes (vector)",
    ),
    choice("cauchy_stress", "cell-averaged Cauchy stress (tensor)"),
    choice("von_mises", "cell-averaged von Mises stress (scalar)"),
    choice("jacobian", "cell-averaged `det F` (scalar)"),
    choice(
        "energy_density",
        "cell-averaged strain energy density per reference volume (scalar)",
    ),
    choice(
        "nodal_cauchy_stress",
        "Cauchy stress at the nodes, the mean of the cells around each node (tensor)",
    ),
    choice(
        "nodal_von_mises",
        "von Mises stress of the nodal Cauchy stress (scalar)",
    ),
    choice(
        "strain",
        "cell-averaged strain of the material model (tensor): small strain for `linear`, \
         Green-Lagrange for the hyperelastic models; not written by default",
    ),
    choice(
        "green_lagrange_strain",
        "cell-averaged Green-Lagrange strain `(F^T F - I)/2` (tensor); not written by default",
    ),
    choice(
        "logarithmic_strain",
        "cell-averaged logarithmic (Hencky) strain `ln V`, deformed frame (tensor); not \
         written by default",
    ),
    choice(
        "principal_stress",
        "principal values of the cell-averaged Cauchy stress, largest first (vector); not \
         written by default",
    ),
    choice(
        "nodal_principal_stress",
        "principal values of the nodal Cauchy stress, largest first (vector); not written by \
         default",
    ),
    choice(
        "sets",
        "the mesh's node and face sets (node attributes) and cell sets (cell attributes) as 0/1 \
         attributes `set:<name>` of every step, for ParaView's Threshold and meshio; not written \
         by default",
    ),
];

const GLOBALS: &[Choice] = &[
    choice("strain_energy", "total strain energy"),
    choice("max_displacement", "largest nodal displacement magnitude"),
    choice("max_von_mises", "largest cell-averaged von Mises stress"),
    choice(
        "max_principal_stress",
        "largest principal value of the cell-averaged Cauchy stresses",
    ),
    choice(
        "min_principal_stress",
        "least principal value of the cell-averaged Cauchy stresses",
    ),
    choice("min_jacobian", "least cell-averaged `det F`"),
];

/// Every key of a run input.
pub const INPUT_KEYS: &[KeyDoc] = &[
    // mesh
    key(
        "mesh",
        Type::OneKey,
        Required,
        "where the mesh comes from: exactly one of `box` or `gmsh`",
    ),
    key(
        "mesh.box",
        Type::Section,
        Unset("-"),
        "a structured box of hexahedra, optionally mapped \
         trilinearly onto eight corners; its sets: faces and nodes `xmin` ... `zmax`, cells `all`",
    ),
    key(
        "mesh.box.cells",
        Type::Array(Elem::Int, 3),
        Required,
        "number of cells in x, y, z",
    )
    .min(1.0),
    key(
        "mesh.box.lower",
        Type::Array(Elem::Float, 3),
        Unset("[0, 0, 0]"),
        "lower corner of the axis-aligned box; not with `corners`",
    )
    .unit(Unit::Length)
    .nullable(),
    key(
        "mesh.box.upper",
        Type::Array(Elem::Float, 3),
        Unset("[1, 1, 1]"),
        "upper corner of the axis-aligned box; not with `corners`",
    )
    .unit(Unit::Length)
    .nullable()
    .rule("above `lower` in every component"),
    key(
        "mesh.box.order",
        Type::Int,
        Value("1"),
        "element order: 1 (8-node Q1 cells) or 2 (27-node Q2 cells)",
    )
    .min(1.0)
    .max(2.0),
    key(
        "mesh.box.corners",
        Type::Array(Elem::Point, 8),
        Unset("the box `lower`..`upper`"),
        "the eight corners of a trilinearly mapped box; corner `i + 2j + 4k` is the image of \
         reference corner `(i, j, k)`",
    )
    .unit(Unit::Length)
    .nullable()
    .rule("not with `lower`/`upper`; right-handed, not inverted at any corner"),
    key(
        "mesh.gmsh",
        Type::Section,
        Unset("-"),
        "a Gmsh mesh (MSH 4.1 or 2.2, ASCII or binary, \
         optionally gzipped; 8- or 27-node hexahedra); physical groups become sets",
    ),
    key(
        "mesh.gmsh.file",
        Type::Path,
        Required,
        "the `.msh` file, relative to the directory of the YAML file",
    ),
    key(
        "mesh.gmsh.scale",
        Type::Float,
        Value("1.0"),
        "factor applied to the file's coordinates (0.001: drawn in mm, run in m)",
    )
    .above(0.0),
    // materials
    key(
        "materials",
        Type::List,
        Required,
        "material entries; a later entry overrides earlier \
         ones on the cells they share; every cell must be covered",
    )
    .min(1.0),
    key(
        "materials[].cells",
        Type::SetName,
        Value("all"),
        "a cell set (a Gmsh volume group, an Exodus element block: its name or id) or `all`",
    ),
    key(
        "materials[].model",
        Type::Choice(MODELS),
        Required,
        "constitutive model; the entry gives exactly one of its parameter sets",
    ),
    key(
        "materials[].young_modulus",
        Type::Float,
        Unset("not given"),
        "Young's modulus E, with `poisson_ratio`",
    )
    .unit(Unit::Stress)
    .nullable()
    .above(0.0),
    key(
        "materials[].poisson_ratio",
        Type::Float,
        Unset("not given"),
        "Poisson's ratio nu, with `young_modulus`",
    )
    .nullable()
    .above(-1.0)
    .below(0.5),
    key(
        "materials[].lambda",
        Type::Float,
        Unset("not given"),
        "first Lame constant lambda",
    )
    .unit(Unit::Stress)
    .nullable()
    .rule("3 lambda + 2 mu > 0 (Mooney-Rivlin: the element layer's range)"),
    key(
        "materials[].mu",
        Type::Float,
        Unset("not given"),
        "shear modulus mu",
    )
    .unit(Unit::Stress)
    .nullable()
    .above(0.0),
    key(
        "materials[].kappa",
        Type::Float,
        Unset("not given"),
        "bulk modulus kappa (`decoupled_neo_hookean`)",
    )
    .unit(Unit::Stress)
    .nullable()
    .above(0.0),
    key(
        "materials[].mu1",
        Type::Float,
        Unset("not given"),
        "Mooney-Rivlin coefficient of I1",
    )
    .unit(Unit::Stress)
    .nullable()
    .min(0.0)
    .rule("mu1 + mu2 > 0"),
    key(
        "materials[].mu2",
        Type::Float,
        Unset("not given"),
        "Mooney-Rivlin coefficient of I2",
    )
    .unit(Unit::Stress)
    .nullable()
    .min(0.0)
    .rule("mu1 + mu2 > 0"),
    key(
        "materials[].mu2_fraction",
        Type::Float,
        Unset("not given"),
        "Mooney-Rivlin from (E, nu): the share of the shear modulus carried by I2 (`mu2 = \
         mu2_fraction mu`, `mu1 = mu - mu2`, lambda such that the linearisation at F = I is the \
         (E, nu) material)",
    )
    .nullable()
    .min(0.0)
    .max(1.0),
    // loads
    key(
        "body_force",
        Type::Array(Elem::Scalar, 3),
        Value("[0.0, 0.0, 0.0]"),
        "body force per unit reference volume at load factor 1; numbers or expressions",
    )
    .unit(Unit::ForcePerVolume)
    .rule(SCALAR_RULE),
    key(
        "boundary",
        Type::Section,
        Unset("none"),
        "boundary conditions; every list defaults to \
         empty; without a constraint the problem is singular",
    ),
    key(
        "boundary.dirichlet",
        Type::List,
        Value("[]"),
        "prescribed displacement components on node (or face) sets, reached at load factor 1",
    ),
    key(
        "boundary.dirichlet[].set",
        Type::SetName,
        Required,
        "node (or face) set",
    ),
    key(
        "boundary.dirichlet[].x",
        Type::Scalar,
        Unset("free"),
        "x displacement; at least one of \
         `x`, `y`, `z` is given",
    )
    .unit(Unit::Length)
    .nullable()
    .rule(SCALAR_RULE),
    key(
        "boundary.dirichlet[].y",
        Type::Scalar,
        Unset("free"),
        "y displacement",
    )
    .unit(Unit::Length)
    .nullable()
    .rule(SCALAR_RULE),
    key(
        "boundary.dirichlet[].z",
        Type::Scalar,
        Unset("free"),
        "z displacement",
    )
    .unit(Unit::Length)
    .nullable()
    .rule(SCALAR_RULE),
    key(
        "boundary.dirichlet[].curve",
        Type::Curve,
        CURVE_DEFAULT,
        CURVE_DOC,
    )
    .rule(CURVE_RULE),
    key(
        "boundary.twist",
        Type::List,
        Value("[]"),
        "rigid rotations of node sets about an axis \
         by `angle_deg` times the load factor (right-hand rule), plus `axial` along the axis",
    ),
    key(
        "boundary.twist[].set",
        Type::SetName,
        Required,
        "node (or face) set",
    ),
    key(
        "boundary.twist[].axis",
        Type::Array(Elem::Float, 3),
        Required,
        "axis direction (normalised)",
    )
    .rule("nonzero"),
    key(
        "boundary.twist[].center",
        Type::Array(Elem::Float, 3),
        Required,
        "a point on the axis",
    )
    .unit(Unit::Length),
    key(
        "boundary.twist[].angle_deg",
        Type::Float,
        Required,
        "rotation at load factor 1",
    )
    .unit(Unit::Degrees),
    key(
        "boundary.twist[].axial",
        Type::Float,
        Value("0.0"),
        "displacement along the axis at load factor 1",
    )
    .unit(Unit::Length),
    key(
        "boundary.twist[].curve",
        Type::Curve,
        CURVE_DEFAULT,
        CURVE_DOC,
    )
    .rule(CURVE_RULE),
    key(
        "boundary.traction",
        Type::List,
        Value("[]"),
        "dead tractions per unit reference area on face sets",
    ),
    key(
        "boundary.traction[].set",
        Type::SetName,
        Required,
        "face set",
    ),
    key(
        "boundary.traction[].value",
        Type::Array(Elem::Scalar, 3),
        Required,
        "traction at load factor 1; numbers or expressions",
    )
    .unit(Unit::Stress)
    .rule(SCALAR_RULE),
    key(
        "boundary.traction[].curve",
        Type::Curve,
        CURVE_DEFAULT,
        CURVE_DOC,
    )
    .rule(CURVE_RULE),
    key(
        "boundary.pressure",
        Type::List,
        Value("[]"),
        "follower pressures per unit deformed area \
         on face sets, positive into the body, turning with the surface (nonsymmetric tangent)",
    ),
    key(
        "boundary.pressure[].set",
        Type::SetName,
        Required,
        "face set",
    ),
    key(
        "boundary.pressure[].value",
        Type::Float,
        Required,
        "pressure at load factor 1",
    )
    .unit(Unit::Stress),
    key(
        "boundary.pressure[].curve",
        Type::Curve,
        CURVE_DEFAULT,
        CURVE_DOC,
    )
    .rule(CURVE_RULE),
    key(
        "boundary.nodal_force",
        Type::List,
        Value("[]"),
        "the same dead force on every node of a node (or face) set",
    ),
    key(
        "boundary.nodal_force[].set",
        Type::SetName,
        Required,
        "node (or face) set",
    ),
    key(
        "boundary.nodal_force[].value",
        Type::Array(Elem::Float, 3),
        Required,
        "force on each node at load factor 1",
    )
    .unit(Unit::Force),
    key(
        "boundary.nodal_force[].curve",
        Type::Curve,
        CURVE_DEFAULT,
        CURVE_DOC,
    )
    .rule(CURVE_RULE),
    key(
        "boundary.point_load",
        Type::List,
        Value("[]"),
        "dead forces at points, applied at the mesh node there",
    ),
    key(
        "boundary.point_load[].at",
        Type::Array(Elem::Float, 3),
        Required,
        "the point: a mesh node, to 1e-9 of the mesh size (an error names the nearest node)",
    )
    .unit(Unit::Length),
    key(
        "boundary.point_load[].value",
        Type::Array(Elem::Float, 3),
        Required,
        "force at load factor 1",
    )
    .unit(Unit::Force),
    key(
        "boundary.point_load[].curve",
        Type::Curve,
        CURVE_DEFAULT,
        CURVE_DOC,
    )
    .rule(CURVE_RULE),
    // sets by geometry
    key(
        "sets",
        Type::Map,
        Unset("none"),
        "named sets selected by geometry, usable wherever a set name is \
         (constraints, loads, materials, probes); a name may not repeat one of the mesh's sets",
    ),
    key(
        "sets.*",
        Type::Section,
        Required,
        "one set: its `kind` and at least one of `box`, `plane`, `normal`, `expression` \
         (a point, face or cell is in the set when it meets every criterion given)",
    )
    .rule("at least one of `box`, `plane`, `normal`, `expression`"),
    key(
        "sets.*.kind",
        Type::Choice(SET_KINDS),
        Required,
        "what the set holds",
    ),
    key(
        "sets.*.box",
        Type::Section,
        Unset("-"),
        "points inside the box `lower`..`upper`, widened by `tolerance`",
    )
    .nullable(),
    key(
        "sets.*.box.lower",
        Type::Array(Elem::Float, 3),
        Required,
        "lower corner",
    )
    .rule("`lower <= upper` in every component")
    .unit(Unit::Length),
    key(
        "sets.*.box.upper",
        Type::Array(Elem::Float, 3),
        Required,
        "upper corner",
    )
    .unit(Unit::Length),
    key(
        "sets.*.plane",
        Type::Section,
        Unset("-"),
        "points on the plane through `point` with normal `normal`, to `tolerance`",
    )
    .nullable(),
    key(
        "sets.*.plane.point",
        Type::Array(Elem::Float, 3),
        Required,
        "a point of the plane",
    )
    .unit(Unit::Length),
    key(
        "sets.*.plane.normal",
        Type::Array(Elem::Float, 3),
        Required,
        "the plane's normal (any length but zero)",
    ),
    key(
        "sets.*.normal",
        Type::Array(Elem::Float, 3),
        Unset("-"),
        "boundary faces whose unit outward normal is within `angle_deg` of this direction \
         (`kind: faces` only)",
    )
    .nullable(),
    key(
        "sets.*.angle_deg",
        Type::Float,
        Unset("1 degree"),
        "largest angle between a face's outward normal and `normal` (`kind: faces` only)",
    )
    .above(0.0)
    .max(180.0)
    .unit(Unit::Degrees)
    .nullable(),
    key(
        "sets.*.expression",
        Type::Str,
        Unset("-"),
        "points where this expression of `x, y, z` is at most `tolerance`: `x - 5` selects \
         `x <= 5`, `abs(sqrt(x^2 + y^2) - 1)` the cylinder of radius 1",
    )
    .nullable(),
    key(
        "sets.*.tolerance",
        Type::Float,
        Unset("1e-6 times the diagonal of the mesh's bounding box"),
        "absolute length tolerance of `box`, `plane` and `expression`",
    )
    .min(0.0)
    .unit(Unit::Length)
    .nullable(),
    // solution
    key(
        "loading",
        Type::Section,
        Unset("the defaults below"),
        "load stepping: the load factor \
         goes from 0 to 1 in `steps` increments, halved on Newton failure, regrown after success",
    ),
    key(
        "loading.steps",
        Type::Int,
        Value("1"),
        "number of nominal load increments",
    )
    .min(1.0)
    .max(1_000_000.0),
    key(
        "loading.min_increment",
        Type::Float,
        Value("0.001"),
        "smallest load increment before the run gives up",
    )
    .above(0.0)
    .max(1.0),
    key(
        "loading.max_cutbacks",
        Type::Int,
        Value("10"),
        "most consecutive cutbacks (halvings) of one increment",
    ),
    key(
        "loading.growth",
        Type::Float,
        Value("1.5"),
        "factor by which an increment grows after an \
         easy step (at most 5 Newton iterations), capped at the nominal increment",
    )
    .min(1.0),
    key(
        "loading.curve",
        Type::Curve,
        Unset("the factor goes from 0 to 1"),
        "the load factor as a piecewise-linear function `[[time, factor], ...]` of pseudo-time; \
         the steps divide `0..=last time`; a curve back to 0 unloads",
    )
    .rule(CURVE_RULE),
    key(
        "newton",
        Type::Section,
        Unset("the defaults below"),
        "Newton iteration of one load step; \
         converged after at least one update once `|r| <= rtol r_ref`, `|r| <= atol` or \
         `|du| <= stol |u|`",
    ),
    key(
        "newton.rtol",
        Type::Float,
        Value("1.0e-8"),
        "relative residual tolerance against the step's first right-hand side",
    )
    .above(0.0)
    .below(1.0),
    key(
        "newton.atol",
        Type::Float,
        Value("0.0"),
        "absolute residual tolerance, tested after an update; 0 is off",
    )
    .unit(Unit::Force)
    .min(0.0),
    key(
        "newton.stol",
        Type::Float,
        Value("1.0e-12"),
        "update-norm tolerance, `|du| <= stol |u|`",
    )
    .min(0.0),
    key(
        "newton.max_iterations",
        Type::Int,
        Value("25"),
        "most Newton iterations per load step",
    )
    .min(1.0),
    key(
        "newton.line_search",
        Type::Choice(LINE_SEARCHES),
        Value("energy"),
        "damping of the Newton update",
    ),
    key(
        "newton.max_line_search",
        Type::Int,
        Value("8"),
        "most step-length reductions per \
         iteration (also bounds the back-off from an inverted element)",
    )
    .min(1.0),
    key(
        "newton.forcing",
        Type::Choice(FORCINGS),
        Value("eisenstat_walker"),
        "tolerance of each linear solve",
    ),
    key(
        "device",
        Type::Choice(DEVICES),
        Value("auto"),
        "where the run is computed",
    )
    .rule("`cuda` needs an iterative `linear_solver.method`"),
    key(
        "linear_solver",
        Type::Section,
        Unset("the defaults below"),
        "linear solver of each \
         Newton step; iterative methods stop when `|b - A x| <= max(atol, rtol |b|)`",
    ),
    key(
        "linear_solver.method",
        Type::Choice(METHODS),
        Value("auto"),
        "method",
    ),
    key(
        "linear_solver.rtol",
        Type::Float,
        Value("1.0e-8"),
        "relative tolerance",
    )
    .above(0.0)
    .below(1.0),
    key(
        "linear_solver.atol",
        Type::Float,
        Value("0.0"),
        "absolute tolerance",
    )
    .unit(Unit::Force)
    .min(0.0),
    key(
        "linear_solver.max_iterations",
        Type::Int,
        Value("2000"),
        "most iterations",
    )
    .min(1.0),
    key(
        "linear_solver.amg",
        Type::Section,
        Unset("the defaults below"),
        "options of the AMG preconditioner (`method: cg_amg`; see docs/amg.md)",
    ),
    key(
        "linear_solver.amg.strength_threshold",
        Type::Float,
        Value("0.0"),
        "strength threshold on `||A_ij|| / sqrt(||A_ii|| ||A_jj||)`; 0 keeps every block",
    )
    .min(0.0),
    key(
        "linear_solver.amg.mis2_levels",
        Type::Int,
        Value("1"),
        "number of levels, from the finest, aggregated by MIS-2 (aggressive); MIS-1 below",
    ),
    key(
        "linear_solver.amg.coarse_eq_limit",
        Type::Int,
        Value("500"),
        "stop coarsening once a level has at most this many unknowns (solved densely)",
    ),
    key(
        "linear_solver.amg.max_levels",
        Type::Int,
        Value("10"),
        "most levels, the finest included",
    )
    .min(1.0),
    key(
        "linear_solver.amg.process_eq_limit",
        Type::Int,
        Unset("50 on CPU ranks, 20000 on GPU ranks"),
        "under `mpirun`: a coarse level of `n` unknowns is held by `max(1, n / limit)` ranks",
    )
    .nullable()
    .min(1.0),
    key(
        "linear_solver.amg.min_coarsening_ratio",
        Type::Float,
        Value("1.2"),
        "coarsening stops when rows shrink by less than this factor",
    )
    .above(1.0),
    key(
        "linear_solver.amg.smooth_prolongator",
        Type::Bool,
        Value("true"),
        "smooth the tentative prolongator (`false`: unsmoothed aggregation)",
    ),
    key(
        "linear_solver.amg.prolongator_omega_scale",
        Type::Float,
        Value("1.3333333333333333"),
        "prolongator damping `omega = scale / emax(D^-1 A)` (PyAMG's 4/3)",
    )
    .above(0.0)
    .below(2.0),
    key(
        "linear_solver.amg.eig_steps",
        Type::Int,
        Value("10"),
        "CG/Lanczos steps of the eigenvalue estimate",
    )
    .min(1.0),
    key(
        "linear_solver.amg.smoother",
        Type::Choice(SMOOTHERS),
        Value("chebyshev"),
        "level smoother",
    ),
    key(
        "linear_solver.amg.chebyshev_degree",
        Type::Int,
        Value("2"),
        "Chebyshev polynomial degree, pre and post",
    )
    .min(1.0),
    key(
        "linear_solver.amg.chebyshev_lower",
        Type::Float,
        Value("0.1"),
        "Chebyshev interval `[lower emax, upper emax]`: lower factor",
    )
    .above(0.0)
    .rule("below `chebyshev_upper`"),
    key(
        "linear_solver.amg.chebyshev_upper",
        Type::Float,
        Value("1.1"),
        "Chebyshev interval upper factor",
    ),
    key(
        "linear_solver.amg.jacobi_sweeps",
        Type::Int,
        Value("2"),
        "damped Jacobi sweeps, pre and post",
    )
    .min(1.0),
    key(
        "linear_solver.amg.jacobi_omega",
        Type::Float,
        Unset("(4/3) / emax(D^-1 A)"),
        "damped Jacobi weight",
    )
    .nullable()
    .above(0.0),
    key(
        "linear_solver.amg.reuse",
        Type::Choice(REUSES),
        Value("interpolation"),
        "what the hierarchy keeps across Newton iterations",
    ),
    key(
        "linear_solver.amg.recompute_eigs",
        Type::Bool,
        Value("true"),
        "re-estimate eigenvalues in a hot update (`reuse: interpolation`)",
    ),
    key(
        "linear_solver.amg.renewal",
        Type::Choice(RENEWALS),
        Value("recompute"),
        "what the hierarchy recomputes for a new near-null space (each load step's deformed \
         rigid-body modes)",
    ),
    key(
        "linear_solver.amg.storage",
        Type::Choice(STORAGES),
        Value("blocked"),
        "storage of the operators and prolongators the solve uses",
    ),
    key(
        "linear_solver.amg.precision",
        Type::Choice(PRECISIONS),
        Value("double"),
        "stored precision of prolongators, coarse operators and smoother inverses",
    ),
    key(
        "quadrature",
        Type::Section,
        Unset("the defaults below"),
        "quadrature rule of the cells",
    ),
    key(
        "quadrature.points",
        Type::Int,
        Unset("element order + 1"),
        "Gauss points per direction",
    )
    .nullable()
    .min(1.0)
    .max(6.0)
    .rule("at least element order + 1"),
    key(
        "formulation",
        Type::Choice(FORMULATIONS),
        Value("auto"),
        "how the cells' volume change enters the energy",
    ),
    // output
    key(
        "output",
        Type::Section,
        Unset("the defaults below"),
        "output files `<directory>/<name>.h5`, \
         `.xdmf`, `.last.xdmf`, `.summary.json`, `.steps.jsonl` (see docs/output.md)",
    ),
    key(
        "output.directory",
        Type::Path,
        Value("results"),
        "output directory, relative to the working directory (`-o` replaces it)",
    ),
    key(
        "output.name",
        Type::Str,
        Unset("the YAML file's stem"),
        "base name of the files",
    )
    .nullable()
    .rule("a plain file name: no path separators"),
    key(
        "output.fields",
        Type::ChoiceList(FIELDS),
        Value(
            "[displacement, reaction, cauchy_stress, \
         von_mises, jacobian, energy_density, nodal_cauchy_stress, nodal_von_mises]",
        ),
        "fields written at each converged step",
    ),
    key(
        "output.vtu",
        Type::Bool,
        Value("false"),
        "also write each step as `.vtu` listed in a ParaView `.pvd` (one process)",
    ),
    key(
        "output.precision",
        Type::Choice(OUTPUT_PRECISIONS),
        Value("double"),
        "floating-point precision of the fields in the HDF5 file (the displacement, which \
         `--restart` reads, and the mesh stay double)",
    ),
    key(
        "output.probes",
        Type::Section,
        Unset("none"),
        "quantities recorded at step 0 and every \
         converged step: step log, summary and `<name>.probes.csv`",
    ),
    key(
        "output.probes.points",
        Type::List,
        Value("[]"),
        "fields at points: the displacement interpolated (columns `<name>.ux`, `.uy`, `.uz`), \
         cell fields of the cell holding the point",
    ),
    key(
        "output.probes.points[].name",
        Type::Str,
        Required,
        "column prefix",
    )
    .rule("letters, digits, `_`, `-`; unique among probes"),
    key(
        "output.probes.points[].at",
        Type::Array(Elem::Float, 3),
        Required,
        "reference coordinates, inside or on the boundary of the mesh",
    )
    .unit(Unit::Length),
    key(
        "output.probes.points[].fields",
        Type::ChoiceList(FIELDS),
        Value("[displacement]"),
        "fields read at the point: `displacement` (interpolated) or a cell field (the value of \
         the cell holding the point; columns `<name>.<field>` or `<name>.<field>.<component>`, \
         tensors `xx, yy, zz, xy, yz, xz`, principal values `1, 2, 3`)",
    )
    .rule("displacement or a cell field (not reaction or a nodal field)"),
    key(
        "output.probes.sets",
        Type::List,
        Value("[]"),
        "node sets: mean displacement \
         `<name>.ux..uz`, total reaction `.fx..fz` and its moment `.mx..mz`",
    ),
    key(
        "output.probes.sets[].set",
        Type::SetName,
        Required,
        "node (or face, or cell) set",
    ),
    key(
        "output.probes.sets[].name",
        Type::Str,
        Unset("the set's name"),
        "column prefix",
    )
    .nullable()
    .rule("letters, digits, `_`, `-`; unique among probes"),
    key(
        "output.probes.sets[].about",
        Type::Array(Elem::Float, 3),
        Unset("the set's reference centroid"),
        "point about which the moment `sum (x + u - about) x f` is taken",
    )
    .unit(Unit::Length)
    .nullable(),
    key(
        "output.probes.sets[].fields",
        Type::ChoiceList(FIELDS),
        Value("[]"),
        "fields whose least, largest and mean value over the set are recorded \
         (`<name>.<field>[.<component>].min`, `.max`, `.mean`): a cell field over the set's \
         cells (a face set's cells, the cells touching a node set), a nodal field over its nodes",
    )
    .rule("a cell or nodal field (not displacement or reaction: `.ux`, `.fx` have them)"),
    key(
        "output.probes.globals",
        Type::ChoiceList(GLOBALS),
        Value("[]"),
        "whole-model quantities, a column each",
    ),
];

/// Every key of a campaign file (`hexfem campaign`).
pub const CAMPAIGN_KEYS: &[KeyDoc] = &[
    key(
        "base",
        Type::Path,
        Required,
        "the base input, relative to the campaign file",
    ),
    key(
        "directory",
        Type::Path,
        Unset("`results/<campaign file stem>`"),
        "where the cases and the results table go, relative to the working directory \
         (`-o` replaces it)",
    ),
    key(
        "set",
        Type::Map,
        Unset("none"),
        "overrides of every case, `key.path: value`",
    ),
    key(
        "set.*",
        Type::Any,
        Required,
        "the value of the input key at this key path",
    ),
    key(
        "share_solver",
        Type::Bool,
        Value("true"),
        "cases on one mesh with the same solver options share the AMG set-up",
    ),
    key(
        "grid",
        Type::Map,
        Unset("-"),
        "every combination of the values (the last parameter \
         fastest); exactly one of `grid`, `cases`, `latin_hypercube`",
    ),
    key(
        "grid.*",
        Type::Values,
        Required,
        "the values of the input key at this key path",
    ),
    key(
        "cases",
        Type::List,
        Unset("-"),
        "the cases, each setting the same parameters; exactly \
         one of `grid`, `cases`, `latin_hypercube`",
    )
    .min(1.0),
    key(
        "cases[]",
        Type::Map,
        Required,
        "one case: `key.path: value`",
    ),
    key(
        "cases[].*",
        Type::Any,
        Required,
        "the value of the input key at this key path",
    ),
    key(
        "latin_hypercube",
        Type::Section,
        Unset("-"),
        "`samples` points, one in each stratum of \
         every range, drawn from `seed`; exactly one of `grid`, `cases`, `latin_hypercube`",
    ),
    key(
        "latin_hypercube.samples",
        Type::Int,
        Required,
        "number of cases",
    )
    .min(1.0)
    .max(1_000_000.0),
    key(
        "latin_hypercube.seed",
        Type::Int,
        Required,
        "seed of the draw (SplitMix64: the same cases on every machine)",
    ),
    key(
        "latin_hypercube.ranges",
        Type::Map,
        Required,
        "the ranges, `key.path: [low, high]`",
    ),
    key(
        "latin_hypercube.ranges.*",
        Type::Array(Elem::Float, 2),
        Required,
        "low < high; both integers: integers are drawn",
    ),
];
