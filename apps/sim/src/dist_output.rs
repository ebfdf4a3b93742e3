//! The output of a run on several ranks, written by rank 0 without the mesh or a whole field.
//!
//! Every dataset (coordinates, connectivity in serial node numbering, material, node, cell and
//! face sets, each step's fields) is filled window by window through [`WindowPlan`]s: each rank
//! sends rank 0 the records of the nodes or cells it owns whose serial ids fall in the window,
//! and rank 0 hands the window's values as pieces of the datasets to its output writer, which
//! writes them while the ranks go on: the mesh's as it creates the file
//! ([`crate::writer::StepOutput::create_in_pieces`]), a step's after the step before it
//! ([`crate::writer::StepOutput::submit_in_pieces`]). The file is
//! the serial run's byte for byte. What the summary and the probes need (set
//! sums, the strain energy, the largest displacement, the fields' least, largest and mean values
//! over the probes' sets and the cell-field globals) rank 0 adds up from the same windows, in
//! serial order, as the serial run does; set sizes and counts come from reductions. A probe
//! point is evaluated by the rank owning the first cell (in serial order) holding it, and its
//! values sent to rank 0.
//!
//! Calling order (collective, every rank): [`RankOutput::new`], [`RankOutput::create`], then
//! [`RankOutput::write_state`] per state (the first one, then each converged step).

use std::collections::BTreeMap;
use std::path::Path;

use comm::Comm;
use config::{Config, GlobalProbe, OutputField};
use io::{MeshDataset, MeshShape, StepField, StepHeader};
use linalg::Vector;
use mesh::MeshPart;
use rayon::prelude::*;

use crate::error::fail;
use crate::probes::{self as probe, CellExtreme, FieldStats, PointInCell, SetSum};
use crate::run::{self as serial, CellOutputs, ReactionTotal, StepStamp};
use crate::windows::{GatherStats, WindowPlan};
use crate::writer::{PieceQueue, ResultsTarget, StepOutput};
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
        let mask = &record[out.cell_record_width..];
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

/// One rank's side of the output (see the module doc).
pub struct RankOutput {
    /// Node and face set names (what `set_nodes` knows), sorted: bit `i` of a node's mask.
    node_names: Vec<String>,
    /// Local membership of each local node in each of `node_names`, then in the nodes of each
    /// cell set a probe names (owned nodes complete): the bits of a node's mask.
    node_member: Vec<Vec<bool>>,
    /// The file's node sets: index in `node_names`.
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
    /// A state's records of the nodes of some set (the sums, centroids and set probes read
    /// them): coordinates, displacement, reaction, the averaged stress where a set probe reads
    /// a nodal field, the set mask.
    set_nodes: WindowPlan,
    step_cells: WindowPlan,
    shape: MeshShape,
    fields: Vec<StepField>,
    nodal_stress: bool,
    /// The step field of each strain in the cell records (after [`CellOutputs::WIDTH`]).
    strain_fields: Vec<StepField>,
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
    /// The values of a cell record before its probe mask: every cell field
    /// ([`CellOutputs::record`]) where a written field, a global or a set probe reads them, else
    /// the strain energy alone (what the summary's figure needs; one value a cell).
    cell_record_width: usize,
    /// Whether the cell records carry every cell field (else the strain energy alone).
    cell_fields_read: bool,
    /// Rank 0: the sets' centroids, from the coordinates' windows.
    centroids: Vec<[f64; 3]>,
    /// Names of the reaction totals' sets (the first `n_reaction_totals` sums).
    reaction_sets: Vec<String>,
    /// The rank owning each probe point.
    point_owners: Vec<usize>,
    /// Values per window of the gathers (a piece of a step's dataset holds at most as many).
    window: usize,
    /// Rank 0: the most values one window held, over every gather.
    pub held: GatherStats,
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
    pub fn new(comm: &dyn Comm, config: &Config, part: &MeshPart, window: usize) -> Result<Self> {
        let mesh = &part.mesh;
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
        let nodal_stress = probes_read(true) || nodal_written;
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
        // the cell records carry the cell fields only where something reads them: a written
        // cell field, a cell-field global or set probe (the probe points read their owner's
        // cells directly); else each state gathers the strain energy alone
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
        let cell_fields_read = fields.iter().any(|f| !nodal_field(f))
            || !strain_outputs.is_empty()
            || !probe_cells.is_empty()
            || config
                .output
                .probes
                .globals
                .iter()
                .any(|&g| probe::cell_global(g).is_some());
        let cell_record_width = if cell_fields_read {
            CellOutputs::record_width(config)
        } else {
            1
        };
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
        // figures read (a node of no set only raises the largest displacement)
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
        let step_cells = plan(
            &owned_cells,
            n_cells,
            cell_record_width + words(probe_cells.len()),
        )?;

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
        Ok(RankOutput {
            n_reaction_totals: components.len(),
            reaction_sets: components.keys().cloned().collect(),
            point_owners,
            node_names,
            node_member,
            file_node_sets,
            cell_sets,
            face_sets,
            mesh_nodes,
            mesh_cells,
            step_nodes,
            node_layout,
            set_nodes,
            step_cells,
            shape,
            fields,
            nodal_stress,
            strain_fields,
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
            cell_record_width,
            cell_fields_read,
            centroids: Vec::new(),
            window,
            held: GatherStats::default(),
        })
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

    /// Collective: the mesh, gathered to rank 0 window by window (the other ranks send their
    /// parts), goes to rank 0's output writer, which creates the results files with it on its
    /// thread while the run goes on ([`StepOutput::create_in_pieces`]; [`StepOutput::Elsewhere`]
    /// on the other ranks).
    pub(crate) fn create(
        &mut self,
        comm: &dyn Comm,
        config: &Config,
        part: &MeshPart,
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
        let mesh = &part.mesh;
        let material = serial::material_of_cells(config, mesh)?;
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
        let node_names = self.node_names.len();
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
        // rank 0: the centroids of every node set, as the serial run sums them
        let mut centroid_sums = vec![SetSum::default(); self.node_member.len()];
        let mut stats = Vec::new();
        let shape = &self.shape;
        let (file_node_sets, n_cell_sets, n_face_sets) = (
            &self.file_node_sets,
            self.cell_sets.len(),
            self.face_sets.len(),
        );
        let (mesh_nodes, mesh_cells) = (&self.mesh_nodes, &self.mesh_cells);
        let mut gather = |pieces: Option<&PieceQueue>| -> Result<()> {
            let at = MeshDatasets::of(shape, node_names, n_cell_sets, n_face_sets)?;
            let mut next_member = vec![0usize; shape.node_sets.len()];
            let w = mesh_nodes.width();
            stats.push(mesh_nodes.gather(comm, node_record, |ids, records| {
                let mut members = vec![Vec::new(); file_node_sets.len()];
                // the sets' sums and members in serial order: nodes of some set
                for (&id, r) in ids.iter().zip(records.chunks(w)) {
                    let mask = &r[3..];
                    if !has_any_bit(mask) {
                        continue;
                    }
                    for (s, sum) in centroid_sums.iter_mut().enumerate() {
                        if has_bit(mask, s) {
                            sum.add([0.0; 3], [r[0], r[1], r[2]], [0.0; 3], [0.0; 3]);
                        }
                    }
                    for (j, &s) in file_node_sets.iter().enumerate() {
                        if has_bit(mask, s) {
                            members[j].push(id);
                        }
                    }
                }
                if let Some(p) = pieces {
                    let coords = column(records, w, 3, &|r, c| c.copy_from_slice(&r[..3]));
                    p.put(at.coordinates, 3 * ids[0] as usize, coords);
                    if shape.node_indicators.is_some() {
                        for s in 0..node_names {
                            let flags = flag_column(records, w, |r| has_bit(&r[3..], s));
                            p.put_indices(at.node_indicators[s], ids[0] as usize, flags);
                        }
                    }
                    for (j, m) in members.into_iter().enumerate() {
                        let n = m.len();
                        p.put_indices(at.node_sets[j], next_member[j], m);
                        next_member[j] += n;
                    }
                }
            })?);
            let mut next_cell = vec![0usize; n_cell_sets];
            let mut next_face = vec![0usize; n_face_sets];
            let w = mesh_cells.width();
            stats.push(mesh_cells.gather(comm, cell_record, |ids, records| {
                let mut cells = vec![Vec::new(); n_cell_sets];
                let mut faces = vec![Vec::new(); n_face_sets];
                // the sets' members in serial order: cells of some set
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
                if let Some(p) = pieces {
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
                    p.put_indices(at.connectivity, npc * first, conn);
                    let mat: Vec<u64> = records.chunks(w).map(|r| r[npc] as u64).collect();
                    p.put_indices(at.material, first, mat);
                    if shape.node_indicators.is_some() {
                        for j in 0..n_cell_sets {
                            let flags = flag_column(records, w, |r| {
                                has_bit(&r[npc + 1..][..cell_words], j)
                            });
                            p.put_indices(at.cell_indicators[j], first, flags);
                        }
                    }
                    for (j, c) in cells.into_iter().enumerate() {
                        let n = c.len();
                        p.put_indices(at.cell_sets[j], next_cell[j], c);
                        next_cell[j] += n;
                    }
                    for (j, f) in faces.into_iter().enumerate() {
                        let n = f.len();
                        p.put_indices(at.face_sets[j], next_face[j], f);
                        next_face[j] += n;
                    }
                }
            })?);
            Ok(())
        };
        let output = if comm.rank() == 0 {
            let target = ResultsTarget {
                dir: dir.to_path_buf(),
                name: name.to_owned(),
                faults: faults.clone(),
                single_precision: crate::run::single_precision(config),
            };
            let (output, queue) =
                match StepOutput::create_in_pieces(target, shape.clone(), self.window) {
                    Ok(started) => started,
                    Err(e) => {
                        // the writer could not start: rank 0 still takes part in the gathers
                        gather(None)?;
                        return Err(e);
                    }
                };
            if let Err(e) = gather(Some(&queue)) {
                // the queue dropped unfinished (first: the writer's thread waits on it) leaves
                // the file out
                drop(queue);
                drop(output);
                return Err(e);
            }
            queue.complete();
            output
        } else {
            gather(None)?;
            StepOutput::Elsewhere
        };
        // the serial centroid: the coordinates' sum over the count
        self.centroids = centroid_sums
            .iter()
            .map(|s| s.displacement.map(|v| v / s.nodes.max(1) as f64))
            .collect();
        self.note(&stats);
        Ok(output)
    }

    /// Collective: hands the state `u` (with `reactions` and the outputs `cells` of the
    /// part's cells; ghost entries of `u` current) to `output` as step `stamp.index` (rank 0's
    /// writer, after the state before it is written: the driver waits for that first, so that
    /// the ranks agree on its outcome), what the windows bring; returns the state's figures on
    /// rank 0.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_state(
        &mut self,
        comm: &dyn Comm,
        config: &Config,
        part: &MeshPart,
        u: &Vector,
        reactions: &Vector,
        cells: &CellOutputs,
        stamp: StepStamp,
        output: &mut StepOutput,
    ) -> Result<Option<StateFigures>> {
        let mesh = &part.mesh;
        let (u_local, _) = u.host()?.as_chunks::<3>();
        let (r_local, _) = reactions.host()?.as_chunks::<3>();
        let nodal = if self.nodal_stress {
            serial::nodal_average(mesh, &cells.cauchy)
        } else {
            Vec::new()
        };
        // the probe points' values (displacement, cell fields), from their owners
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
        let lens = vec![mine.len(); comm.size()];
        let points: Option<Vec<Vec<f64>>> =
            crate::windows::gather_to_root(comm, &mine, &lens, mine.len().max(1))?.map(|all| {
                self.point_owners
                    .iter()
                    .enumerate()
                    .map(|(i, &r)| all[r][offsets[i]..offsets[i + 1]].to_vec())
                    .collect()
            });

        let this = &*self;
        let node_mask = this.node_names.len();
        let probes_nodal = this
            .set_fields
            .iter()
            .flatten()
            .any(|&f| probe::is_nodal(f));
        let n_stress = if probes_nodal { 9 } else { 0 };
        let layout = this.node_layout;
        let node_record = |n: usize, r: &mut [f64]| {
            r[..3].copy_from_slice(&u_local[n]);
            if let Some(at) = layout.reaction_at {
                r[at..at + 3].copy_from_slice(&r_local[n]);
            }
            if let Some(at) = layout.stress_at {
                r[at..at + 9].copy_from_slice(&nodal[n]);
            }
        };
        let set_node_record = |n: usize, r: &mut [f64]| {
            r[..3].copy_from_slice(&u_local[n]);
            r[3..6].copy_from_slice(&r_local[n]);
            r[6..9].copy_from_slice(&mesh.coords[n]);
            if probes_nodal {
                r[9..18].copy_from_slice(&nodal[n]);
            }
            let mask = &mut r[9 + n_stress..];
            mask.fill(0.0);
            for (i, m) in this.node_member.iter().enumerate() {
                if m[n] {
                    set_bit(mask, i);
                }
            }
        };
        let base = this.cell_record_width;
        // where the strain energy lies in a cell record
        let energy_at = if this.cell_fields_read {
            CellOutputs::WIDTH - 1
        } else {
            0
        };
        let cell_record = |c: usize, r: &mut [f64]| {
            if this.cell_fields_read {
                cells.record(c, &mut r[..base]);
            } else {
                r[0] = cells.strain_energy[c];
            }
            let probe_mask = &mut r[base..];
            probe_mask.fill(0.0);
            for (i, m) in this.probe_cells.iter().enumerate() {
                if m[c] {
                    set_bit(probe_mask, i);
                }
            }
        };
        let mut acc = Accumulator {
            out: this,
            strain_energy: [0.0f64; 0].iter().sum(),
            max_displacement: 0.0,
            reactions: vec![SetSum::default(); node_mask],
            sums: vec![SetSum::default(); this.sums.len()],
            stats: this
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
        let index = |f: StepField| this.fields.iter().position(|&g| g == f);
        let mut stats = Vec::new();
        let mut gather = |pieces: Option<&PieceQueue>, acc: &mut Accumulator| -> Result<()> {
            let w = this.step_nodes.width();
            stats.push(this.step_nodes.gather(comm, node_record, |ids, records| {
                // a node of no set only raises the largest displacement (a maximum: taken in
                // parallel)
                let largest = records
                    .par_chunks(w)
                    .map(|r| crate::run::length(&[r[0], r[1], r[2]]))
                    .reduce(|| 0.0, f64::max);
                acc.max_displacement = acc.max_displacement.max(largest);
                let Some(p) = pieces else {
                    return;
                };
                let first = ids[0] as usize;
                let stress_at = layout.stress_at.unwrap_or(0);
                let stress = |r: &[f64]| -> [f64; 9] { std::array::from_fn(|k| r[stress_at + k]) };
                let put = |p: &PieceQueue, f: StepField, width: usize, fill: &FillFn<'_>| {
                    if let Some(d) = index(f) {
                        p.put(d, width * first, column(records, w, width, fill));
                    }
                };
                put(p, StepField::Displacement, 3, &|r, c| {
                    c.copy_from_slice(&r[..3])
                });
                if let Some(at) = layout.reaction_at {
                    put(p, StepField::Reaction, 3, &|r, c| {
                        c.copy_from_slice(&r[at..at + 3])
                    });
                }
                if layout.stress_at.is_some() {
                    put(p, StepField::NodalCauchyStress, 9, &|r, c| {
                        c.copy_from_slice(&stress(r))
                    });
                    put(p, StepField::NodalVonMises, 1, &|r, c| {
                        c[0] = serial::von_mises_of(&stress(r))
                    });
                    put(p, StepField::NodalPrincipalStress, 3, &|r, c| {
                        c.copy_from_slice(&fem::principal_values_of(&stress(r)))
                    });
                }
            })?);
            // the sets' figures in serial order, from the set nodes' records
            let w = this.set_nodes.width();
            stats.push(this.set_nodes.gather(comm, set_node_record, |_, records| {
                let mask_at = 9 + n_stress;
                for r in records.chunks(w) {
                    let (x, uu, rr) = ([r[6], r[7], r[8]], [r[0], r[1], r[2]], [r[3], r[4], r[5]]);
                    acc.node(x, uu, rr, &r[mask_at..]);
                    if probes_nodal {
                        let t: [f64; 9] = std::array::from_fn(|k| r[9 + k]);
                        acc.nodal_stats(&t, &r[mask_at..]);
                    }
                }
            })?);
            let w = this.step_cells.width();
            stats.push(this.step_cells.gather(comm, cell_record, |ids, records| {
                // the figures in serial order (the energy summed as the serial run's)
                for r in records.chunks(w) {
                    acc.strain_energy += r[energy_at];
                    if this.cell_fields_read {
                        acc.cell_stats(r);
                    }
                }
                let Some(p) = pieces else {
                    return;
                };
                let first = ids[0] as usize;
                let put = |p: &PieceQueue, f: StepField, width: usize, fill: &FillFn<'_>| {
                    if let Some(d) = index(f) {
                        p.put(d, width * first, column(records, w, width, fill));
                    }
                };
                put(p, StepField::CauchyStress, 9, &|r, c| {
                    c.copy_from_slice(&r[..9])
                });
                put(p, StepField::VonMises, 1, &|r, c| c[0] = r[9]);
                put(p, StepField::Jacobian, 1, &|r, c| c[0] = r[10]);
                put(p, StepField::EnergyDensity, 1, &|r, c| c[0] = r[11]);
                put(p, StepField::PrincipalStress, 3, &|r, c| {
                    let t: [f64; 9] = std::array::from_fn(|k| r[k]);
                    c.copy_from_slice(&fem::principal_values_of(&t))
                });
                for (k, &f) in this.strain_fields.iter().enumerate() {
                    let at = CellOutputs::WIDTH + 9 * k;
                    put(p, f, 9, &|r, c| c.copy_from_slice(&r[at..at + 9]));
                }
            })?);
            Ok(())
        };
        let figures = match points {
            Some(points) => {
                let header = StepHeader {
                    step: stamp.index,
                    load_factor: stamp.load_factor,
                    next_increment: stamp.next_increment,
                    time: stamp.time,
                    fields: this.fields.clone(),
                };
                // a writer that refuses the step still leaves rank 0 in the gathers
                let (queue, refused) = match output.submit_in_pieces(header, this.window) {
                    Ok(queue) => (queue, None),
                    Err(e) => (None, Some(e)),
                };
                // an error here drops the queue unfinished: the writer leaves the step out
                gather(queue.as_ref(), &mut acc)?;
                if let Some(queue) = queue {
                    queue.complete();
                }
                if let Some(e) = refused {
                    return Err(e);
                }
                Some(acc.figures(config, &points)?)
            }
            None => {
                gather(None, &mut acc)?;
                None
            }
        };
        self.note(&stats);
        Ok(figures)
    }

    fn note(&mut self, stats: &[GatherStats]) {
        for s in stats {
            self.held.windows += s.windows;
            self.held.max_window_values = self.held.max_window_values.max(s.max_window_values);
            self.held.max_message_values = self.held.max_message_values.max(s.max_message_values);
        }
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
