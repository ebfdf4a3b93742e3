//! A two-level smoothed-aggregation preconditioner on several ranks, from the distributed
//! pieces: fine operator `A` ([`DistBsr`]), prolongator `P` (rectangular [`DistBsr`]), the
//! Galerkin coarse operator, point-block Jacobi smoothing, restriction `P^T r` (the transposed
//! parts; contributions to other ranks' coarse entries sent back through `P`'s halo plan), and
//! a redundant dense coarse solve (the coarse operator gathered on every rank once).
//!
//! The V-cycle: `z = 0`, `nu` Jacobi sweeps `z += omega D^{-1} (r - A z)`, coarse correction
//! `z += P A_c^{-1} P^T (r - A z)`, `nu` sweeps again: symmetric, so CG may use it.

use crate::dist_prolongator::GalerkinPlan;
use linalg::dense::DenseFactor;
use linalg::dist::DistBsr;
use linalg::{ops, Bsr, Vector};

use crate::{AmgError, PointBlockJacobi, Preconditioner};

/// `P^T` of a rectangular distributed matrix: its parts transposed once (set-up), applied as
/// `y = diag^T x` plus the other ranks' `offd^T x` contributions to this rank's columns.
#[derive(Debug)]
pub struct DistTranspose {
    diag_t: Bsr,
    offd_t: Bsr,
}

impl DistTranspose {
    /// Transposes the parts of `p` (local).
    pub fn new(p: &DistBsr) -> Result<Self, AmgError> {
        Ok(Self {
            diag_t: linalg::transpose(p.diag())?,
            offd_t: linalg::transpose(p.offd())?,
        })
    }

    /// Collective. `y = P^T x` (`x`: `p`'s row layout, `y`: its owned column layout). The
    /// contributions received from other ranks are added in rank order: bit-identical for a
    /// fixed rank count.
    pub fn apply(&self, p: &DistBsr, x: &Vector, y: &mut Vector) -> Result<(), AmgError> {
        let pattern = p.pattern();
        let halo = pattern.halo();
        let bc = pattern.block_cols();
        // Local parts on plain host vectors (serial layouts), then the exchange.
        let xv = Vector::from_vec(x.host()?.to_vec());
        let mut own = Vector::zeros(self.diag_t.n_rows());
        self.diag_t.spmv(&xv, &mut own)?;
        let mut ghost = Vector::zeros(self.offd_t.n_rows());
        self.offd_t.spmv(&xv, &mut ghost)?;
        let ghost = ghost.to_host_vec()?;
        // Reverse halo: ghost contributions go to their owners; owned blocks receive from the
        // ranks that hold them as ghosts.
        let sends: Vec<(usize, &[f64])> = halo
            .receives()
            .iter()
            .map(|(r, range)| (*r, &ghost[range.start * bc..range.end * bc]))
            .collect();
        let mut buffers: Vec<Vec<f64>> = halo
            .sends()
            .iter()
            .map(|(_, blocks)| vec![0.0; blocks.len() * bc])
            .collect();
        {
            let mut recvs: Vec<(usize, &mut [f64])> = halo
                .sends()
                .iter()
                .zip(buffers.iter_mut())
                .map(|((r, _), b)| (*r, b.as_mut_slice()))
                .collect();
            halo.comm()
                .exchange(&sends, &mut recvs, &mut || ())
                .map_err(linalg::LinalgError::from)?;
        }
        let mut out = own.to_host_vec()?;
        for ((_, blocks), buf) in halo.sends().iter().zip(&buffers) {
            for (i, &b) in blocks.iter().enumerate() {
                let b = b as usize;
                for c in 0..bc {
                    out[b * bc + c] += buf[i * bc + c];
                }
            }
        }
        y.host_mut()?.copy_from_slice(&out);
        Ok(())
    }
}

/// The two-level preconditioner (see the module doc). Borrowed operators; built once.
#[derive(Debug)]
pub struct DistTwoLevel<'a> {
    a: &'a DistBsr,
    p: &'a DistBsr,
    pt: DistTranspose,
    pbj: PointBlockJacobi,
    omega: f64,
    sweeps: usize,
    coarse: DenseFactor,
    /// First global coarse entry of this rank and its count.
    coarse_owned: std::ops::Range<usize>,
}

impl<'a> DistTwoLevel<'a> {
    /// Collective. `a`: the fine operator, `p`: the prolongator, `ac`: the Galerkin coarse
    /// operator (`P^T A P`, gathered here onto every rank and factored densely), `omega` and
    /// `sweeps`: the Jacobi smoothing.
    pub fn new(
        a: &'a DistBsr,
        p: &'a DistBsr,
        ac: &DistBsr,
        omega: f64,
        sweeps: usize,
    ) -> Result<Self, AmgError> {
        let cp = ac.pattern();
        let k = cp.block_size();
        let coarse = gather_factor(ac)?;
        let owned = cp.partition().owned_range();
        Ok(Self {
            a,
            p,
            pt: DistTranspose::new(p)?,
            pbj: PointBlockJacobi::new(a.diag())?,
            omega,
            sweeps,
            coarse,
            coarse_owned: owned.start as usize * k..owned.end as usize * k,
        })
    }

    /// `sweeps` of `z += omega D^{-1} (r - A z)`.
    fn smooth(&self, r: &Vector, z: &mut Vector, t: &mut Vector) -> Result<(), AmgError> {
        for _ in 0..self.sweeps {
            self.a.apply(z, t)?;
            ops::axpby(1.0, r, -1.0, t)?;
            self.pbj.apply_scaled(self.omega, t, 1.0, z)?;
        }
        Ok(())
    }
}

impl Preconditioner for DistTwoLevel<'_> {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        z.fill(0.0)?;
        let mut t = r.zeros_like()?;
        self.smooth(r, z, &mut t)?;
        // Coarse correction.
        self.a.apply(z, &mut t)?;
        ops::axpby(1.0, r, -1.0, &mut t)?;
        let mut rc = self.p.new_owned_vector();
        self.pt.apply(self.p, &t, &mut rc)?;
        let comm = self.p.pattern().partition().comm().clone();
        let whole: Vec<f64> = comm
            .allgatherv_f64(rc.host()?)
            .map_err(linalg::LinalgError::from)?
            .concat();
        let mut xc = Vector::from_vec(whole);
        self.coarse.solve_in_place(&mut xc)?;
        let mut xc_owned = self.p.new_owned_vector();
        xc_owned
            .host_mut()?
            .copy_from_slice(&xc.host()?[self.coarse_owned.clone()]);
        let mut correction = self.p.new_row_vector();
        self.p.apply(&xc_owned, &mut correction)?;
        ops::axpy(1.0, &correction, z)?;
        self.smooth(r, z, &mut t)
    }
}

/// One level of a [`DistHierarchy`]: its operator and, above the coarsest, the prolongator
/// from the next level.
#[derive(Debug)]
struct DistLevel {
    a: DistBsr,
    pbj: PointBlockJacobi,
    p: Option<(DistBsr, DistTranspose, GalerkinPlan)>,
}

/// A distributed smoothed-aggregation hierarchy built from the distributed pieces level after
/// level (strength graph, aggregates, tentative prolongator, smoothing, Galerkin product), until
/// the coarse operator has at most `coarse_limit` unknowns, which are gathered and factored on
/// every rank; its V-cycle (Jacobi smoothing) is a [`Preconditioner`].
#[derive(Debug)]
pub struct DistHierarchy {
    levels: Vec<DistLevel>,
    coarse: DenseFactor,
    omega: f64,
    sweeps: usize,
}

/// Options of [`DistHierarchy::new`].
#[derive(Debug, Clone, Copy)]
pub struct DistHierarchyParams {
    /// Prolongator smoothing weight (`P = P0 - omega_p D^{-1} A P0`).
    pub omega_p: f64,
    /// Jacobi smoothing weight and sweeps (before and after the coarse correction).
    pub omega: f64,
    pub sweeps: usize,
    /// Largest coarse operator (unknowns) solved directly.
    pub coarse_limit: usize,
    pub max_levels: usize,
}

impl DistHierarchy {
    /// Collective. `a`: the fine operator; `serial_ids`: the serial ids of its owned and ghost
    /// vertices; `nns`: the owned vertices' near-null rows (`bs x k` each, row-major).
    pub fn new(
        a: DistBsr,
        owned_serial_ids: &[u64],
        nns: Vec<f64>,
        k: usize,
        params: &DistHierarchyParams,
    ) -> Result<Self, AmgError> {
        use crate::aggregation::MisDistance;
        use crate::dist_aggregation::{dist_aggregate, dist_strength_graph};
        use crate::dist_prolongator::dist_smooth_prolongator;
        use crate::dist_tentative::dist_tentative_prolongator;

        let mut levels = Vec::new();
        let mut a = a;
        let mut serial: Vec<u64> = owned_serial_ids.to_vec();
        let mut nns = nns;
        loop {
            let bs = a.pattern().block_size();
            let unknowns = a.pattern().partition().global_len() as usize * bs;
            let pbj = PointBlockJacobi::new(a.diag())?;
            if unknowns <= params.coarse_limit || levels.len() + 1 >= params.max_levels {
                let coarse = gather_factor(&a)?;
                levels.push(DistLevel { a, pbj, p: None });
                return Ok(Self {
                    levels,
                    coarse,
                    omega: params.omega,
                    sweeps: params.sweeps,
                });
            }
            let g = dist_strength_graph(&a, 0.0, &serial)?;
            let labels = dist_aggregate(&g, MisDistance::One, bs, k)?;
            let fine = a.pattern().partition().clone();
            let t = dist_tentative_prolongator(&g, &labels, &nns, bs, k, &fine)?;
            let p = dist_smooth_prolongator(&a, &g, &t, &pbj, params.omega_p)?;
            let mut galerkin = GalerkinPlan::new(&a, &g, &p, &t.coarse_serial_ids)?;
            let (ac, _) = galerkin.product(&a, &p)?;
            let pt = DistTranspose::new(&p)?;
            serial = t.coarse_serial_ids.clone();
            nns = t.coarse_nns.clone();
            levels.push(DistLevel {
                a,
                pbj,
                p: Some((p, pt, galerkin)),
            });
            a = ac;
        }
    }

    /// Collective. A hot update: new values of the fine operator (the same pattern), the
    /// prolongators kept; recomputes the Galerkin products, smoother diagonals and the coarse
    /// factor. Returns the prolongator values this rank sent: 0, since no `P` changed (the
    /// `P_oth` copies are reused).
    pub fn update(&mut self, a: DistBsr) -> Result<usize, AmgError> {
        let mut next = Some(a);
        let mut sent = 0;
        for level in &mut self.levels {
            level.a = next.take().expect("an operator for every level");
            level.pbj = PointBlockJacobi::new(level.a.diag())?;
            match &mut level.p {
                Some((p, _, galerkin)) => {
                    let (ac, s) = galerkin.product(&level.a, p)?;
                    sent += s;
                    next = Some(ac);
                }
                None => self.coarse = gather_factor(&level.a)?,
            }
        }
        Ok(sent)
    }

    /// Number of levels (the coarsest solved directly).
    pub fn n_levels(&self) -> usize {
        self.levels.len()
    }

    /// Global unknowns of each level, finest first.
    pub fn level_unknowns(&self) -> Vec<usize> {
        self.levels
            .iter()
            .map(|l| l.a.pattern().partition().global_len() as usize * l.a.pattern().block_size())
            .collect()
    }

    fn smooth(
        &self,
        l: &DistLevel,
        r: &Vector,
        z: &mut Vector,
        t: &mut Vector,
    ) -> Result<(), AmgError> {
        for _ in 0..self.sweeps {
            l.a.apply(z, t)?;
            ops::axpby(1.0, r, -1.0, t)?;
            l.pbj.apply_scaled(self.omega, t, 1.0, z)?;
        }
        Ok(())
    }

    fn cycle(&self, level: usize, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        let l = &self.levels[level];
        z.fill(0.0)?;
        let Some((p, pt, _)) = &l.p else {
            let comm = l.a.pattern().partition().comm().clone();
            let whole: Vec<f64> = comm
                .allgatherv_f64(r.host()?)
                .map_err(linalg::LinalgError::from)?
                .concat();
            let mut x = Vector::from_vec(whole);
            self.coarse.solve_in_place(&mut x)?;
            let first = l.a.pattern().owned_layout().global_offset() as usize;
            let n = z.len();
            z.host_mut()?.copy_from_slice(&x.host()?[first..first + n]);
            return Ok(());
        };
        let mut t = r.zeros_like()?;
        self.smooth(l, r, z, &mut t)?;
        l.a.apply(z, &mut t)?;
        ops::axpby(1.0, r, -1.0, &mut t)?;
        let mut rc = p.new_owned_vector();
        pt.apply(p, &t, &mut rc)?;
        let mut zc = rc.zeros_like()?;
        self.cycle(level + 1, &rc, &mut zc)?;
        let mut correction = p.new_row_vector();
        p.apply(&zc, &mut correction)?;
        ops::axpy(1.0, &correction, z)?;
        self.smooth(l, r, z, &mut t)
    }
}

impl Preconditioner for DistHierarchy {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        self.cycle(0, r, z)
    }
}

/// Collective: the whole of a (small) distributed square operator on every rank, factored.
fn gather_factor(ac: &DistBsr) -> Result<DenseFactor, AmgError> {
    let cp = ac.pattern();
    let k = cp.block_size();
    let kk = k * k;
    let comm = cp.partition().comm().clone();
    let first = cp.partition().owned_range().start;
    let ghosts = cp.halo().ghosts();
    let mut mine = Vec::new();
    for (m, ghost_cols) in [(ac.diag(), None), (ac.offd(), Some(ghosts))] {
        let pat = m.pattern();
        for r in 0..pat.n_block_rows() {
            for s in pat.row_ptr()[r]..pat.row_ptr()[r + 1] {
                let c = u64::from(pat.col_idx()[s]);
                let gc = ghost_cols.map_or(first + c, |g: &[u64]| g[c as usize]);
                mine.extend([(first + r as u64) as f64, gc as f64]);
                mine.extend_from_slice(m.host_block(s)?);
            }
        }
    }
    let all = comm
        .allgatherv_f64(&mine)
        .map_err(linalg::LinalgError::from)?;
    let n = cp.partition().global_len() as usize * k;
    let mut dense = vec![0.0; n * n];
    for msg in &all {
        for rec in msg.chunks(2 + kk) {
            let (r, c) = (rec[0] as usize, rec[1] as usize);
            for i in 0..k {
                for j in 0..k {
                    dense[(r * k + i) * n + c * k + j] = rec[2 + i * k + j];
                }
            }
        }
    }
    Ok(DenseFactor::factor_dense(&dense, n)?)
}
