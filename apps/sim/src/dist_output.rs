//! The output of a run on several ranks, written by rank 0 without the mesh or a whole field.
//!
//! Every dataset (coordinates, connectivity in serial node numbering, material, node, cell and
//! face sets, each step's fields) is filled window by window through [`WindowPlan`]s: each rank
//! sends rank 0 the records of the nodes or cells it owns whose serial ids fall in the window,
//! and rank 0 writes the window's values as pieces of the datasets. These gathers run on each
//! rank's output thread ([`StepOutput::start_gathering`], on a communicator of its own) while
//! the solver threads go on: the mesh's as rank 0's creates the file, a state's after the state
//! before it; the file is the serial run's byte for byte. What the summary and the probes need
//! (set sums, the fields' least, largest and mean values over the probes' sets and the
//! cell-field globals) the solver threads gather from the set nodes and, where a probe reads
//! them, the cells in serial order, and rank 0 adds it up as the serial run does; the strain
//! energy is an exact sum (each rank adds its own cells, one reduction), the largest
//! displacement a maximum over the ranks, set sizes and counts come from reductions. A probe point is
//! evaluated by the rank owning the first cell (in serial order) holding it, and its values
//! sent to rank 0.
//!
//! Calling order (collective, every rank): [`RankOutput::new`], [`RankOutput::create`], then
//! [`RankOutput::write_state`] per state (the first one, then each converged step).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use comm::Comm;
use config::{Config, GlobalProbe, OutputField};
use io::{MeshDataset, MeshShape, Pieces, ResultsWriter, StepField, StepHeader};
use linalg::Vector;
use mesh::MeshPart;
use rayon::prelude::*;

use crate::error::fail;
use crate::fields::StrainCells;
use crate::probes::{self as probe, CellExtreme, FieldStats, PointInCell, SetSum};
use crate::run::{self as serial, CellOutputs, ReactionTotal, StepStamp};
use crate::windows::{GatherStats, WindowPlan};
use crate::writer::{ResultsTarget, StepOutput};
use crate::Result;

/// Bits of set membership per mask word (f64 bit patterns carry 64).
const BITS: usize = 64;

/// Mask words for `n` flags.
/// What fills one record's values of a column: `fill(record, values)`.
type FillFn<'a> = dyn Fn(&[f64], &mut [f64]) + Sync + 'a;

/// A column of `width` values per record of `records` (`w` values each), filled in parallel.
fn column(records: &[f64], w: usize, width: usize, fill: &FillFn<'_>) -> Vec<f64> {
    let mut values = vec![0.0; width * (records.len() / w)];
    values
        .par_chunks_mut(width)
        .zip(records.par_chunks(w))
        .with_min_len(COLUMN_GRAIN)
        .for_each(|(c, r)| fill(r, c));
    values
}

/// Per record of `records` (`w` values each): 1 where `flag(record)`, else 0 (in parallel).
fn flag_column(records: &[f64], w: usize, flag: impl Fn(&[f64]) -> bool + Sync) -> Vec<u64> {
    records
        .par_chunks(w)
        .with_min_len(COLUMN_GRAIN)
        .map(|r| u64::from(flag(r)))
        .collect()
}

/// Records a task of [`column`] fills at least.
const COLUMN_GRAIN: usize = 4096;

/// Whether a mask (bits in the words' `f64` bit patterns) has any bit set.
fn has_any_bit(mask: &[f64]) -> bool {
    mask.iter().any(|m| m.to_bits() != 0)
}

fn words(n: usize) -> usize {
    n.div_ceil(BITS)
}

fn set_bit(mask: &mut [f64], bit: usize) {
    let w = mask[bit / BITS].to_bits() | (1 << (bit % BITS));
    mask[bit / BITS] = f64::from_bits(w);
}

fn has_bit(mask: &[f64], bit: usize) -> bool {
    mask[bit / BITS].to_bits() & (1 << (bit % BITS)) != 0
}

/// The sums over node sets a state's figures need, in the order rank 0 adds nodes.
#[derive(Clone, Debug)]
struct SumSpec {
    /// Bit of the node masks ([`RankOutput::node_member`]).
    set: usize,
    mask: [bool; 3],
    /// `None`: about the set's centroid (known once the coordinates went by).
    about: Option<[f64; 3]>,
}

/// A state's figures on rank 0 (what the serial run takes from the whole fields).
#[derive(Clone, Debug, Default)]
pub struct StateFigures {
    pub strain_energy: f64,
    pub max_displacement: f64,
    /// Total reaction of every node and face set.
    pub reactions: BTreeMap<String, [f64; 3]>,
    /// [`serial::reaction_totals`]'s sets.
    pub reaction_totals: BTreeMap<String, ReactionTotal>,
    /// The probe values in column order.
    pub probes: Vec<f64>,
    /// Where the state's cell fields are computed by the output writer (one process, the first
    /// state): the total strain energy, set once the state is written (`strain_energy` is then
    /// 0 and no probe reads it).
    pub strain_energy_later: Option<std::sync::Arc<std::sync::OnceLock<f64>>>,
}

impl StateFigures {
    /// The total strain energy of the written state (the writer's where it computed it).
    pub fn written_strain_energy(&self) -> f64 {
        self.strain_energy_later
            .as_ref()
            .and_then(|energy| energy.get().copied())
            .unwrap_or(self.strain_energy)
    }
}

/// Adds a state's sums on rank 0, node after node in serial order (as the serial run sums).
struct Accumulator<'a> {
    out: &'a RankOutput,
    strain_energy: f64,
    max_displacement: f64,
    /// Per node name: its reactions.
    reactions: Vec<SetSum>,
    sums: Vec<SetSum>,
    /// Per set probe, per field of it: the field's statistics over the set.
    stats: Vec<Vec<FieldStats>>,
    /// Per global probe: its extreme over the cells (cell-field globals).
    extremes: Vec<CellExtreme>,
    /// The first failure of a probe's evaluation in a window.
    failure: Option<crate::Error>,
}

impl Accumulator<'_> {
    fn node(&mut self, x: [f64; 3], u: [f64; 3], r: [f64; 3], mask: &[f64]) {
        let norm = crate::run::length(&u);
        self.max_displacement = self.max_displacement.max(norm);
        for (s, sum) in self.reactions.iter_mut().enumerate() {
            if has_bit(mask, s) {
                sum.add(x, u, r, [0.0; 3]);
            }
        }
        for (spec, sum) in self.out.sums.iter().zip(&mut self.sums) {
            if has_bit(mask, spec.set) {
                let about = spec.about.unwrap_or(self.out.centroids[spec.set]);
                sum.add(x, u, serial::masked(r, spec.mask), about);
            }
        }
    }

    /// Adds the nodal fields' statistics of a node with averaged stress `t` and mask `mask`.
    fn nodal_stats(&mut self, t: &[f64; 9], mask: &[f64]) {
        let out = self.out;
        for (i, fields) in out.set_fields.iter().enumerate() {
            if !has_bit(mask, out.probe_bits[i]) {
                continue;
            }
            for (j, &f) in fields.iter().enumerate() {
                if probe::is_nodal(f) {
                    match probe::nodal_components(f, t) {
                        Ok(v) => self.stats[i][j].add(&v),
                        Err(e) => self.fail(e),
                    }
                }
            }
        }
    }

    /// Adds the cell fields' statistics and the globals' extremes of a cell `record`.
    fn cell_stats(&mut self, record: &[f64]) {
        let out = self.out;
        let strains = &out.strain_outputs;
        for extreme in &mut self.extremes {
            extreme.add(|f| probe::record_components(f, record, strains));
        }
        if out.probe_cells.is_empty() {
            return;
        }
        let mask = &record[out.figure_record_width..];
        for (i, fields) in out.set_fields.iter().enumerate() {
            if !has_bit(mask, i) {
                continue;
            }
            for (j, &f) in fields.iter().enumerate() {
                if !probe::is_nodal(f) {
                    match probe::record_components(f, record, strains) {
                        Ok(v) => self.stats[i][j].add(&v),
                        Err(e) => self.fail(e),
                    }
                }
            }
        }
    }

    fn fail(&mut self, e: crate::Error) {
        self.failure.get_or_insert(e);
    }

    fn figures(self, config: &Config, points: &[Vec<f64>]) -> Result<StateFigures> {
        if let Some(e) = self.failure {
            return Err(e);
        }
        let out = self.out;
        let (totals, probe_sets) = self.sums.split_at(out.n_reaction_totals);
        let sets: Vec<(SetSum, Vec<f64>)> = probe_sets
            .iter()
            .zip(&self.stats)
            .map(|(sum, stats)| (*sum, stats.iter().flat_map(FieldStats::values).collect()))
            .collect();
        let globals: Vec<f64> = config
            .output
            .probes
            .globals
            .iter()
            .zip(&self.extremes)
            .map(|(g, extreme)| match g {
                GlobalProbe::StrainEnergy => self.strain_energy,
                GlobalProbe::MaxDisplacement => self.max_displacement,
                _ => extreme.value(),
            })
            .collect();
        Ok(StateFigures {
            strain_energy_later: None,
            strain_energy: self.strain_energy,
            max_displacement: self.max_displacement,
            // the constrained sets only (a free set's reaction is zero or meaningless)
            reactions: out
                .node_names
                .iter()
                .cloned()
                .zip(self.reactions.iter().map(|s| s.force))
                .filter(|(name, _)| out.reaction_sets.contains(name))
                .collect(),
            reaction_totals: out
                .reaction_sets
                .iter()
                .cloned()
                .zip(totals.iter().map(|s| ReactionTotal {
                    force: s.force,
                    moment: s.moment,
                }))
                .collect(),
            probes: probe::compose(points, &sets, &globals),
        })
    }
}

/// One rank's side of the output (see the module doc): the plans of the figures' gathers
/// (on the caller's communicator) and of the file's (on the output thread's, [`FileGathers`]).
pub struct RankOutput {
    /// Node and face set names (what `set_nodes` knows), sorted: bit `i` of a node's mask.
    node_names: Vec<String>,
    /// Local membership of each local node in each of `node_names`, then in the nodes of each
    /// cell set a probe names (owned nodes complete): the bits of a node's mask.
    node_member: Arc<Vec<Vec<bool>>>,
    /// A state's records of the nodes of some set (the sums, centroids and set probes read
    /// them): coordinates, displacement, reaction, the averaged stress where a set probe reads
    /// a nodal field, the set mask.
    set_nodes: WindowPlan,
    /// A state's cell records for the figures: every cell field where a global or set probe
    /// reads them, else the strain energy alone; then the probe mask.
    figure_cells: WindowPlan,
    shape: MeshShape,
    /// Whether a set probe reads a nodal stress field (the set nodes' records carry it).
    probes_nodal: bool,
    /// The set sums: reaction totals' sets, then the probes' sets.
    sums: Vec<SumSpec>,
    n_reaction_totals: usize,
    /// Each probe point's cell on this rank, if this rank owns the first cell holding it.
    points: Vec<Option<PointInCell>>,
    /// Each probe point's fields, in input order.
    point_fields: Vec<Vec<OutputField>>,
    /// Each set probe's fields, in input order.
    set_fields: Vec<Vec<OutputField>>,
    /// Per set probe (where any set probe reads a cell field): the local cells its cell fields
    /// run over (owned cells exact), bit `i` of the cell records' probe mask.
    probe_cells: Vec<Vec<bool>>,
    /// Each set probe's bit in the node masks (its nodes: those its sums and nodal fields run
    /// over).
    probe_bits: Vec<usize>,
    /// The strains of the cell records, in record order.
    strain_outputs: Vec<OutputField>,
    /// The values of a figure cell record before its probe mask: every cell field
    /// ([`CellOutputs::record`]) where a global or set probe reads them, else the strain
    /// energy alone (what the summary's figure needs; one value a cell).
    figure_record_width: usize,
    /// Whether the figure cell records carry every cell field (else the strain energy alone).
    probes_read_cells: bool,
    /// Whether a probe reads what the cells' outputs give (a cell field, a statistic of one,
    /// the strain energy): else the first state's cells are left to the output threads.
    probes_read_outputs: bool,
    /// The element loop's kernels over a copy of its mesh, with which the output threads
    /// compute the first state's cells ([`RankOutput::set_strain_cells`]).
    strain_cells: Option<Arc<StrainCells>>,
    /// Rank 0: the sets' centroids, from the set nodes' coordinates.
    centroids: Vec<[f64; 3]>,
    /// Names of the reaction totals' sets (the first `n_reaction_totals` sums).
    reaction_sets: Vec<String>,
    /// The rank owning each probe point.
    point_owners: Vec<usize>,
    /// What the output thread gathers for the file.
    files: Arc<FileGathers>,
    /// The output thread's communicator (the caller's where MPI cannot run two threads' calls
    /// at once: then the jobs run inline).
    output_comm: Arc<dyn Comm>,
    inline: bool,
    /// Rank 0: the most values one window held, over every gather (the figures' and the
    /// file's).
    pub held: Arc<Mutex<GatherStats>>,
}

/// The plans and layouts of the file's gathers, run by each rank's output thread: the mesh
/// when the file is created, then each state's nodal and cell fields.
struct FileGathers {
    node_names: usize,
    node_member: Arc<Vec<Vec<bool>>>,
    /// The file's node sets: index in the node names.
    file_node_sets: Vec<usize>,
    cell_sets: Vec<String>,
    face_sets: Vec<String>,
    mesh_nodes: WindowPlan,
    mesh_cells: WindowPlan,
    /// A state's node records, every owned node: its displacement, then its reaction where
    /// written ([`StepNodes`]), then its averaged stress where a nodal stress field is written.
    step_nodes: WindowPlan,
    /// Where the values lie in a [`Self::step_nodes`] record.
    node_layout: StepNodes,
    /// A state's cell records ([`CellOutputs::record`]) where a cell field is written.
    step_cells: Option<WindowPlan>,
    shape: MeshShape,
    fields: Vec<StepField>,
    /// The step field of each strain in the cell records (after [`CellOutputs::WIDTH`]).
    strain_fields: Vec<StepField>,
}

/// Where a step node record's values lie: the displacement at 0, then the reaction and the
/// averaged stress where written.
#[derive(Clone, Copy, Debug)]
struct StepNodes {
    reaction_at: Option<usize>,
    stress_at: Option<usize>,
    width: usize,
}

impl StepNodes {
    fn new(reaction: bool, stress: bool) -> Self {
        let reaction_at = reaction.then_some(3);
        let stress_at = stress.then_some(if reaction { 6 } else { 3 });
        StepNodes {
            reaction_at,
            stress_at,
            width: 3 + 3 * usize::from(reaction) + 9 * usize::from(stress),
        }
    }
}

impl RankOutput {
    /// Collective: the plans of the output's gathers (at most `window` values a window), the
    /// mesh's shape from reductions, the probe points' owners.
    pub fn new(
        comm: &Arc<dyn Comm>,
        config: &Config,
        part: &MeshPart,
        window: usize,
    ) -> Result<Self> {
        let mesh = &part.mesh;
        // the output thread's communicator (collective)
        let concurrent = comm.concurrent()?;
        let inline = concurrent.is_none();
        let output_comm = concurrent.unwrap_or_else(|| comm.clone());
        let comm: &dyn Comm = &**comm;
        let n_owned = part.n_owned_nodes();
        let mut node_names: Vec<String> = mesh
            .node_sets
            .keys()
            .chain(mesh.face_sets.keys())
            .cloned()
            .collect();
        node_names.sort_unstable();
        node_names.dedup();
        let mut node_member = Vec::with_capacity(node_names.len());
        for name in &node_names {
            let mut member = vec![false; mesh.n_nodes()];
            for n in mesh.set_nodes(name)? {
                member[n] = true;
            }
            node_member.push(member);
        }
        // the cell sets the set probes name: their cells' nodes, bits after the named sets'
        let mut probed_cell_sets: Vec<&str> = Vec::new();
        for (i, s) in config.output.probes.sets.iter().enumerate() {
            let name = mesh.set_name(&s.set);
            if node_names
                .binary_search_by(|n| n.as_str().cmp(name))
                .is_ok()
                || probed_cell_sets.contains(&name)
            {
                continue;
            }
            let nodes = probe::set_or_cell_set_nodes(mesh, name).map_err(|e| {
                config.error_at(&format!("output.probes.sets[{i}].set"), e.to_string())
            })?;
            let mut member = vec![false; mesh.n_nodes()];
            nodes.iter().for_each(|&n| member[n] = true);
            node_member.push(member);
            probed_cell_sets.push(name);
        }
        let file_node_sets = mesh
            .node_sets
            .keys()
            .map(|k| match node_names.binary_search(k) {
                Ok(i) => Ok(i),
                Err(_) => fail!("node set {k:?} missing from the named sets"),
            })
            .collect::<Result<Vec<usize>>>()?;
        let cell_sets: Vec<String> = mesh.cell_sets.keys().cloned().collect();
        let face_sets: Vec<String> = mesh.face_sets.keys().cloned().collect();
        let owned_cell = |c: usize| part.cell_owned[c];

        // set sizes: owned members, summed over the ranks
        let mut sizes: Vec<f64> = file_node_sets
            .iter()
            .map(|&i| node_member[i][..n_owned].iter().filter(|&&m| m).count() as f64)
            .collect();
        sizes.extend(cell_sets.iter().map(|name| {
            mesh.cell_sets[name]
                .iter()
                .filter(|&&c| owned_cell(c))
                .count() as f64
        }));
        sizes.extend(face_sets.iter().map(|name| {
            mesh.face_sets[name]
                .iter()
                .filter(|f| owned_cell(f.cell))
                .count() as f64
        }));
        comm.allreduce_sum(&mut sizes)?;
        // one summed size per set, in the order file node sets, cell sets, face sets
        let mut sizes = sizes.into_iter().map(|s| s as usize);
        let named = |names: &[String], sizes: &mut dyn Iterator<Item = usize>| {
            names.iter().cloned().zip(sizes).collect::<Vec<_>>()
        };
        let file_names: Vec<String> = mesh.node_sets.keys().cloned().collect();
        let shape = MeshShape {
            nodes_per_cell: mesh.nodes_per_cell(),
            n_nodes: part.n_global_nodes() as usize,
            n_cells: part.n_global_cells as usize,
            has_material: true,
            node_sets: named(&file_names, &mut sizes),
            cell_sets: named(&cell_sets, &mut sizes),
            face_sets: named(&face_sets, &mut sizes),
            // `sets`: every node and face set's nodes, and the cell sets, as 0/1 attributes
            node_indicators: config
                .output
                .wants(OutputField::Sets)
                .then(|| node_names.clone()),
        };

        let wants = |f| config.output.wants(f);
        let fields: Vec<StepField> = crate::state_write::FIELDS
            .into_iter()
            .filter(|&(o, _)| wants(o))
            .map(|(_, f)| f)
            .collect();
        let set_fields: Vec<Vec<OutputField>> = config
            .output
            .probes
            .sets
            .iter()
            .map(|s| s.fields.clone())
            .collect();
        let probes_read = |nodal: bool| {
            set_fields
                .iter()
                .flatten()
                .any(|&f| probe::is_nodal(f) == nodal)
        };
        // a nodal stress field written: every node's record carries its averaged stress
        let nodal_written = fields.iter().any(|f| {
            matches!(
                f,
                StepField::NodalCauchyStress
                    | StepField::NodalVonMises
                    | StepField::NodalPrincipalStress
            )
        });
        // the set probes' members, as the serial run finds them on the whole mesh: a rank's
        // part holds every cell of an owned node and the sets restricted to the part
        let mut probe_cells = Vec::new();
        if probes_read(false) {
            for (i, s) in config.output.probes.sets.iter().enumerate() {
                let name = mesh.set_name(&s.set);
                let nodes = probe::set_or_cell_set_nodes(mesh, name).map_err(|e| {
                    config.error_at(&format!("output.probes.sets[{i}].set"), e.to_string())
                })?;
                let mut member = vec![false; mesh.n_cells()];
                for c in probe::set_cells(mesh, name, &nodes) {
                    member[c] = true;
                }
                probe_cells.push(member);
            }
        }
        let strain_outputs = crate::fields::strain_fields(config);
        // the figures' cell records carry the cell fields only where a probe reads them (a
        // cell-field global or set probe; the probe points read their owner's cells
        // directly), else the strain energy alone; the file's carry them where one is written
        let nodal_field = |f: &StepField| {
            matches!(
                f,
                StepField::Displacement
                    | StepField::Reaction
                    | StepField::NodalCauchyStress
                    | StepField::NodalVonMises
                    | StepField::NodalPrincipalStress
            )
        };
        let cell_fields_written =
            fields.iter().any(|f| !nodal_field(f)) || !strain_outputs.is_empty();
        let probes_read_cells = !probe_cells.is_empty()
            || config
                .output
                .probes
                .globals
                .iter()
                .any(|&g| probe::cell_global(g).is_some());
        let figure_record_width = CellOutputs::record_width(config);
        // the step fields of the cell records' strains, in record order
        let strain_fields: Vec<StepField> = crate::fields::strain_fields(config)
            .into_iter()
            .map(step_field_of_strain)
            .collect();

        let mask_words = words(node_member.len());
        let owned_nodes: Vec<(u64, usize)> =
            (0..n_owned).map(|n| (part.node_serial_ids[n], n)).collect();
        let owned_cells: Vec<(u64, usize)> = (0..mesh.n_cells())
            .filter(|&c| owned_cell(c))
            .map(|c| (part.cell_serial_ids[c], c))
            .collect();
        let (n_nodes, n_cells) = (part.n_global_nodes(), part.n_global_cells);
        let plan = |owned: &[(u64, usize)], n, width| {
            WindowPlan::new(comm, owned.to_vec(), n, width, window)
        };
        let mesh_nodes = plan(&owned_nodes, n_nodes, 3 + mask_words)?;
        let mesh_cells = plan(
            &owned_cells,
            n_cells,
            mesh.nodes_per_cell() + 1 + words(cell_sets.len()) + words(6 * face_sets.len()),
        )?;
        // every node's record carries what is written of it; a set's nodes also what the
        // figures read
        let node_layout = StepNodes::new(fields.contains(&StepField::Reaction), nodal_written);
        let step_nodes = plan(&owned_nodes, n_nodes, node_layout.width)?;
        let owned_set_nodes: Vec<(u64, usize)> = owned_nodes
            .iter()
            .copied()
            .filter(|&(_, n)| node_member.iter().any(|m| m[n]))
            .collect();
        let set_nodes = plan(
            &owned_set_nodes,
            n_nodes,
            9 + if probes_read(true) { 9 } else { 0 } + mask_words,
        )?;
        let figure_cells = plan(
            &owned_cells,
            n_cells,
            figure_record_width + words(probe_cells.len()),
        )?;
        let step_cells = if cell_fields_written {
            Some(plan(
                &owned_cells,
                n_cells,
                CellOutputs::record_width(config),
            )?)
        } else {
            None
        };
        let probes_read_outputs = probe::reads_cell_outputs(config, true);

        let set_index = |key: &str, name: &str| -> Result<usize> {
            if let Ok(i) = node_names.binary_search_by(|n| n.as_str().cmp(name)) {
                return Ok(i);
            }
            if let Some(k) = probed_cell_sets.iter().position(|&c| c == name) {
                return Ok(node_names.len() + k);
            }
            let message = match mesh.set_nodes(name) {
                Err(e) => e.to_string(),
                Ok(_) => format!("'{name}' is not a node or face set"),
            };
            Err(config.error_at(key, message).into())
        };
        let components = serial::reaction_components(config);
        let mut sums = Vec::new();
        for (name, mask) in &components {
            sums.push(SumSpec {
                // a set's id (Exodus II) stands for its name, as in a serial run
                set: set_index("boundary", mesh.set_name(name))?,
                mask: *mask,
                about: Some([0.0; 3]),
            });
        }
        for (i, s) in config.output.probes.sets.iter().enumerate() {
            sums.push(SumSpec {
                // a set's id (Exodus II) stands for its name
                set: set_index(
                    &format!("output.probes.sets[{i}].set"),
                    mesh.set_name(&s.set),
                )?,
                mask: [true; 3],
                about: s.about,
            });
        }

        // probe points: the first cell in serial order holding each, on its owner
        let owned_local: Vec<usize> = owned_cells.iter().map(|&(_, c)| c).collect();
        let mut points = Vec::new();
        let mut first = Vec::new();
        for p in &config.output.probes.points {
            let found = PointInCell::locate(mesh, owned_local.iter().copied(), p.at)?;
            first.push(
                found
                    .as_ref()
                    .map_or(u64::MAX, |f| part.cell_serial_ids[f.cell]),
            );
            points.push(found);
        }
        let all = comm.allgatherv_u64(&first)?;
        let mut point_owners = Vec::new();
        for (i, point) in points.iter_mut().enumerate() {
            let (owner, best) = all
                .iter()
                .enumerate()
                .map(|(r, f)| (r, f[i]))
                .min_by_key(|&(_, f)| f)
                .unwrap_or((0, u64::MAX));
            if best == u64::MAX {
                return Err(crate::probes::outside(config, i));
            }
            if owner != comm.rank() {
                *point = None;
            }
            point_owners.push(owner);
        }
        let probe_bits = sums[components.len()..].iter().map(|s| s.set).collect();
        let node_member = Arc::new(node_member);
        let files = Arc::new(FileGathers {
            node_names: node_names.len(),
            node_member: node_member.clone(),
            file_node_sets,
            cell_sets,
            face_sets,
            mesh_nodes,
            mesh_cells,
            step_nodes,
            node_layout,
            step_cells,
            shape: shape.clone(),
            fields,
            strain_fields,
        });
        Ok(RankOutput {
            n_reaction_totals: components.len(),
            reaction_sets: components.keys().cloned().collect(),
            point_owners,
            node_names,
            node_member,
            set_nodes,
            figure_cells,
            shape,
            probes_nodal: probes_read(true),
            sums,
            points,
            point_fields: config
                .output
                .probes
                .points
                .iter()
                .map(|p| p.fields.clone())
                .collect(),
            set_fields,
            probe_cells,
            probe_bits,
            strain_outputs,
            figure_record_width,
            probes_read_cells,
            probes_read_outputs,
            strain_cells: None,
            centroids: Vec::new(),
            files,
            output_comm,
            inline,
            held: Arc::new(Mutex::new(GatherStats::default())),
        })
    }

    /// Whether a probe reads what the cells' outputs give (then the first state's cells are
    /// computed by the run, not by the output threads).
    pub(crate) fn probes_read_outputs(&self) -> bool {
        self.probes_read_outputs
    }

    /// The kernels with which the output threads compute the first state's cells (`None`:
    /// the run computes them).
    pub(crate) fn set_strain_cells(&mut self, cells: Option<Arc<StrainCells>>) {
        self.strain_cells = cells.filter(|_| !self.probes_read_outputs);
    }

    /// Whether the output threads compute the first state's cells (its
    /// [`CellOutputs::fields_later`] may go to [`RankOutput::write_state`]).
    pub(crate) fn computes_first_cells(&self) -> bool {
        self.strain_cells.is_some()
    }

    /// The mesh's figures for the summary and the header (from reductions).
    pub fn mesh_info(&self, constrained_dofs: usize) -> io::MeshInfo {
        io::MeshInfo {
            nodes: self.shape.n_nodes,
            cells: self.shape.n_cells,
            nodes_per_cell: self.shape.nodes_per_cell,
            dofs: 3 * self.shape.n_nodes,
            constrained_dofs,
        }
    }

    /// Collective: starts this rank's output thread ([`StepOutput::start_gathering`]), whose
    /// first job gathers the mesh to rank 0 window by window (the other ranks send their parts)
    /// and rank 0's creates the results files with it, while the run goes on; here, rank 0's
    /// centroids of the sets (the serial run's sums) from the set nodes' coordinates.
    pub(crate) fn create(
        &mut self,
        comm: &dyn Comm,
        config: &Config,
        part: &Arc<MeshPart>,
        dir: &Path,
        name: &str,
        faults: &io::Faults,
    ) -> Result<StepOutput> {
        if config.output.vtu {
            return Err(config
                .error_at(
                    "output.vtu",
                    format!(
                        "true is not available on {} MPI ranks (the .vtu files need the whole mesh on one rank; valid there: false)",
                        comm.size()
                    ),
                )
                .into());
        }
        let material = serial::material_of_cells(config, &part.mesh)?;
        let target = (comm.rank() == 0).then(|| ResultsTarget {
            dir: dir.to_path_buf(),
            name: name.to_owned(),
            faults: faults.clone(),
            single_precision: crate::run::single_precision(config),
        });
        let (files, part_of_job) = (self.files.clone(), part.clone());
        let (output_comm, held) = (self.output_comm.clone(), self.held.clone());
        let output = StepOutput::start_gathering(
            Box::new(move || files.create(&*output_comm, &part_of_job, &material, target, &held)),
            self.inline,
        )?;
        self.centroids = self.set_centroids(comm, part)?;
        Ok(output)
    }

    /// Collective: the centroid of every node set (the coordinates' sum over the count, added
    /// in serial order as the serial run does) on rank 0 (empty on the other ranks).
    fn set_centroids(&self, comm: &dyn Comm, part: &MeshPart) -> Result<Vec<[f64; 3]>> {
        let mesh = &part.mesh;
        let mask_at = self.set_mask_at();
        let mut sums = vec![SetSum::default(); self.node_member.len()];
        let w = self.set_nodes.width();
        let stats = self.set_nodes.gather(
            comm,
            |n, r| {
                r.fill(0.0);
                r[6..9].copy_from_slice(&mesh.coords[n]);
                self.set_mask(n, &mut r[mask_at..]);
            },
            |_, records| {
                for r in records.chunks(w) {
                    for (s, sum) in sums.iter_mut().enumerate() {
                        if has_bit(&r[mask_at..], s) {
                            sum.add([0.0; 3], [r[6], r[7], r[8]], [0.0; 3], [0.0; 3]);
                        }
                    }
                }
            },
        )?;
        note(&self.held, &[stats]);
        if comm.rank() != 0 {
            return Ok(Vec::new());
        }
        Ok(sums
            .iter()
            .map(|s| s.displacement.map(|v| v / s.nodes.max(1) as f64))
            .collect())
    }

    /// Where the node mask lies in a set node's record.
    fn set_mask_at(&self) -> usize {
        9 + if self.probes_nodal { 9 } else { 0 }
    }

    /// The set bits of local node `n` into `mask` (cleared first).
    fn set_mask(&self, n: usize, mask: &mut [f64]) {
        mask.fill(0.0);
        for (i, m) in self.node_member.iter().enumerate() {
            if m[n] {
                set_bit(mask, i);
            }
        }
    }

    /// Collective: the state `u` (with `reactions` and the outputs `cells` of the part's
    /// cells; ghost entries of `u` current): its figures gathered here (rank 0 returns them),
    /// then its fields handed to `output`'s thread, which gathers them to rank 0's file as
    /// step `stamp.index` while the run goes on (written once [`StepOutput::wait`] returns:
    /// the driver waits for the state before this one first, so that the ranks agree on its
    /// outcome).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_state(
        &self,
        comm: &dyn Comm,
        config: &Config,
        part: &Arc<MeshPart>,
        u: &Vector,
        reactions: &Vector,
        cells: CellOutputs,
        stamp: StepStamp,
        output: &mut StepOutput,
    ) -> Result<Option<StateFigures>> {
        let mesh = &part.mesh;
        let n_owned = part.n_owned_nodes();
        let files = &self.files;
        let layout = files.node_layout;
        // this rank's part of the state, prepared before any collective and agreed on (a
        // failure here is every rank's: none waits in a gather): its host values, the values
        // of the probe points it owns, and for its output thread its owned values (every local
        // node's displacement where the thread computes the cells)
        let prepared = (|| -> Result<_> {
            let (u_local, _) = u.host()?.as_chunks::<3>();
            let (r_local, _) = reactions.host()?.as_chunks::<3>();
            // a first state whose cells the output threads compute: its total strain energy
            // comes once they have (rank 0)
            let later = match (cells.fields_later, &self.strain_cells) {
                (false, _) => None,
                (true, Some(kernels)) => Some(LaterCells {
                    kernels: kernels.clone(),
                    energy: (comm.rank() == 0).then(|| Arc::new(OnceLock::new())),
                }),
                (true, None) => {
                    fail!("the first state's cells left to output threads without kernels")
                }
            };
            let owned = |v: &[[f64; 3]]| v.get(..n_owned).map(<[_]>::to_vec);
            let u_kept = if later.is_some() {
                Some(u_local.to_vec())
            } else {
                owned(u_local)
            };
            let u_kept = u_kept.ok_or_else(|| short("displacement", u_local.len(), n_owned))?;
            let reactions_kept = match layout.reaction_at {
                Some(_) => {
                    owned(r_local).ok_or_else(|| short("reactions", r_local.len(), n_owned))?
                }
                None => Vec::new(),
            };
            let points = self.point_values(u_local, &cells)?;
            Ok((u_local, r_local, later, u_kept, reactions_kept, points))
        })();
        let (u_local, r_local, later, u_kept, reactions_kept, points) =
            crate::distributed::agreed(comm, prepared)?;
        let nodal = if self.probes_nodal {
            serial::nodal_average(mesh, &cells.cauchy)
        } else {
            Vec::new()
        };
        let figures = self.figures(comm, config, part, u_local, r_local, &nodal, &cells, points);

        // the fields to the output thread whatever became of the figures (rank 0's): every
        // rank's thread runs every state's gathers
        let cells_kept =
            later.is_some() || files.step_cells.is_some() || layout.stress_at.is_some();
        let energy_later = later.as_ref().and_then(|l| l.energy.clone());
        let state = FileState {
            later,
            header: StepHeader {
                step: stamp.index,
                load_factor: stamp.load_factor,
                next_increment: stamp.next_increment,
                time: stamp.time,
                fields: files.fields.clone(),
            },
            u: u_kept,
            reactions: reactions_kept,
            nodal: (layout.stress_at.is_some() && self.probes_nodal).then_some(nodal),
            cells: cells_kept.then_some(cells),
        };
        let (files, part, held) = (self.files.clone(), part.clone(), self.held.clone());
        let output_comm = self.output_comm.clone();
        output.submit_gathered(Box::new(move |file| {
            files.write_state(&*output_comm, &part, state, file, &held)
        }))?;
        let mut figures = figures?;
        if let Some(figures) = &mut figures {
            figures.strain_energy_later = energy_later;
        }
        Ok(figures)
    }

    /// The values of the probe points this rank owns (displacement, cell fields), at their
    /// offsets in one buffer of every point's values (zeros for the others'), and the offsets.
    fn point_values(
        &self,
        u_local: &[[f64; 3]],
        cells: &CellOutputs,
    ) -> Result<(Vec<f64>, Vec<usize>)> {
        let widths: Vec<usize> = self
            .point_fields
            .iter()
            .map(|fields| {
                fields
                    .iter()
                    .map(|&f| probe::component_names(f).len().max(1))
                    .sum()
            })
            .collect();
        let mut offsets = vec![0];
        for w in &widths {
            offsets.push(offsets[offsets.len() - 1] + w);
        }
        let mut mine = vec![0.0; offsets[widths.len()]];
        for (i, p) in self.points.iter().enumerate() {
            let Some(p) = p else { continue };
            let mut values = Vec::with_capacity(widths[i]);
            for &f in &self.point_fields[i] {
                match f {
                    OutputField::Displacement => values.extend(p.value(u_local)),
                    _ => values.extend(probe::components(f, cells, &[], p.cell)?),
                }
            }
            mine[offsets[i]..offsets[i + 1]].copy_from_slice(&values);
        }
        Ok((mine, offsets))
    }

    /// Collective: the state's figures on rank 0 (`None` on the other ranks), from the probe
    /// points' owners, the largest displacement's maximum and the gathers of the set nodes'
    /// and the cells' records, added in serial order as the serial run adds them.
    #[allow(clippy::too_many_arguments)]
    fn figures(
        &self,
        comm: &dyn Comm,
        config: &Config,
        part: &MeshPart,
        u_local: &[[f64; 3]],
        r_local: &[[f64; 3]],
        nodal: &[[f64; 9]],
        cells: &CellOutputs,
        (mine, offsets): (Vec<f64>, Vec<usize>),
    ) -> Result<Option<StateFigures>> {
        let mesh = &part.mesh;
        // the probe points' values, from their owners
        let lens = vec![mine.len(); comm.size()];
        let points: Option<Vec<Vec<f64>>> =
            crate::windows::gather_to_root(comm, &mine, &lens, mine.len().max(1))?.map(|all| {
                self.point_owners
                    .iter()
                    .enumerate()
                    .map(|(i, &r)| all[r][offsets[i]..offsets[i + 1]].to_vec())
                    .collect()
            });
        // the largest displacement: a maximum, the same bits in any order
        let n_owned = part.n_owned_nodes();
        let mut largest = [u_local[..n_owned.min(u_local.len())]
            .par_iter()
            .map(crate::run::length)
            .reduce(|| 0.0, f64::max)];
        comm.allreduce_max(&mut largest)?;

        let node_mask = self.node_names.len();
        let probes_nodal = self.probes_nodal;
        let n_stress = if probes_nodal { 9 } else { 0 };
        let set_node_record = |n: usize, r: &mut [f64]| {
            r[..3].copy_from_slice(&u_local[n]);
            r[3..6].copy_from_slice(&r_local[n]);
            r[6..9].copy_from_slice(&mesh.coords[n]);
            if probes_nodal {
                r[9..18].copy_from_slice(&nodal[n]);
            }
            self.set_mask(n, &mut r[9 + n_stress..]);
        };
        let base = self.figure_record_width;
        let cell_record = |c: usize, r: &mut [f64]| {
            cells.record(c, &mut r[..base]);
            let probe_mask = &mut r[base..];
            probe_mask.fill(0.0);
            for (i, m) in self.probe_cells.iter().enumerate() {
                if m[c] {
                    set_bit(probe_mask, i);
                }
            }
        };
        // the cells' total, each rank adding its own exactly (no cell values yet where the
        // output threads compute them: no figure reads it then)
        let strain_energy = if cells.fields_later {
            0.0
        } else {
            serial::owned_strain_energy(comm, &cells.strain_energy, &part.cell_owned)?
        };
        let mut acc = Accumulator {
            out: self,
            strain_energy,
            max_displacement: largest[0],
            reactions: vec![SetSum::default(); node_mask],
            sums: vec![SetSum::default(); self.sums.len()],
            stats: self
                .set_fields
                .iter()
                .map(|fields| fields.iter().map(|&f| FieldStats::new(f)).collect())
                .collect(),
            extremes: config
                .output
                .probes
                .globals
                .iter()
                .map(|&g| CellExtreme::new(g))
                .collect(),
            failure: None,
        };
        // the sets' figures in serial order, from the set nodes' records
        let w = self.set_nodes.width();
        let sets = self.set_nodes.gather(comm, set_node_record, |_, records| {
            let mask_at = 9 + n_stress;
            for r in records.chunks(w) {
                let (x, uu, rr) = ([r[6], r[7], r[8]], [r[0], r[1], r[2]], [r[3], r[4], r[5]]);
                acc.node(x, uu, rr, &r[mask_at..]);
                if probes_nodal {
                    let t: [f64; 9] = std::array::from_fn(|k| r[9 + k]);
                    acc.nodal_stats(&t, &r[mask_at..]);
                }
            }
        })?;
        let w = self.figure_cells.width();
        // the cells' records where a probe reads them (no cell values yet where the output
        // threads compute them: no probe reads them then)
        let cell_stats = if cells.fields_later || !self.probes_read_cells {
            GatherStats::default()
        } else {
            self.figure_cells.gather(comm, cell_record, |_, records| {
                // the figures in serial order
                for r in records.chunks(w) {
                    acc.cell_stats(r);
                }
            })?
        };
        let figures = match points {
            Some(points) => Some(acc.figures(config, &points)?),
            None => None,
        };
        note(&self.held, &[sets, cell_stats]);
        Ok(figures)
    }
}

/// The error of a state vector shorter than the rank's owned nodes.
fn short(what: &str, found: usize, owned: usize) -> crate::Error {
    crate::Error::failure(format!(
        "the state's {what}: {found} nodes, {owned} owned expected"
    ))
}

/// Adds `stats` to what rank 0 held at most.
fn note(held: &Mutex<GatherStats>, stats: &[GatherStats]) {
    let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
    for s in stats {
        held.windows += s.windows;
        held.max_window_values = held.max_window_values.max(s.max_window_values);
        held.max_message_values = held.max_message_values.max(s.max_message_values);
    }
}

/// What a rank's output thread gathers of one state ([`FileGathers::write_state`]): its owned
/// nodes' values and its cells' outputs.
struct FileState {
    header: StepHeader,
    /// Where the thread computes the cells' outputs (a first state).
    later: Option<LaterCells>,
    /// The owned nodes' displacements (every local node's where `later`).
    u: Vec<[f64; 3]>,
    /// The owned nodes' reactions, where written (else empty).
    reactions: Vec<[f64; 3]>,
    /// The local nodes' averaged stresses where a nodal stress field is written and the
    /// figures made them; else made from `cells` where written.
    nodal: Option<Vec<[f64; 9]>>,
    /// The local cells' outputs, where a cell or nodal stress field is written.
    cells: Option<CellOutputs>,
}

/// The first state's cells, computed by the output threads: the kernels, and rank 0's slot
/// for the total strain energy (the state's figures take it once written).
struct LaterCells {
    kernels: Arc<StrainCells>,
    energy: Option<Arc<OnceLock<f64>>>,
}

impl FileGathers {
    /// Collective over the output thread's `comm`: the cells' outputs of a first state left
    /// to the output threads, computed with `later`'s kernels from every local node's
    /// displacement (agreed on: a failure is every rank's, before any gather of the file);
    /// their total strain energy (each rank adding its own cells exactly) into `later`'s slot.
    fn later_cells(
        &self,
        comm: &dyn Comm,
        part: &MeshPart,
        later: LaterCells,
        state: &FileState,
    ) -> Result<CellOutputs> {
        let computed = (|| -> Result<CellOutputs> {
            let mut cells = state.cells.clone().unwrap_or_default();
            cells.add_later_fields(&later.kernels, &state.u)?;
            for field in std::mem::take(&mut cells.later) {
                let values = later.kernels.strains(&state.u, field)?;
                cells.strains.push((field, values));
            }
            Ok(cells)
        })();
        let cells = crate::distributed::agreed(comm, computed)?;
        let total = serial::owned_strain_energy(comm, &cells.strain_energy, &part.cell_owned)?;
        if let Some(energy) = later.energy {
            let _ = energy.set(total);
        }
        Ok(cells)
    }

    /// Collective over the output thread's `comm`: the mesh gathered to rank 0, where `target`
    /// is given (rank 0) into a new results file, which is returned. Rank 0 takes part in the
    /// gathers whatever becomes of the file.
    fn create(
        &self,
        comm: &dyn Comm,
        part: &MeshPart,
        material: &[usize],
        target: Option<ResultsTarget>,
        held: &Mutex<GatherStats>,
    ) -> Result<Option<ResultsWriter>> {
        let mesh = &part.mesh;
        let connectivity = serial::vtk_connectivity(mesh);
        let npc = mesh.nodes_per_cell();
        let cell_member: Vec<Vec<bool>> = self
            .cell_sets
            .iter()
            .map(|n| {
                let mut m = vec![false; mesh.n_cells()];
                mesh.cell_sets[n].iter().for_each(|&c| m[c] = true);
                m
            })
            .collect();
        let mut face_bits: Vec<Vec<u8>> = vec![vec![0; mesh.n_cells()]; self.face_sets.len()];
        for (i, n) in self.face_sets.iter().enumerate() {
            for f in &mesh.face_sets[n] {
                face_bits[i][f.cell] |= 1 << (f.face as usize);
            }
        }
        let cell_words = words(self.cell_sets.len());
        let node_names = self.node_names;
        let node_record = |n: usize, r: &mut [f64]| {
            r[..3].copy_from_slice(&mesh.coords[n]);
            r[3..].fill(0.0);
            for (i, m) in self.node_member.iter().enumerate() {
                if m[n] {
                    set_bit(&mut r[3..], i);
                }
            }
        };
        let cell_record = |c: usize, r: &mut [f64]| {
            for (x, &l) in r.iter_mut().zip(&connectivity[c * npc..(c + 1) * npc]) {
                *x = part.node_serial_ids[l] as f64;
            }
            r[npc] = material[c] as f64;
            r[npc + 1..].fill(0.0);
            let (cells, faces) = r[npc + 1..].split_at_mut(cell_words);
            for (i, m) in cell_member.iter().enumerate() {
                if m[c] {
                    set_bit(cells, i);
                }
            }
            for (i, bits) in face_bits.iter().enumerate() {
                for face in 0..6 {
                    if bits[c] & (1 << face) != 0 {
                        set_bit(faces, 6 * i + face);
                    }
                }
            }
        };
        let shape = &self.shape;
        let (file_node_sets, n_cell_sets, n_face_sets) = (
            &self.file_node_sets,
            self.cell_sets.len(),
            self.face_sets.len(),
        );
        let (mesh_nodes, mesh_cells) = (&self.mesh_nodes, &self.mesh_cells);
        let gather = |mut pieces: Option<&mut Pieces>| -> Result<()> {
            let at = MeshDatasets::of(shape, node_names, n_cell_sets, n_face_sets)?;
            let mut next_member = vec![0usize; file_node_sets.len()];
            let w = mesh_nodes.width();
            let nodes = mesh_nodes.gather(comm, node_record, |ids, records| {
                let Some(p) = pieces.as_deref_mut() else {
                    return;
                };
                // the sets' members in serial order: nodes of some set
                let mut members = vec![Vec::new(); file_node_sets.len()];
                for (&id, r) in ids.iter().zip(records.chunks(w)) {
                    let mask = &r[3..];
                    if !has_any_bit(mask) {
                        continue;
                    }
                    for (j, &s) in file_node_sets.iter().enumerate() {
                        if has_bit(mask, s) {
                            members[j].push(id);
                        }
                    }
                }
                let coords = column(records, w, 3, &|r, c| c.copy_from_slice(&r[..3]));
                p.put_f64(at.coordinates, 3 * ids[0] as usize, &coords);
                if shape.node_indicators.is_some() {
                    for s in 0..node_names {
                        let flags = flag_column(records, w, |r| has_bit(&r[3..], s));
                        p.put_indices(at.node_indicators[s], ids[0] as usize, &flags);
                    }
                }
                for (j, m) in members.into_iter().enumerate() {
                    p.put_indices(at.node_sets[j], next_member[j], &m);
                    next_member[j] += m.len();
                }
            })?;
            let mut next_cell = vec![0usize; n_cell_sets];
            let mut next_face = vec![0usize; n_face_sets];
            let w = mesh_cells.width();
            let cells = mesh_cells.gather(comm, cell_record, |ids, records| {
                let Some(p) = pieces.as_deref_mut() else {
                    return;
                };
                // the sets' members in serial order: cells of some set
                let mut cells = vec![Vec::new(); n_cell_sets];
                let mut faces = vec![Vec::new(); n_face_sets];
                for (&id, r) in ids.iter().zip(records.chunks(w)) {
                    if !has_any_bit(&r[npc + 1..]) {
                        continue;
                    }
                    let (cm, fm) = r[npc + 1..].split_at(cell_words);
                    for (s, c) in cells.iter_mut().enumerate() {
                        if has_bit(cm, s) {
                            c.push(id);
                        }
                    }
                    for (s, f) in faces.iter_mut().enumerate() {
                        for face in 0..6 {
                            if has_bit(fm, 6 * s + face) {
                                f.extend([id, face as u64]);
                            }
                        }
                    }
                }
                let first = ids[0] as usize;
                let mut conn = vec![0u64; npc * ids.len()];
                conn.par_chunks_mut(npc)
                    .zip(records.par_chunks(w))
                    .with_min_len(COLUMN_GRAIN)
                    .for_each(|(c, r)| {
                        for (c, &x) in c.iter_mut().zip(&r[..npc]) {
                            *c = x as u64;
                        }
                    });
                p.put_indices(at.connectivity, npc * first, &conn);
                let mat: Vec<u64> = records.chunks(w).map(|r| r[npc] as u64).collect();
                p.put_indices(at.material, first, &mat);
                if shape.node_indicators.is_some() {
                    for j in 0..n_cell_sets {
                        let flags =
                            flag_column(records, w, |r| has_bit(&r[npc + 1..][..cell_words], j));
                        p.put_indices(at.cell_indicators[j], first, &flags);
                    }
                }
                for (j, c) in cells.into_iter().enumerate() {
                    p.put_indices(at.cell_sets[j], next_cell[j], &c);
                    next_cell[j] += c.len();
                }
                for (j, f) in faces.into_iter().enumerate() {
                    p.put_indices(at.face_sets[j], next_face[j], &f);
                    next_face[j] += f.len();
                }
            })?;
            note(held, &[nodes, cells]);
            Ok(())
        };
        let Some(target) = target else {
            gather(None)?;
            return Ok(None);
        };
        let mut gather = Some(gather);
        let created = ResultsWriter::create_in_pieces(
            &target.dir,
            &target.name,
            shape,
            &target.faults,
            |p| gather.take().map_or(Ok(()), |g| g(Some(p))),
        );
        // a file refused before its mesh: rank 0 still takes part in the gathers
        let gathered = gather.take().map_or(Ok(()), |g| g(None));
        let mut results = created?;
        gathered?;
        results.set_single_precision_fields(target.single_precision);
        Ok(Some(results))
    }

    /// Collective over the output thread's `comm`: the fields of `state` gathered to rank 0,
    /// which writes them into `file` as a step (where it has the file). Rank 0 takes part in the
    /// gathers whatever becomes of the step.
    fn write_state(
        &self,
        comm: &dyn Comm,
        part: &MeshPart,
        mut state: FileState,
        file: Option<&mut ResultsWriter>,
        held: &Mutex<GatherStats>,
    ) -> Result<()> {
        if let Some(later) = state.later.take() {
            state.cells = Some(self.later_cells(comm, part, later, &state)?);
        }
        let layout = self.node_layout;
        let nodal = match (&state.nodal, layout.stress_at, &state.cells) {
            (Some(_), _, _) | (None, None, _) => Ok(None),
            (None, Some(_), Some(cells)) => {
                Ok(Some(serial::nodal_average(&part.mesh, &cells.cauchy)))
            }
            (None, Some(_), None) => Err(crate::Error::failure(
                "a nodal stress field without the cells' outputs".into(),
            )),
        };
        // agreed where a nodal stress field is written (the file's layout, the same on every
        // rank): a rank that cannot take part fails every rank's gathers, none waits
        let nodal = match layout.stress_at {
            Some(_) => crate::distributed::agreed(comm, nodal)?,
            None => nodal?,
        };
        let nodal: &[[f64; 9]] = state.nodal.as_deref().or(nodal.as_deref()).unwrap_or(&[]);
        let (u, reactions) = (&state.u, &state.reactions);
        let node_record = |n: usize, r: &mut [f64]| {
            r[..3].copy_from_slice(&u[n]);
            if let Some(at) = layout.reaction_at {
                r[at..at + 3].copy_from_slice(&reactions[n]);
            }
            if let Some(at) = layout.stress_at {
                r[at..at + 9].copy_from_slice(&nodal[n]);
            }
        };
        let index = |f: StepField| self.fields.iter().position(|&g| g == f);
        let gather = |mut pieces: Option<&mut Pieces>| -> Result<()> {
            let w = self.step_nodes.width();
            let nodes = self.step_nodes.gather(comm, node_record, |ids, records| {
                let Some(p) = pieces.as_deref_mut() else {
                    return;
                };
                let first = ids[0] as usize;
                let stress_at = layout.stress_at.unwrap_or(0);
                let stress = |r: &[f64]| -> [f64; 9] { std::array::from_fn(|k| r[stress_at + k]) };
                let mut put = |f: StepField, width: usize, fill: &FillFn<'_>| {
                    if let Some(d) = index(f) {
                        p.put_f64(d, width * first, &column(records, w, width, fill));
                    }
                };
                put(StepField::Displacement, 3, &|r, c| {
                    c.copy_from_slice(&r[..3])
                });
                if let Some(at) = layout.reaction_at {
                    put(StepField::Reaction, 3, &|r, c| {
                        c.copy_from_slice(&r[at..at + 3])
                    });
                }
                if layout.stress_at.is_some() {
                    put(StepField::NodalCauchyStress, 9, &|r, c| {
                        c.copy_from_slice(&stress(r))
                    });
                    put(StepField::NodalVonMises, 1, &|r, c| {
                        c[0] = serial::von_mises_of(&stress(r))
                    });
                    put(StepField::NodalPrincipalStress, 3, &|r, c| {
                        c.copy_from_slice(&fem::principal_values_of(&stress(r)))
                    });
                }
            })?;
            note(held, &[nodes]);
            let (Some(plan), Some(cells)) = (&self.step_cells, &state.cells) else {
                return Ok(());
            };
            let w = plan.width();
            let cell_record = |c: usize, r: &mut [f64]| cells.record(c, r);
            let gathered = plan.gather(comm, cell_record, |ids, records| {
                let Some(p) = pieces.as_deref_mut() else {
                    return;
                };
                let first = ids[0] as usize;
                let mut put = |f: StepField, width: usize, fill: &FillFn<'_>| {
                    if let Some(d) = index(f) {
                        p.put_f64(d, width * first, &column(records, w, width, fill));
                    }
                };
                put(StepField::CauchyStress, 9, &|r, c| {
                    c.copy_from_slice(&r[..9])
                });
                put(StepField::VonMises, 1, &|r, c| c[0] = r[9]);
                put(StepField::Jacobian, 1, &|r, c| c[0] = r[10]);
                put(StepField::EnergyDensity, 1, &|r, c| c[0] = r[11]);
                put(StepField::PrincipalStress, 3, &|r, c| {
                    let t: [f64; 9] = std::array::from_fn(|k| r[k]);
                    c.copy_from_slice(&fem::principal_values_of(&t))
                });
                for (k, &f) in self.strain_fields.iter().enumerate() {
                    let at = CellOutputs::WIDTH + 9 * k;
                    put(f, 9, &|r, c| c.copy_from_slice(&r[at..at + 9]));
                }
            })?;
            note(held, &[gathered]);
            Ok(())
        };
        let Some(file) = file else {
            return gather(None);
        };
        let mut gather = Some(gather);
        let written = file.write_step_in_pieces(&state.header, |p| {
            gather.take().map_or(Ok(()), |g| g(Some(p)))
        });
        // a step refused (after an earlier error): rank 0 still takes part in the gathers
        let gathered = gather.take().map_or(Ok(()), |g| g(None));
        written.and(gathered)
    }
}

/// The step field of a strain output field.
fn step_field_of_strain(field: OutputField) -> StepField {
    match field {
        OutputField::GreenLagrangeStrain => StepField::GreenLagrangeStrain,
        OutputField::LogarithmicStrain => StepField::LogarithmicStrain,
        _ => StepField::Strain,
    }
}

/// The index of every `/mesh` dataset the gather writes, resolved once against the file's
/// shape (an error, not a panic, where the shape and the gathered sets disagree).
struct MeshDatasets {
    coordinates: usize,
    connectivity: usize,
    material: usize,
    node_sets: Vec<usize>,
    cell_sets: Vec<usize>,
    face_sets: Vec<usize>,
    /// Empty unless the shape writes the `sets` indicators.
    node_indicators: Vec<usize>,
    /// Empty unless the shape writes the `sets` indicators.
    cell_indicators: Vec<usize>,
}

impl MeshDatasets {
    /// The datasets of `shape` for its node sets, `n_named_nodes` node indicators (where it
    /// writes indicators), `n_cell_sets` cell and `n_face_sets` face sets.
    fn of(
        shape: &MeshShape,
        n_named_nodes: usize,
        n_cell_sets: usize,
        n_face_sets: usize,
    ) -> Result<Self> {
        let one = |d: MeshDataset| match shape.dataset(d) {
            Some(i) => Ok(i),
            None => fail!("the results file's mesh has no dataset {d:?}"),
        };
        let each = |n: usize, d: fn(usize) -> MeshDataset| {
            (0..n).map(|i| one(d(i))).collect::<Result<Vec<_>>>()
        };
        let indicators = shape.node_indicators.is_some();
        Ok(Self {
            coordinates: one(MeshDataset::Coordinates)?,
            connectivity: one(MeshDataset::Connectivity)?,
            material: one(MeshDataset::Material)?,
            node_sets: each(shape.node_sets.len(), MeshDataset::NodeSet)?,
            cell_sets: each(n_cell_sets, MeshDataset::CellSet)?,
            face_sets: each(n_face_sets, MeshDataset::FaceSet)?,
            node_indicators: each(
                if indicators { n_named_nodes } else { 0 },
                MeshDataset::NodeIndicator,
            )?,
            cell_indicators: each(
                if indicators { n_cell_sets } else { 0 },
                MeshDataset::CellIndicator,
            )?,
        })
    }
}
