//! Every input error names where in the input it comes from: errors found while building the
//! problem (unknown set names, a box too large, inverted or flat cells, no constraint, ...) or
//! choosing the linear solver (an option the ranks cannot run) are attached to the configuration
//! value that caused them, as `file:line:column: key.path:` (or the `--set` argument that wrote
//! it), like the loader's own errors.

use config::{CellSelection, Config, ConfigError, MeshSource};
use mesh::MeshError;
use solve::linear_solver::ChoiceError;
use solve::problem::Problem;

use crate::{Error, Result};

/// Most step times at which expressions of the time are evaluated before a run (see
/// [`solve::params::LoadingParams::step_times`]).
pub const CHECKED_STEP_TIMES: usize = 1000;

/// Builds the problem of `config`; a failure is reported at the configuration value behind it.
/// Dirichlet expressions of the time are evaluated at the load path's step times.
pub fn build_problem(config: &Config) -> Result<Problem> {
    let params = config.problem_params()?;
    let problem = Problem::new(&params).map_err(|e| locate(config, e))?;
    check_dirichlet_in_time(config, &params, &problem.mesh)?;
    Ok(problem)
}

/// Refuses a Dirichlet expression of the time that is not finite on `mesh` at a step time of
/// the load path of `config`, at its key.
pub fn check_dirichlet_in_time(
    config: &Config,
    params: &solve::params::ProblemParams,
    mesh: &mesh::HexMesh,
) -> Result<()> {
    let loading: solve::params::LoadingParams = (&config.loading).into();
    let times = loading.step_times(CHECKED_STEP_TIMES);
    located(
        config,
        solve::problem::check_dirichlet_in_time(params, mesh, &times),
    )
}

/// `result` with its error located (see [`locate`]).
pub fn located<T, E: Into<Error>>(config: &Config, result: Result<T, E>) -> Result<T> {
    result.map_err(|e| locate(config, e))
}

/// Attaches `error` to the key of `config` it comes from (unchanged if it already names a place
/// in the configuration).
pub fn locate(config: &Config, error: impl Into<Error>) -> Error {
    let error = error.into();
    let causes = error.causes();
    if causes.iter().any(|e| e.is::<ConfigError>()) {
        return error;
    }
    // An unknown set: the key names the reference, the mesh error says what exists.
    let unknown_set = causes
        .iter()
        .find_map(|e| match e.downcast_ref::<MeshError>() {
            Some(m @ MeshError::UnknownSet { .. }) => Some(m.to_string()),
            _ => None,
        });
    let message = format!("{error:#}");
    let key = key_of(config, &causes, &message);
    let message = unknown_set.unwrap_or(message);
    // The key path is printed by the located error; drop a copy at the start of the message.
    let message = message
        .strip_prefix(&format!("{key}: "))
        .map_or(message.clone(), str::to_owned);
    Error::Input(config.error_at(&key, message))
}

/// The configuration key an error of building the problem belongs to.
fn key_of(config: &Config, causes: &[&(dyn std::error::Error + 'static)], message: &str) -> String {
    for cause in causes {
        if let Some(refused) = cause.downcast_ref::<ChoiceError>() {
            return refused.key().into();
        }
        if let Some(mesh_error) = cause.downcast_ref::<MeshError>() {
            match mesh_error {
                MeshError::UnknownSet { name, kind, .. } => {
                    if let Some(key) = set_reference(config, name, *kind == "cell") {
                        return key;
                    }
                }
                MeshError::InvalidSpec(_) => return "mesh.box.cells".into(),
                _ => {}
            }
        }
    }
    // A message that starts with the full key of a boundary condition's value.
    if let Some((key, _)) = message.split_once(": ") {
        let full = ["boundary.dirichlet[", "boundary.traction[", "body_force"];
        if full.iter().any(|k| key.starts_with(k)) && !key.contains(' ') {
            return key.into();
        }
    }
    // A geometric set's own errors (`sets.far: selects no boundary face ...`).
    if let Some((key, _)) = message.split_once(": ") {
        let name = key.strip_prefix("sets.").unwrap_or("");
        if config.sets.contains_key(name) {
            return key.into();
        }
    }
    // Messages that start with the key they concern (`quadrature.points: ...`, `boundary: ...`).
    for prefix in ["quadrature.points", "boundary", "materials"] {
        if message.starts_with(prefix) {
            return prefix.into();
        }
    }
    if message.starts_with("device:") {
        return "device".into();
    }
    if let Some(key) = quoted_set(message).and_then(|name| set_reference(config, name, false)) {
        return key;
    }
    if message.contains("material") {
        return "materials".into();
    }
    match &config.mesh {
        MeshSource::Box(b) if b.corners.is_some() => "mesh.box.corners".into(),
        MeshSource::Box(_) => "mesh.box".into(),
        MeshSource::Gmsh(_) => "mesh.gmsh.file".into(),
    }
}

/// The set name of messages such as `traction on set 'top': ...`.
fn quoted_set(message: &str) -> Option<&str> {
    let start = message.find("set '")? + "set '".len();
    let end = message[start..].find('\'')? + start;
    Some(&message[start..end])
}

/// The first key of `config` that names the set `name` (a cell set for materials, a node or face
/// set for boundary conditions).
fn set_reference(config: &Config, name: &str, cell_set: bool) -> Option<String> {
    if cell_set {
        return config.materials.iter().enumerate().find_map(|(i, m)| {
            matches!(&m.cells, CellSelection::Set(s) if s == name)
                .then(|| format!("materials[{i}].cells"))
        });
    }
    let b = &config.boundary;
    let dirichlet = b.dirichlet.iter().map(|d| (&d.set, "dirichlet"));
    let twist = b.twist.iter().map(|t| (&t.set, "twist"));
    let traction = b.traction.iter().map(|t| (&t.set, "traction"));
    let nodal = b.nodal_force.iter().map(|t| (&t.set, "nodal_force"));
    let pressure = b.pressure.iter().map(|p| (&p.set, "pressure"));
    let mut counts = std::collections::BTreeMap::new();
    for (set, kind) in dirichlet
        .chain(twist)
        .chain(traction)
        .chain(nodal)
        .chain(pressure)
    {
        let i = counts.entry(kind).or_insert(0usize);
        if set == name {
            return Some(format!("boundary.{kind}[{i}].set"));
        }
        *i += 1;
    }
    None
}
