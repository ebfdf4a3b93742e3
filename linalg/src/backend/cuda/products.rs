//! Numeric sparse block products on the device from the host's symbolic plans
//! (`linalg/cuda/spgemm.cu`): the SpGEMM `C = A B` (prolongator smoothing's `A P0`) and the
//! Galerkin product `A_c = P^T A P` as `W = A P` followed by `P^T W`.
//!
//! The device plans upload nothing: they take the device mirrors of the host plans' patterns
//! (the operands' and the output's, which the device matrices on them already hold) and build
//! what the host plans do not keep on the device (module `symbolic`): `W`'s pattern, `P^T`'s
//! pattern and slot map, each output slot's row and the pair lists. Each equals what the host
//! would build, entry for entry (tested). Plans made on the device ([`DeviceSpgemmPlan::from_patterns`],
//! [`DevicePtapPlan::from_patterns`], behind `SpgemmPlan::new_on` and `PtapPlan::new_on`)
//! build the output pattern there too.
//!
//! Owner computes: each output entry is summed by one thread in a fixed order and written once
//! (no atomics); a thread takes one row of a block (searching kernels) or the rows and
//! columns [`pair_split`] gives it (pair lists). `W` and every SpGEMM block are bit-identical to the host;
//! `A_c` sums over fine rows ascending, as the host's product does: bit-identical too.

use std::sync::{Arc, Mutex};

use cudarc::driver::PushKernelArg;

use super::context::driver_err;
use super::kernels::{grid_1d, SPGEMM, SPGEMM_FMAD, SYMBOLIC};
use super::matrix::{check_shape, DevicePattern};
use super::spmv::DeviceTransposeMap;
use super::symbolic;
use super::{CudaContext, DeviceBsr, DeviceBuffer, DeviceValue};
use crate::device::device_pattern;
use crate::{BlockPattern, LinalgError, PtapPlan, SpgemmPlan};

/// Operand searches in flight per thread of the product kernels (`ILP` in spgemm.cu): 4 where
/// the inner block dimension is 6 (coarse levels: 10-28 % faster on ex56), 1 for the fine
/// level's 3 (there 4 was 3 % slower, measured on an H100).
fn ilp(inner: usize) -> i64 {
    if inner >= 6 {
        4
    } else {
        1
    }
}

/// [`ilp`] of a `spgemm_nn` pass whose operands are both fp32 (coarse levels of mixed-precision
/// AMG): 1, since 4 and 2 spill 8 bytes with fp32 operands of 6x6 blocks (measured by
/// `every_kernel_compiles_without_spills`).
fn ilp_nn<L: DeviceValue, R: DeviceValue>(inner: usize) -> i64 {
    match (L::F32, R::F32) {
        (1, 1) => 1,
        _ => ilp(inner),
    }
}

/// Largest share of the device's memory the pair lists of one Galerkin plan may take
/// (`1 / PAIRS_MEMORY_SHARE` of the total, and `1 / PAIRS_FREE_SHARE` of what is free when the
/// plan first runs): above it the product keeps its operand searches. The lists take 8 bytes per
/// term: at 66^3 nodes about 366 MB on the fine level (2.5 GB allowed on an H100: the fine level
/// up to about 125^3), at 250^3 about 21 GB, which the capacity run on one H100 cannot spare.
const PAIRS_MEMORY_SHARE: usize = 32;
const PAIRS_FREE_SHARE: usize = 8;

/// Whether a plan uses pair lists: decided at its first product from the term counts.
#[derive(Debug)]
enum PairState {
    Undecided,
    Searching,
    Pairs(Box<DevicePairs>),
}

/// Pair lists of both passes, built on the device at the first product that uses them.
#[derive(Debug)]
struct DevicePairs {
    w: [DeviceBuffer<u32>; 3],
    ac: [DeviceBuffer<u32>; 3],
}

impl PairState {
    fn bytes(&self) -> usize {
        match self {
            PairState::Pairs(p) => p.bytes(),
            _ => 0,
        }
    }
}

impl DevicePairs {
    /// The lists of `W = A P` and of `A_c = P^T W` (the host's `term_pairs` lists).
    /// `terms`: the numbers of terms of the two products.
    fn build(
        ctx: &CudaContext,
        plan: &DevicePtapPlan,
        terms: [u64; 2],
    ) -> Result<Self, LinalgError> {
        let (a, p) = &plan.operands;
        Ok(Self {
            w: device_term_pairs(ctx, &plan.w, a, None, p, terms[0])?,
            ac: device_term_pairs(
                ctx,
                &plan.ac,
                &plan.pt.pattern,
                Some(&plan.pt.slots),
                &plan.w.pattern,
                terms[1],
            )?,
        })
    }

    fn bytes(&self) -> usize {
        self.w.iter().chain(&self.ac).map(|b| b.bytes()).sum()
    }
}

/// Threads per block of the product kernels (`__launch_bounds__(128)` in spgemm.cu).
const THREADS: u32 = 128;

/// An output pattern with the block row of every slot (threads map to slots directly).
#[derive(Debug)]
struct OutputPattern {
    pattern: Arc<DevicePattern>,
    slot_row: DeviceBuffer<u32>,
}

impl OutputPattern {
    /// A pattern on the device with its slots' rows (found there).
    fn on_device(ctx: &CudaContext, pattern: Arc<DevicePattern>) -> Result<Self, LinalgError> {
        Ok(Self {
            slot_row: symbolic::slot_rows(ctx, &pattern)?,
            pattern,
        })
    }

    fn bytes(&self) -> usize {
        self.pattern.bytes() + self.slot_row.bytes()
    }
}

fn dims(p: &DevicePattern) -> (usize, usize, usize) {
    (p.n_block_rows(), p.n_block_cols(), p.nnz())
}

fn host_dims(p: &BlockPattern) -> (usize, usize, usize) {
    (p.n_block_rows(), p.n_block_cols(), p.nnz())
}

/// `c = a b` on uploaded patterns: `spgemm_nn` with `AR x AK` times `AK x BC` blocks.
#[allow(clippy::too_many_arguments)]
fn launch_nn<L: DeviceValue, R: DeviceValue, O: DeviceValue>(
    ctx: &CudaContext,
    fmad: bool,
    out: &OutputPattern,
    a: &DeviceBsr<L>,
    b: &DeviceBsr<R>,
    c_vals: &mut DeviceBuffer<O>,
) -> Result<(), LinalgError> {
    let defines = [
        ("AR", a.block_rows() as i64),
        ("AK", a.block_cols() as i64),
        ("BC", b.block_cols() as i64),
        ("ILP", ilp_nn::<L, R>(a.block_cols())),
        ("L_F32", L::F32),
        ("R_F32", R::F32),
        ("O_F32", O::F32),
    ];
    let src = if fmad { &SPGEMM_FMAD } else { &SPGEMM };
    let f = ctx.function(src, &defines, "spgemm_nn")?;
    let nnz = out.pattern.nnz() as u32;
    let (ap, bp) = (a.pattern(), b.pattern());
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&nnz)
        .arg(&out.slot_row)
        .arg(&out.pattern.col_idx)
        .arg(&ap.row_ptr)
        .arg(&ap.col_idx)
        .arg(a.values())
        .arg(&bp.row_ptr)
        .arg(&bp.col_idx)
        .arg(b.values())
        .arg(&mut *c_vals);
    // One thread per (slot, row of the block).
    let threads = nnz as u64 * a.block_rows() as u64;
    // SAFETY: arguments match `spgemm_nn`; shapes and patterns checked by the callers.
    unsafe { l.launch(grid_1d(threads, THREADS)) }.map_err(driver_err("spgemm_nn"))?;
    Ok(())
}

/// The pair lists of `C = L R` (`term_pairs::term_pairs`'s lists, built on the device: one
/// thread per slot of `C` counts its terms, their prefix sum on the device, and the same search
/// writes them), each left entry reported as itself or, with `left_slot`, as
/// `left_slot[entry]`. `terms`: the product's number of terms ([`symbolic::term_count`]); a
/// listed total below it means that a term lands outside `c` (an error).
fn device_term_pairs(
    ctx: &CudaContext,
    c: &OutputPattern,
    l: &DevicePattern,
    left_slot: Option<&DeviceBuffer<u32>>,
    r: &DevicePattern,
    terms: u64,
) -> Result<[DeviceBuffer<u32>; 3], LinalgError> {
    let nnz = c.pattern.nnz();
    let n_slots = nnz as u32;
    let mut count = ctx.zeros::<u32>(nnz.max(1))?;
    let f = ctx.function(&SYMBOLIC, &[], "term_pairs_slot_count")?;
    let mut k = ctx.stream().launch_builder(&f);
    k.arg(&n_slots)
        .arg(&c.slot_row)
        .arg(&c.pattern.col_idx)
        .arg(&l.row_ptr)
        .arg(&l.col_idx)
        .arg(&r.row_ptr)
        .arg(&r.col_idx)
        .arg(&mut count);
    // SAFETY: the patterns are well formed (mirrors of checked host patterns, or built from them
    // on the device) with `l`'s columns inside `r`'s rows (checked by the product's caller) and
    // `c`'s rows `l`'s; `slot_row` and `count` hold a value per slot of `c`.
    unsafe { k.launch(grid_1d(nnz as u64, THREADS)) }
        .map_err(driver_err("term_pairs_slot_count"))?;
    let (ptr, listed) = symbolic::exclusive_scan(
        ctx,
        &count,
        nnz,
        "device product pair lists: number of terms",
    )?;
    drop(count);
    if u64::from(listed) != terms {
        return Err(LinalgError::PatternMismatch {
            what: "device product pair lists: a term lands outside the output pattern",
        });
    }
    let mut first = ctx.zeros::<u32>((listed as usize).max(1))?;
    let mut second = ctx.zeros::<u32>((listed as usize).max(1))?;
    let name = match left_slot {
        None => "term_pairs_slot_fill",
        Some(_) => "term_pairs_slot_fill_mapped",
    };
    let f = ctx.function(&SYMBOLIC, &[], name)?;
    let mut k = ctx.stream().launch_builder(&f);
    k.arg(&n_slots)
        .arg(&c.slot_row)
        .arg(&c.pattern.col_idx)
        .arg(&l.row_ptr)
        .arg(&l.col_idx);
    if let Some(slots) = left_slot {
        k.arg(slots);
    }
    k.arg(&r.row_ptr)
        .arg(&r.col_idx)
        .arg(&ptr)
        .arg(&mut first)
        .arg(&mut second);
    // SAFETY: as above (`left_slot` holds a value per entry of `l`); slot `s` writes its
    // `ptr[s + 1] - ptr[s]` terms (the count pass's, the same search) at `ptr[s]`, inside
    // `first` / `second`, which hold every term.
    unsafe { k.launch(grid_1d(nnz as u64, THREADS)) }.map_err(driver_err(name))?;
    Ok([ptr, first, second])
}

/// The symbolic SpGEMM plan on the device: the pattern of `C` with each slot's row.
#[derive(Debug)]
pub struct DeviceSpgemmPlan {
    a: (usize, usize, usize),
    b: (usize, usize, usize),
    c: OutputPattern,
    /// The products' pair lists (`ptr`, `first`, `second`) for a plan marked
    /// [`SpgemmPlan::for_repeated_products`]: built on the device at its first product where
    /// they fit the memory rule of the Galerkin plans; else the products search their operands.
    pairs: Mutex<SpgemmPairs>,
}

/// The pair lists of a [`DeviceSpgemmPlan`].
#[derive(Debug)]
enum SpgemmPairs {
    /// Marked for repeated products, not decided yet.
    Undecided,
    Searching,
    Lists([DeviceBuffer<u32>; 3]),
}

impl DeviceSpgemmPlan {
    /// The device form of a host plan: the device mirror of its output pattern (uploaded once
    /// per host pattern, and shared with the matrices on it, which usually made it already)
    /// with each slot's row found on the device; its pair lists, if any, are built at the first
    /// product.
    pub fn upload(ctx: &CudaContext, plan: &SpgemmPlan) -> Result<Self, LinalgError> {
        Ok(Self {
            a: host_dims(plan.a()),
            b: host_dims(plan.b()),
            c: OutputPattern::on_device(ctx, device_pattern(ctx, plan.pattern())?)?,
            pairs: Mutex::new(if plan.repeated() {
                SpgemmPairs::Undecided
            } else {
                SpgemmPairs::Searching
            }),
        })
    }

    /// The plan of `C = A B` built on the device from the device patterns of `A` and `B`:
    /// `C`'s pattern (the host's `crate::spgemm::product_pattern` entry for entry) with each
    /// slot's row; pair lists as [`Self::upload`]'s. The caller checks that `A`'s block columns
    /// are `B`'s block rows.
    pub(crate) fn from_patterns(
        ctx: &CudaContext,
        a: &DevicePattern,
        b: &DevicePattern,
        repeated: bool,
    ) -> Result<Self, LinalgError> {
        let c = Arc::new(symbolic::product_pattern(ctx, a, b)?);
        Ok(Self {
            a: dims(a),
            b: dims(b),
            c: OutputPattern::on_device(ctx, c)?,
            pairs: Mutex::new(if repeated {
                SpgemmPairs::Undecided
            } else {
                SpgemmPairs::Searching
            }),
        })
    }

    /// Whether the products run on pair lists (decided at the first product).
    #[cfg(test)]
    pub fn has_pair_lists(&self) -> bool {
        matches!(
            *self.pairs.lock().unwrap_or_else(|p| p.into_inner()),
            SpgemmPairs::Lists(_)
        )
    }

    /// Pattern of `C` on the device.
    pub fn pattern(&self) -> &Arc<DevicePattern> {
        &self.c.pattern
    }

    /// The pair lists, downloaded (tests compare them with the host's).
    #[cfg(test)]
    pub(crate) fn downloaded_pair_lists(&self, ctx: &CudaContext) -> Option<[Vec<u32>; 3]> {
        match &*self.pairs.lock().unwrap_or_else(|p| p.into_inner()) {
            SpgemmPairs::Lists(l) => Some(l.each_ref().map(|b| ctx.download(b).unwrap())),
            _ => None,
        }
    }

    /// Recomputes `c = a b`, bit-identical to [`crate::spgemm_numeric`]. `a`, `b` must be on the
    /// plan's patterns, `c` on [`Self::pattern`] with `a.block_rows() x b.block_cols()` blocks.
    pub fn numeric(
        &self,
        ctx: &CudaContext,
        a: &DeviceBsr,
        b: &DeviceBsr,
        c: &mut DeviceBsr,
    ) -> Result<(), LinalgError> {
        if dims(a.pattern()) != self.a {
            return Err(LinalgError::PatternMismatch {
                what: "device spgemm: A",
            });
        }
        if dims(b.pattern()) != self.b {
            return Err(LinalgError::PatternMismatch {
                what: "device spgemm: B",
            });
        }
        if dims(c.pattern()) != dims(&self.c.pattern) {
            return Err(LinalgError::PatternMismatch {
                what: "device spgemm: C",
            });
        }
        check_shape(
            "device spgemm: B (block rows)",
            b,
            a.block_cols(),
            b.block_cols(),
        )?;
        check_shape("device spgemm: C", c, a.block_rows(), b.block_cols())?;
        let mut pairs = self.pairs.lock().unwrap_or_else(|p| p.into_inner());
        if let SpgemmPairs::Undecided = *pairs {
            let terms = symbolic::term_count(ctx, a.pattern(), b.pattern())? as usize;
            let bytes = 8 * terms + 4 * (self.c.pattern.nnz() + 1);
            let (free, total) = ctx.memory_info()?;
            *pairs = if bytes <= total / PAIRS_MEMORY_SHARE && bytes <= free / PAIRS_FREE_SHARE {
                SpgemmPairs::Lists(device_term_pairs(
                    ctx,
                    &self.c,
                    a.pattern(),
                    None,
                    b.pattern(),
                    terms as u64,
                )?)
            } else {
                SpgemmPairs::Searching
            };
        }
        match &*pairs {
            SpgemmPairs::Lists(lists) => {
                let nn = [
                    ("AR", a.block_rows() as i64),
                    ("AK", a.block_cols() as i64),
                    ("BC", b.block_cols() as i64),
                    ("L_F32", 0),
                    ("R_F32", 0),
                    ("O_F32", 0),
                ];
                launch_pairs(
                    ctx,
                    false,
                    "spgemm_nn_pairs",
                    &nn,
                    lists,
                    a.values(),
                    b.values(),
                    c.values_mut(),
                    a.block_rows(),
                    PAIR_THREADS_PER_SM * ctx.multiprocessors() as usize,
                )
            }
            _ => launch_nn(ctx, false, &self.c, a, b, c.values_mut()),
        }
    }
}

/// The Galerkin plan on the device: `P^T`'s pattern and slot map and the pattern of `W = A P`
/// (built on the device from the device mirrors of `A`'s and `P`'s patterns: the host plan
/// keeps no `W`, and its `P^T` stays on the host), the pattern of `A_c` (its device mirror, shared
/// with the coarse operator), and the `W` workspace (taken from the device pool for each numeric call and returned after it, so that one
/// level's `W` at most is alive; [`DevicePtapPlan::keep_workspace`] keeps it).
#[derive(Debug)]
pub struct DevicePtapPlan {
    a: (usize, usize, usize),
    p: (usize, usize, usize),
    pt: DeviceTransposeMap,
    w: OutputPattern,
    ac: OutputPattern,
    w_values: Mutex<Option<DeviceBuffer<f64>>>,
    /// Keep `W` between products (benchmarks of the kernel alone) instead of returning it to
    /// the pool after each one (the default: only one level's `W` is alive at a time).
    keep_w: bool,
    /// The device patterns of `A` and `P` (the host patterns' mirrors): the pair lists' operands.
    operands: (Arc<DevicePattern>, Arc<DevicePattern>),
    pairs: Mutex<PairState>,
    /// Threads the pair-list passes aim for; `None`: [`PAIR_THREADS_PER_SM`] per multiprocessor.
    pair_threads: Option<usize>,
}

impl DevicePtapPlan {
    /// The device form of a host plan, built on the device from the device mirrors of its
    /// patterns of `A`, `P` and `A_c` (each uploaded once per host pattern and shared with the
    /// matrices on it, which in a set-up on the device hold them already): `P^T`'s pattern and
    /// slot map, `W`'s pattern and each output slot's row are built there, equal to the host's.
    pub fn upload(ctx: &CudaContext, plan: &PtapPlan) -> Result<Self, LinalgError> {
        let a = device_pattern(ctx, plan.a_pattern())?;
        let p = device_pattern(ctx, plan.p_pattern())?;
        let ac = device_pattern(ctx, plan.pattern())?;
        Self::from_patterns(ctx, a, p, Some(ac))
    }

    /// The plan of `P^T A P` built on the device from the device patterns of `A` and `P`, with
    /// `A_c`'s pattern `ac` or, for `None`, the one built there (`P^T W`, the host's
    /// [`PtapPlan::pattern`] entry for entry). Only the sizes of what each pass builds come back
    /// to the host; nothing goes up. The caller checks the shapes (`A` square with `P`'s block
    /// rows).
    pub(crate) fn from_patterns(
        ctx: &CudaContext,
        a: Arc<DevicePattern>,
        p: Arc<DevicePattern>,
        ac: Option<Arc<DevicePattern>>,
    ) -> Result<Self, LinalgError> {
        let (pt, pt_slots) = symbolic::transpose_pattern(ctx, &p)?;
        let w = Arc::new(symbolic::product_pattern(ctx, &a, &p)?);
        let ac = match ac {
            Some(ac) => ac,
            None => Arc::new(symbolic::product_pattern(ctx, &pt, &w)?),
        };
        Ok(Self {
            a: dims(&a),
            p: dims(&p),
            pt: DeviceTransposeMap::from_parts(Arc::new(pt), pt_slots, dims(&p)),
            w: OutputPattern::on_device(ctx, w)?,
            ac: OutputPattern::on_device(ctx, ac)?,
            w_values: Mutex::new(None),
            keep_w: false,
            operands: (a, p),
            pairs: Mutex::new(PairState::Undecided),
            pair_threads: None,
        })
    }

    /// Aims the pair-list passes at `threads` threads instead of the default (tests cover every
    /// split of the output blocks with it: all split the same sums, so all give the same bits).
    #[cfg(test)]
    pub(crate) fn with_pair_threads(mut self, threads: usize) -> Self {
        self.pair_threads = Some(threads);
        self
    }

    /// What the plan built on the device, downloaded (tests compare it with the host's):
    /// `W`'s pattern and slot rows, `P^T`'s pattern and slot map, `A_c`'s slot rows, and the
    /// pair lists of both passes once a product made them.
    #[cfg(test)]
    pub(crate) fn downloaded(&self, ctx: &CudaContext) -> DownloadedPtapPlan {
        let pairs = match &*self.pairs.lock().unwrap_or_else(|p| p.into_inner()) {
            PairState::Pairs(p) => Some([
                p.w.each_ref().map(|b| ctx.download(b).unwrap()),
                p.ac.each_ref().map(|b| ctx.download(b).unwrap()),
            ]),
            _ => None,
        };
        DownloadedPtapPlan {
            w: self.w.pattern.download(ctx).unwrap(),
            w_rows: ctx.download(&self.w.slot_row).unwrap(),
            pt: self.pt.pattern.download(ctx).unwrap(),
            pt_slots: ctx.download(&self.pt.slots).unwrap(),
            ac_rows: ctx.download(&self.ac.slot_row).unwrap(),
            pairs,
        }
    }

    /// Keeps the `W` workspace between products (see the field's note).
    #[cfg_attr(not(feature = "kernel-bench"), allow(dead_code))] // examples/cuda_bench.rs
    pub fn keep_workspace(mut self) -> Self {
        self.keep_w = true;
        self
    }

    /// Pattern of `A_c` on the device (make `A_c` with [`DeviceBsr::zeros`] on it).
    pub fn pattern(&self) -> &Arc<DevicePattern> {
        &self.ac.pattern
    }

    /// The `P^T` map, for the restriction `y = P^T x` ([`super::spmv_transpose`]).
    pub fn restriction_map(&self) -> &DeviceTransposeMap {
        &self.pt
    }

    /// Blocks of `W = A P`.
    #[cfg_attr(not(feature = "kernel-bench"), allow(dead_code))] // examples/cuda_bench.rs
    pub fn w_nnz(&self) -> usize {
        self.w.pattern.nnz()
    }

    /// Device bytes of the plan, the `W` workspace included once allocated (`A_c`'s pattern left
    /// out: it is the host pattern's mirror, shared with the coarse operator).
    #[cfg_attr(not(feature = "kernel-bench"), allow(dead_code))] // examples/cuda_bench.rs
    pub fn bytes(&self) -> usize {
        let w = self
            .w_values
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map_or(0, |b| b.bytes());
        let pairs = self.pairs.lock().unwrap_or_else(|p| p.into_inner()).bytes();
        self.pt.bytes() + self.w.bytes() + self.ac.slot_row.bytes() + w + pairs
    }

    /// Recomputes `ac = P^T A P` (`A`: `b x b` blocks, `P`: `b x c`, `A_c`: `c x c`). `a` and `p`
    /// must be on the plan's patterns, `ac` on [`Self::pattern`]. Each of `A`, `P`, `A_c` may be
    /// stored in fp64 or fp32 (mixed-precision AMG: fp32 `P` and `A_c`); `W = A P` and every
    /// sum are fp64, an fp32 `A_c` is rounded once.
    pub fn numeric<TA: DeviceValue, TP: DeviceValue, TC: DeviceValue>(
        &self,
        ctx: &CudaContext,
        a: &DeviceBsr<TA>,
        p: &DeviceBsr<TP>,
        ac: &mut DeviceBsr<TC>,
    ) -> Result<(), LinalgError> {
        self.numeric_with(ctx, false, a, p, ac)
    }

    /// [`Self::numeric`], with FMA contraction if `fmad` (benchmarks measure both).
    pub fn numeric_with<TA: DeviceValue, TP: DeviceValue, TC: DeviceValue>(
        &self,
        ctx: &CudaContext,
        fmad: bool,
        a: &DeviceBsr<TA>,
        p: &DeviceBsr<TP>,
        ac: &mut DeviceBsr<TC>,
    ) -> Result<(), LinalgError> {
        if dims(a.pattern()) != self.a {
            return Err(LinalgError::PatternMismatch {
                what: "device ptap: A",
            });
        }
        if dims(p.pattern()) != self.p {
            return Err(LinalgError::PatternMismatch {
                what: "device ptap: P",
            });
        }
        if dims(ac.pattern()) != dims(&self.ac.pattern) {
            return Err(LinalgError::PatternMismatch {
                what: "device ptap: A_c",
            });
        }
        let (b, c) = (p.block_rows(), p.block_cols());
        check_shape("device ptap: A", a, b, b)?;
        check_shape("device ptap: A_c", ac, c, c)?;
        let w_len = self.w.pattern.nnz() * b * c;
        let mut guard = self.w_values.lock().unwrap_or_else(|p| p.into_inner());
        if guard.as_ref().map(|w| w.len()) != Some(w_len) {
            *guard = Some(ctx.uninit(w_len)?); // W is fp64 in every precision
        }
        let w_vals = guard.as_mut().expect("W workspace allocated just above");
        let mut pairs = self.pairs.lock().unwrap_or_else(|p| p.into_inner());
        if let PairState::Undecided = *pairs {
            *pairs = self.decide_pairs(ctx)?;
        }
        if let PairState::Pairs(pairs) = &*pairs {
            let target = self
                .pair_threads
                .unwrap_or(PAIR_THREADS_PER_SM * ctx.multiprocessors() as usize);
            let nn = [
                ("AR", b as i64),
                ("AK", b as i64),
                ("BC", c as i64),
                ("L_F32", TA::F32),
                ("R_F32", TP::F32),
                ("O_F32", 0),
            ];
            let (av, pv) = (a.values(), p.values());
            launch_pairs(
                ctx,
                fmad,
                "spgemm_nn_pairs",
                &nn,
                &pairs.w,
                av,
                pv,
                w_vals,
                b,
                target,
            )?;
            let tn = [
                ("AR", c as i64),
                ("AK", b as i64),
                ("BC", c as i64),
                ("L_F32", TP::F32),
                ("R_F32", 0),
                ("O_F32", TC::F32),
            ];
            let out = ac.values_mut();
            launch_pairs(
                ctx,
                fmad,
                "ptw_tn_pairs",
                &tn,
                &pairs.ac,
                pv,
                w_vals,
                out,
                c,
                target,
            )?;
        } else {
            self.launch_searching(ctx, fmad, a, p, ac, w_vals)?;
        }
        if !self.keep_w {
            // stream-ordered free: back to the pool once the product has run
            *guard = None;
        }
        Ok(())
    }

    /// Pair lists if both passes' lists fit in the allowed share of the device's memory.
    fn decide_pairs(&self, ctx: &CudaContext) -> Result<PairState, LinalgError> {
        let (a, p) = &self.operands;
        let terms = [
            symbolic::term_count(ctx, a, p)?,
            symbolic::term_count(ctx, &self.pt.pattern, &self.w.pattern)?,
        ];
        let bytes = 8 * (terms[0] + terms[1]) as usize
            + 4 * (self.w.pattern.nnz() + self.ac.pattern.nnz() + 2);
        let (free, total) = ctx.memory_info()?;
        Ok(
            if bytes <= total / PAIRS_MEMORY_SHARE && bytes <= free / PAIRS_FREE_SHARE {
                PairState::Pairs(Box::new(DevicePairs::build(ctx, self, terms)?))
            } else {
                PairState::Searching
            },
        )
    }

    /// The two passes with operand searches (plans whose pair lists would take too much memory).
    fn launch_searching<TA: DeviceValue, TP: DeviceValue, TC: DeviceValue>(
        &self,
        ctx: &CudaContext,
        fmad: bool,
        a: &DeviceBsr<TA>,
        p: &DeviceBsr<TP>,
        ac: &mut DeviceBsr<TC>,
        w_vals: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        let (b, c) = (p.block_rows(), p.block_cols());
        launch_nn(ctx, fmad, &self.w, a, p, w_vals)?;

        let defines = [
            ("AR", c as i64),
            ("AK", b as i64),
            ("BC", c as i64),
            ("ILP", ilp(b)),
            ("L_F32", TP::F32),
            ("R_F32", 0),
            ("O_F32", TC::F32),
        ];
        let src = if fmad { &SPGEMM_FMAD } else { &SPGEMM };
        let f = ctx.function(src, &defines, "ptw_tn")?;
        let nnz = self.ac.pattern.nnz() as u32;
        let wp = &self.w.pattern;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&nnz)
            .arg(&self.ac.slot_row)
            .arg(&self.ac.pattern.col_idx)
            .arg(&self.pt.pattern.row_ptr)
            .arg(&self.pt.pattern.col_idx)
            .arg(&self.pt.slots)
            .arg(p.values())
            .arg(&wp.row_ptr)
            .arg(&wp.col_idx)
            .arg(&*w_vals)
            .arg(ac.values_mut());
        let threads = nnz as u64 * c as u64;
        // SAFETY: arguments match `ptw_tn`; shapes and patterns checked above.
        unsafe { l.launch(grid_1d(threads, THREADS)) }.map_err(driver_err("ptw_tn"))?;
        Ok(())
    }
}

/// [`DevicePtapPlan::downloaded`]'s parts.
#[cfg(test)]
pub(crate) struct DownloadedPtapPlan {
    pub w: BlockPattern,
    pub w_rows: Vec<u32>,
    pub pt: BlockPattern,
    pub pt_slots: Vec<u32>,
    pub ac_rows: Vec<u32>,
    /// `(ptr, first, second)` of `W = A P` and of `A_c = P^T W`.
    pub pairs: Option<[[Vec<u32>; 3]; 2]>,
}

/// Threads per multiprocessor a pair-list pass should have at least (2,048 resident at most on
/// current GPUs): about 8 full waves. Fewer, longer sums (coarse levels) leave the device idle
/// while each thread walks its terms; measured on an H100 at 66^3 (all levels, hot): 2 M threads
/// 4.72 ms, 4 M 4.86, 8 M 5.06, one thread per block row everywhere 5.42.
const PAIR_THREADS_PER_SM: usize = 16_384;

/// Accumulators of a pair-list thread, at most one block row's worth (`cols`): whole 3 x 6 blocks
/// per thread (18 accumulators and the right block in registers) cut the occupancy of the fine
/// level's `W = A P` from 70 % to 29 % and made it 9 % slower (H100, 66^3).
fn accumulators_fit(rpt: usize, cpt: usize, cols: usize) -> bool {
    rpt * cpt <= cols
}

/// How a pair-list pass over `slots` output blocks of `rows x cols` (inner dimension `inner`)
/// splits each block over threads: `(rows per thread, columns per thread)` (`RPT`, `CPT` in
/// spgemm.cu), divisors of the block's dimensions. Among the splits that give at least `target`
/// threads, the one that loads the fewest operand values per term and slot (a thread loads its
/// rows of the left block and its columns of the right one); where none does, one entry per
/// thread.
fn pair_split(
    slots: usize,
    rows: usize,
    cols: usize,
    inner: usize,
    target: usize,
) -> (usize, usize) {
    let divisors = |n: usize| (1..=n).filter(move |&d| n.is_multiple_of(d));
    let threads = |rpt: usize, cpt: usize| slots * (rows / rpt) * (cols / cpt);
    let loads = |rpt: usize, cpt: usize| (rows / rpt) * (cols / cpt) * inner * (rpt + cpt);
    divisors(rows)
        .flat_map(|rpt| divisors(cols).map(move |cpt| (rpt, cpt)))
        .filter(|&(rpt, cpt)| accumulators_fit(rpt, cpt, cols))
        .filter(|&(rpt, cpt)| threads(rpt, cpt) >= target)
        .min_by_key(|&(rpt, cpt)| (loads(rpt, cpt), threads(rpt, cpt)))
        .unwrap_or((1, 1))
}

/// One pass on pair lists (`spgemm_nn_pairs` or `ptw_tn_pairs`) over output blocks of `rows`
/// rows, split over threads by [`pair_split`] for `target` threads.
#[allow(clippy::too_many_arguments)]
fn launch_pairs<L: DeviceValue, R: DeviceValue, O: DeviceValue>(
    ctx: &CudaContext,
    fmad: bool,
    kernel: &'static str,
    defines: &[(&'static str, i64)],
    pairs: &[DeviceBuffer<u32>; 3],
    left: &DeviceBuffer<L>,
    right: &DeviceBuffer<R>,
    out: &mut DeviceBuffer<O>,
    rows: usize,
    target: usize,
) -> Result<(), LinalgError> {
    let src = if fmad { &SPGEMM_FMAD } else { &SPGEMM };
    let nnz = (pairs[0].len() - 1) as u32;
    let define = |name: &str| {
        defines
            .iter()
            .find(|(k, _)| *k == name)
            .map_or(1, |&(_, v)| v as usize)
    };
    let (cols, inner) = (define("BC"), define("AK"));
    let (rpt, cpt) = pair_split(nnz as usize, rows, cols, inner, target);
    let mut all = defines.to_vec();
    all.extend([("RPT", rpt as i64), ("CPT", cpt as i64)]);
    let f = ctx.function(src, &all, kernel)?;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&nnz)
        .arg(&pairs[0])
        .arg(&pairs[1])
        .arg(&pairs[2])
        .arg(left)
        .arg(right)
        .arg(out);
    let threads = nnz as u64 * ((rows / rpt) * (cols / cpt)) as u64;
    // SAFETY: arguments match the kernel; the lists were built on the plan's patterns, whose
    // shapes the caller checked.
    unsafe { l.launch(grid_1d(threads, THREADS)) }.map_err(driver_err(kernel))?;
    Ok(())
}

#[cfg(test)]
mod split_tests {
    use super::pair_split;

    /// The fewest loads among splits that reach the target (at most a block row of accumulators
    /// per thread), one entry per thread where none does.
    #[test]
    fn pair_split_loads_least_among_splits_that_reach_the_target() {
        // the fine level's W: 3 x 6 blocks, inner 3, many slots: 3 x 2 entries per thread load
        // 45 values per term and slot, a block row per thread 63
        assert_eq!(pair_split(3_000_000, 3, 6, 3, 2_000_000), (3, 2));
        // A_c there: 6 x 6, 287k slots, 2 M threads wanted (at least 7 per slot): 3 x 3 groups of
        // 2 x 2 load 108 values per term, 12 groups of 3 x 1 or 1 x 3 load 144
        assert_eq!(pair_split(287_000, 6, 6, 3, 2_000_000), (2, 2));
        // few slots: single entries
        assert_eq!(pair_split(676, 6, 6, 6, 2_000_000), (1, 1));
        // no target: a block row (or a square of as many entries) per thread
        assert_eq!(pair_split(100, 3, 3, 3, 0), (1, 3));
        assert_eq!(pair_split(100, 4, 4, 1, 0), (2, 2));
    }
}
