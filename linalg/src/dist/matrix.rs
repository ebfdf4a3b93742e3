//! [`DistPattern`] and [`DistBsr`]: a rank's owned block rows, split into the diagonal part
//! (owned columns) and the off-diagonal part (ghost columns), and their SpMV.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::{cuda, host};
use crate::dist::{DeviceHalo, HaloPlan, RowPartition};
use crate::{BlockPattern, Bsr, Device, Layout, LinalgError, Vector};
use rayon::prelude::*;

/// The symbolic part of a distributed block matrix on one rank: the diagonal and off-diagonal
/// patterns of its owned block rows, where each input entry goes, the halo plan of the ghost
/// columns and the layouts of the vectors it maps (operands: owned column blocks, then ghosts;
/// results: owned row blocks). Rows and columns have their own partitions and block sizes (a
/// prolongator's `3 x 6` blocks, say); a square matrix shares one partition.
///
/// Invariants: `diag` is `n_owned_rows x n_owned_cols` (columns `global - first owned column`),
/// `offd` is `n_owned_rows x ghosts` (columns index `halo.ghosts()`, ascending global ids);
/// `entry_slot[k]` is input entry `k`'s slot in `diag` (`< diag.nnz()`) or `diag.nnz() +` its
/// slot in `offd`.
#[derive(Debug)]
pub struct DistPattern {
    partition: RowPartition,
    col_partition: RowPartition,
    block_rows: usize,
    block_cols: usize,
    diag: Arc<BlockPattern>,
    offd: Arc<BlockPattern>,
    entry_slot: Vec<u32>,
    /// The inverse of `entry_slot`: the input entry of each slot (diag slots, then offd).
    slot_entry: Vec<u32>,
    halo: Arc<HaloPlan>,
    layout: Arc<Layout>,
    owned_layout: Arc<Layout>,
    row_layout: Arc<Layout>,
}

impl DistPattern {
    /// Collective. This rank's owned block rows (`partition.n_owned()` of them): row `i`'s
    /// entries are `row_ptr[i]..row_ptr[i + 1]`, with global block columns `cols` (any order,
    /// no duplicate within a row). Errors are agreed on every rank.
    pub fn new(
        partition: RowPartition,
        block_size: usize,
        row_ptr: &[usize],
        cols: &[u64],
    ) -> Result<Arc<Self>, LinalgError> {
        Self::new_rect(
            partition.clone(),
            partition,
            block_size,
            block_size,
            row_ptr,
            cols,
        )
    }

    /// Collective. As [`DistPattern::new`] for a rectangular matrix of `block_rows x
    /// block_cols` blocks: rows owned by `partition`, columns by `col_partition` (the same
    /// ranks).
    pub fn new_rect(
        partition: RowPartition,
        col_partition: RowPartition,
        block_rows: usize,
        block_cols: usize,
        row_ptr: &[usize],
        cols: &[u64],
    ) -> Result<Arc<Self>, LinalgError> {
        Self::with_ghosts(
            partition,
            col_partition,
            [block_rows, block_cols],
            row_ptr,
            cols,
            &[],
        )
    }

    /// [`DistPattern::new_rect`] whose ghost columns also include `extra_ghosts` (global
    /// columns other ranks own, in any order), whether or not an entry reaches them: the halo
    /// then fills every ghost of a rank's local vectors.
    fn with_ghosts(
        partition: RowPartition,
        col_partition: RowPartition,
        [block_rows, block_cols]: [usize; 2],
        row_ptr: &[usize],
        cols: &[u64],
        extra_ghosts: &[u64],
    ) -> Result<Arc<Self>, LinalgError> {
        let comm = partition.comm().clone();
        let n_owned = partition.n_owned();
        let owned = col_partition.owned_range();
        let global_len = col_partition.global_len();
        let check = if col_partition.comm().size() != comm.size() {
            Err("distributed pattern: row and column partitions over different ranks".into())
        } else if block_rows == 0 || block_cols == 0 {
            Err(format!(
                "distributed pattern: block size {block_rows}x{block_cols}"
            ))
        } else if let Some(g) = extra_ghosts.iter().find(|&&g| g >= global_len) {
            Err(format!(
                "distributed pattern: ghost column {g} beyond the {global_len} columns"
            ))
        } else {
            check_row_ptr(n_owned, row_ptr, cols.len())
        };
        // Each row's input entries in ascending global column (`order`, row by row; `None`
        // where every row is already ascending, the common case), then checked. Rows strictly
        // ascending below `global_len` (the common case) pass in one pass.
        let row_ascending = |i: usize| cols[row_ptr[i]..row_ptr[i + 1]].is_sorted();
        let row_fits = |i: usize| {
            let row = &cols[row_ptr[i]..row_ptr[i + 1]];
            row.windows(2).all(|w| w[0] < w[1]) && row.last().is_none_or(|&g| g < global_len)
        };
        let mut order: Option<Vec<u32>> = None;
        let check = check.and_then(|()| {
            if (0..n_owned).into_par_iter().all(row_fits) {
                return Ok(());
            }
            if !(0..n_owned).into_par_iter().all(row_ascending) {
                let mut o = vec![0u32; cols.len()];
                crate::fill_rows(row_ptr, &mut o, |i, row| {
                    for (e, k) in row.iter_mut().zip(row_ptr[i]..row_ptr[i + 1]) {
                        *e = k as u32;
                    }
                    row.sort_unstable_by_key(|&k| cols[k as usize]);
                });
                order = Some(o);
            }
            check_sorted_rows(row_ptr, cols, order.as_deref(), global_len)
        });
        comm::agree(&*comm, check)?;
        // row `i`'s input entries in ascending column
        let entries = |i: usize| {
            let range = row_ptr[i]..row_ptr[i + 1];
            let ordered = order.as_deref().map(|o| &o[range.clone()]);
            range
                .enumerate()
                .map(move |(j, k)| ordered.map_or(k, |o| o[j] as usize))
        };

        let mut ghosts: Vec<u64> = cols
            .par_iter()
            .chain(extra_ghosts.par_iter())
            .copied()
            .filter(|g| !owned.contains(g))
            .collect();
        ghosts.par_sort_unstable();
        ghosts.dedup();

        // Owned columns map to `g - first`, ghosts to their compact index; both keep the rows'
        // ascending order, as patterns require: the rows' owned and ghost entries counted,
        // then each part's columns and input entries filled row by row.
        let owned_in: Vec<u32> = (0..n_owned)
            .into_par_iter()
            .map(|i| {
                let row = &cols[row_ptr[i]..row_ptr[i + 1]];
                row.iter().filter(|g| owned.contains(g)).count() as u32
            })
            .collect();
        let d_ptr = crate::row_offsets(n_owned, |i| owned_in[i] as usize);
        let o_ptr = crate::row_offsets(n_owned, |i| {
            row_ptr[i + 1] - row_ptr[i] - owned_in[i] as usize
        });
        drop(owned_in);
        let n_diag = d_ptr[n_owned];
        // slot -> input entry: diag slots, then offd slots
        let mut slot_entry = vec![0u32; cols.len()];
        let (d_entry, o_entry) = slot_entry.split_at_mut(n_diag);
        let is_owned = |k: &usize| owned.contains(&cols[*k]);
        crate::fill_rows(&d_ptr, d_entry, |i, out| {
            for (o, k) in out.iter_mut().zip(entries(i).filter(is_owned)) {
                *o = k as u32;
            }
        });
        crate::fill_rows(&o_ptr, o_entry, |i, out| {
            for (o, k) in out.iter_mut().zip(entries(i).filter(|k| !is_owned(k))) {
                *o = k as u32;
            }
        });
        drop(order);
        let d_col: Vec<u32> = slot_entry[..n_diag]
            .par_iter()
            .map(|&k| (cols[k as usize] - owned.start) as u32)
            .collect();
        let o_col: Vec<u32> = slot_entry[n_diag..]
            .par_iter()
            .map(|&k| ghosts.binary_search(&cols[k as usize]).expect("collected") as u32)
            .collect();
        // entry -> slot, row by row: a row's input entries go to its own diag and offd slots
        let mut entry_slot = vec![0u32; cols.len()];
        crate::fill_rows(row_ptr, &mut entry_slot, |i, out| {
            let first = row_ptr[i];
            let diag = (d_ptr[i]..d_ptr[i + 1]).map(|s| (s, slot_entry[s]));
            let offd = (o_ptr[i]..o_ptr[i + 1]).map(|s| (n_diag + s, slot_entry[n_diag + s]));
            for (slot, k) in diag.chain(offd) {
                out[k as usize - first] = slot as u32;
            }
        });
        let n_owned_cols = col_partition.n_owned();
        let diag = BlockPattern::new_trusted(n_owned, n_owned_cols, d_ptr, d_col);
        let offd = BlockPattern::new_trusted(n_owned, ghosts.len(), o_ptr, o_col);
        let n_ghosts = ghosts.len();
        let halo = HaloPlan::new(&col_partition, ghosts, block_cols)?;
        let bc = block_cols as u64;

        let layout = Layout::new(
            n_owned_cols * block_cols,
            n_ghosts * block_cols,
            owned.start * bc,
            global_len * bc,
            comm.clone(),
        )?;
        let owned_layout = Layout::new(
            n_owned_cols * block_cols,
            0,
            owned.start * bc,
            global_len * bc,
            comm.clone(),
        )?;
        let br = block_rows as u64;
        let row_layout = Layout::new(
            n_owned * block_rows,
            0,
            partition.owned_range().start * br,
            partition.global_len() * br,
            comm,
        )?;
        Ok(Arc::new(Self {
            partition,
            col_partition,
            block_rows,
            block_cols,
            diag: Arc::new(diag),
            offd: Arc::new(offd),
            entry_slot,
            slot_entry,
            halo: Arc::new(halo),
            layout: Arc::new(layout),
            owned_layout: Arc::new(owned_layout),
            row_layout: Arc::new(row_layout),
        }))
    }

    /// Collective. The owned rows of a rank-local matrix `local` whose first
    /// `partition.n_owned()` block rows are the owned rows and whose block column `c` is global
    /// index `col_globals[c]` (the matrix assembled on a rank's part of a mesh with one layer of
    /// ghost cells: complete owned rows, no communication). Every non-owned entry of
    /// `col_globals` is a ghost column, reached by an owned row or not (a ghost cell of a METIS
    /// part may hold no owned node), so the halo fills all ghosts of the part's vectors. Values
    /// follow with [`DistBsr::set_from_local`].
    pub fn from_local(
        partition: RowPartition,
        local: &BlockPattern,
        col_globals: &[u64],
        block_size: usize,
    ) -> Result<Arc<Self>, LinalgError> {
        let n_owned = partition.n_owned();
        let fits = local.n_block_rows() >= n_owned && col_globals.len() == local.n_block_cols();
        let rows = if fits { n_owned } else { 0 };
        let row_ptr = &local.row_ptr()[..=rows];
        let cols: Vec<u64> = local.col_idx()[..row_ptr[rows]]
            .iter()
            .map(|&c| col_globals[c as usize])
            .collect();
        if !fits {
            // Fails the agreed check inside `new` on this rank (wrong row count).
            return Self::new(partition, block_size, &[usize::MAX], &[]);
        }
        Self::with_ghosts(
            partition.clone(),
            partition,
            [block_size; 2],
            row_ptr,
            &cols,
            col_globals,
        )
    }

    /// The row partition.
    pub fn partition(&self) -> &RowPartition {
        &self.partition
    }

    /// The column partition (the row partition for square matrices).
    pub fn col_partition(&self) -> &RowPartition {
        &self.col_partition
    }

    /// Rows per block (and columns for square blocks).
    pub fn block_size(&self) -> usize {
        self.block_rows
    }

    /// Rows per block.
    pub fn block_rows(&self) -> usize {
        self.block_rows
    }

    /// Columns per block.
    pub fn block_cols(&self) -> usize {
        self.block_cols
    }

    /// Layout of results (owned rows, no ghosts); for a square matrix it matches
    /// [`DistPattern::owned_layout`].
    pub fn row_layout(&self) -> &Arc<Layout> {
        &self.row_layout
    }

    /// Where each input entry went (see the type's invariants): entry `k`'s slot in `diag`
    /// (`< diag.nnz()`) or `diag.nnz() +` its slot in `offd`.
    pub fn entry_slots(&self) -> &[u32] {
        &self.entry_slot
    }

    /// The inverse of [`DistPattern::entry_slots`]: the input entry whose block each slot holds
    /// (`diag` slots, then `offd` slots).
    pub fn slot_entries(&self) -> &[u32] {
        &self.slot_entry
    }

    /// Pattern of the owned rows' owned columns.
    pub fn diag(&self) -> &Arc<BlockPattern> {
        &self.diag
    }

    /// Pattern of the owned rows' ghost columns (compact ghost indices).
    pub fn offd(&self) -> &Arc<BlockPattern> {
        &self.offd
    }

    /// The ghost column map and its messages.
    pub fn halo(&self) -> &Arc<HaloPlan> {
        &self.halo
    }

    /// Layout of the operands of [`DistBsr::spmv`]: owned column entries, then the ghosts.
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Layout of owned-only operands (no ghost tail), those of [`DistBsr::apply`] and of the
    /// Krylov solvers.
    pub fn owned_layout(&self) -> &Arc<Layout> {
        &self.owned_layout
    }

    /// Input entries (blocks) the pattern was built from.
    pub fn n_entries(&self) -> usize {
        self.entry_slot.len()
    }
}

/// The shape of a rank's rows: `row_ptr` of `n_owned + 1` non-decreasing offsets from 0 to
/// `n_entries`.
fn check_row_ptr(n_owned: usize, row_ptr: &[usize], n_entries: usize) -> Result<(), String> {
    if row_ptr.len() != n_owned + 1 || row_ptr[0] != 0 || row_ptr[n_owned] != n_entries {
        return Err(format!(
            "distributed pattern: row_ptr of {} entries (first {:?}, last {:?}) for {n_owned} owned rows and {n_entries} entries",
            row_ptr.len(),
            row_ptr.first(),
            row_ptr.last(),
        ));
    }
    if let Some(i) = (0..n_owned)
        .into_par_iter()
        .find_first(|&i| row_ptr[i] > row_ptr[i + 1])
    {
        return Err(format!(
            "distributed pattern: row_ptr decreases at owned row {i}"
        ));
    }
    Ok(())
}

/// The columns of each row of `row_ptr` (`cols`, in ascending order where `order` lists each
/// row's entries so, else as they are) below `global_len` and none twice; the first failing
/// row is named (rows in parallel).
fn check_sorted_rows(
    row_ptr: &[usize],
    cols: &[u64],
    order: Option<&[u32]>,
    global_len: u64,
) -> Result<(), String> {
    let n_owned = row_ptr.len() - 1;
    let col = |k: usize| cols[order.map_or(k, |o| o[k] as usize)];
    match (0..n_owned).into_par_iter().find_map_first(|i| {
        let row = row_ptr[i]..row_ptr[i + 1];
        if let Some(g) = row.clone().map(col).find(|&g| g >= global_len) {
            return Some(format!(
                "distributed pattern: owned row {i}: column {g} beyond the {global_len} global block columns"
            ));
        }
        (row.start + 1..row.end)
            .find(|&k| col(k - 1) == col(k))
            .map(|k| format!("distributed pattern: owned row {i}: column {} twice", col(k)))
    }) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A rank's owned block rows of a distributed block matrix: the diagonal part (a
/// [`Bsr`] on the owned columns) and the off-diagonal part (a [`Bsr`] on the ghost columns),
/// on a shared [`DistPattern`]. Both parts live on the host or both on one GPU
/// ([`DistBsr::to_device`]); on a GPU, [`DistBsr::apply`] takes device vectors and exchanges
/// the halo through the matrix's [`DeviceHalo`].
#[derive(Debug)]
pub struct DistBsr {
    pattern: Arc<DistPattern>,
    diag: Bsr,
    offd: Bsr,
    /// The halo plan's device buffers (GPU matrices only).
    device_halo: Option<Mutex<DeviceHalo>>,
    /// The off-diagonal part's non-empty rows (GPU matrices whose off-diagonal part has empty
    /// rows): its product runs on those rows only.
    offd_rows: Option<OffdRows>,
    /// Owned entries and ghosts of the operand of [`DistBsr::apply`] (one call at a time).
    scratch: Mutex<Vec<f64>>,
    /// The product of [`DistBsr::add_scaled_product`] where the matrix lives (row layout; made
    /// at its first call, reused by every later one).
    product: Mutex<Option<Vector>>,
    /// Where each slot's block comes from in the rank-local matrix (GPU matrices only; made by
    /// the first [`DistBsr::set_from_local`] from a device matrix, reused by every later one).
    local_gather: Option<LocalGather>,
    /// Changes whenever the values do (unique in the process): plans that copy the values
    /// elsewhere skip the copy when it is the one they copied.
    version: u64,
}

/// The non-empty block rows of an off-diagonal part on the GPU: their pattern (the part's
/// slots and columns, empty rows left out) and their row indices (where their sums are added).
#[derive(Debug)]
struct OffdRows {
    pattern: cuda::DevicePattern,
    rows: cuda::DeviceBuffer<u32>,
}

impl OffdRows {
    /// `None` when every row has blocks (the plain product is as cheap) or none has.
    fn new(ctx: &cuda::CudaContext, offd: &BlockPattern) -> Result<Option<Self>, LinalgError> {
        let ptr = offd.row_ptr();
        let rows: Vec<u32> = (0..offd.n_block_rows())
            .filter(|&r| ptr[r + 1] > ptr[r])
            .map(|r| r as u32)
            .collect();
        if rows.is_empty() || rows.len() == offd.n_block_rows() {
            return Ok(None);
        }
        let mut row_ptr: Vec<usize> = rows.iter().map(|&r| ptr[r as usize]).collect();
        row_ptr.push(offd.nnz());
        let pattern = BlockPattern::new(
            rows.len(),
            offd.n_block_cols(),
            row_ptr,
            offd.col_idx().to_vec(),
        )?;
        Ok(Some(Self {
            pattern: cuda::DevicePattern::upload_plain(ctx, &pattern)?,
            rows: ctx.upload(&rows)?,
        }))
    }
}

/// The plan of [`DistBsr::set_from_local`] on a GPU: for every slot of the diagonal and the
/// off-diagonal part, the input entry (block of the rank-local matrix) whose values it takes:
/// the inverse of [`DistPattern::entry_slots`] (every slot has exactly one), uploaded once.
#[derive(Debug)]
struct LocalGather {
    diag_src: cuda::DeviceBuffer<u32>,
    offd_src: cuda::DeviceBuffer<u32>,
}

impl LocalGather {
    fn new(ctx: &cuda::CudaContext, pattern: &DistPattern) -> Result<Self, LinalgError> {
        let (diag_src, offd_src) = pattern.slot_entry.split_at(pattern.diag.nnz());
        Ok(Self {
            diag_src: ctx.upload(diag_src)?,
            offd_src: ctx.upload(offd_src)?,
        })
    }
}

/// Source of [`DistBsr::version`]s.
static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

impl DistBsr {
    /// Zero values on `pattern` (host).
    pub fn zeros(pattern: Arc<DistPattern>) -> Self {
        let (br, bc) = (pattern.block_rows, pattern.block_cols);
        Self {
            diag: Bsr::zeros(pattern.diag.clone(), br, bc),
            offd: Bsr::zeros(pattern.offd.clone(), br, bc),
            device_halo: None,
            offd_rows: None,
            scratch: Mutex::new(vec![0.0; pattern.layout.len()]),
            product: Mutex::new(None),
            local_gather: None,
            version: next_version(),
            pattern,
        }
    }

    /// Zero values on `pattern` where `device` is (on a GPU made there: no host values, no
    /// upload of them), with the device halo of [`DistBsr::to_device`]. Local.
    pub fn zeros_on(pattern: Arc<DistPattern>, device: &Device) -> Result<Self, LinalgError> {
        let ctx = match device {
            Device::Host => return Ok(Self::zeros(pattern)),
            Device::Cuda(ctx) => ctx,
        };
        let (br, bc) = (pattern.block_rows, pattern.block_cols);
        Ok(Self {
            diag: Bsr::zeros_on(device, pattern.diag.clone(), br, bc)?,
            offd: Bsr::zeros_on(device, pattern.offd.clone(), br, bc)?,
            device_halo: Some(Mutex::new(DeviceHalo::new(
                pattern.halo.clone(),
                ctx.clone(),
            )?)),
            offd_rows: OffdRows::new(ctx, &pattern.offd)?,
            scratch: Mutex::new(vec![0.0; pattern.layout.len()]),
            product: Mutex::new(None),
            local_gather: None,
            version: next_version(),
            pattern,
        })
    }

    /// Values of the input entries, entry-major (`block_rows * block_cols` per entry, blocks
    /// row-major).
    pub fn from_values(pattern: Arc<DistPattern>, values: &[f64]) -> Result<Self, LinalgError> {
        let mut m = Self::zeros(pattern);
        m.set_values(values)?;
        Ok(m)
    }

    /// Overwrites the values from the input entries (as [`DistBsr::from_values`]); local.
    pub fn set_values(&mut self, values: &[f64]) -> Result<(), LinalgError> {
        let bl = self.pattern.block_rows * self.pattern.block_cols;
        let expected = self.pattern.n_entries() * bl;
        if values.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "DistBsr::set_values",
                expected,
                found: values.len(),
            });
        }
        self.set_values_with(|k, out| out.copy_from_slice(&values[k * bl..(k + 1) * bl]))
    }

    /// Overwrites each input entry's block with what `block_of(entry, block)` writes into it
    /// (the entries of [`DistPattern::new`]'s `cols`; in parallel, each slot once): the values
    /// of [`DistBsr::set_values`] without their entry-major copy. Local; host storage.
    pub fn set_values_with(
        &mut self,
        block_of: impl Fn(usize, &mut [f64]) + Sync,
    ) -> Result<(), LinalgError> {
        self.version = next_version();
        let bl = self.pattern.block_rows * self.pattern.block_cols;
        let (diag_src, offd_src) = self.pattern.slot_entry.split_at(self.pattern.diag.nnz());
        for (part, src) in [(&mut self.diag, diag_src), (&mut self.offd, offd_src)] {
            part.host_mut()?
                .par_chunks_mut(bl)
                .zip(src.par_iter())
                .for_each(|(out, &k)| block_of(k as usize, out));
        }
        Ok(())
    }

    /// Overwrites the values from the rank-local matrix the pattern was built from
    /// ([`DistPattern::from_local`]): its first rows' values, in slot order. Where both live:
    /// on the host, or on one GPU, where each part's blocks are gathered from the local
    /// matrix's device values by a whole-block gather (the inverse of
    /// [`DistPattern::entry_slots`], uploaded at the first call): plain copies, the host's bits,
    /// no host transfer.
    pub fn set_from_local(&mut self, local: &Bsr) -> Result<(), LinalgError> {
        let bl = self.pattern.block_rows * self.pattern.block_cols;
        let n = self.pattern.n_entries() * bl;
        let found = local.pattern().nnz() * local.block_len();
        if found < n || local.block_len() != bl {
            return Err(LinalgError::LengthMismatch {
                what: "DistBsr::set_from_local: local values",
                expected: n,
                found,
            });
        }
        crate::device::check_same_device(
            "DistBsr::set_from_local: the local matrix",
            &self.device(),
            &local.device(),
        )?;
        let Some((ctx, _)) = self.diag.cuda() else {
            let values = local.host()?;
            return self.set_values(&values[..n]);
        };
        let ctx = ctx.clone();
        if self.local_gather.is_none() {
            self.local_gather = Some(LocalGather::new(&ctx, &self.pattern)?);
        }
        self.version = next_version();
        let plan = self.local_gather.as_ref().expect("made above");
        let src = local.device_bsr()?.values();
        cuda::halo::gather_blocks(
            &ctx,
            bl,
            &plan.diag_src,
            src,
            self.diag.device_bsr_mut()?.values_mut(),
        )?;
        cuda::halo::gather_blocks(
            &ctx,
            bl,
            &plan.offd_src,
            src,
            self.offd.device_bsr_mut()?.values_mut(),
        )
    }

    /// Copies the owned entries of the rank-local vector `local` (owned entries, then ghosts:
    /// [`DistPattern::layout`]'s length) into the owned-only vector `owned` where both live (a
    /// device to device copy on a GPU).
    pub fn owned_from_local(&self, local: &Vector, owned: &mut Vector) -> Result<(), LinalgError> {
        let n = self.pattern.owned_layout.owned();
        check_local_pair("DistBsr::owned_from_local", self, local, owned)?;
        match owned.device().cuda_context() {
            None => {
                owned.host_mut()?.copy_from_slice(&local.host()?[..n]);
                Ok(())
            }
            Some(ctx) => {
                ctx.copy_range(local.device_buffer()?, 0, owned.device_buffer_mut()?, 0, n)
            }
        }
    }

    /// Collective over the halo's neighbours. Writes the owned-only vector `owned` into the
    /// owned entries of the rank-local vector `local` and fills `local`'s ghost tail from their
    /// owners (the halo plan; on a GPU through the matrix's [`DeviceHalo`], the values
    /// unchanged: the host's bits).
    pub fn local_from_owned(&self, owned: &Vector, local: &mut Vector) -> Result<(), LinalgError> {
        let n = self.pattern.owned_layout.owned();
        check_local_pair("DistBsr::local_from_owned", self, local, owned)?;
        let Some(ctx) = owned.device().cuda_context().cloned() else {
            let xs = local.host_mut()?;
            xs[..n].copy_from_slice(owned.host()?);
            return self.pattern.halo.update(xs);
        };
        let mut halo = self.device_halo().ok_or(LinalgError::Unsupported {
            what: "DistBsr::local_from_owned without device halo buffers",
            device: self.device().name(),
        })?;
        let src = owned.device_buffer()?;
        let dst = local.device_buffer_mut()?;
        ctx.copy_range(src, 0, dst, 0, n)?;
        let ghosts = halo.fill_ghosts(src, || Ok(()))?;
        ctx.copy_range(ghosts, 0, dst, n, ghosts.len())
    }

    /// A copy on `device` (the same values and version): uploads the parts and, for a GPU, makes
    /// the halo's device buffers; downloads for the host.
    pub fn to_device(&self, device: &Device) -> Result<Self, LinalgError> {
        let (device_halo, offd_rows) = match device {
            Device::Host => (None, None),
            Device::Cuda(ctx) => (
                Some(Mutex::new(DeviceHalo::new(
                    self.pattern.halo.clone(),
                    ctx.clone(),
                )?)),
                OffdRows::new(ctx, &self.pattern.offd)?,
            ),
        };
        Ok(Self {
            pattern: self.pattern.clone(),
            diag: self.diag.to_device(device)?,
            offd: self.offd.to_device(device)?,
            device_halo,
            offd_rows,
            scratch: Mutex::new(vec![0.0; self.pattern.layout.len()]),
            product: Mutex::new(None),
            local_gather: None,
            version: self.version,
        })
    }

    /// Copies the values of the host matrix `src` (the same pattern) into this matrix where it
    /// lives (an upload of the values alone for a GPU matrix); takes `src`'s version.
    pub fn upload_values_from(&mut self, src: &DistBsr) -> Result<(), LinalgError> {
        if !Arc::ptr_eq(&self.pattern, &src.pattern) {
            return Err(LinalgError::LayoutMismatch {
                what: "DistBsr::upload_values_from: another pattern",
            });
        }
        self.diag.upload_values_from(&src.diag)?;
        self.offd.upload_values_from(&src.offd)?;
        self.version = src.version;
        Ok(())
    }

    /// Copies the values of `src` (the same pattern) into this matrix: device to device where
    /// both live on one GPU (no host transfer), else as [`DistBsr::upload_values_from`] from a
    /// host `src`; takes `src`'s version.
    pub fn copy_values_from(&mut self, src: &DistBsr) -> Result<(), LinalgError> {
        if !Arc::ptr_eq(&self.pattern, &src.pattern) {
            return Err(LinalgError::LayoutMismatch {
                what: "DistBsr::copy_values_from: another pattern",
            });
        }
        if src.device().is_host() {
            return self.upload_values_from(src);
        }
        crate::device::check_same_device(
            "DistBsr::copy_values_from",
            &self.device(),
            &src.device(),
        )?;
        let device = self.device();
        let ctx = device.cuda_context().ok_or(LinalgError::LayoutMismatch {
            what: "DistBsr::copy_values_from: a GPU matrix",
        })?;
        for (dst, s) in [(&mut self.diag, &src.diag), (&mut self.offd, &src.offd)] {
            ctx.copy(s.device_bsr()?.values(), dst.device_bsr_mut()?.values_mut())?;
        }
        self.version = src.version;
        Ok(())
    }

    /// Where the values live.
    pub fn device(&self) -> Device {
        self.diag.device()
    }

    /// The halo's device buffers (GPU matrices only; one exchange at a time): for operations
    /// built on this matrix's halo plan (the restriction's reverse exchange).
    pub fn device_halo(&self) -> Option<std::sync::MutexGuard<'_, DeviceHalo>> {
        self.device_halo
            .as_ref()
            .map(|h| h.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Both parts' values for writing in place (the pattern stays; the matrix takes a new
    /// version): for numeric phases that compute the values slot by slot (the distributed
    /// Galerkin product's reduction), on the host or the GPU where the matrix lives.
    pub fn parts_mut(&mut self) -> (&mut Bsr, &mut Bsr) {
        self.version = next_version();
        (&mut self.diag, &mut self.offd)
    }

    /// The version of the values: a new one, unique in the process, after every change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The shared symbolic part.
    pub fn pattern(&self) -> &Arc<DistPattern> {
        &self.pattern
    }

    /// The owned rows' owned columns.
    pub fn diag(&self) -> &Bsr {
        &self.diag
    }

    /// The owned rows' ghost columns.
    pub fn offd(&self) -> &Bsr {
        &self.offd
    }

    /// A zero operand of [`DistBsr::spmv`] (owned entries, then ghosts), on the host.
    pub fn new_vector(&self) -> Vector {
        let layout = self.pattern.layout.clone();
        let n = layout.len();
        Vector::from_vec_with_layout(layout, vec![0.0; n]).expect("length of the layout")
    }

    /// A zero owned-only operand (no ghost tail), on the host.
    pub fn new_owned_vector(&self) -> Vector {
        let layout = self.pattern.owned_layout.clone();
        let n = layout.len();
        Vector::from_vec_with_layout(layout, vec![0.0; n]).expect("length of the layout")
    }

    /// A zero owned-only operand (no ghost tail) where the matrix lives.
    pub fn owned_zeros(&self) -> Result<Vector, LinalgError> {
        Vector::zeros_with_layout(&self.device(), self.pattern.owned_layout.clone())
    }

    /// A zero result vector (owned rows) where the matrix lives.
    pub fn row_zeros(&self) -> Result<Vector, LinalgError> {
        Vector::zeros_with_layout(&self.device(), self.pattern.row_layout.clone())
    }

    /// A zero result vector (owned rows), on the host.
    pub fn new_row_vector(&self) -> Vector {
        let layout = self.pattern.row_layout.clone();
        let n = layout.len();
        Vector::from_vec_with_layout(layout, vec![0.0; n]).expect("length of the layout")
    }

    /// `y = A x` for owned-only vectors (`x`: [`DistPattern::owned_layout`], `y`:
    /// [`DistPattern::row_layout`]), as Krylov solvers call it: `x` is copied into a scratch
    /// vector whose ghost tail the halo plan fills, then as [`DistBsr::spmv`] (the same values).
    pub fn apply(&self, x: &Vector, y: &mut Vector) -> Result<(), LinalgError> {
        let p = &self.pattern;
        if !x.layout().matches(&p.owned_layout) {
            return Err(LinalgError::LayoutMismatch {
                what: "DistBsr::apply: x",
            });
        }
        if !y.layout().matches(&p.row_layout) {
            return Err(LinalgError::LayoutMismatch {
                what: "DistBsr::apply: y",
            });
        }
        if let Some((ctx, diag)) = self.diag.cuda() {
            return self.apply_device(ctx, diag, x, y);
        }
        let mut scratch = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        scratch[..p.owned_layout.owned()].copy_from_slice(x.host()?);
        self.multiply(&mut scratch, &mut y.host_mut()?[..p.row_layout.owned()])
    }

    /// `y = A x` on the owned entries of `y` (its ghosts are left as they are). Fills the ghost
    /// tail of `x` from the owners (the halo plan) while the diagonal part multiplies the owned
    /// entries, then adds the off-diagonal part's product. `x` has [`DistPattern::layout`];
    /// `y` has [`DistPattern::row_layout`] or, for a square matrix, `x`'s layout. Per row: the
    /// diagonal blocks in column order, then the ghost blocks.
    pub fn spmv(&self, x: &mut Vector, y: &mut Vector) -> Result<(), LinalgError> {
        let p = &self.pattern;
        if !x.layout().matches(&p.layout) {
            return Err(LinalgError::LayoutMismatch {
                what: "DistBsr::spmv: x",
            });
        }
        let square_operand = p.row_layout.matches(&p.owned_layout) && y.layout().matches(&p.layout);
        if !(y.layout().matches(&p.row_layout) || square_operand) {
            return Err(LinalgError::LayoutMismatch {
                what: "DistBsr::spmv: y",
            });
        }
        self.multiply(x.host_mut()?, &mut y.host_mut()?[..p.row_layout.owned()])
    }

    /// [`DistBsr::apply`] on the GPU: the diagonal product is queued behind the packed send
    /// values' download and runs while MPI moves them; the ghosts' product is added after.
    /// The host's operations in the host's order: the same bits.
    fn apply_device(
        &self,
        ctx: &Arc<cuda::CudaContext>,
        diag: &cuda::DeviceBsr,
        x: &Vector,
        y: &mut Vector,
    ) -> Result<(), LinalgError> {
        crate::device::check_same_device("DistBsr::apply: x", &self.device(), &x.device())?;
        crate::device::check_same_device("DistBsr::apply: y", &self.device(), &y.device())?;
        let offd = self.offd.device_bsr()?;
        let mut halo = self.device_halo().ok_or(LinalgError::Unsupported {
            what: "DistBsr::apply without device halo buffers",
            device: self.device().name(),
        })?;
        let xb = x.device_buffer()?;
        let yb = y.device_buffer_mut()?;
        // peer exchanges leave their wait to the off-diagonal product, which starts with it
        let (ghosts, wait) =
            halo.fill_ghosts_deferred(xb, || cuda::spmv(ctx, diag, 1.0, xb, 0.0, &mut *yb))?;
        if self.pattern.offd.nnz() > 0 {
            // the non-empty rows' sums added to their rows: `sum + y` either way, the bits of
            // the plain product
            if let Some(o) = &self.offd_rows {
                let added =
                    cuda::spmv_rows_add(ctx, offd, &o.pattern, &o.rows, ghosts, yb, wait.as_ref())?;
                if added.is_some() {
                    return Ok(());
                }
            }
        }
        // no kernel took the wait: queued alone before anything reads the ghosts
        if let Some(w) = wait {
            w.queue(ctx)?;
        }
        if self.pattern.offd.nnz() == 0 {
            return Ok(());
        }
        cuda::spmv(ctx, offd, 1.0, ghosts, 1.0, yb)
    }

    /// Collective. `y = y + sign A x` for owned-only vectors (as [`DistBsr::apply`]'s; `y` has
    /// [`DistPattern::row_layout`]), in the bits of [`DistBsr::apply`] into a scratch vector
    /// followed by `ops::axpy(sign, ..)`: the residual update `r -= A x` (`sign = -1`) and the
    /// coarse correction `x += P e` (`sign = 1`) of a V-cycle. The scratch is the matrix's own,
    /// made at the first call where the matrix lives and reused: later calls allocate nothing.
    pub fn add_scaled_product(
        &self,
        sign: f64,
        x: &Vector,
        y: &mut Vector,
    ) -> Result<(), LinalgError> {
        let mut product = self.product.lock().unwrap_or_else(|p| p.into_inner());
        let mut t = match product.take() {
            Some(t) => t,
            None => self.row_zeros()?,
        };
        self.apply(x, &mut t)?;
        crate::ops::axpy(sign, &t, y)?;
        *product = Some(t);
        Ok(())
    }

    /// `y_owned = A x` with `x` of owned entries then ghosts: the halo exchange fills the
    /// ghosts while the diagonal part multiplies, then the off-diagonal part adds.
    fn multiply(&self, x: &mut [f64], y_owned: &mut [f64]) -> Result<(), LinalgError> {
        let (br, bc) = (self.pattern.block_rows, self.pattern.block_cols);
        let owned = self.pattern.owned_layout.owned();
        let diag = self.diag.host()?;
        let offd = self.offd.host()?;
        self.pattern.halo.update_overlapped(x, &mut |x_owned| {
            host::spmv::spmv(
                &self.pattern.diag,
                br,
                bc,
                diag,
                1.0,
                x_owned,
                None,
                y_owned,
            )
        })?;
        if self.pattern.offd.nnz() > 0 {
            host::spmv::spmv(
                &self.pattern.offd,
                br,
                bc,
                offd,
                1.0,
                &x[owned..],
                Some(1.0),
                y_owned,
            );
        }
        Ok(())
    }
}

/// The checks of [`DistBsr::owned_from_local`] and [`DistBsr::local_from_owned`]: both vectors
/// where the matrix lives, `local` of the operand layout's length, `owned` owned-only.
fn check_local_pair(
    what: &'static str,
    a: &DistBsr,
    local: &Vector,
    owned: &Vector,
) -> Result<(), LinalgError> {
    crate::device::check_same_device(what, &a.device(), &local.device())?;
    crate::device::check_same_device(what, &a.device(), &owned.device())?;
    let p = &a.pattern;
    if local.len() != p.layout.len() {
        return Err(LinalgError::LengthMismatch {
            what,
            expected: p.layout.len(),
            found: local.len(),
        });
    }
    if owned.len() != p.owned_layout.owned() {
        return Err(LinalgError::LengthMismatch {
            what,
            expected: p.owned_layout.owned(),
            found: owned.len(),
        });
    }
    Ok(())
}
