//! Symbolic phases on the device (`linalg/cuda/symbolic.cu`) from patterns already there: the
//! pattern of a product `C = L R` ([`product_pattern`], the host's
//! `crate::spgemm::product_pattern` entry for entry), the transpose of a pattern with its slot
//! map ([`transpose_pattern`], the host's `crate::transpose::transpose_pattern`), the row of
//! every slot ([`slot_rows`]), where one pattern's blocks sit in another ([`inner_slots`]), the
//! terms of a product ([`term_count`]), the slots of a diagonal ([`diagonal_slots`]) and the
//! prefix sum of counts they share
//! ([`exclusive_scan`]; the pair lists of `products.rs` use it and symbolic.cu's
//! `term_pairs_*` kernels). Only scalars come back to the host (each pass's
//! total, to size what the next one writes); nothing goes up.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::context::driver_err;
use super::kernels::{grid_1d, SYMBOLIC};
use super::matrix::DevicePattern;
use super::{CudaContext, DeviceBuffer};
use crate::{BlockPattern, LinalgError};
use std::sync::Arc;

/// Threads per block of the one-thread-per-row kernels.
const THREADS: u32 = 128;
/// Threads of a warp (`transpose_rank` has a warp per column).
const WARP: u64 = 32;
/// `SCAN_THREADS` and `SCAN_TILE` of symbolic.cu.
const SCAN_THREADS: u32 = 256;
const SCAN_TILE: u64 = 256 * 8;

/// Prefix sums of the first `n` counts of `counts`: `n + 1` offsets (the last is the total) and
/// the total. Errors naming `what` if the total does not fit `u32` (device offsets are `u32`).
pub(crate) fn exclusive_scan(
    ctx: &CudaContext,
    counts: &DeviceBuffer<u32>,
    n: usize,
    what: &'static str,
) -> Result<(DeviceBuffer<u32>, u32), LinalgError> {
    let mut out = ctx.zeros::<u32>(n + 1)?;
    if n == 0 {
        return Ok((out, 0));
    }
    let (tile_offsets, total) = tile_sums(ctx, counts, n)?;
    let total = u32::try_from(total).map_err(|_| LinalgError::DimensionTooLarge {
        what,
        value: total as usize,
    })?;
    let f = ctx.function(&SYMBOLIC, &[], "scan_write")?;
    let n64 = n as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n64).arg(counts).arg(&tile_offsets).arg(&mut out);
    // SAFETY: `counts` holds `n` values, `tile_offsets` a value per tile and the total, `out`
    // `n + 1` values; one block per tile, as `scan_tiles`.
    unsafe { l.launch(tiles(n64)) }.map_err(driver_err("scan_write"))?;
    Ok((out, total))
}

/// The sum of the first `n` counts (u64).
fn sum(ctx: &CudaContext, counts: &DeviceBuffer<u32>, n: usize) -> Result<u64, LinalgError> {
    if n == 0 {
        return Ok(0);
    }
    Ok(tile_sums(ctx, counts, n)?.1)
}

/// One block per tile of `SCAN_TILE` counts.
fn tiles(n: u64) -> LaunchConfig {
    grid_1d(n.div_ceil(SCAN_TILE) * SCAN_THREADS as u64, SCAN_THREADS)
}

/// The exclusive prefix of the tiles' sums (one value per tile, then the total) and the total
/// (downloaded: a scalar). `n > 0`.
fn tile_sums(
    ctx: &CudaContext,
    counts: &DeviceBuffer<u32>,
    n: usize,
) -> Result<(DeviceBuffer<u64>, u64), LinalgError> {
    let n64 = n as u64;
    let n_tiles = n64.div_ceil(SCAN_TILE);
    let mut sums = ctx.zeros::<u64>(n_tiles as usize + 1)?;
    let mut total = ctx.zeros::<u64>(1)?;
    let f = ctx.function(&SYMBOLIC, &[], "scan_tiles")?;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n64).arg(counts).arg(&mut sums);
    // SAFETY: `counts` holds at least `n` values, `sums` a value per tile.
    unsafe { l.launch(tiles(n64)) }.map_err(driver_err("scan_tiles"))?;
    let f = ctx.function(&SYMBOLIC, &[], "scan_tile_sums")?;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n_tiles).arg(&mut sums).arg(&mut total);
    // SAFETY: one block; `sums` holds `n_tiles + 1` values, `total` one.
    unsafe { l.launch(grid_1d(SCAN_THREADS as u64, SCAN_THREADS)) }
        .map_err(driver_err("scan_tile_sums"))?;
    let total = ctx.download(&total)?[0];
    Ok((sums, total))
}

/// `per_row!(ctx, "kernel", rows, [args...])`: launches the one-thread-per-row kernel of
/// symbolic.cu over `rows` rows, the row count first, then `args`; `per_row!(ctx, "kernel",
/// rows, lanes = 32, [args...])` the one-warp-per-row kernel (`warp_row`), and `defines = d`
/// after the lanes compiles the source with the `#define`s `d`.
macro_rules! per_row {
    ($ctx:expr, $name:literal, $rows:expr, [$($arg:expr),* $(,)?]) => {
        per_row!($ctx, $name, $rows, lanes = 1, defines = &[], [$($arg),*])
    };
    ($ctx:expr, $name:literal, $rows:expr, lanes = $lanes:literal, [$($arg:expr),* $(,)?]) => {
        per_row!($ctx, $name, $rows, lanes = $lanes, defines = &[], [$($arg),*])
    };
    ($ctx:expr, $name:literal, $rows:expr, lanes = $lanes:literal, defines = $defines:expr,
     [$($arg:expr),* $(,)?]) => {{
        let f = $ctx.function(&SYMBOLIC, $defines, $name)?;
        let n = $rows as u32;
        let mut l = $ctx.stream().launch_builder(&f);
        l.arg(&n);
        $(l.arg($arg);)*
        // SAFETY: each call site passes the arguments of kernel `$name` in its order (read
        // side by side), on well-formed patterns (offsets and columns inside their buffers)
        // and buffers of the lengths the kernel indexes; a warp-per-row kernel gets whole
        // warps (THREADS is a multiple of 32; the hash kernels' HASH_WARPS warps a block).
        unsafe { l.launch(grid_1d($lanes * $rows as u64, THREADS)) }
            .map_err(driver_err($name))?;
    }};
}

/// `len` zeros; an empty buffer (nothing allocated or set) for `len == 0`.
fn zeros_u32(ctx: &CudaContext, len: usize) -> Result<DeviceBuffer<u32>, LinalgError> {
    if len == 0 {
        return ctx.upload(&[]);
    }
    ctx.zeros(len)
}

/// Checks that `n` fits `u32` with room for the kernels' `NOT_FOUND` marker.
fn check_index(what: &'static str, n: usize) -> Result<(), LinalgError> {
    if n >= u32::MAX as usize {
        return Err(LinalgError::DimensionTooLarge { what, value: n });
    }
    Ok(())
}

/// How [`product_pattern_by`] finds each row's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProductMethod {
    /// A hash table per row in shared memory, a warp a row (many short rows: `A P`); rows of
    /// more distinct columns than a table holds by a merge of `r`'s rows, a thread a row.
    Hash,
    /// A bitmap of the columns per row, a block a row, the bitmap in shared memory where it
    /// fits (few, long rows: `P^T W`).
    Bitmap,
    /// [`ProductMethod::Hash`] with tables of 32 slots: rows of more than 32 columns go to the
    /// merge (tests cover that path with it).
    #[cfg(test)]
    SmallHash,
    /// [`ProductMethod::Bitmap`] with the bitmap in global memory whatever its size (tests).
    #[cfg(test)]
    GlobalBitmap,
}

// The hash kernels take `HASH_WARPS` = 4 warps a block (their tables in shared memory).
const _: () = assert!(THREADS == 4 * WARP as u32);
/// Threads a block of `product_bits_mark` (`BITMAP_THREADS` of symbolic.cu).
const BITMAP_THREADS: u32 = 256;
/// The largest bitmap row kept in shared memory: the 48 KiB a block may take without opting
/// in.
const SHARED_BITMAP_BYTES: usize = 48 * 1024;

/// Words of the bitmap per row for `cols` columns.
fn bitmap_words(cols: usize) -> usize {
    cols.div_ceil(32)
}

/// The method for `l * r`: the bitmap where its words (zeroed, counted and read once each)
/// are at most 4 per block of `l` (`P^T W` and the coarse levels' `A P`: few rows of many
/// blocks), the hash otherwise (the fine level's `A P` and `A P0`, whose bitmap would be
/// 239 MB at 66^3).
fn product_method(l: &DevicePattern, r: &DevicePattern) -> ProductMethod {
    let words = l.n_block_rows() as u64 * bitmap_words(r.n_block_cols()) as u64;
    if l.nnz() > 0 && words <= 4 * l.nnz() as u64 {
        ProductMethod::Bitmap
    } else {
        ProductMethod::Hash
    }
}

/// Pattern of `l * r` (`l`'s block columns must be `r`'s block rows; the caller checks): per
/// row the sorted union of `r`'s rows over `l`'s columns (a count pass, the prefix sum, a fill
/// pass), by the method that suits the shapes (the same pattern either way).
pub(crate) fn product_pattern(
    ctx: &CudaContext,
    l: &DevicePattern,
    r: &DevicePattern,
) -> Result<DevicePattern, LinalgError> {
    product_pattern_by(ctx, l, r, product_method(l, r))
}

/// [`product_pattern`] by `method` (tests check each against the host's).
pub(crate) fn product_pattern_by(
    ctx: &CudaContext,
    l: &DevicePattern,
    r: &DevicePattern,
    method: ProductMethod,
) -> Result<DevicePattern, LinalgError> {
    check_index("device product pattern: block columns", r.n_block_cols())?;
    check_index("device product pattern: block rows", l.n_block_rows())?;
    match method {
        ProductMethod::Hash => Ok(hash_product_pattern(ctx, l, r, &[])?.0),
        ProductMethod::Bitmap => bitmap_product_pattern(ctx, l, r, true),
        #[cfg(test)]
        ProductMethod::SmallHash => Ok(hash_product_pattern(ctx, l, r, SMALL_TABLES)?.0),
        #[cfg(test)]
        ProductMethod::GlobalBitmap => bitmap_product_pattern(ctx, l, r, false),
    }
}

/// The `#define` of [`ProductMethod::SmallHash`]: tables of 32 slots.
#[cfg(test)]
const SMALL_TABLES: &[(&str, i64)] = &[("HASH_CAP", 32)];

/// The rows of `l * r` that [`ProductMethod::SmallHash`]'s tables send to the merge (tests
/// check that the merge runs).
#[cfg(test)]
pub(crate) fn rows_past_small_tables(
    ctx: &CudaContext,
    l: &DevicePattern,
    r: &DevicePattern,
) -> Result<usize, LinalgError> {
    Ok(hash_product_pattern(ctx, l, r, SMALL_TABLES)?.1)
}

/// [`product_pattern`] by a hash table per row (`defines`: the source's, `HASH_CAP` in
/// tests); the rows that do not fit a table, listed by the count pass, by the merge. Also
/// returns how many rows went to the merge.
fn hash_product_pattern(
    ctx: &CudaContext,
    l: &DevicePattern,
    r: &DevicePattern,
    defines: &[(&'static str, i64)],
) -> Result<(DevicePattern, usize), LinalgError> {
    let rows = l.n_block_rows();
    let mut count = ctx.zeros::<u32>(rows.max(1))?;
    let mut full = ctx.zeros::<u32>(rows.max(1))?;
    let mut n_full = ctx.zeros::<u32>(1)?;
    per_row!(
        ctx,
        "product_hash_count",
        rows,
        lanes = 32,
        defines = defines,
        [
            &l.row_ptr,
            &l.col_idx,
            &r.row_ptr,
            &r.col_idx,
            &mut count,
            &mut full,
            &mut n_full
        ]
    );
    let n_full = ctx.download(&n_full)?[0] as usize;
    // the merge's scratch: a (position, column) pair per slot of `l`, only where a row needs it
    let mut state = match n_full {
        0 => None,
        _ => Some(ctx.zeros::<u64>(l.nnz().max(1))?),
    };
    if let Some(state) = state.as_mut() {
        per_row!(
            ctx,
            "product_merge_count",
            n_full,
            [&full, &l.row_ptr, &l.col_idx, &r.row_ptr, &r.col_idx, state, &mut count]
        );
    }
    let (row_ptr, nnz) = exclusive_scan(ctx, &count, rows, "device product pattern: blocks")?;
    drop(count);
    let mut col_idx = zeros_u32(ctx, nnz as usize)?;
    per_row!(
        ctx,
        "product_hash_fill",
        rows,
        lanes = 32,
        defines = defines,
        [
            &l.row_ptr,
            &l.col_idx,
            &r.row_ptr,
            &r.col_idx,
            &row_ptr,
            &mut col_idx
        ]
    );
    if let Some(state) = state.as_mut() {
        per_row!(
            ctx,
            "product_merge_fill",
            n_full,
            [
                &full,
                &l.row_ptr,
                &l.col_idx,
                &r.row_ptr,
                &r.col_idx,
                state,
                &row_ptr,
                &mut col_idx
            ]
        );
    }
    let pattern = DevicePattern::from_parts(rows, r.n_block_cols(), nnz as usize, row_ptr, col_idx);
    Ok((pattern, n_full))
}

/// [`product_pattern`] by a bitmap of columns per row, in shared memory where `shared` and
/// the row's words fit there.
fn bitmap_product_pattern(
    ctx: &CudaContext,
    l: &DevicePattern,
    r: &DevicePattern,
    shared: bool,
) -> Result<DevicePattern, LinalgError> {
    let rows = l.n_block_rows();
    let words = bitmap_words(r.n_block_cols());
    let words32 = u32::try_from(words).map_err(|_| LinalgError::DimensionTooLarge {
        what: "device product pattern: bitmap words per row",
        value: words,
    })?;
    let in_shared = shared && words * 4 <= SHARED_BITMAP_BYTES;
    let mut bitmap = ctx.zeros::<u32>((rows * words).max(1))?;
    let mut count = ctx.zeros::<u32>(rows.max(1))?;
    let f = ctx.function(&SYMBOLIC, &[], "product_bits_mark")?;
    let (n_rows, in_shared32) = (rows as u32, u32::from(in_shared));
    let mut k = ctx.stream().launch_builder(&f);
    k.arg(&n_rows)
        .arg(&l.row_ptr)
        .arg(&l.col_idx)
        .arg(&r.row_ptr)
        .arg(&r.col_idx)
        .arg(&words32)
        .arg(&in_shared32)
        .arg(&mut bitmap)
        .arg(&mut count);
    let config = LaunchConfig {
        grid_dim: (n_rows.max(1), 1, 1),
        block_dim: (BITMAP_THREADS, 1, 1),
        shared_mem_bytes: if in_shared { words32 * 4 } else { 0 },
    };
    // SAFETY: arguments match `product_bits_mark`: a block per row of `l`, `l`'s columns inside
    // `r`'s rows, `r`'s columns below `32 words`, `bitmap` `words` per row of `l` (zeroed),
    // `count` a value per row; the shared bytes hold a row's words where `in_shared`.
    unsafe { k.launch(config) }.map_err(driver_err("product_bits_mark"))?;
    let (row_ptr, nnz) = exclusive_scan(ctx, &count, rows, "device product pattern: blocks")?;
    drop(count);
    let mut col_idx = zeros_u32(ctx, nnz as usize)?;
    per_row!(
        ctx,
        "product_bits_fill",
        rows,
        lanes = 32,
        [&words32, &bitmap, &row_ptr, &mut col_idx]
    );
    Ok(DevicePattern::from_parts(
        rows,
        r.n_block_cols(),
        nnz as usize,
        row_ptr,
        col_idx,
    ))
}

/// Pattern of `p^T` and, per block of it, the slot of `p` holding it: each column's rows
/// ascending, as the host's serial walk lists them.
pub(crate) fn transpose_pattern(
    ctx: &CudaContext,
    p: &DevicePattern,
) -> Result<(DevicePattern, DeviceBuffer<u32>), LinalgError> {
    let (rows, cols) = (p.n_block_rows(), p.n_block_cols());
    check_index("device transpose: block rows", rows)?;
    check_index("device transpose: block columns", cols)?;
    let mut count = ctx.zeros::<u32>(cols.max(1))?;
    per_row!(
        ctx,
        "transpose_count",
        rows,
        [&p.row_ptr, &p.col_idx, &mut count]
    );
    let (t_ptr, nnz) = exclusive_scan(ctx, &count, cols, "device transpose: blocks")?;
    // the counts start again at zero: each column's next free place
    let mut placed = ctx.zeros::<u32>(cols.max(1))?;
    drop(count);
    // the blocks in any order first, then each column's moved to its order by slot
    let mut u_col = zeros_u32(ctx, nnz as usize)?;
    let mut u_slot = zeros_u32(ctx, nnz as usize)?;
    per_row!(
        ctx,
        "transpose_fill",
        rows,
        [
            &p.row_ptr,
            &p.col_idx,
            &t_ptr,
            &mut placed,
            &mut u_col,
            &mut u_slot
        ]
    );
    drop(placed);
    let mut t_col = zeros_u32(ctx, nnz as usize)?;
    let mut t_slot = zeros_u32(ctx, nnz as usize)?;
    let f = ctx.function(&SYMBOLIC, &[], "transpose_rank")?;
    let n_cols = cols as u32;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n_cols)
        .arg(&t_ptr)
        .arg(&u_col)
        .arg(&u_slot)
        .arg(&mut t_col)
        .arg(&mut t_slot);
    // SAFETY: arguments match `transpose_rank`: a warp per column of `t_ptr` (`cols + 1`
    // offsets), each writing its column's blocks at their ranks, inside the column's range of
    // `t_col` / `t_slot` (the blocks of `u_col` / `u_slot` there, one per slot of `p`).
    unsafe { l.launch(grid_1d(cols as u64 * WARP, THREADS)) }
        .map_err(driver_err("transpose_rank"))?;
    Ok((
        DevicePattern::from_parts(cols, rows, nnz as usize, t_ptr, t_col),
        t_slot,
    ))
}

/// The block row of every slot of `p`.
pub(crate) fn slot_rows(
    ctx: &CudaContext,
    p: &DevicePattern,
) -> Result<DeviceBuffer<u32>, LinalgError> {
    let mut rows = zeros_u32(ctx, p.nnz())?;
    per_row!(ctx, "slot_rows", p.n_block_rows(), [&p.row_ptr, &mut rows]);
    Ok(rows)
}

/// For each slot of `outer`, the slot of `inner` holding the same block (`u32::MAX`: none), and
/// the number of `inner`'s blocks found (`inner.nnz()` exactly where `inner` lies inside
/// `outer`). The patterns must have the same block rows (the caller checks).
pub(crate) fn inner_slots(
    ctx: &CudaContext,
    outer: &DevicePattern,
    inner: &DevicePattern,
) -> Result<(DeviceBuffer<u32>, usize), LinalgError> {
    let mut slot = zeros_u32(ctx, outer.nnz())?;
    let mut found = ctx.zeros::<u32>(1)?;
    per_row!(
        ctx,
        "inner_slots",
        outer.n_block_rows(),
        [
            &outer.row_ptr,
            &outer.col_idx,
            &inner.row_ptr,
            &inner.col_idx,
            &mut slot,
            &mut found
        ]
    );
    let found = ctx.download(&found)?[0] as usize;
    Ok((slot, found))
}

/// Number of terms of `l * r` (block products, what the pair lists hold).
pub(crate) fn term_count(
    ctx: &CudaContext,
    l: &DevicePattern,
    r: &DevicePattern,
) -> Result<u64, LinalgError> {
    let rows = l.n_block_rows();
    let mut terms = ctx.zeros::<u32>(rows.max(1))?;
    per_row!(
        ctx,
        "product_terms",
        rows,
        [&l.row_ptr, &l.col_idx, &r.row_ptr, &mut terms]
    );
    sum(ctx, &terms, rows)
}

/// The slot of every diagonal block of the square pattern `p` (`u32::MAX` where a row stores
/// none) and the number of rows without one (the caller checks `p` is square).
pub(crate) fn diagonal_slots(
    ctx: &CudaContext,
    p: &DevicePattern,
) -> Result<(DeviceBuffer<u32>, usize), LinalgError> {
    let rows = p.n_block_rows();
    let mut slot = zeros_u32(ctx, rows)?;
    let mut missing = ctx.zeros::<u32>(1)?;
    per_row!(
        ctx,
        "diagonal_slots",
        rows,
        [&p.row_ptr, &p.col_idx, &mut slot, &mut missing]
    );
    let missing = ctx.download(&missing)?[0] as usize;
    Ok((slot, missing))
}

/// The rows of `[left | right]` (both with the same rows; `right`'s column `c` is column
/// `left.n_block_cols() + c`) with each column `j` renamed `position[j]` and every row ordered
/// by its new columns, made on the GPU: the joined pattern's host copy (its device mirror the
/// one made there: matrices on it upload nothing) and, per slot of it, the slot of `[left's
/// slots; right's slots]` it holds (`right`'s slot `s` is `left.nnz() + s`), left on the
/// device. The patterns' device copies are used where they are there, else uploaded;
/// `position` goes up. An error unless `position` is a permutation of the joined columns (a
/// repeated new column would leave a row's order undefined) or where a count passes `u32`.
pub fn joined_by_position(
    ctx: &CudaContext,
    left: &BlockPattern,
    right: &BlockPattern,
    position: &[u32],
) -> Result<(BlockPattern, DeviceBuffer<u32>), LinalgError> {
    let rows = left.n_block_rows();
    let n_left = left.n_block_cols();
    let n_cols = position.len();
    if right.n_block_rows() != rows || n_cols != n_left + right.n_block_cols() {
        return Err(LinalgError::DimensionMismatch {
            what: "device joined pattern: rows of both parts, or a position per column",
            expected: n_left + right.n_block_cols(),
            found: n_cols,
        });
    }
    if let Some(p) = crate::scan::first_not_permutation(position) {
        return Err(LinalgError::IndexOutOfRange {
            what: "device joined pattern: a position beyond the columns or repeated",
            index: p as usize,
            len: n_cols,
        });
    }
    let nnz = left.nnz() + right.nnz();
    check_index("device joined pattern: blocks", nnz)?;
    check_index("device joined pattern: columns", n_cols)?;
    check_index("device joined pattern: rows", rows)?;
    let (l, r) = (
        crate::device::device_pattern(ctx, left)?,
        crate::device::device_pattern(ctx, right)?,
    );
    let position_dev = ctx.upload(position)?;
    let mut out_ptr = ctx.zeros::<u32>(rows + 1)?;
    let mut out_col = zeros_u32(ctx, nnz)?;
    let mut out_slot = zeros_u32(ctx, nnz)?;
    if rows > 0 {
        let (n_left, l_nnz) = (n_left as u32, left.nnz() as u32);
        per_row!(
            ctx,
            "joined_by_position",
            rows,
            [
                &l.row_ptr,
                &l.col_idx,
                &r.row_ptr,
                &r.col_idx,
                &position_dev,
                &n_left,
                &l_nnz,
                &mut out_ptr,
                &mut out_col,
                &mut out_slot
            ]
        );
    }
    let joined = Arc::new(DevicePattern::from_parts(
        rows, n_cols, nnz, out_ptr, out_col,
    ));
    Ok((joined.download_trusted(ctx)?, out_slot))
}

/// The element blocks' plan of [`crate::CooPlan::of_cell_blocks`] made on the device from the
/// incidence plan (`inc_rows`: its pattern's `n_rows + 1` row offsets; `inc_slot_ptr`,
/// `inc_contrib`: its contributions grouped by slot) and the cells' nodes (`npc` a cell, `n`
/// contributions in all, below `u32::MAX`; the caller checks the cells against the rows): the
/// tangent's pattern, its slot offsets (`nnz + 1`) and its contributions grouped by slot, the
/// host plan's entry for entry.
pub(crate) fn cell_block_plan(
    ctx: &CudaContext,
    n_rows: usize,
    (inc_rows, inc_slot_ptr, inc_contrib): (
        &DeviceBuffer<u32>,
        &DeviceBuffer<u32>,
        &DeviceBuffer<u32>,
    ),
    cells: &DeviceBuffer<u32>,
    npc: usize,
    n: usize,
) -> Result<(DevicePattern, DeviceBuffer<u32>, DeviceBuffer<u32>), LinalgError> {
    check_index("device cell block plan: rows", n_rows)?;
    check_index("device cell block plan: contributions", n)?;
    let npc32 = npc as u32;
    if n_rows == 0 {
        let empty = DevicePattern::from_parts(0, 0, 0, ctx.upload(&[0u32])?, ctx.upload(&[])?);
        return Ok((empty, ctx.upload(&[0u32])?, ctx.upload(&[])?));
    }
    let mut row_len = ctx.zeros::<u32>(n_rows)?;
    per_row!(
        ctx,
        "cell_rows_count",
        n_rows,
        [inc_rows, inc_slot_ptr, &npc32, &mut row_len]
    );
    let (row_start, total) = exclusive_scan(ctx, &row_len, n_rows, "device cell block plan")?;
    if total as usize != n {
        return Err(LinalgError::LengthMismatch {
            what: "device cell block plan: contributions of the incidences",
            expected: n,
            found: total as usize,
        });
    }
    let mut contrib = zeros_u32(ctx, n)?;
    let mut row_nnz = row_len;
    per_row!(
        ctx,
        "cell_rows_fill",
        n_rows,
        lanes = 32,
        [
            inc_rows,
            inc_slot_ptr,
            inc_contrib,
            cells,
            &npc32,
            &row_start,
            &mut contrib,
            &mut row_nnz
        ]
    );
    let (row_ptr, nnz) = exclusive_scan(ctx, &row_nnz, n_rows, "device cell block plan: blocks")?;
    drop(row_nnz);
    let mut col_idx = zeros_u32(ctx, nnz as usize)?;
    let mut slot_ptr = ctx.zeros::<u32>(nnz as usize + 1)?;
    per_row!(
        ctx,
        "cell_rows_slots",
        n_rows,
        lanes = 32,
        [
            &row_start,
            &contrib,
            cells,
            &npc32,
            &row_ptr,
            &mut col_idx,
            &mut slot_ptr
        ]
    );
    let pattern = DevicePattern::from_parts(n_rows, n_rows, nnz as usize, row_ptr, col_idx);
    Ok((pattern, slot_ptr, contrib))
}
