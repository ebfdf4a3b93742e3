//! A validated [`Config`] as the solution layer's plain parameters (`solve::params`): the schema
//! types stay here, `solve` never sees them. The defaults of the solver sections are `solve`'s
//! (the `Default` impls of this crate's sections convert them), so they are written once.

use mesh::{BoxSpec, CellKind};
use solve::params as plain;

use super::error::ConfigError;
use super::material::CellSelection;
use super::params::{
    BoxMesh, ComputeDevice, Config, ElementFormulation, Forcing, GeometricSetKind, LineSearch,
    LinearSolverMethod, LinearSolverParams, LoadingParams, MeshSource, NewtonParams, Scalar,
};
use super::tree::{index_path, key_path};

impl Config {
    /// The linear solver's parameters on the run's `device` (the `linear_solver` section alone
    /// converts with `device: cpu`).
    pub fn linear_solver_params(&self) -> plain::LinearSolverParams {
        plain::LinearSolverParams {
            device: self.device.into(),
            ..(&self.linear_solver).into()
        }
    }

    /// The problem this configuration describes (mesh, materials, boundary conditions, loads,
    /// quadrature). Validates first, so a `Config` changed in code is checked like a loaded one.
    pub fn problem_params(&self) -> Result<plain::ProblemParams, ConfigError> {
        self.validate()?;
        let mesh = match &self.mesh {
            MeshSource::Box(b) => plain::MeshSource::Box(self.box_spec(b)?),
            MeshSource::Gmsh(g) => plain::MeshSource::Gmsh {
                file: g.file.clone(),
                scale: g.scale,
            },
        };
        let materials = self
            .materials
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let material = m
                    .material()
                    .map_err(|e| self.error_at(&index_path("materials", i), e.to_string()))?;
                let cells = match &m.cells {
                    CellSelection::All => plain::CellSelection::All,
                    CellSelection::Set(name) => plain::CellSelection::Set(name.clone()),
                };
                Ok(plain::MaterialAssignment { cells, material })
            })
            .collect::<Result<_, ConfigError>>()?;
        let boundary = &self.boundary;
        Ok(plain::ProblemParams {
            mesh,
            materials,
            body_force: components(&self.body_force, "body_force", self)?,
            dirichlet: boundary
                .dirichlet
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let path = index_path("boundary.dirichlet", i);
                    let mut values = [const { None }; 3];
                    for ((v, given), c) in
                        values.iter_mut().zip(d.components()).zip(["x", "y", "z"])
                    {
                        if let Some(given) = given {
                            let [parsed, ..] = components(
                                &[given, Scalar::Number(0.0), Scalar::Number(0.0)],
                                &key_path(&path, c),
                                self,
                            )?;
                            *v = Some(parsed);
                        }
                    }
                    Ok(plain::DirichletCondition {
                        set: d.set.clone(),
                        values,
                        curve: d.curve.clone(),
                    })
                })
                .collect::<Result<_, ConfigError>>()?,
            twist: boundary
                .twist
                .iter()
                .map(|t| plain::TwistCondition {
                    set: t.set.clone(),
                    axis: t.axis,
                    center: t.center,
                    angle: t.angle_deg.to_radians(),
                    axial: t.axial,
                    curve: t.curve.clone(),
                })
                .collect(),
            traction: boundary
                .traction
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let path = key_path(&index_path("boundary.traction", i), "value");
                    Ok(plain::TractionLoad {
                        set: t.set.clone(),
                        value: components(&t.value, &path, self)?,
                        curve: t.curve.clone(),
                    })
                })
                .collect::<Result<_, ConfigError>>()?,
            pressure: boundary
                .pressure
                .iter()
                .map(|p| plain::PressureLoad {
                    set: p.set.clone(),
                    value: p.value,
                    curve: p.curve.clone(),
                })
                .collect(),
            nodal_forces: boundary
                .nodal_force
                .iter()
                .map(|t| plain::NodalForce {
                    set: t.set.clone(),
                    value: t.value,
                    curve: t.curve.clone(),
                })
                .collect(),
            point_loads: boundary
                .point_load
                .iter()
                .map(|p| plain::PointLoad {
                    at: p.at,
                    value: p.value,
                    curve: p.curve.clone(),
                })
                .collect(),
            quadrature_points: self.quadrature.points,
            formulation: self.formulation.into(),
            sets: self
                .sets
                .iter()
                .map(|(name, g)| {
                    let expression = match &g.expression {
                        Some(text) => Some(plain::Expression::parse(text).map_err(|e| {
                            self.error_at(&key_path(&key_path("sets", name), "expression"), e)
                        })?),
                        None => None,
                    };
                    Ok(plain::GeometricSet {
                        name: name.clone(),
                        kind: match g.kind {
                            GeometricSetKind::Nodes => plain::GeometricSetKind::Nodes,
                            GeometricSetKind::Faces => plain::GeometricSetKind::Faces,
                            GeometricSetKind::Cells => plain::GeometricSetKind::Cells,
                        },
                        within: g.within.as_ref().map(|b| (b.lower, b.upper)),
                        plane: g.plane.as_ref().map(|p| (p.point, p.normal)),
                        normal: g.normal,
                        angle: g.angle_deg.unwrap_or(1.0).to_radians(),
                        expression,
                        tolerance: g.tolerance,
                    })
                })
                .collect::<Result<_, ConfigError>>()?,
        })
    }

    fn box_spec(&self, b: &BoxMesh) -> Result<BoxSpec, ConfigError> {
        let kind = CellKind::from_order(b.order)
            .map_err(|e| self.error_at(&key_path("mesh.box", "order"), e.to_string()))?;
        Ok(BoxSpec {
            cells: b.cells,
            lower: b.lower.unwrap_or([0.0; 3]),
            upper: b.upper.unwrap_or([1.0; 3]),
            kind,
            corners: b.corners,
        })
    }
}

/// Numbers and parsed expressions of a vector given at `path`; an expression that does not
/// parse is an error located at its component.
fn components(
    values: &[Scalar; 3],
    path: &str,
    config: &Config,
) -> Result<[plain::Component; 3], ConfigError> {
    let mut out = [const { plain::Component::Value(0.0) }; 3];
    for (i, (v, o)) in values.iter().zip(&mut out).enumerate() {
        *o = match v {
            Scalar::Number(x) => plain::Component::Value(*x),
            Scalar::Expression(text) => plain::Component::Expression(
                plain::Expression::parse(text)
                    .map_err(|e| config.error_at(&index_path(path, i), e))?,
            ),
        };
    }
    Ok(out)
}

impl From<&LoadingParams> for plain::LoadingParams {
    fn from(p: &LoadingParams) -> Self {
        plain::LoadingParams {
            steps: p.steps,
            min_increment: p.min_increment,
            max_cutbacks: p.max_cutbacks,
            growth: p.growth,
            curve: p.curve.clone(),
        }
    }
}

impl From<plain::LoadingParams> for LoadingParams {
    fn from(p: plain::LoadingParams) -> Self {
        LoadingParams {
            steps: p.steps,
            min_increment: p.min_increment,
            max_cutbacks: p.max_cutbacks,
            growth: p.growth,
            curve: p.curve,
        }
    }
}

impl From<&NewtonParams> for plain::NewtonParams {
    fn from(p: &NewtonParams) -> Self {
        plain::NewtonParams {
            rtol: p.rtol,
            atol: p.atol,
            stol: p.stol,
            max_iterations: p.max_iterations,
            line_search: match p.line_search {
                LineSearch::Energy => plain::LineSearch::Energy,
                LineSearch::Residual => plain::LineSearch::Residual,
                LineSearch::None => plain::LineSearch::None,
            },
            max_line_search: p.max_line_search,
            forcing: match p.forcing {
                Forcing::EisenstatWalker => plain::Forcing::EisenstatWalker,
                Forcing::Fixed => plain::Forcing::Fixed,
            },
        }
    }
}

impl From<plain::NewtonParams> for NewtonParams {
    fn from(p: plain::NewtonParams) -> Self {
        NewtonParams {
            rtol: p.rtol,
            atol: p.atol,
            stol: p.stol,
            max_iterations: p.max_iterations,
            line_search: match p.line_search {
                plain::LineSearch::Energy => LineSearch::Energy,
                plain::LineSearch::Residual => LineSearch::Residual,
                plain::LineSearch::None => LineSearch::None,
            },
            max_line_search: p.max_line_search,
            forcing: match p.forcing {
                plain::Forcing::EisenstatWalker => Forcing::EisenstatWalker,
                plain::Forcing::Fixed => Forcing::Fixed,
            },
        }
    }
}

impl From<LinearSolverMethod> for plain::LinearSolverMethod {
    fn from(m: LinearSolverMethod) -> Self {
        match m {
            LinearSolverMethod::Auto => plain::LinearSolverMethod::Auto,
            LinearSolverMethod::CgAmg => plain::LinearSolverMethod::CgAmg,
            LinearSolverMethod::CgJacobi => plain::LinearSolverMethod::CgJacobi,
            LinearSolverMethod::Direct => plain::LinearSolverMethod::Direct,
        }
    }
}

impl From<plain::LinearSolverMethod> for LinearSolverMethod {
    fn from(m: plain::LinearSolverMethod) -> Self {
        match m {
            plain::LinearSolverMethod::Auto => LinearSolverMethod::Auto,
            plain::LinearSolverMethod::CgAmg => LinearSolverMethod::CgAmg,
            plain::LinearSolverMethod::CgJacobi => LinearSolverMethod::CgJacobi,
            plain::LinearSolverMethod::Direct => LinearSolverMethod::Direct,
        }
    }
}

impl From<ElementFormulation> for plain::FormulationChoice {
    fn from(f: ElementFormulation) -> Self {
        match f {
            ElementFormulation::Auto => plain::FormulationChoice::Auto,
            ElementFormulation::Displacement => {
                plain::FormulationChoice::Every(fem::Formulation::Displacement)
            }
            ElementFormulation::Projected => {
                plain::FormulationChoice::Every(fem::Formulation::Projected)
            }
        }
    }
}

impl From<ComputeDevice> for plain::DeviceChoice {
    fn from(d: ComputeDevice) -> Self {
        match d {
            ComputeDevice::Auto => plain::DeviceChoice::Auto,
            ComputeDevice::Cpu => plain::DeviceChoice::Cpu,
            ComputeDevice::Cuda => plain::DeviceChoice::Cuda,
        }
    }
}

/// The section without the run's device (`device: cpu`); [`Config::linear_solver_params`] adds it.
impl From<&LinearSolverParams> for plain::LinearSolverParams {
    fn from(p: &LinearSolverParams) -> Self {
        plain::LinearSolverParams {
            method: p.method.into(),
            device: plain::DeviceChoice::Cpu,
            rtol: p.rtol,
            atol: p.atol,
            max_iterations: p.max_iterations,
            amg: p.amg.clone(),
        }
    }
}

impl From<plain::LinearSolverParams> for LinearSolverParams {
    fn from(p: plain::LinearSolverParams) -> Self {
        LinearSolverParams {
            method: p.method.into(),
            rtol: p.rtol,
            atol: p.atol,
            max_iterations: p.max_iterations,
            amg: p.amg,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const TEXT: &str = "\
mesh: { box: { cells: [4, 2, 2], upper: [4, 1, 1], order: 2 } }
materials:
  - { model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }
  - { cells: core, model: linear, lambda: 2.0, mu: 1.0 }
body_force: [0, 0, -1]
boundary:
  dirichlet: [{ set: xmin, x: 0.0, z: 0.5 }]
  twist: [{ set: xmax, axis: [1, 0, 0], center: [4, 0.5, 0.5], angle_deg: 90 }]
  traction: [{ set: zmax, value: [0, 1, 0] }]
loading: { steps: 3 }
linear_solver: { method: cg_jacobi }
quadrature: { points: 4 }
";

    #[test]
    fn a_configuration_becomes_the_solvers_plain_parameters() {
        let config = crate::load_str(TEXT, Path::new("p.yaml"), &[]).unwrap();
        let p = config.problem_params().unwrap();
        let plain::MeshSource::Box(spec) = &p.mesh else {
            panic!("a box mesh")
        };
        assert_eq!(
            (spec.cells, spec.lower, spec.upper, spec.kind),
            ([4, 2, 2], [0.0; 3], [4.0, 1.0, 1.0], CellKind::Hex27)
        );
        assert_eq!(p.materials.len(), 2);
        assert_eq!(
            p.materials[0].material,
            fem::Material::neo_hookean(fem::Moduli::from_young_poisson(10.0, 0.3).unwrap())
        );
        assert_eq!(
            p.materials[1],
            plain::MaterialAssignment {
                cells: plain::CellSelection::Set("core".into()),
                material: fem::Material::Linear {
                    lambda: 2.0,
                    mu: 1.0
                },
            }
        );
        assert_eq!(p.body_force, [0.0, 0.0, -1.0]);
        let values = p.dirichlet[0]
            .values
            .clone()
            .map(|v| v.map(|c| c.constant()));
        assert_eq!(values, [Some(Some(0.0)), None, Some(Some(0.5))]);
        assert_eq!(p.twist[0].angle, std::f64::consts::FRAC_PI_2);
        assert_eq!(p.traction[0].value, [0.0, 1.0, 0.0]);
        assert_eq!(p.quadrature_points, Some(4));
        assert_eq!(plain::LoadingParams::from(&config.loading).steps, 3);
        let solver = plain::LinearSolverParams::from(&config.linear_solver);
        assert_eq!(solver.method, plain::LinearSolverMethod::CgJacobi);
        assert_eq!(solver.rtol, plain::LinearSolverParams::default().rtol);
    }

    /// The schema's defaults are the solver's: a section left out converts to `solve`'s default.
    #[test]
    fn omitted_sections_give_the_solvers_defaults() {
        let config = crate::load_str(
            "mesh: { box: { cells: [1, 1, 1] } }\nmaterials: [{ model: linear, lambda: 1, mu: 1 }]\n",
            Path::new("d.yaml"),
            &[],
        )
        .unwrap();
        assert_eq!(
            plain::LoadingParams::from(&config.loading),
            plain::LoadingParams::default()
        );
        assert_eq!(
            plain::NewtonParams::from(&config.newton),
            plain::NewtonParams::default()
        );
        assert_eq!(
            plain::LinearSolverParams::from(&config.linear_solver),
            plain::LinearSolverParams::default()
        );
    }

    #[test]
    fn a_config_changed_in_code_is_validated_before_conversion() {
        let mut config = crate::load_str(TEXT, Path::new("p.yaml"), &[]).unwrap();
        if let MeshSource::Box(b) = &mut config.mesh {
            b.order = 3;
        }
        let err = config.problem_params().unwrap_err();
        assert!(err.to_string().contains("mesh.box.order"), "{err}");
    }
}
