//! [`DistPattern`] and [`DistBsr`]: a rank's owned block rows, split into the diagonal part
//! (owned columns) and the off-diagonal part (ghost columns), and their SpMV.

use std::sync::{Arc, Mutex};

use crate::backend::host;
use crate::dist::{HaloPlan, RowPartition};
use crate::{BlockPattern, Bsr, Layout, LinalgError, Vector};

/// The symbolic part of a distributed square block matrix on one rank: the diagonal and
/// off-diagonal patterns of its owned block rows, where each input entry goes, the halo plan of
/// the ghost columns and the layout of the vectors it multiplies (owned blocks, then ghosts).
///
/// Invariants: `diag` is `n_owned x n_owned` (columns `global - first owned`), `offd` is
/// `n_owned x ghosts` (columns index `halo.ghosts()`, ascending global ids); `entry_slot[k]`
/// is input entry `k`'s slot in `diag` (`< diag.nnz()`) or `diag.nnz() +` its slot in `offd`.
#[derive(Debug)]
pub struct DistPattern {
    partition: RowPartition,
    block_size: usize,
    diag: Arc<BlockPattern>,
    offd: Arc<BlockPattern>,
    entry_slot: Vec<u32>,
    halo: Arc<HaloPlan>,
    layout: Arc<Layout>,
    owned_layout: Arc<Layout>,
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
        let comm = partition.comm().clone();
        let n_owned = partition.n_owned();
        let owned = partition.owned_range();
        let global_len = partition.global_len();
        let check = check_rows(n_owned, row_ptr, cols, global_len, block_size);
        comm::agree(&*comm, check)?;

        let mut ghosts: Vec<u64> = cols
            .iter()
            .copied()
            .filter(|g| !owned.contains(g))
            .collect();
        ghosts.sort_unstable();
        ghosts.dedup();

        // Each row sorted by global column: owned columns map to `g - first`, ghosts to their
        // compact index; both keep ascending order, as patterns require.
        let mut entry_slot = vec![0u32; cols.len()];
        let (mut d_ptr, mut o_ptr) = (vec![0usize], vec![0usize]);
        let (mut d_col, mut o_col) = (Vec::new(), Vec::new());
        let mut d_entries = Vec::new();
        let mut o_entries = Vec::new();
        let mut row: Vec<(u64, usize)> = Vec::new();
        for i in 0..n_owned {
            row.clear();
            row.extend((row_ptr[i]..row_ptr[i + 1]).map(|k| (cols[k], k)));
            row.sort_unstable();
            for &(g, k) in &row {
                if owned.contains(&g) {
                    d_col.push((g - owned.start) as u32);
                    d_entries.push(k);
                } else {
                    let c = ghosts.binary_search(&g).expect("collected");
                    o_col.push(c as u32);
                    o_entries.push(k);
                }
            }
            d_ptr.push(d_col.len());
            o_ptr.push(o_col.len());
        }
        let n_diag = d_col.len();
        for (slot, &k) in d_entries.iter().enumerate() {
            entry_slot[k] = slot as u32;
        }
        for (slot, &k) in o_entries.iter().enumerate() {
            entry_slot[k] = (n_diag + slot) as u32;
        }
        let diag = BlockPattern::new_trusted(n_owned, n_owned, d_ptr, d_col);
        let offd = BlockPattern::new_trusted(n_owned, ghosts.len(), o_ptr, o_col);
        let n_ghosts = ghosts.len();
        let halo = HaloPlan::new(&partition, ghosts, block_size)?;
        let layout = Layout::new(
            n_owned * block_size,
            n_ghosts * block_size,
            owned.start * block_size as u64,
            global_len * block_size as u64,
            comm.clone(),
        )?;
        let owned_layout = Layout::new(
            n_owned * block_size,
            0,
            owned.start * block_size as u64,
            global_len * block_size as u64,
            comm,
        )?;
        Ok(Arc::new(Self {
            partition,
            block_size,
            diag: Arc::new(diag),
            offd: Arc::new(offd),
            entry_slot,
            halo: Arc::new(halo),
            layout: Arc::new(layout),
            owned_layout: Arc::new(owned_layout),
        }))
    }

    /// Collective. The owned rows of a rank-local matrix `local` whose first
    /// `partition.n_owned()` block rows are the owned rows and whose block column `c` is global
    /// index `col_globals[c]` (the matrix assembled on a rank's part of a mesh with one layer of
    /// ghost cells: complete owned rows, no communication). Values follow with
    /// [`DistBsr::set_from_local`].
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
        Self::new(partition, block_size, row_ptr, &cols)
    }

    /// The row partition.
    pub fn partition(&self) -> &RowPartition {
        &self.partition
    }

    /// Rows (and columns) per block.
    pub fn block_size(&self) -> usize {
        self.block_size
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

    /// Layout of the vectors the matrix multiplies: owned entries, then the ghosts.
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Layout of owned-only vectors (no ghost tail), those of [`DistBsr::apply`] and of the
    /// Krylov solvers.
    pub fn owned_layout(&self) -> &Arc<Layout> {
        &self.owned_layout
    }

    /// Input entries (blocks) the pattern was built from.
    pub fn n_entries(&self) -> usize {
        self.entry_slot.len()
    }
}

fn check_rows(
    n_owned: usize,
    row_ptr: &[usize],
    cols: &[u64],
    global_len: u64,
    block_size: usize,
) -> Result<(), String> {
    if block_size == 0 {
        return Err("distributed pattern: block size 0".into());
    }
    if row_ptr.len() != n_owned + 1 || row_ptr[0] != 0 || row_ptr[n_owned] != cols.len() {
        return Err(format!(
            "distributed pattern: row_ptr of {} entries (first {:?}, last {:?}) for {n_owned} owned rows and {} entries",
            row_ptr.len(),
            row_ptr.first(),
            row_ptr.last(),
            cols.len()
        ));
    }
    let mut seen: Vec<u64> = Vec::new();
    for i in 0..n_owned {
        if row_ptr[i] > row_ptr[i + 1] {
            return Err(format!(
                "distributed pattern: row_ptr decreases at owned row {i}"
            ));
        }
        seen.clear();
        seen.extend_from_slice(&cols[row_ptr[i]..row_ptr[i + 1]]);
        seen.sort_unstable();
        if let Some(&g) = seen.iter().find(|&&g| g >= global_len) {
            return Err(format!(
                "distributed pattern: owned row {i}: column {g} beyond the {global_len} global block columns"
            ));
        }
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "distributed pattern: owned row {i}: column {} twice",
                w[0]
            ));
        }
    }
    Ok(())
}

/// A rank's owned block rows of a distributed square block matrix: the diagonal part (a
/// [`Bsr`] on the owned columns) and the off-diagonal part (a [`Bsr`] on the ghost columns),
/// on a shared [`DistPattern`].
#[derive(Debug)]
pub struct DistBsr {
    pattern: Arc<DistPattern>,
    diag: Bsr,
    offd: Bsr,
    /// Owned entries and ghosts of the operand of [`DistBsr::apply`] (one call at a time).
    scratch: Mutex<Vec<f64>>,
}

impl DistBsr {
    /// Zero values on `pattern` (host).
    pub fn zeros(pattern: Arc<DistPattern>) -> Self {
        let bs = pattern.block_size;
        Self {
            diag: Bsr::zeros(pattern.diag.clone(), bs, bs),
            offd: Bsr::zeros(pattern.offd.clone(), bs, bs),
            scratch: Mutex::new(vec![0.0; pattern.layout.len()]),
            pattern,
        }
    }

    /// Values of the input entries, entry-major (`block_size^2` per entry, blocks row-major).
    pub fn from_values(pattern: Arc<DistPattern>, values: &[f64]) -> Result<Self, LinalgError> {
        let mut m = Self::zeros(pattern);
        m.set_values(values)?;
        Ok(m)
    }

    /// Overwrites the values from the input entries (as [`DistBsr::from_values`]); local.
    pub fn set_values(&mut self, values: &[f64]) -> Result<(), LinalgError> {
        let bl = self.pattern.block_size * self.pattern.block_size;
        let expected = self.pattern.n_entries() * bl;
        if values.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "DistBsr::set_values",
                expected,
                found: values.len(),
            });
        }
        let n_diag = self.pattern.diag.nnz();
        let diag = self.diag.host_mut()?;
        let offd = self.offd.host_mut()?;
        for (k, &slot) in self.pattern.entry_slot.iter().enumerate() {
            let slot = slot as usize;
            let src = &values[k * bl..(k + 1) * bl];
            if slot < n_diag {
                diag[slot * bl..(slot + 1) * bl].copy_from_slice(src);
            } else {
                let s = slot - n_diag;
                offd[s * bl..(s + 1) * bl].copy_from_slice(src);
            }
        }
        Ok(())
    }

    /// Overwrites the values from the rank-local matrix the pattern was built from
    /// ([`DistPattern::from_local`]): its first rows' values, in slot order.
    pub fn set_from_local(&mut self, local: &Bsr) -> Result<(), LinalgError> {
        let bl = self.pattern.block_size * self.pattern.block_size;
        let n = self.pattern.n_entries() * bl;
        let values = local.host()?;
        if values.len() < n || local.block_len() != bl {
            return Err(LinalgError::LengthMismatch {
                what: "DistBsr::set_from_local: local values",
                expected: n,
                found: values.len(),
            });
        }
        self.set_values(&values[..n])
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

    /// A zero vector of the matrix's layout (owned entries, then ghosts), on the host.
    pub fn new_vector(&self) -> Vector {
        let layout = self.pattern.layout.clone();
        let n = layout.len();
        Vector::from_vec_with_layout(layout, vec![0.0; n]).expect("length of the layout")
    }

    /// A zero owned-only vector (no ghost tail), on the host.
    pub fn new_owned_vector(&self) -> Vector {
        let layout = self.pattern.owned_layout.clone();
        let n = layout.len();
        Vector::from_vec_with_layout(layout, vec![0.0; n]).expect("length of the layout")
    }

    /// `y = A x` for owned-only vectors (layout [`DistPattern::owned_layout`]), as Krylov
    /// solvers call it: `x` is copied into a scratch vector whose ghost tail the halo plan
    /// fills, then as [`DistBsr::spmv`] (the same values).
    pub fn apply(&self, x: &Vector, y: &mut Vector) -> Result<(), LinalgError> {
        let layout = &self.pattern.owned_layout;
        for (what, v) in [("DistBsr::apply: x", x), ("DistBsr::apply: y", &*y)] {
            if !v.layout().matches(layout) {
                return Err(LinalgError::LayoutMismatch { what });
            }
        }
        let mut scratch = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let owned = layout.owned();
        scratch[..owned].copy_from_slice(x.host()?);
        self.multiply(&mut scratch, &mut y.host_mut()?[..owned])
    }

    /// `y = A x` on the owned entries of `y` (its ghosts are left as they are). Fills the ghost
    /// tail of `x` from the owners (the halo plan) while the diagonal part multiplies the owned
    /// entries, then adds the off-diagonal part's product. Both vectors have the matrix's
    /// layout. Per row: the diagonal blocks in column order, then the ghost blocks.
    pub fn spmv(&self, x: &mut Vector, y: &mut Vector) -> Result<(), LinalgError> {
        let layout = &self.pattern.layout;
        for (what, v) in [("DistBsr::spmv: x", &*x), ("DistBsr::spmv: y", &*y)] {
            if !v.layout().matches(layout) {
                return Err(LinalgError::LayoutMismatch { what });
            }
        }
        let owned = layout.owned();
        self.multiply(x.host_mut()?, &mut y.host_mut()?[..owned])
    }

    /// `y_owned = A x` with `x` of owned entries then ghosts: the halo exchange fills the
    /// ghosts while the diagonal part multiplies, then the off-diagonal part adds.
    fn multiply(&self, x: &mut [f64], y_owned: &mut [f64]) -> Result<(), LinalgError> {
        let bs = self.pattern.block_size;
        let owned = y_owned.len();
        let diag = self.diag.host()?;
        let offd = self.offd.host()?;
        self.pattern.halo.update_overlapped(x, &mut |x_owned| {
            host::spmv::spmv(
                &self.pattern.diag,
                bs,
                bs,
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
                bs,
                bs,
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
