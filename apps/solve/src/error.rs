//! The crate's error type: a refusal of the input names the key it concerns (`quadrature.points`,
//! `boundary.dirichlet[0].x`, `sets.top`), a failure of a lower crate keeps its type, and the
//! context a step adds (the file, the set reference, the AMG stage) wraps it as its `source`.
//!
//! A context variant's `Display` is its own message only (`reading mesh a.msh`); a renderer that
//! walks `source()` gives the whole chain (`reading mesh a.msh: line 3: ...`), the text the
//! command line prints.

use std::fmt;
use std::path::PathBuf;

use amg::AmgError;
use assembly::AssemblyError;
use comm::CommError;
use fem::FemError;
use linalg::LinalgError;
use mesh::MeshError;

use crate::linear_solver::ChoiceError;
use crate::newton::{Interrupted, PathFailure, MAX_TWIST_PER_STEP_DEG};
use crate::params::MAX_LOAD_STEPS;

/// Errors of the solution layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Linalg(#[from] LinalgError),
    #[error(transparent)]
    Amg(#[from] AmgError),
    #[error(transparent)]
    Assembly(#[from] AssemblyError),
    #[error(transparent)]
    Mesh(#[from] MeshError),
    #[error(transparent)]
    Fem(#[from] FemError),
    /// An error on MPI ranks (agreed on every rank) or of the communication itself.
    #[error(transparent)]
    Comm(#[from] CommError),
    /// A configured linear-solver option the operator cannot run.
    #[error(transparent)]
    Choice(#[from] ChoiceError),
    /// The load path stopped early: no smaller step converged (boxed: its attempts and
    /// diagnosis would make every result of the crate large).
    #[error(transparent)]
    Path(Box<PathFailure>),
    /// The load path's observer asked it to stop.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// The step callback of [`crate::newton::LoadPath::run_from`] failed; `run_from` returns
    /// the callback's own error in its place, so a caller never sees this one.
    #[error("the step callback failed")]
    StepCallback,

    // --- the mesh and its parts ---
    #[error("reading mesh {}", file.display())]
    ReadMesh {
        file: PathBuf,
        #[source]
        error: MeshError,
    },
    /// A refusal of the mesh read from `file`.
    #[error("mesh {}", file.display())]
    MeshFile {
        file: PathBuf,
        #[source]
        error: Box<Error>,
    },
    #[error("{first} and {second} meet at distinct nodes at the same point ({}, {}, {}){}: the cells are not joined there (a crack); merge coincident nodes (Gmsh: Coherence Mesh) and export again", point[0], point[1], point[2], more_pairs(*more))]
    CoincidentNodes {
        first: String,
        second: String,
        point: [f64; 3],
        /// Further pairs of coincident nodes.
        more: usize,
    },
    #[error("mesh: the cells fall into more than {most} separate pieces (cells that share no node with the rest): nodes of a cell are probably duplicated where cells meet; merge coincident nodes (Gmsh: Coherence Mesh)")]
    TooManyPieces { most: usize },
    #[error("the mesh has no nodes")]
    NoNodes,
    #[error("partitioning {} with METIS", file.display())]
    Partition {
        file: PathBuf,
        #[source]
        error: MeshError,
    },
    #[error("the box has {cells} cells ({} x {} x {} nodes), too few for {ranks} ranks: every rank owns a block of whole node layers with at least one cell; run on at most {most} ranks", nodes[0], nodes[1], nodes[2])]
    BoxTooSmallForRanks {
        cells: usize,
        nodes: [usize; 3],
        ranks: usize,
        most: usize,
    },
    #[error("the mesh has {cells} cells, too few for {ranks} ranks: rank {rank} would own none; run on at most {most} ranks")]
    PartWithoutCells {
        cells: u64,
        ranks: usize,
        rank: usize,
        most: u64,
    },

    // --- geometric sets (`sets.<name>`) ---
    #[error("sets.{name}: '{name}' is the id of the mesh's set '{id_of}', which the input may name by it; give the geometric set another name")]
    SetNameIsAnId { name: String, id_of: String },
    #[error("sets.{name}: the mesh already has a set named '{name}'; give the geometric set another name")]
    SetNameTaken { name: String },
    #[error("sets.{name}: selects no {kind} of the mesh (its bounding box: {bounds}); check the coordinates and the tolerance ({tolerance:e})")]
    EmptySet {
        name: String,
        kind: &'static str,
        bounds: String,
        tolerance: f64,
    },

    // --- materials and the element loop ---
    #[error("materials: no entry")]
    NoMaterials,
    #[error("materials[{index}]")]
    Material {
        index: usize,
        #[source]
        error: FemError,
    },
    #[error("materials: at most {most} entries are supported")]
    TooManyMaterials { most: u16 },
    #[error("cell {cell} has no material: add an entry with `cells: all` or cover every cell set")]
    CellWithoutMaterial { cell: usize },
    #[error("quadrature.points: {points} Gauss points per direction under-integrate Q{order} cells (hourglass modes make the tangent singular); use at least {}", order + 1)]
    UnderIntegrated { points: usize, order: usize },
    #[error("setting up the element loop")]
    ElementLoop(#[source] AssemblyError),

    // --- constraints and loads ---
    /// A set the input refers to at `place` (`boundary.dirichlet set 'top'`,
    /// `materials[1].cells`) that the mesh lacks or that is of the wrong kind.
    #[error("{place}")]
    SetReference {
        place: String,
        #[source]
        error: MeshError,
    },
    #[error("boundary: no dirichlet or twist condition, so rigid-body motions are free and the tangent is singular; fix at least one set (boundary.dirichlet)")]
    NoConstraint,
    #[error("boundary: the constraints on {sets} do not hold the body: {}; constrain more components or sets (boundary.dirichlet), e.g. a symmetry plane or a point for each free motion", free_motions(free))]
    BodyNotHeld { sets: String, free: Vec<String> },
    #[error("boundary: the mesh falls into {count} separate pieces (cells that share no node with the rest) and the constraints on {sets} do not hold {}: {}; join the pieces (merge coincident nodes, Gmsh: Coherence Mesh) or constrain each piece", if unheld.len() == 1 { "one of them" } else { "some of them" }, unheld.join("; "))]
    PiecesNotHeld {
        count: usize,
        sets: String,
        /// Each unheld piece described: its cells, its first cell and its free motions.
        unheld: Vec<String>,
    },
    /// `what` (`traction`, `boundary.dirichlet`) on `set` both depends on `t` and follows a
    /// load curve.
    #[error("{what} on set '{set}': an expression of t is the value at each time itself and cannot also follow a load curve; drop `curve` or `t`")]
    TimeAndCurve { what: &'static str, set: String },
    #[error("{key}: the load is not finite at node {node} (an expression outside its domain there: ln, sqrt, division; or a value that overflows)")]
    LoadNotFinite { key: String, node: usize },
    #[error("body_force or boundary.traction: an expression is not finite somewhere on the mesh (at node {node}); check its domain (ln, sqrt, division)")]
    LoadExpressionNotFinite { node: usize },
    #[error("body_force or boundary.traction: an expression of t is not finite at time {time} (at node {node}); check its domain (ln, sqrt, division)")]
    LoadNotFiniteAtTime { time: f64, node: usize },
    /// A Dirichlet expression of position that is not finite at a node of its set.
    #[error("boundary.dirichlet[{index}].{component}: the expression `{expression}` is {value} at node {node} ({}, {}, {}) of the set; a prescribed displacement must be finite at every node of its set: check its domain (ln, sqrt, division)", point[0], point[1], point[2])]
    DirichletNotFinite {
        index: usize,
        component: &'static str,
        expression: String,
        value: f64,
        node: usize,
        point: [f64; 3],
    },
    /// A Dirichlet expression of `t` that is not finite at a node of its set at a step time.
    #[error("boundary.dirichlet[{index}].{component}: the expression `{expression}` is {value} at time t = {time} at the point ({}, {}, {}) of the set; a prescribed displacement must be finite at every time of the load path (its steps end at t = {step_times}): check its domain (ln, sqrt, division)", point[0], point[1], point[2])]
    DirichletNotFiniteInTime {
        index: usize,
        component: &'static str,
        expression: String,
        value: f64,
        time: f64,
        point: [f64; 3],
        /// The load path's step times, as the message shows them.
        step_times: String,
    },
    #[error("boundary.point_load[{index}].at: no mesh node at [{}, {}, {}]; the nearest is node {nearest} at [{}, {}, {}], {distance:.3e} away", at[0], at[1], at[2], nearest_at[0], nearest_at[1], nearest_at[2])]
    NoNodeAtPoint {
        index: usize,
        at: [f64; 3],
        nearest: usize,
        nearest_at: [f64; 3],
        distance: f64,
    },

    // --- the load path ---
    #[error("boundary.twist on set '{set}' turns by {turn_deg:.6e} degrees from time {from} to {to}: steps of at most {MAX_TWIST_PER_STEP_DEG} degrees would need increments below {smallest:.0e} of the load path (more than {MAX_LOAD_STEPS} steps); reduce angle_deg")]
    TwistTooFast {
        set: String,
        turn_deg: f64,
        from: f64,
        to: f64,
        smallest: f64,
    },
    #[error("boundary.twist: no increment from position {position} turns by at most {MAX_TWIST_PER_STEP_DEG} degrees after {divisions} divisions")]
    TwistUndivided { position: f64, divisions: usize },
    #[error("the Newton loop on the GPU")]
    DeviceLoop(#[source] AssemblyError),

    // --- the linear solver ---
    #[error("device: `cuda` needs a usable GPU (`auto` falls back to the CPU)")]
    NoGpu(#[source] LinalgError),
    #[error("device: `cuda` runs CG; the direct solver is host-only")]
    DirectOnGpu,
    #[error("the direct solver is not available on {ranks} MPI ranks")]
    DirectOnRanks { ranks: usize },
    #[error("linear_solver.method = direct: the factor would take {:.1} GB (limit {:.0} GB); use cg_amg for a problem of {unknowns} unknowns", bytes / 1e9, limit / 1e9)]
    FactorTooLarge {
        bytes: f64,
        limit: f64,
        unknowns: usize,
    },
    /// A stage of the preconditioner's set-up (`AMG set-up`, `AMG update`, ...) failed.
    #[error("{stage}")]
    Preconditioner {
        stage: &'static str,
        #[source]
        error: AmgError,
    },
    /// The Krylov method (`CG`, `GMRES`) failed.
    #[error("{method}")]
    Krylov {
        method: &'static str,
        #[source]
        error: AmgError,
    },
    #[error("GMRES met a NaN or infinity after {iterations} iterations; an element may be close to inversion: use more loading.steps")]
    GmresNotFinite { iterations: usize },
    /// CG broke down (`cg`: how) and the GMRES that repeated the solve met a NaN.
    #[error("{cg}, and GMRES with the same preconditioner met a NaN or infinity after {iterations} iterations; an element may be close to inversion: use more loading.steps")]
    FallbackNotFinite { cg: String, iterations: usize },
    #[error("the distributed pattern of the tangent")]
    DistributedPattern(#[source] LinalgError),
    #[error("the tangent lives on {device}, the distributed solver on the host")]
    TangentOnDevice { device: String },
    /// A state the solver keeps is missing where it is needed (a broken invariant).
    #[error("{0}")]
    Missing(&'static str),
}

/// A result of the solution layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error and its causes in one line, `error: cause: ...` (the text the command line
    /// prints, as anyhow's alternate rendering gives it).
    pub fn chain(&self) -> Chain<'_> {
        Chain(self)
    }

    /// The error as a boxed error whose type a caller can recognise by downcasting: a lower
    /// crate's error (a `transparent` variant, whose own type `source()` would skip) as itself,
    /// any other as this error (its causes follow through `source()`).
    pub fn into_boxed(self) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        match self {
            Error::Linalg(e) => Box::new(e),
            Error::Amg(e) => Box::new(e),
            Error::Assembly(e) => Box::new(e),
            Error::Mesh(e) => Box::new(e),
            Error::Fem(e) => Box::new(e),
            Error::Comm(e) => Box::new(e),
            Error::Choice(e) => Box::new(e),
            Error::Path(e) => e,
            Error::Interrupted(e) => Box::new(e),
            e => Box::new(e),
        }
    }
}

impl From<PathFailure> for Error {
    fn from(error: PathFailure) -> Self {
        Error::Path(Box::new(error))
    }
}

/// `a is free`, `a and b are free`.
fn free_motions(free: &[String]) -> String {
    let verb = if free.len() == 1 { "is" } else { "are" };
    format!("{} {verb} free", join_and(free))
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `, and 2 more such pairs` after the first pair of coincident nodes (nothing for none).
fn more_pairs(more: usize) -> String {
    match more {
        0 => String::new(),
        more => format!(
            ", and {more} more such pair{}",
            if more == 1 { "" } else { "s" }
        ),
    }
}

/// An error and its causes in one line, `error: cause: ...` (as a renderer walking `source()`
/// prints it): [`Error::chain`].
pub struct Chain<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages of the variants built from parts (lists, counts, plurals) read as the
    /// formatted messages they replace, and a context's chain gives its cause after it.
    #[test]
    fn messages_read_as_before() {
        let one = Error::BodyNotHeld {
            sets: "set 'left'".into(),
            free: vec!["translation z".into()],
        };
        assert!(one.to_string().contains(
            "the constraints on set 'left' do not hold the body: translation z is free; constrain"
        ));
        let three = Error::BodyNotHeld {
            sets: "no set".into(),
            free: vec!["a".into(), "b".into(), "c".into()],
        };
        assert!(three
            .to_string()
            .contains("body: a, b and c are free; constrain"));
        let pieces = |n| Error::PiecesNotHeld {
            count: 3,
            sets: "set 'left'".into(),
            unheld: vec!["p".into(); n],
        };
        assert!(pieces(1)
            .to_string()
            .contains("do not hold one of them: p; join"));
        assert!(pieces(2)
            .to_string()
            .contains("do not hold some of them: p; p; join"));
        let crack = |more| Error::CoincidentNodes {
            first: "cell 0".into(),
            second: "cell 1".into(),
            point: [1.0, 0.5, 0.0],
            more,
        };
        assert!(crack(0).to_string().starts_with(
            "cell 0 and cell 1 meet at distinct nodes at the same point (1, 0.5, 0): the cells"
        ));
        assert!(crack(1)
            .to_string()
            .contains("(1, 0.5, 0), and 1 more such pair: the"));
        assert!(crack(2)
            .to_string()
            .contains(", and 2 more such pairs: the"));
        let points = Error::UnderIntegrated {
            points: 2,
            order: 2,
        };
        assert_eq!(
            points.to_string(),
            "quadrature.points: 2 Gauss points per direction under-integrate Q2 cells (hourglass modes make the tangent singular); use at least 3"
        );
        let factor = Error::FactorTooLarge {
            bytes: 5.26e9,
            limit: 4e9,
            unknowns: 7,
        };
        assert!(factor
            .to_string()
            .contains("would take 5.3 GB (limit 4 GB); use cg_amg for a problem of 7 unknowns"));
        let read = Error::ReadMesh {
            file: "a.msh".into(),
            error: MeshError::Invalid("node 3 twice".into()),
        };
        assert_eq!(read.to_string(), "reading mesh a.msh");
        assert_eq!(
            read.chain().to_string(),
            "reading mesh a.msh: invalid mesh: node 3 twice"
        );
    }

    /// A lower crate's error comes out of [`Error::into_boxed`] as itself, a context as the
    /// solve error with its cause behind it.
    #[test]
    fn boxed_errors_keep_their_types() {
        let mesh = Error::from(MeshError::Invalid("x".into())).into_boxed();
        assert!(mesh.is::<MeshError>());
        let read = Error::ReadMesh {
            file: "a.msh".into(),
            error: MeshError::Invalid("x".into()),
        }
        .into_boxed();
        assert!(read.is::<Error>());
        assert!(read.source().is_some_and(|e| e.is::<MeshError>()));
        assert!(Error::from(Interrupted).into_boxed().is::<Interrupted>());
    }
}
