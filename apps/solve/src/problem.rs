//! The discrete problem of a run: mesh, materials per cell, constraints and dead loads, built from
//! plain [`ProblemParams`]. Knows nothing of the nonlinear solution strategy.

use std::sync::atomic::{AtomicBool, Ordering};

use assembly::{
    add_traction_load, body_force_load, rigid_body_modes, AssemblyError, CellMaterials,
    Constraints, CurvedLoad, DiscreteProblem, ElasticityAssembler, FollowerPressure, MeshPieces,
    PositionFn, Prescribed, RIGID_BODY_MODES_3D,
};
use fem::Load;
use mesh::{generate_box, read_mesh, HexMesh};
use rayon::prelude::*;

use crate::error::{join_and, Error, Result};
use crate::params::{
    curve_factor, curve_swing, CellSelection, Component, LoadingParams, MeshSource, ProblemParams,
};

/// The discrete problem of one run: the mesh and what is assembled on it.
pub struct Problem {
    pub mesh: HexMesh,
    /// Element loop, constraints and dead loads; Newton's one assemble-and-eliminate path.
    pub discrete: DiscreteProblem,
    /// Every material is small-strain linear (and every load dead): one exact solve is the answer.
    linear: bool,
    /// The loads and constraints on load curves of their own: what [`Problem::set_time`] updates.
    own_curves: OwnCurves,
    /// On a rank's part: the size of the whole mesh's bounding box (point loads are located
    /// relative to it, and a point outside the part is not an error here); `None`: serial.
    part_size: Option<f64>,
    /// On a rank's part: whether each point load's node is in the part.
    point_loads_found: Vec<bool>,
    /// The mesh's pieces (cells joined through shared nodes), each of which must be held.
    pieces: Pieces,
}

/// Each local node's piece label (the smallest global node id of its piece; nodes in no cell are
/// in no piece) and each local cell's serial id (to name the cells of a piece).
struct Pieces {
    node_piece: Vec<u64>,
    in_a_cell: Vec<bool>,
    cell_serial: Vec<u64>,
}

impl Pieces {
    /// The pieces of a whole mesh.
    fn of_mesh(mesh: &HexMesh) -> Result<Self> {
        let joined = MeshPieces::of_cells(&mesh.cells, mesh.nodes_per_cell(), mesh.n_nodes())
            .map_err(Error::ElementLoop)?;
        let mut node_piece: Vec<u64> = (0..mesh.n_nodes() as u64).into_par_iter().collect();
        joined
            .lower_labels(&mut node_piece)
            .map_err(Error::ElementLoop)?;
        Ok(Self {
            node_piece,
            in_a_cell: in_a_cell(mesh),
            cell_serial: (0..mesh.n_cells() as u64).into_par_iter().collect(),
        })
    }

    /// Collective: the pieces of the whole mesh seen from a rank's part, by spreading labels
    /// (global node ids) through the part's cells and taking the ghosts' from their owners until
    /// no label falls on any rank (a part holds every cell of its owned nodes, so this ends with
    /// every node labelled by its whole piece).
    fn on_part(part: &mesh::MeshPart, comm: std::sync::Arc<dyn comm::Comm>) -> Result<Self> {
        let rows = linalg::dist::RowPartition::new(comm.clone(), part.n_owned_nodes())?;
        let ghosts = part.node_globals[part.n_owned_nodes()..].to_vec();
        let halo = linalg::dist::HaloPlan::new(&rows, ghosts, 1)?;
        let mesh = &part.mesh;
        // the part's cells joined once (agreed: the loop below is collective)
        let joined = comm::agree(
            &*comm,
            MeshPieces::of_cells(&mesh.cells, mesh.nodes_per_cell(), mesh.n_nodes()),
        )?;
        let mut node_piece = part.node_globals.clone();
        let mut values: Vec<f64> = vec![0.0; node_piece.len()];
        loop {
            let mut changed = joined
                .lower_labels(&mut node_piece)
                .map_err(Error::ElementLoop)?;
            // global ids are below 2^53: exact as f64
            for (v, &l) in values.iter_mut().zip(&node_piece) {
                *v = l as f64;
            }
            halo.update(&mut values)?;
            for (l, &v) in node_piece
                .iter_mut()
                .zip(&values)
                .skip(part.n_owned_nodes())
            {
                if (v as u64) < *l {
                    *l = v as u64;
                    changed = true;
                }
            }
            let mut any = [if changed { 1.0 } else { 0.0 }];
            comm.allreduce_max(&mut any)?;
            if any[0] == 0.0 {
                break;
            }
        }
        Ok(Self {
            node_piece,
            in_a_cell: in_a_cell(mesh),
            cell_serial: part.cell_serial_ids.clone(),
        })
    }
}

/// Whether each node of `mesh` is a node of some cell.
fn in_a_cell(mesh: &HexMesh) -> Vec<bool> {
    let used: Vec<AtomicBool> = (0..mesh.n_nodes())
        .into_par_iter()
        .map(|_| AtomicBool::new(false))
        .collect();
    mesh.cells
        .par_iter()
        .for_each(|&n| used[n].store(true, Ordering::Relaxed));
    used.into_par_iter().map(AtomicBool::into_inner).collect()
}

/// A piece of the mesh that the constraints do not hold, for messages.
struct UnheldPiece {
    cells: u64,
    /// Its first cell, as messages name cells.
    first_cell: String,
    free: Vec<assembly::FreeMotion>,
}

/// More pieces than this are not examined one by one: such a mesh is refused as falling apart.
const MAX_PIECES: usize = 1000;
/// Unheld pieces named in a message.
const NAMED_PIECES: usize = 4;

/// Per kind, the index (into `discrete.curved`, `discrete.follower` or the constraints' entries)
/// and the curve of each load or constraint that has its own load curve, and the dead loads given
/// by expressions of the time `t` (re-evaluated at each time, factor one).
#[derive(Default)]
struct OwnCurves {
    dead: Vec<(usize, Vec<[f64; 2]>)>,
    pressure: Vec<(usize, Vec<[f64; 2]>)>,
    constraints: Vec<(usize, Vec<[f64; 2]>)>,
    timed: Vec<(usize, TimedLoad)>,
}

/// A dead load with an expression of the time `t` in some component: its nodal forces are
/// computed afresh at every time (into its `discrete.curved` entry, whose factor stays one).
struct TimedLoad {
    value: [Component; 3],
    /// `None`: a body force; otherwise the faces of a traction and their Gauss points.
    faces: Option<(Vec<mesh::CellFace>, usize)>,
}

impl Problem {
    /// Builds mesh, materials, constraints and loads of `params`.
    /// Errors where the constraints leave a rigid-body motion free ([`Problem::check_held`]).
    pub fn new(params: &ProblemParams) -> Result<Self> {
        Self::on_mesh(params, Self::mesh_of(params)?)
    }

    /// The first half of [`Problem::new`]: the mesh of `params` with its geometric sets.
    pub fn mesh_of(params: &ProblemParams) -> Result<HexMesh> {
        let mut mesh = build_mesh(&params.mesh)?;
        crate::geometric_sets::add_geometric_sets(&mut mesh, &params.sets, None, true, None)?;
        Ok(mesh)
    }

    /// The second half of [`Problem::new`]: materials, element loop with its plans,
    /// constraints and loads of `params` on `mesh` (from [`Problem::mesh_of`]).
    pub fn on_mesh(params: &ProblemParams, mesh: HexMesh) -> Result<Self> {
        let mut problem = Self::unloaded(params, mesh, None)?;
        problem.set_loads(params)?;
        problem.check_held()?;
        Ok(problem)
    }

    /// Collective on a rank's part: the sum of `v` over the ranks (itself when serial).
    fn sum_over_ranks(&self, v: &mut [f64]) -> Result<()> {
        if let Some(part) = &self.discrete.partition {
            part.layout.comm().allreduce_sum(v)?;
        }
        Ok(())
    }

    /// Collective on a rank's part: the maximum of `v` over the ranks (itself when serial).
    fn max_over_ranks(&self, v: &mut [f64]) -> Result<()> {
        if let Some(part) = &self.discrete.partition {
            part.layout.comm().allreduce_max(v)?;
        }
        Ok(())
    }

    /// The local nodes whose components this rank answers for (its owned nodes).
    fn owned_nodes(&self) -> usize {
        match &self.discrete.partition {
            None => self.mesh.n_nodes(),
            Some(part) => part.layout.owned() / 3,
        }
    }

    /// Whether this rank answers for local cell `c` (owns it).
    fn owns_cell(&self, c: usize) -> bool {
        self.discrete
            .partition
            .as_ref()
            .is_none_or(|part| part.owned_cells[c])
    }

    /// The rigid-body motions that the constraints leave free in the piece of nodes `in_piece`
    /// (every node of the mesh for the whole body), measured in the piece's own frame. On a
    /// rank's part it is collective: every rank must call it.
    fn free_motions_of(
        &self,
        in_piece: impl Fn(usize) -> bool + Sync,
    ) -> Result<Vec<assembly::FreeMotion>> {
        let coords = &self.mesh.coords;
        let owned = self.owned_nodes();
        // (maxima: the same in any order)
        let mut extent = coords[..owned]
            .par_iter()
            .enumerate()
            .filter(|&(n, _)| in_piece(n))
            .map(|(_, x)| [x[0], x[1], x[2], -x[0], -x[1], -x[2]])
            .reduce(
                || [f64::NEG_INFINITY; 6],
                |a, b| std::array::from_fn(|d| a[d].max(b[d])),
            );
        self.max_over_ranks(&mut extent)?;
        let frame = assembly::MotionFrame::of_box(
            [-extent[3], -extent[4], -extent[5]],
            [extent[0], extent[1], extent[2]],
        );
        let held = self.discrete.constraints.prescribed_components();
        let held: Vec<u8> = held[..owned]
            .par_iter()
            .enumerate()
            .map(|(n, &bits)| if in_piece(n) { bits } else { 0 })
            .collect();
        let mut gram = assembly::hold_gram(&coords[..owned], &held, frame);
        self.sum_over_ranks(&mut gram)?;
        Ok(assembly::free_motions(&gram, frame))
    }

    /// The rigid-body motions that the constraints leave free (empty: the body is held). On a
    /// rank's part it is collective: every rank must call it.
    pub fn free_rigid_motions(&self) -> Result<Vec<assembly::FreeMotion>> {
        self.free_motions_of(|_| true)
    }

    /// Collective on a rank's part. The number of pieces of the mesh and those the constraints
    /// do not hold (pieces in ascending order of their smallest node; at most [`NAMED_PIECES`]
    /// listed), or `None` when there are more than [`MAX_PIECES`] pieces.
    fn unheld_pieces(&self) -> Result<Option<(usize, Vec<UnheldPiece>)>> {
        let owned = self.owned_nodes();
        let pieces = &self.pieces;
        let is_root = |n: usize| {
            pieces.in_a_cell[n]
                && match &self.discrete.partition {
                    None => pieces.node_piece[n] == n as u64,
                    Some(part) => {
                        pieces.node_piece[n] == part.layout.global_offset() / 3 + n as u64
                    }
                }
        };
        let mut count = [(0..owned).into_par_iter().filter(|&n| is_root(n)).count() as f64];
        self.sum_over_ranks(&mut count)?;
        let count = count[0] as usize;
        if count > MAX_PIECES {
            return Ok(None);
        }
        let mut unheld = Vec::new();
        let mut previous: Option<u64> = None;
        for _ in 0..count {
            // the next piece: the smallest label above the previous one, over the ranks
            let mut next = [(0..owned)
                .into_par_iter()
                .filter(|&n| {
                    let l = pieces.node_piece[n];
                    pieces.in_a_cell[n] && previous.is_none_or(|p| l > p)
                })
                .map(|n| -(pieces.node_piece[n] as f64))
                .reduce(|| f64::NEG_INFINITY, f64::max)];
            self.max_over_ranks(&mut next)?;
            if next[0] == f64::NEG_INFINITY {
                break;
            }
            let label = (-next[0]) as u64;
            previous = Some(label);
            let free =
                self.free_motions_of(|n| pieces.in_a_cell[n] && pieces.node_piece[n] == label)?;
            if free.is_empty() || unheld.len() == NAMED_PIECES {
                continue;
            }
            unheld.push(self.describe_piece(label, free)?);
        }
        Ok(Some((count, unheld)))
    }

    /// Collective on a rank's part: the cell count and first cell of the piece `label`.
    fn describe_piece(&self, label: u64, free: Vec<assembly::FreeMotion>) -> Result<UnheldPiece> {
        let pieces = &self.pieces;
        let piece_cells: Vec<usize> = (0..self.mesh.n_cells())
            .filter(|&c| {
                self.owns_cell(c) && pieces.node_piece[self.mesh.cell_nodes(c)[0]] == label
            })
            .collect();
        let first = piece_cells
            .iter()
            .min_by_key(|&&c| pieces.cell_serial[c])
            .copied();
        // [cells, -(first serial id)], then the first cell's element tag (if the mesh has tags)
        let mut facts = [piece_cells.len() as f64, 0.0];
        self.sum_over_ranks(&mut facts[..1])?;
        facts[1] = first.map_or(f64::NEG_INFINITY, |c| -(pieces.cell_serial[c] as f64));
        self.max_over_ranks(&mut facts[1..])?;
        let first_serial = (-facts[1]) as u64;
        let mut tag = [first
            .filter(|&c| pieces.cell_serial[c] == first_serial)
            .and_then(|c| self.mesh.cell_tags.as_ref().map(|t| t[c] as f64))
            .unwrap_or(f64::NEG_INFINITY)];
        self.max_over_ranks(&mut tag)?;
        // every rank read the same file: the format is known on each
        let format = self.mesh.cell_tags.as_ref().map_or("", |t| t.format);
        let first_cell = if tag[0].is_finite() {
            format!("{format} element {}", tag[0] as u64)
        } else {
            format!("cell {first_serial}")
        };
        Ok(UnheldPiece {
            cells: facts[0] as u64,
            first_cell,
            free,
        })
    }

    /// Errors, naming the free motions and the constrained sets, where the Dirichlet and twist
    /// conditions do not remove all six rigid-body motions of every piece of the mesh (the
    /// tangent would be singular). On a rank's part it is collective, and the error is the same
    /// on every rank.
    pub fn check_held(&self) -> Result<()> {
        let sets: Vec<String> = self
            .discrete
            .constraints
            .prescribed()
            .iter()
            .map(assembly::Prescribed::summary)
            .collect();
        let sets = if sets.is_empty() {
            "no set".to_string()
        } else {
            sets.join(", ")
        };
        let Some((count, unheld)) = self.unheld_pieces()? else {
            return Err(Error::TooManyPieces { most: MAX_PIECES });
        };
        if count <= 1 {
            let free = unheld.first().map(|p| p.free.clone()).unwrap_or_default();
            if free.is_empty() {
                return Ok(());
            }
            return Err(Error::BodyNotHeld {
                sets,
                free: free.iter().map(ToString::to_string).collect(),
            });
        }
        if unheld.is_empty() {
            return Ok(());
        }
        let described: Vec<String> = unheld
            .iter()
            .map(|p| {
                let motions: Vec<String> = p.free.iter().map(ToString::to_string).collect();
                format!(
                    "the piece of {} cell{} from {} ({} free)",
                    p.cells,
                    if p.cells == 1 { "" } else { "s" },
                    p.first_cell,
                    join_and(&motions)
                )
            })
            .collect();
        Err(Error::PiecesNotHeld {
            count,
            sets,
            unheld: described,
        })
    }

    /// The element loop and constraints of `params` on `mesh`, without loads (the caller sets
    /// them with [`Problem::set_loads`]); its pieces `pieces` where given (a rank's part: the
    /// whole mesh's, [`Pieces::on_part`]), else the mesh's own.
    fn unloaded(params: &ProblemParams, mesh: HexMesh, pieces: Option<Pieces>) -> Result<Self> {
        let materials = cell_materials(params, &mesh)?;
        let points = quadrature_points(params, &mesh)?;
        // the pieces beside the element loop's checks and plans (both in parallel)
        let (pieces, assembler) = rayon::join(
            || pieces.map_or_else(|| Pieces::of_mesh(&mesh), Ok),
            || ElasticityAssembler::new(&mesh, materials, points),
        );
        let assembler = assembler.map_err(Error::ElementLoop)?;
        let pieces = pieces?;
        Ok(Self {
            discrete: DiscreteProblem {
                constraints: build_constraints(params, &mesh, &assembler)?,
                external: linalg::Vector::zeros(3 * mesh.n_nodes()),
                follower: Vec::new(),
                curved: Vec::new(),
                partition: None,
                assembler,
            },
            mesh,
            linear: false,
            own_curves: OwnCurves::default(),
            part_size: None,
            point_loads_found: Vec::new(),
            pieces,
        })
    }

    /// One rank's share of a distributed problem: materials, constraints and loads of `params`
    /// on the rank's mesh part (owned nodes first, then the ghost nodes; owned and ghost cells),
    /// every vector with the rank's layout over `comm`. The owned rows of residual and tangent
    /// are complete (one layer of ghost cells), so they equal the serial rows.
    pub fn on_part(
        params: &ProblemParams,
        part: &mesh::MeshPart,
        comm: std::sync::Arc<dyn comm::Comm>,
    ) -> Result<Self> {
        let mesh = part.mesh.clone();
        // collective first (before anything here can fail): the whole mesh's bounding box
        let (lower, upper) = bounding_box(&mesh.coords);
        let mut extent = [
            upper[0], upper[1], upper[2], -lower[0], -lower[1], -lower[2],
        ];
        comm.allreduce_max(&mut extent)?;
        let pieces = Pieces::on_part(part, comm.clone())?;
        let size = (0..3)
            .map(|d| extent[d] + extent[d + 3])
            .fold(0.0, f64::max);
        let layout = std::sync::Arc::new(linalg::Layout::new(
            3 * part.n_owned_nodes(),
            3 * part.n_ghost_nodes(),
            3 * part.node_offsets[comm.rank()],
            3 * part.n_global_nodes(),
            comm,
        )?);
        // the element loop checks each local cell's geometry: a failing cell is named by its
        // serial number, as the serial run names it
        let mut problem = Self::unloaded(params, mesh, Some(pieces)).map_err(|e| match e {
            Error::ElementLoop(AssemblyError::InvalidElement { cell, error, .. }) => {
                let serial = part.cell_serial_ids[cell];
                Error::ElementLoop(AssemblyError::InvalidElement {
                    cell: serial as usize,
                    name: mesh::part_cell_name(part.mesh.cell_tags.as_ref(), cell, serial),
                    error,
                })
            }
            other => other,
        })?;
        problem.part_size = Some(size);
        problem.set_loads(params)?;
        let relaid = |v: &linalg::Vector| {
            linalg::Vector::from_vec_with_layout(layout.clone(), v.to_host_vec()?)
        };
        let discrete = &mut problem.discrete;
        discrete.external = relaid(&discrete.external)?;
        for c in &mut discrete.curved {
            c.vector = relaid(&c.vector)?;
        }
        discrete.partition = Some(assembly::RankPart {
            layout,
            owned_cells: part.cell_owned.clone(),
            cell_serial_ids: part.cell_serial_ids.clone(),
        });
        Ok(problem)
    }

    /// The size of the whole body: the largest edge of its bounding box (over every rank).
    pub fn size(&self) -> f64 {
        self.part_size.unwrap_or_else(|| {
            let (lower, upper) = bounding_box(&self.mesh.coords);
            (0..3).map(|d| upper[d] - lower[d]).fold(0.0, f64::max)
        })
    }

    /// On a rank's part: whether each point load (`boundary.point_load`, in order) found its node
    /// in this part (collect over the ranks: a load found on no rank has no node).
    pub fn point_loads_found(&self) -> &[bool] {
        &self.point_loads_found
    }

    /// Rebuilds materials, constraints and loads from `params` on this problem's mesh and
    /// element loop, whose geometry checks and COO plans are kept (the element formulations are
    /// `params`'). The caller guarantees that `params.mesh` and `params.quadrature_points` are
    /// those the problem was built with.
    pub fn reconfigure(&mut self, params: &ProblemParams) -> Result<()> {
        let materials = cell_materials(params, &self.mesh)?;
        self.discrete.assembler.set_materials(materials)?;
        self.discrete.constraints =
            build_constraints(params, &self.mesh, &self.discrete.assembler)?;
        self.set_loads(params)?;
        if self.discrete.partition.is_none() {
            self.check_held()?;
        }
        Ok(())
    }

    /// The loads of `params` (dead loads, point forces, follower pressures), the load curves of
    /// loads and constraints, and whether the problem is linear; checks first that some set is
    /// constrained. The constraints must be those of `params`.
    fn set_loads(&mut self, params: &ProblemParams) -> Result<()> {
        if params.dirichlet.is_empty() && params.twist.is_empty() {
            return Err(Error::NoConstraint);
        }
        let points = quadrature_points(params, &self.mesh)?;
        let mut own_curves = OwnCurves::default();
        let constraint_curves = params.dirichlet.iter().map(|d| &d.curve);
        let constraint_curves = constraint_curves.chain(params.twist.iter().map(|t| &t.curve));
        for (i, curve) in constraint_curves.enumerate() {
            if !curve.is_empty() {
                own_curves.constraints.push((i, curve.clone()));
            }
        }
        let mut curved: Vec<CurvedLoad> = Vec::new();
        let body = vector_field(&params.body_force);
        let mut external = match constant(&params.body_force) {
            // no body force, no load: the residual at zero displacement is not evaluated
            // (every material is stress-free there, so it would give zeros)
            Some(f) if f == [0.0; 3] => linalg::Vector::zeros(3 * self.mesh.n_nodes()),
            Some(f) => body_force_load(&mut self.discrete.assembler, Load::Constant(f))?,
            None if uses_time(&params.body_force) => {
                own_curves.timed.push((
                    curved.len(),
                    TimedLoad {
                        value: params.body_force.clone(),
                        faces: None,
                    },
                ));
                curved.push(CurvedLoad {
                    vector: linalg::Vector::zeros(3 * self.mesh.n_nodes()),
                    factor: 1.0,
                    timed: true,
                });
                linalg::Vector::zeros(3 * self.mesh.n_nodes())
            }
            None => body_force_load(&mut self.discrete.assembler, Load::Field(&body))?,
        };
        refuse_non_finite(&external, "body_force")?;
        let mesh = &self.mesh;
        for (index, t) in params.traction.iter().enumerate() {
            let key = format!("boundary.traction[{index}].value");
            let faces = mesh.face_set(&t.set).map_err(|error| Error::SetReference {
                place: format!("traction on set '{}'", t.set),
                error,
            })?;
            let field = vector_field(&t.value);
            let load = match constant(&t.value) {
                Some(v) => Load::Constant(v),
                None => Load::Field(&field),
            };
            if uses_time(&t.value) {
                if !t.curve.is_empty() {
                    return Err(Error::TimeAndCurve {
                        what: "traction",
                        set: t.set.clone(),
                    });
                }
                own_curves.timed.push((
                    curved.len(),
                    TimedLoad {
                        value: t.value.clone(),
                        faces: Some((faces.to_vec(), points)),
                    },
                ));
                curved.push(CurvedLoad {
                    vector: linalg::Vector::zeros(external.len()),
                    factor: 1.0,
                    timed: true,
                });
            } else if t.curve.is_empty() {
                add_traction_load(mesh, faces, load, points, &mut external)?;
                // the sum was finite before this traction
                refuse_non_finite(&external, &key)?;
            } else {
                let mut vector = linalg::Vector::zeros(external.len());
                add_traction_load(mesh, faces, load, points, &mut vector)?;
                refuse_non_finite(&vector, &key)?;
                own_curves.dead.push((curved.len(), t.curve.clone()));
                curved.push(CurvedLoad {
                    vector,
                    factor: 0.0,
                    timed: false,
                });
            }
        }
        let all = std::iter::once(&external).chain(curved.iter().map(|c| &c.vector));
        let mut bad = None;
        for v in all {
            bad = bad.or(v.host()?.iter().position(|v| !v.is_finite()));
        }
        if let Some(i) = bad {
            return Err(Error::LoadExpressionNotFinite { node: i / 3 });
        }
        self.point_loads_found = add_point_forces(
            params,
            mesh,
            self.part_size,
            &mut external,
            &mut curved,
            &mut own_curves,
        )?;
        let mut follower = Vec::new();
        for p in &params.pressure {
            let faces = mesh.face_set(&p.set).map_err(|error| Error::SetReference {
                place: format!("pressure on set '{}'", p.set),
                error,
            })?;
            if !p.curve.is_empty() {
                own_curves.pressure.push((follower.len(), p.curve.clone()));
            }
            follower.push(FollowerPressure::new(mesh, faces, p.value, points)?);
        }
        self.linear = params
            .materials
            .iter()
            .all(|m| matches!(m.material, fem::Material::Linear { .. }))
            && params.pressure.is_empty();
        self.own_curves = own_curves;
        self.discrete.external = external;
        self.discrete.follower = follower;
        self.discrete.curved = curved;
        self.set_time(0.0)
    }

    /// Whether the loads derive from a potential (dead loads do), so that the energy line search
    /// applies.
    pub fn has_potential(&self) -> bool {
        self.discrete.has_potential()
    }

    /// Sets the factors of the loads and constraints that follow curves of their own to their
    /// values at pseudo-time `t` (the others follow the load factor Newton is given), and
    /// evaluates the loads and Dirichlet values given by expressions of `t` at `t`. Errors where
    /// such an expression is not finite somewhere on the mesh at `t`.
    pub fn set_time(&mut self, t: f64) -> Result<()> {
        self.discrete.constraints.set_time(t);
        for (i, timed) in &self.own_curves.timed {
            let v = &timed.value;
            let field = |x: [f64; 3]| [v[0].at_time(x, t), v[1].at_time(x, t), v[2].at_time(x, t)];
            let vector = match &timed.faces {
                None => body_force_load(&mut self.discrete.assembler, Load::Field(&field))?,
                Some((faces, points)) => {
                    let mut vector = linalg::Vector::zeros(self.discrete.n_dofs());
                    add_traction_load(
                        &self.mesh,
                        faces,
                        Load::Field(&field),
                        *points,
                        &mut vector,
                    )?;
                    vector
                }
            };
            if let Some(node) = vector.host()?.iter().position(|v| !v.is_finite()) {
                return Err(Error::LoadNotFiniteAtTime {
                    time: t,
                    node: node / 3,
                });
            }
            self.discrete.curved[*i] = CurvedLoad {
                vector,
                factor: 1.0,
                timed: true,
            };
        }
        for (i, curve) in &self.own_curves.dead {
            self.discrete.curved[*i].factor = curve_factor(curve, t);
        }
        for (i, curve) in &self.own_curves.pressure {
            self.discrete.follower[*i].own_factor = Some(curve_factor(curve, t));
        }
        for (i, curve) in &self.own_curves.constraints {
            self.discrete
                .constraints
                .set_own_factor(*i, Some(curve_factor(curve, t)));
        }
        Ok(())
    }

    /// The largest angle (radians) by which a twisted set turns away from its place at pseudo-time
    /// `t0` on the way to `t1`, following its own load curve or `loading`'s; with the set that
    /// turns so. The same on every rank of a distributed run (every rank has every twist).
    pub fn twist_turn(&self, loading: &LoadingParams, t0: f64, t1: f64) -> Option<(f64, &str)> {
        let prescribed = self.discrete.constraints.prescribed();
        let turns = prescribed.iter().enumerate().filter_map(|(i, p)| {
            let Prescribed::Twist { angle, set, .. } = p else {
                return None;
            };
            let own = self.own_curves.constraints.iter().find(|(j, _)| *j == i);
            let curve = own.map_or(loading.curve.as_slice(), |(_, c)| c.as_slice());
            Some((angle.abs() * curve_swing(curve, t0, t1), set.as_str()))
        });
        turns.fold(None, |most, (turn, set)| match most {
            Some((m, _)) if m >= turn => most,
            _ => Some((turn, set)),
        })
    }

    /// Whether the problem is linear (small-strain linear materials, dead loads): Newton then
    /// solves each linear system to `linear_solver.rtol` (inexact solves would only add
    /// iterations).
    pub fn is_linear(&self) -> bool {
        self.linear
    }

    /// Unknowns (three per node, constrained ones included).
    pub fn n_dofs(&self) -> usize {
        self.discrete.n_dofs()
    }
}

/// Gauss points per direction: the configured number, at least `order + 1`.
fn quadrature_points(params: &ProblemParams, mesh: &HexMesh) -> Result<usize> {
    let points = params.quadrature_points.unwrap_or(mesh.order() + 1);
    if points < mesh.order() + 1 {
        return Err(Error::UnderIntegrated {
            points,
            order: mesh.order(),
        });
    }
    Ok(points)
}

/// The rigid-body modes at `coords` as the AMG's near-null space (six vectors, node-major).
pub fn near_null_space(coords: &[[f64; 3]]) -> Result<amg::NearNullSpace> {
    Ok(amg::NearNullSpace::from_row_major(
        3 * coords.len(),
        RIGID_BODY_MODES_3D,
        rigid_body_modes(coords),
    )?)
}

/// The rigid-body modes at a rank's part's (deformed) node positions `coords`, rotations about
/// the centroid of all ranks' owned nodes: the serial run's modes bit for bit (the coordinates
/// are summed exactly, `assembly::coordinate_sums`). `layout`: the part's vector layout (owned
/// nodes first). Collective.
pub fn distributed_modes(
    layout: &linalg::Layout,
    coords: &[[f64; 3]],
) -> Result<amg::NearNullSpace> {
    let n_owned = layout.owned() / 3;
    let mut sums = assembly::coordinate_sums(&coords[..n_owned]);
    linalg::exact::ExactSum::allreduce(&**layout.comm(), &mut sums)?;
    let n = (layout.global_len() / 3).max(1) as f64;
    let centroid = sums.map(|s| s.value() / n);
    Ok(amg::NearNullSpace::from_row_major(
        3 * coords.len(),
        RIGID_BODY_MODES_3D,
        assembly::rigid_body_modes_about(coords, centroid),
    )?)
}

/// The mesh of a run.
pub fn build_mesh(source: &MeshSource) -> Result<HexMesh> {
    match source {
        MeshSource::Box(spec) => Ok(generate_box(spec)?),
        MeshSource::Gmsh { file, scale } => read_mesh_file(file, *scale),
    }
}

/// The mesh of a file in any format `mesh` reads (Gmsh, Exodus II, Abaqus; recognised from the
/// content) with its node coordinates multiplied by `scale`.
pub fn read_mesh_file(file: &std::path::Path, scale: f64) -> Result<HexMesh> {
    let mut mesh = read_mesh(file).map_err(|error| Error::ReadMesh {
        file: file.to_owned(),
        error,
    })?;
    if scale != 1.0 {
        for x in &mut mesh.coords {
            *x = x.map(|c| c * scale);
        }
    }
    refuse_coincident_nodes(&mesh).map_err(|error| Error::MeshFile {
        file: file.to_owned(),
        error: Box::new(error),
    })?;
    Ok(mesh)
}

/// Errors at `key` where a load vector holds a value that is not finite (an expression outside
/// its domain somewhere on the mesh, or a value that overflows).
fn refuse_non_finite(load: &linalg::Vector, key: &str) -> Result<()> {
    if let Some(i) = load.host()?.iter().position(|v| !v.is_finite()) {
        return Err(Error::LoadNotFinite {
            key: key.to_owned(),
            node: i / 3,
        });
    }
    Ok(())
}

/// Errors, naming the cells and the point, where cells meet at distinct nodes at the same point
/// (not joined there: a crack the user did not ask for).
fn refuse_coincident_nodes(mesh: &HexMesh) -> Result<()> {
    let pairs = mesh::coincident_nodes(mesh);
    let Some(&[a, b]) = pairs.first() else {
        return Ok(());
    };
    let mut cell_of = vec![usize::MAX; mesh.n_nodes()];
    for c in (0..mesh.n_cells()).rev() {
        for &n in mesh.cell_nodes(c) {
            cell_of[n] = c;
        }
    }
    Err(Error::CoincidentNodes {
        first: mesh.describe_cell(cell_of[a]),
        second: mesh.describe_cell(cell_of[b]),
        point: mesh.coords[a],
        more: pairs.len() - 1,
    })
}

/// Material of every cell: entries apply in order, later ones override earlier ones; each entry
/// with its element formulation ([`crate::params::FormulationChoice::resolve`]).
fn cell_materials(params: &ProblemParams, mesh: &HexMesh) -> Result<CellMaterials> {
    let mut table = Vec::with_capacity(params.materials.len());
    let mut of_cell: Vec<Option<u16>> = vec![None; mesh.n_cells()];
    for (index, entry) in params.materials.iter().enumerate() {
        entry
            .material
            .validate()
            .map_err(|error| Error::Material { index, error })?;
        table.push(entry.material);
        let cells = match &entry.cells {
            CellSelection::All => (0..mesh.n_cells()).collect(),
            CellSelection::Set(name) => {
                mesh.cell_set(name).map_err(|error| Error::SetReference {
                    place: format!("materials[{index}].cells"),
                    error,
                })?
            }
        };
        let index = u16::try_from(index).map_err(|_| Error::TooManyMaterials { most: u16::MAX })?;
        for c in cells {
            of_cell[c] = Some(index);
        }
    }
    if let Some(c) = of_cell.iter().position(Option::is_none) {
        return Err(Error::CellWithoutMaterial { cell: c });
    }
    let formulations = params.formulation.resolve(mesh.order(), &params.materials);
    CellMaterials::new(table, of_cell.into_iter().flatten().collect())?
        .with_formulations(formulations)
        .map_err(Error::ElementLoop)
}

fn build_constraints(
    params: &ProblemParams,
    mesh: &HexMesh,
    assembler: &ElasticityAssembler,
) -> Result<Constraints> {
    let mut prescribed = Vec::new();
    for (i, d) in params.dirichlet.iter().enumerate() {
        let nodes = mesh
            .set_nodes(&d.set)
            .map_err(|error| Error::SetReference {
                place: format!("boundary.dirichlet set '{}'", d.set),
                error,
            })?;
        if !d.curve.is_empty() && d.values.iter().flatten().any(Component::uses_time) {
            return Err(Error::TimeAndCurve {
                what: "boundary.dirichlet",
                set: d.set.clone(),
            });
        }
        // an expression of position only is evaluated at every node of its set now, so that
        // `check` refuses one that is not finite there (ln(-1), 1/0, sqrt(x - 0.5)) at its key
        for (c, value) in d.values.iter().enumerate() {
            let Some(Component::Expression(e)) = value else {
                continue;
            };
            if value.as_ref().is_some_and(Component::uses_time) {
                continue;
            }
            for &n in &nodes {
                let x = mesh.coords[n];
                let v = e.eval(x).unwrap_or(f64::NAN);
                if !v.is_finite() {
                    return Err(Error::DirichletNotFinite {
                        index: i,
                        component: ["x", "y", "z"][c],
                        expression: e.text().to_owned(),
                        value: v,
                        node: n,
                        point: x,
                    });
                }
            }
        }
        let numbers = d.values.clone().map(|v| v.map(|c| c.constant()));
        if numbers.iter().all(|n| !matches!(n, Some(None))) {
            prescribed.push(Prescribed::Components {
                set: d.set.clone(),
                nodes,
                values: numbers.map(Option::flatten),
            });
        } else {
            let values = d.values.clone().map(|v| {
                v.map(|c| PositionFn {
                    text: match &c {
                        crate::params::Component::Value(v) => v.to_string(),
                        crate::params::Component::Expression(e) => e.text().to_owned(),
                    },
                    uses_time: c.uses_time(),
                    f: std::sync::Arc::new(move |x: [f64; 3], t: f64| c.at_time(x, t)),
                })
            });
            prescribed.push(Prescribed::Field {
                set: d.set.clone(),
                nodes,
                values,
            });
        }
    }
    for t in &params.twist {
        let nodes = mesh
            .set_nodes(&t.set)
            .map_err(|error| Error::SetReference {
                place: format!("boundary.twist set '{}'", t.set),
                error,
            })?;
        prescribed.push(Prescribed::Twist {
            set: t.set.clone(),
            nodes,
            axis: t.axis,
            center: t.center,
            angle: t.angle,
            axial: t.axial,
        });
    }
    Ok(Constraints::new(
        mesh.n_nodes(),
        prescribed,
        &assembler.orphan_nodes(),
    )?)
}

/// Refuses a Dirichlet value given by an expression of the time `t` that is not finite at a
/// node of its set (on `mesh`, the whole mesh or one rank's part) at one of `times` (the load
/// path's step times, see [`crate::params::LoadingParams::step_times`]), at its key
/// (`boundary.dirichlet[i].x`) with the time and the point: found before a run starts, not
/// when its path reaches that time. Expressions of position only are checked when the
/// constraints are built.
pub fn check_dirichlet_in_time(
    params: &ProblemParams,
    mesh: &HexMesh,
    times: &[f64],
) -> Result<()> {
    for (i, d) in params.dirichlet.iter().enumerate() {
        for (c, value) in d.values.iter().enumerate() {
            let Some(component @ Component::Expression(e)) = value else {
                continue;
            };
            if !component.uses_time() {
                continue;
            }
            // a set the mesh lacks is refused where the constraints are built (a rank's part
            // may hold none of it)
            let Ok(nodes) = mesh.set_nodes(&d.set) else {
                continue;
            };
            for &t in times {
                for &n in &nodes {
                    let x = mesh.coords[n];
                    let v = e.eval_at(x, t).unwrap_or(f64::NAN);
                    if !v.is_finite() {
                        return Err(Error::DirichletNotFiniteInTime {
                            index: i,
                            component: ["x", "y", "z"][c],
                            expression: e.text().to_owned(),
                            value: v,
                            time: t,
                            point: x,
                            step_times: display_times(times),
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

/// `times` for a message: all of a few, or the first and the last of many.
fn display_times(times: &[f64]) -> String {
    let shown: Vec<String> = times.iter().skip(1).map(|t| t.to_string()).collect();
    if shown.len() <= 6 {
        shown.join(", ")
    } else {
        format!(
            "{}, {}, ..., {}",
            shown[0],
            shown[1],
            shown[shown.len() - 1]
        )
    }
}

/// Whether some component of `v` is an expression of the time `t`.
fn uses_time(v: &[Component; 3]) -> bool {
    v.iter().any(Component::uses_time)
}

/// The numbers of `v`, where every component is one.
fn constant(v: &[crate::params::Component; 3]) -> Option<[f64; 3]> {
    Some([v[0].constant()?, v[1].constant()?, v[2].constant()?])
}

/// `v` as a vector field of the reference position.
fn vector_field(v: &[crate::params::Component; 3]) -> impl Fn([f64; 3]) -> [f64; 3] + Sync + '_ {
    move |x| [v[0].at(x), v[1].at(x), v[2].at(x)]
}

/// Adds the nodal and point forces of `params` to `external` (node-major).
/// The vector a dead load with `curve` goes to: `external`, or a new curved load of its own.
fn load_target<'a>(
    curve: &[[f64; 2]],
    external: &'a mut linalg::Vector,
    curved: &'a mut Vec<CurvedLoad>,
    own_curves: &mut OwnCurves,
) -> &'a mut linalg::Vector {
    if curve.is_empty() {
        return external;
    }
    let pushed = curved.len();
    own_curves.dead.push((pushed, curve.to_vec()));
    curved.push(CurvedLoad {
        vector: linalg::Vector::zeros(external.len()),
        factor: 0.0,
        timed: false,
    });
    &mut curved[pushed].vector
}

/// Adds nodal forces and point loads; returns whether each point load's node was found (always,
/// serially: a missing node is an error there; on a rank's part, `part_size` given, the node may
/// be on another rank).
fn add_point_forces(
    params: &ProblemParams,
    mesh: &HexMesh,
    part_size: Option<f64>,
    external: &mut linalg::Vector,
    curved: &mut Vec<CurvedLoad>,
    own_curves: &mut OwnCurves,
) -> Result<Vec<bool>> {
    for (i, n) in params.nodal_forces.iter().enumerate() {
        let nodes = mesh
            .set_nodes(&n.set)
            .map_err(|error| Error::SetReference {
                place: format!("boundary.nodal_force[{i}] set '{}'", n.set),
                error,
            })?;
        let f = load_target(&n.curve, external, curved, own_curves).host_mut()?;
        for node in nodes {
            for d in 0..3 {
                f[3 * node + d] += n.value[d];
            }
        }
    }
    let mut found = Vec::with_capacity(params.point_loads.len());
    if params.point_loads.is_empty() {
        return Ok(found);
    }
    let (lower, upper) = bounding_box(&mesh.coords);
    let size = part_size.unwrap_or_else(|| (0..3).map(|d| upper[d] - lower[d]).fold(0.0, f64::max));
    for (i, p) in params.point_loads.iter().enumerate() {
        let distance = |x: &[f64; 3]| {
            ((x[0] - p.at[0]).powi(2) + (x[1] - p.at[1]).powi(2) + (x[2] - p.at[2]).powi(2)).sqrt()
        };
        let (node, d) = mesh
            .coords
            .iter()
            .enumerate()
            .map(|(n, x)| (n, distance(x)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .ok_or(Error::NoNodes)?;
        found.push(d <= 1e-9 * size);
        if d > 1e-9 * size && part_size.is_some() {
            continue;
        }
        if d > 1e-9 * size {
            return Err(Error::NoNodeAtPoint {
                index: i,
                at: p.at,
                nearest: node,
                nearest_at: mesh.coords[node],
                distance: d,
            });
        }
        let f = load_target(&p.curve, external, curved, own_curves).host_mut()?;
        for d in 0..3 {
            f[3 * node + d] += p.value[d];
        }
    }
    Ok(found)
}

fn bounding_box(coords: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
    let mut lower = [f64::INFINITY; 3];
    let mut upper = [f64::NEG_INFINITY; 3];
    for x in coords {
        for d in 0..3 {
            lower[d] = lower[d].min(x[d]);
            upper[d] = upper[d].max(x[d]);
        }
    }
    (lower, upper)
}
