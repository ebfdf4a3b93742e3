//! Semantic checks of a parsed [`Config`]: ranges and consistency that the schema cannot express.

use std::collections::BTreeSet;

use solve::params::MAX_LOAD_STEPS;

use super::error::{ConfigError, ErrorKind};
use super::material::CellSelection;
use super::params::{
    BoxMesh, ComputeDevice, Config, GeometricSet, GeometricSetKind, LinearSolverMethod, MeshSource,
    OutputField, QuadratureParams,
};
use super::tree::{index_path, key_path, Origin};

/// Builds errors that point at the value at a key path (or its nearest ancestor in the file).
struct Check<'a> {
    config: &'a Config,
}

impl Check<'_> {
    fn error(&self, path: &str, message: impl Into<String>) -> ConfigError {
        let source = &self.config.source;
        // A key absent from the file (left at its default) is reported at the file's start.
        let origin = source
            .origin(path)
            .cloned()
            .or_else(|| (!source.text.is_empty()).then_some(Origin::File { line: 1, column: 1 }));
        ConfigError::new(
            ErrorKind::Invalid,
            &source.file,
            Some(&source.text),
            origin,
            Some(path.to_owned()),
            message.into(),
        )
    }

    fn ensure(&self, ok: bool, path: &str, message: impl Into<String>) -> Result<(), ConfigError> {
        if ok {
            Ok(())
        } else {
            Err(self.error(path, message))
        }
    }

    fn finite(&self, values: &[f64], path: &str) -> Result<(), ConfigError> {
        self.ensure(values.iter().all(|v| v.is_finite()), path, "must be finite")
    }

    /// Numbers must be finite, expressions must parse (with `x, y, z, t` only); located at the
    /// component.
    fn scalars(&self, values: &[super::params::Scalar], path: &str) -> Result<(), ConfigError> {
        for (i, v) in values.iter().enumerate() {
            let at = index_path(path, i);
            match v {
                super::params::Scalar::Number(x) => self.finite(&[*x], &at)?,
                super::params::Scalar::Expression(text) => {
                    if let Err(e) = solve::expression::Expression::parse(text) {
                        return Err(self.error(&at, e));
                    }
                }
            }
        }
        Ok(())
    }

    /// A load curve: finite, at least two points from time 0, times increasing strictly.
    fn curve(&self, curve: &[[f64; 2]], path: &str) -> Result<(), ConfigError> {
        if curve.is_empty() {
            return Ok(());
        }
        let points: Vec<f64> = curve.iter().flatten().copied().collect();
        self.finite(&points, path)?;
        self.ensure(
            curve.len() >= 2 && curve[0][0] == 0.0,
            path,
            "needs at least two [time, factor] points, the first at time 0",
        )?;
        self.ensure(
            curve.windows(2).all(|w| w[1][0] > w[0][0]),
            path,
            "times must increase strictly",
        )
    }

    fn set_name(&self, name: &str, path: &str) -> Result<(), ConfigError> {
        self.ensure(!name.trim().is_empty(), path, "the set name is empty")
    }
}

impl Check<'_> {
    /// A geometric set: a name, at least one criterion, finite values, nonzero normals, a box
    /// with `lower <= upper`, `normal` and `angle_deg` for faces only, an expression of `x, y, z`.
    fn geometric_set(&self, name: &str, set: &GeometricSet) -> Result<(), ConfigError> {
        let path = key_path("sets", name);
        self.ensure(!name.trim().is_empty(), &path, "the set name is empty")?;
        self.ensure(
            set.within.is_some()
                || set.plane.is_some()
                || set.normal.is_some()
                || set.expression.is_some(),
            &path,
            "give at least one of `box`, `plane`, `normal`, `expression`",
        )?;
        if let Some(b) = &set.within {
            let at = key_path(&path, "box");
            self.finite(&[b.lower, b.upper].concat(), &at)?;
            self.ensure(
                (0..3).all(|d| b.lower[d] <= b.upper[d]),
                &at,
                "needs `lower <= upper` in every component",
            )?;
        }
        let direction = |v: &[f64; 3], at: &str| -> Result<(), ConfigError> {
            self.finite(v, at)?;
            self.ensure(
                v.iter().any(|c| c.abs() >= f64::MIN_POSITIVE),
                at,
                "must be a nonzero direction",
            )
        };
        if let Some(p) = &set.plane {
            let at = key_path(&path, "plane");
            self.finite(&p.point, &key_path(&at, "point"))?;
            direction(&p.normal, &key_path(&at, "normal"))?;
        }
        if set.normal.is_some() || set.angle_deg.is_some() {
            self.ensure(
                set.kind == GeometricSetKind::Faces,
                &key_path(&path, "normal"),
                "selects faces by their outward normal: use it with `kind: faces` (a face set \
                 serves every use of a node set too)",
            )?;
        }
        if let Some(n) = &set.normal {
            direction(n, &key_path(&path, "normal"))?;
        }
        if let Some(a) = set.angle_deg {
            self.ensure(
                a.is_finite() && a > 0.0 && a <= 180.0,
                &key_path(&path, "angle_deg"),
                "must be in (0, 180] degrees",
            )?;
        }
        if let Some(t) = set.tolerance {
            self.ensure(
                t.is_finite() && t >= 0.0,
                &key_path(&path, "tolerance"),
                "must be finite and >= 0 (a length)",
            )?;
        }
        if let Some(text) = &set.expression {
            let at = key_path(&path, "expression");
            let e = solve::expression::Expression::parse(text).map_err(|e| self.error(&at, e))?;
            self.ensure(
                !e.uses_time(),
                &at,
                "selects by position: use `x`, `y`, `z` only (no `t`)",
            )?;
        }
        Ok(())
    }
}

impl Config {
    /// An error about the value at key `path` (`output.name`, `materials[1].cells`), located
    /// where that value, or its nearest ancestor, was written: `file:line:column` or the
    /// `--set` argument. For checks made after loading (against the mesh, the output paths).
    pub fn error_at(&self, path: &str, message: impl Into<String>) -> ConfigError {
        Check { config: self }.error(path, message)
    }

    /// Checks ranges and consistency; the error names the file, the key path and, when the value
    /// was written in the file, its line and column. `load` calls this; call it again after
    /// changing a `Config` in code.
    ///
    /// Checks: box `cells` > 0, `order` 1 or 2, `lower` < `upper`, `corners` not mixed with
    /// `lower`/`upper` and not inverted; the Gmsh file is a regular file; at least one material, each
    /// resolving to a material (see [`MaterialParams::material`](super::MaterialParams::material));
    /// boundary entries name a set, Dirichlet entries give a component, twist axes are nonzero;
    /// `loading.steps` in `1..=MAX_LOAD_STEPS`, 0 < `min_increment` <= 1, `growth` >= 1; 0 < `rtol` < 1 and
    /// `atol`, `stol` >= 0 for Newton and the linear solver; iteration limits >= 1; quadrature
    /// points in 1..=6 (at least order + 1 is checked once the mesh is known); output name a plain file name, no repeated fields; every number finite.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let check = Check { config: self };
        match &self.mesh {
            MeshSource::Box(mesh) => check_box(&check, mesh)?,
            MeshSource::Gmsh(gmsh) => {
                if let Some(problem) = not_a_file(&gmsh.file) {
                    return Err(check.error("mesh.gmsh.file", problem));
                }
                check.ensure(
                    gmsh.scale > 0.0 && gmsh.scale.is_finite(),
                    "mesh.gmsh.scale",
                    "must be positive and finite (the factor applied to the file's coordinates)",
                )?;
            }
        }

        check.ensure(
            !self.materials.is_empty(),
            "materials",
            "at least one material entry is required",
        )?;
        for (i, material) in self.materials.iter().enumerate() {
            let path = index_path("materials", i);
            if let CellSelection::Set(name) = &material.cells {
                check.set_name(name, &key_path(&path, "cells"))?;
            }
            if let Err(e) = material.material() {
                let at = e.key().map_or(path.clone(), |key| key_path(&path, key));
                return Err(check.error(&at, e.to_string()));
            }
        }
        check.scalars(&self.body_force, "body_force")?;
        self.check_boundary(&check)?;
        self.check_solvers(&check)?;
        self.check_output(&check)
    }

    fn check_boundary(&self, check: &Check) -> Result<(), ConfigError> {
        for (i, d) in self.boundary.dirichlet.iter().enumerate() {
            let path = index_path("boundary.dirichlet", i);
            check.curve(&d.curve, &key_path(&path, "curve"))?;
            check.set_name(&d.set, &key_path(&path, "set"))?;
            let components = d.components();
            check.ensure(
                components.iter().any(Option::is_some),
                &path,
                "give at least one of `x`, `y`, `z`",
            )?;
            for (c, v) in ["x", "y", "z"].iter().zip(components) {
                if let Some(v) = v {
                    check.scalars(&[v], &key_path(&path, c))?;
                }
            }
        }
        for (name, set) in &self.sets {
            check.geometric_set(name, set)?;
        }
        for (i, t) in self.boundary.twist.iter().enumerate() {
            let path = index_path("boundary.twist", i);
            check.curve(&t.curve, &key_path(&path, "curve"))?;
            check.set_name(&t.set, &key_path(&path, "set"))?;
            let axis = key_path(&path, "axis");
            check.finite(&t.axis, &axis)?;
            check.ensure(t.axis.iter().any(|&a| a != 0.0), &axis, "must be nonzero")?;
            // any finite nonzero axis is normalised exactly (scaled before squaring), except
            // one whose components are all subnormal: they have lost digits of the direction
            check.ensure(
                t.axis.iter().any(|a| a.abs() >= f64::MIN_POSITIVE),
                &axis,
                "is too small to give a direction (every component below 2.2e-308); scale it up",
            )?;
            check.finite(&t.center, &key_path(&path, "center"))?;
            check.finite(&[t.angle_deg], &key_path(&path, "angle_deg"))?;
            check.finite(&[t.axial], &key_path(&path, "axial"))?;
        }
        for (i, t) in self.boundary.traction.iter().enumerate() {
            let path = index_path("boundary.traction", i);
            check.curve(&t.curve, &key_path(&path, "curve"))?;
            check.set_name(&t.set, &key_path(&path, "set"))?;
            check.scalars(&t.value, &key_path(&path, "value"))?;
        }
        for (i, p) in self.boundary.pressure.iter().enumerate() {
            let path = index_path("boundary.pressure", i);
            check.curve(&p.curve, &key_path(&path, "curve"))?;
            check.set_name(&p.set, &key_path(&path, "set"))?;
            check.finite(&[p.value], &key_path(&path, "value"))?;
        }
        for (i, t) in self.boundary.nodal_force.iter().enumerate() {
            let path = index_path("boundary.nodal_force", i);
            check.curve(&t.curve, &key_path(&path, "curve"))?;
            check.set_name(&t.set, &key_path(&path, "set"))?;
            check.finite(&t.value, &key_path(&path, "value"))?;
        }
        for (i, p) in self.boundary.point_load.iter().enumerate() {
            let path = index_path("boundary.point_load", i);
            check.curve(&p.curve, &key_path(&path, "curve"))?;
            check.finite(&p.at, &key_path(&path, "at"))?;
            check.finite(&p.value, &key_path(&path, "value"))?;
        }
        Ok(())
    }

    fn check_solvers(&self, check: &Check) -> Result<(), ConfigError> {
        let l = &self.loading;
        check.ensure(
            (1..=MAX_LOAD_STEPS).contains(&l.steps),
            "loading.steps",
            format!("must be in 1..={MAX_LOAD_STEPS} (each step is written to the results)"),
        )?;
        let m = l.min_increment;
        check.ensure(
            m > 0.0 && m <= 1.0,
            "loading.min_increment",
            "must satisfy 0 < value <= 1",
        )?;
        check.ensure(
            l.growth >= 1.0 && l.growth.is_finite(),
            "loading.growth",
            "must be >= 1",
        )?;

        check.curve(&l.curve, "loading.curve")?;

        let n = &self.newton;
        tolerances(check, "newton", n.rtol, n.atol)?;
        check.ensure(
            n.stol >= 0.0 && n.stol.is_finite(),
            "newton.stol",
            "must be >= 0",
        )?;
        check.ensure(
            n.max_iterations >= 1,
            "newton.max_iterations",
            "must be >= 1",
        )?;
        check.ensure(
            n.max_line_search >= 1,
            "newton.max_line_search",
            "must be >= 1",
        )?;

        let s = &self.linear_solver;
        tolerances(check, "linear_solver", s.rtol, s.atol)?;
        check.ensure(
            s.method != LinearSolverMethod::Direct || self.device != ComputeDevice::Cuda,
            "device",
            "`cuda` runs linear_solver.method cg_amg or cg_jacobi; the direct solver is host-only (use `cpu` or `auto`)",
        )?;
        check.ensure(
            s.max_iterations >= 1,
            "linear_solver.max_iterations",
            "must be >= 1",
        )?;
        match s.amg.validate() {
            Ok(()) => {}
            Err(amg::AmgError::InvalidParameter {
                name,
                value,
                reason,
            }) => {
                return Err(check.error(
                    &format!("linear_solver.amg.{name}"),
                    format!("{value} {reason}"),
                ));
            }
            Err(other) => return Err(check.error("linear_solver.amg", other.to_string())),
        }

        if let Some(points) = self.quadrature.points {
            check.ensure(
                (1..=QuadratureParams::MAX_POINTS).contains(&points),
                "quadrature.points",
                format!("must be in 1..={}", QuadratureParams::MAX_POINTS),
            )?;
        }
        Ok(())
    }

    fn check_output(&self, check: &Check) -> Result<(), ConfigError> {
        let o = &self.output;
        check.ensure(
            !o.directory.as_os_str().is_empty(),
            "output.directory",
            "must not be empty",
        )?;
        if let Some(name) = &o.name {
            let plain = !name.is_empty()
                && name != "."
                && name != ".."
                && !name
                    .chars()
                    .any(|c| c == '/' || c == '\\' || c.is_control());
            check.ensure(
                plain,
                "output.name",
                format!("`{name}` is not a plain file name (non-empty, no path separators)"),
            )?;
        }
        let mut seen = BTreeSet::new();
        for (i, field) in o.fields.iter().enumerate() {
            check.ensure(
                seen.insert(field),
                &index_path("output.fields", i),
                "field listed twice",
            )?;
        }
        self.check_probes(check)
    }

    /// Probe names: non-empty, letters, digits, `_` and `-` (CSV and JSON safe), unique; sets
    /// named; numbers finite. Whether points lie in the mesh is checked once it is built.
    fn check_probes(&self, check: &Check) -> Result<(), ConfigError> {
        let probes = &self.output.probes;
        let mut seen = BTreeSet::new();
        let mut name = |label: &str, path: String| {
            let plain = !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            check.ensure(
                plain,
                &path,
                format!("probe name `{label}`: use letters, digits, `_` or `-`"),
            )?;
            check.ensure(
                seen.insert(label.to_owned()),
                &path,
                format!("probe name `{label}` is used twice"),
            )
        };
        for (i, p) in probes.points.iter().enumerate() {
            let at = index_path("output.probes.points", i);
            name(&p.name, key_path(&at, "name"))?;
            check.finite(&p.at, &key_path(&at, "at"))?;
            probe_fields(check, &p.fields, &key_path(&at, "fields"), true)?;
        }
        for (i, s) in probes.sets.iter().enumerate() {
            let at = index_path("output.probes.sets", i);
            check.set_name(&s.set, &key_path(&at, "set"))?;
            let key = if s.name.is_some() { "name" } else { "set" };
            name(s.label(), key_path(&at, key))?;
            if let Some(about) = &s.about {
                check.finite(about, &key_path(&at, "about"))?;
            }
            probe_fields(check, &s.fields, &key_path(&at, "fields"), false)?;
        }
        for (i, g) in probes.globals.iter().enumerate() {
            name(g.label(), index_path("output.probes.globals", i))?;
        }
        Ok(())
    }
}

/// The fields of a point probe (`at_point`: displacement and the cell fields) or of a set
/// probe (cell and nodal fields): each once.
fn probe_fields(
    check: &Check,
    fields: &[OutputField],
    path: &str,
    at_point: bool,
) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (i, &field) in fields.iter().enumerate() {
        let at = index_path(path, i);
        check.ensure(seen.insert(field), &at, "field listed twice")?;
        let nodal = matches!(
            field,
            OutputField::NodalCauchyStress
                | OutputField::NodalVonMises
                | OutputField::NodalPrincipalStress
        );
        let valid = match field {
            OutputField::Displacement => at_point,
            OutputField::Reaction | OutputField::Sets => false,
            _ => !(at_point && nodal),
        };
        let choices = if at_point {
            "displacement, cauchy_stress, von_mises, jacobian, energy_density, strain, \
             green_lagrange_strain, logarithmic_strain, principal_stress (a cell field is the \
             value of the cell holding the point)"
        } else {
            "cauchy_stress, von_mises, jacobian, energy_density, strain, green_lagrange_strain, \
             logarithmic_strain, principal_stress, nodal_cauchy_stress, nodal_von_mises, \
             nodal_principal_stress (the set's `.ux..uz` and `.fx..fz` columns hold the \
             displacement and reaction)"
        };
        check.ensure(
            valid,
            &at,
            format!(
                "this probe cannot read `{}`; valid: {choices}",
                field.name()
            ),
        )?;
    }
    Ok(())
}

fn tolerances(check: &Check, section: &str, rtol: f64, atol: f64) -> Result<(), ConfigError> {
    check.ensure(
        rtol > 0.0 && rtol < 1.0,
        &key_path(section, "rtol"),
        "must satisfy 0 < rtol < 1",
    )?;
    check.ensure(
        atol >= 0.0 && atol.is_finite(),
        &key_path(section, "atol"),
        "must be >= 0",
    )
}

/// Smallest ratio of a box's extents.
const MIN_ASPECT: f64 = 1e-9;

fn check_box(check: &Check, mesh: &BoxMesh) -> Result<(), ConfigError> {
    check.ensure(
        mesh.cells.iter().all(|&n| n > 0),
        "mesh.box.cells",
        "every count must be > 0",
    )?;
    check.ensure(
        mesh.order == 1 || mesh.order == 2,
        "mesh.box.order",
        "must be 1 or 2",
    )?;
    if mesh.corners.is_some() {
        check.ensure(
            mesh.lower.is_none() && mesh.upper.is_none(),
            "mesh.box.corners",
            "give either `corners` or `lower`/`upper`, not both",
        )?;
    }
    for (key, value) in [("lower", mesh.lower), ("upper", mesh.upper)] {
        if let Some(v) = value {
            check.finite(&v, &key_path("mesh.box", key))?;
        }
    }
    let corners = mesh.corner_points();
    if mesh.corners.is_some() {
        check.finite(corners.as_flattened(), "mesh.box.corners")?;
        if let Some(c) = (0..8).find(|&c| mesh::corner_jacobian_det(&corners, c) <= 0.0) {
            return Err(check.error(
                "mesh.box.corners",
                format!(
                    "the mapped box is inverted or degenerate at corner {c}: corners must be in \
                     lexicographic order i + 2j + 4k of a right-handed box"
                ),
            ));
        }
        // A box far thinner than it is long (at some corner) has cells whose Jacobians
        // underflow, as a flat `lower`/`upper` box.
        if let Some((c, d, height, longest)) = flat_corner(&corners) {
            return Err(check.error(
                "mesh.box.corners",
                format!(
                    "the mapped box is flat at corner {c}: it is {height:e} thick across its edges from corner {c} to corner {}, against {longest:e} for its longest edge (the ratio must be at least {MIN_ASPECT:e})",
                    c ^ (1 << d)
                ),
            ));
        }
    } else {
        let (lower, upper) = (corners[0], corners[7]);
        check.ensure(
            (0..3).all(|d| lower[d] < upper[d]),
            "mesh.box.upper",
            format!("`lower` {lower:?} must be below `upper` {upper:?} in every component"),
        )?;
        // A box far thinner than it is long has cells whose Jacobians underflow.
        let extent: [f64; 3] = std::array::from_fn(|d| upper[d] - lower[d]);
        let longest = extent.iter().fold(0.0f64, |a, &e| a.max(e));
        if let Some(d) = (0..3)
            .find(|&d| !(extent[d] >= MIN_ASPECT * longest && extent[d] > f64::MIN_POSITIVE.sqrt()))
        {
            return Err(check.error(
                "mesh.box.upper",
                format!(
                    "the box is flat: its extent in {} is {:e}, against {longest:e} in its longest direction (the ratio must be at least {MIN_ASPECT:e})",
                    ["x", "y", "z"][d],
                    extent[d]
                ),
            ));
        }
    }
    Ok(())
}

/// The first corner `c` and edge direction `d` where the mapped box with `corners` (not
/// inverted) is flat: the height of the parallelepiped of the corner's three edges over the face
/// the other two span, below [`MIN_ASPECT`] times the box's longest edge (or below
/// `sqrt(f64::MIN_POSITIVE)`); with the height and the longest edge.
fn flat_corner(corners: &[[f64; 3]; 8]) -> Option<(usize, usize, f64, f64)> {
    let edge = |c: usize, d: usize| -> [f64; 3] {
        let (lo, hi) = (c & !(1 << d), c | (1 << d));
        std::array::from_fn(|e| corners[hi][e] - corners[lo][e])
    };
    let norm = |v: [f64; 3]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let longest = (0..8)
        .flat_map(|c| (0..3).map(move |d| (c, d)))
        .fold(0.0f64, |m, (c, d)| m.max(norm(edge(c, d))));
    for c in 0..8 {
        let det = mesh::corner_jacobian_det(corners, c);
        for d in 0..3 {
            let (a, b) = (edge(c, (d + 1) % 3), edge(c, (d + 2) % 3));
            let face = norm([
                a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0],
            ]);
            let height = det / face;
            if !(height >= MIN_ASPECT * longest && height > f64::MIN_POSITIVE.sqrt()) {
                return Some((c, d, height, longest));
            }
        }
    }
    None
}

/// Why `path` cannot be read as a file: missing, a directory, not a regular file (a device such
/// as /dev/null, a FIFO, a socket), or unreadable metadata; `None` for a regular file (links
/// followed).
pub(crate) fn not_a_file(path: &std::path::Path) -> Option<String> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => None,
        Ok(m) if m.is_dir() => Some(format!("{shown} is a directory, not a file")),
        Ok(_) => Some(format!(
            "{shown} is not a regular file (a device, FIFO or socket)"
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(format!("no such file: {shown}"))
        }
        Err(e) => Some(format!("cannot read {shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corner_jacobian_detects_inversion() {
        let unit = BoxMesh {
            cells: [1, 1, 1],
            lower: None,
            upper: None,
            order: 1,
            corners: None,
        }
        .corner_points();
        for c in 0..8 {
            assert_eq!(mesh::corner_jacobian_det(&unit, c), 1.0);
        }
        let mut swapped = unit;
        swapped.swap(0, 1);
        assert!(mesh::corner_jacobian_det(&swapped, 0) < 0.0);
        let mut sheared = unit;
        sheared[7] = [0.0, 0.0, 0.0];
        assert!(mesh::corner_jacobian_det(&sheared, 7) < 0.0);
        assert!((0..7).all(|c| mesh::corner_jacobian_det(&sheared, c) >= 0.0));
    }
}
