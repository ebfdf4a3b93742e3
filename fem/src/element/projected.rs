//! The projected-volume-ratio formulation: volumetric locking removed by condensing the volume
//! change element by element (mean dilatation for Q1, Q2-P1 for Q2; the displacement form of
//! Simo-Taylor-Pister's three-field method, as F-bar-patch / Abaqus C3D8H / deal.II step-44).
//!
//! In each cell, `Theta = Pi v` is the L2 projection (over the reference volume, with the cell's
//! Gauss rule) of the volume measure `v` onto `P_k` in the reference-cell coordinates `xi`
//! (`k = 0`: constants for Q1, `k = 1`: `1, xi, eta, zeta` for Q2). Every point then uses a
//! modified gradient whose volume measure is `Theta`:
//! - finite strain (every model but linear): `v = J = det F`, `F_bar = (Theta / J)^{1/3} F`;
//! - linear material (stays linear in `u`, B-bar): `v = tr h`,
//!   `h_bar = h + (Theta - tr h) / 3 I`.
//!
//! The cell energy is `sum_q wd_q psi(F_bar_q)`: a potential, so the residual is its gradient and
//! the tangent is symmetric. With `e(F, Theta) = psi(F_bar)` at a point, the residual is
//! `r_a = sum_q wd_q (e_F + Pi(e_Theta) dv/dF) grad N_a` (the projection is symmetric in the
//! weighted inner product), and the tangent is a local part per point
//! `e_FF + Pi(e_Theta) d2v/dF2` plus, from the projection, `Y Z^T + Z Y^T + Z G Z^T` with
//! `Z_i = sum wd psi_i B^T dv/dF`, `Y_i = sum wd psi_i B^T e_FTheta`, `G_ij = sum wd psi_i psi_j
//! e_ThetaTheta` over the orthonormal modes `psi_i` (rank at most 2 for Q1, 8 for Q2).
//!
//! A homogeneous deformation has constant `v`, so `Theta = v` and every formula reduces to the
//! displacement formulation's: the patch test passes on any cell.

#[cfg(test)]
mod tests;

use nalgebra::Matrix3;

use super::{
    add_body_force, add_internal_force, add_material_tangent, fixed, fixed_mut, ElementKernel,
    Tabulation,
};
use crate::error::{FemError, Result};
use crate::load::Load;
use crate::material::{exp_m1, j_minus_one, ln_1p, Material, Tangent};
use crate::quadrature::{Quadrature, MAX_POINTS};

/// Points of the largest Gauss rule.
const MAX_QP: usize = MAX_POINTS * MAX_POINTS * MAX_POINTS;

/// Evaluates `$body` with the constant `$q` bound to a capacity of the per-point buffers that
/// holds `$n_qp` points: 8 (Q1's rule), 27 (Q2's) or the largest rule's, so that a cell's stack
/// buffers are not sized (and zeroed) for 216 points where it has 8.
macro_rules! with_capacity {
    ($n_qp:expr, $q:ident => $body:expr) => {
        if $n_qp <= 8 {
            const $q: usize = 8;
            $body
        } else if $n_qp <= 27 {
            const $q: usize = 27;
            $body
        } else {
            const $q: usize = MAX_QP;
            $body
        }
    };
}
/// Modes of the largest projection space (`1, xi, eta, zeta`).
const MAX_MODES: usize = 4;

/// How an element's volume change enters its energy (the input's `formulation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Formulation {
    /// The standard displacement formulation: `psi(F)` at every quadrature point. Locks
    /// volumetrically as Poisson's ratio nears 1/2 (Q1 markedly, Q2 less).
    #[default]
    Displacement,
    /// The projected volume ratio (mean dilatation for Q1, Q2-P1 for Q2): `psi(F_bar)` with
    /// `F_bar`'s volume ratio the cell's projection of `J` (B-bar for the linear material).
    Projected,
}

/// Poisson's ratio from which displacement-formulation cells of order 1 and 2 lock visibly (the
/// Q1 cantilever of `inputs/cantilever_q1.yaml` is 8 % too stiff at 0.45, 20 % at 0.49 and 40 %
/// at 0.499; Q2 on the same mesh 0.8 % at 0.49 and 1.2 % at 0.499, more on coarse meshes: Cook's
/// membrane on 2 x 2 Q2 cells 30 % at 0.4999). [`Formulation::for_material`] picks the projected
/// formulation from here on.
pub const LOCKING_POISSON_RATIO: [f64; 2] = [0.45, 0.49];

impl Formulation {
    /// Every formulation, in the order the input lists them.
    pub const ALL: [Formulation; 2] = [Formulation::Displacement, Formulation::Projected];

    /// Whether displacement-formulation cells of `order` lock volumetrically with `material`:
    /// its small-strain Poisson's ratio ([`Material::small_strain_poisson_ratio`]) is at least
    /// [`LOCKING_POISSON_RATIO`] of the order, up to round-off in the ratio (`nu = 0.45` given
    /// as Young's modulus and Poisson's ratio comes back as 0.44999999999999996 for some `E`);
    /// never for other orders.
    pub fn locks(order: usize, material: &Material) -> bool {
        order
            .checked_sub(1)
            .and_then(|i| LOCKING_POISSON_RATIO.get(i))
            .is_some_and(|&limit| material.small_strain_poisson_ratio() >= limit - 1e-12)
    }

    /// The formulation of `formulation: auto` for cells of `order` and `material`: projected
    /// where the displacement formulation locks ([`Self::locks`]), displacement otherwise (so a
    /// compressible material keeps the standard element, as Abaqus' C3D8 / C3D8H choice does).
    pub fn for_material(order: usize, material: &Material) -> Formulation {
        if Self::locks(order, material) {
            Formulation::Projected
        } else {
            Formulation::Displacement
        }
    }

    /// The name in the input.
    pub fn name(&self) -> &'static str {
        match self {
            Formulation::Displacement => "displacement",
            Formulation::Projected => "projected",
        }
    }
}

/// The projection space of a kernel, tabulated at the main rule's points.
#[derive(Debug, Clone)]
pub(super) struct Projection {
    /// 1 (`P0`, Q1) or 4 (`P1`, Q2).
    modes: usize,
    /// `phi[q] = [1, xi, eta, zeta]` at point `q`; the first `modes` entries span the space.
    phi: Vec<[f64; MAX_MODES]>,
}

impl Projection {
    /// `P_{order - 1}` on the `points_per_direction`^3 Gauss rule; `P1` needs two points per
    /// direction (its Gram matrix is singular on one point).
    pub(super) fn new(order: usize, points_per_direction: usize) -> Result<Self> {
        let modes = if order == 1 { 1 } else { MAX_MODES };
        let min = if modes == 1 { 1 } else { 2 };
        if points_per_direction < min {
            return Err(FemError::ProjectionQuadrature {
                order,
                points: points_per_direction,
                min,
            });
        }
        let rule = Quadrature::hex(points_per_direction)?;
        Ok(Self {
            modes,
            phi: rule
                .points()
                .iter()
                .map(|xi| [1.0, xi[0], xi[1], xi[2]])
                .collect(),
        })
    }
}

impl Projection {
    /// The number of modes (1 or 4) and `[1, xi, eta, zeta]` at every point of the rule, flattened
    /// `[4 q + i]` (the device kernels' table).
    pub(super) fn table(&self) -> (usize, Vec<f64>) {
        (self.modes, self.phi.iter().flatten().copied().collect())
    }
}

/// Which modified gradient a material gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kinematics {
    /// `v = J`, `F_bar = (Theta / J)^{1/3} F`.
    Finite,
    /// `v = tr h`, `h_bar = h + (Theta - tr h) / 3 I` (linear in `u`).
    Linearised,
}

impl Kinematics {
    fn of(material: &Material) -> Self {
        match material {
            Material::Linear { .. } => Kinematics::Linearised,
            _ => Kinematics::Finite,
        }
    }

    /// The volume measure from `h = grad u`: `J - 1` (without forming `1 + ...`, so small
    /// strains keep their digits) or `tr h`.
    fn measure(self, h: &Matrix3<f64>) -> f64 {
        match self {
            Kinematics::Finite => j_minus_one(h),
            Kinematics::Linearised => h.trace(),
        }
    }
}

/// The projection of one cell: modes `psi` orthonormal in `(f, g) = sum_q wd_q f_q g_q`; room
/// for `Q` points.
struct CellProjection<const Q: usize> {
    n_qp: usize,
    modes: usize,
    wd: [f64; Q],
    psi: [[f64; MAX_MODES]; Q],
}

impl<const Q: usize> CellProjection<Q> {
    /// From the weights `wd` (all positive: the geometry was checked) by Cholesky of the Gram
    /// matrix of `phi` and forward substitution.
    fn new(space: &Projection, wd: &[f64]) -> Result<Self> {
        let (n_qp, modes) = (wd.len(), space.modes);
        let mut gram = [[0.0; MAX_MODES]; MAX_MODES];
        for (w, phi) in wd.iter().zip(&space.phi) {
            for i in 0..modes {
                for j in 0..=i {
                    gram[i][j] += w * phi[i] * phi[j];
                }
            }
        }
        // gram = L L^T, L stored in the lower triangle.
        for j in 0..modes {
            let d = gram[j][j] - gram[j][..j].iter().map(|l| l * l).sum::<f64>();
            if !(d > 0.0 && d.is_finite()) {
                return Err(FemError::SingularProjection { pivot: d });
            }
            let d = d.sqrt();
            gram[j][j] = d;
            for i in j + 1..modes {
                let s: f64 = (0..j).map(|k| gram[i][k] * gram[j][k]).sum();
                gram[i][j] = (gram[i][j] - s) / d;
            }
        }
        let mut psi = [[0.0; MAX_MODES]; Q];
        for (p, phi) in psi.iter_mut().zip(&space.phi).take(n_qp) {
            for i in 0..modes {
                let mut s = phi[i];
                for k in 0..i {
                    s -= gram[i][k] * p[k];
                }
                p[i] = s / gram[i][i];
            }
        }
        let mut w = [0.0; Q];
        for (wq, wdq) in w.iter_mut().zip(wd) {
            *wq = *wdq;
        }
        Ok(Self {
            n_qp,
            modes,
            wd: w,
            psi,
        })
    }

    /// The coefficients `c_i = sum_q wd_q psi_i(q) f_q` of `Pi f = sum_i c_i psi_i`.
    fn coefficients(&self, f: &[f64]) -> [f64; MAX_MODES] {
        let mut c = [0.0; MAX_MODES];
        for ((w, p), fq) in self.wd.iter().zip(&self.psi).zip(f).take(self.n_qp) {
            for i in 0..self.modes {
                c[i] += w * p[i] * fq;
            }
        }
        c
    }

    /// `(Pi f)(xi_q)` from its coefficients.
    fn value(&self, c: &[f64; MAX_MODES], q: usize) -> f64 {
        let p = &self.psi[q];
        (0..self.modes).map(|i| c[i] * p[i]).sum()
    }
}

/// The kinematics of one point: the material's argument and what the energy's derivatives take.
struct PointKinematics {
    /// The material's argument, the modified displacement gradient `h_bar = F_bar - I`.
    hbar: Matrix3<f64>,
    /// `(Theta / J)^{1/3}` (1 linearised).
    alpha: f64,
    /// `F^{-T}` (`I` linearised).
    hinv: Matrix3<f64>,
    /// `dv/dF`: the cofactor `J F^{-T}` (`I` linearised).
    b: Matrix3<f64>,
    /// `J` and `Theta` (1 and 1 linearised: the B-bar energy's `Theta` derivative is per unit
    /// trace).
    j: f64,
    theta: f64,
}

impl PointKinematics {
    /// From `h = grad u`, its measure `v` and the projected measure `theta_m` (`J - 1` and
    /// `Theta - 1`, or `tr h` and `Pi tr h`).
    fn new(kin: Kinematics, h: &Matrix3<f64>, v: f64, theta_m: f64) -> Result<Self> {
        match kin {
            Kinematics::Finite => {
                let (j, theta) = (1.0 + v, 1.0 + theta_m);
                if !(j > 0.0 && j.is_finite()) {
                    return Err(FemError::NonPositiveJ { j });
                }
                if !(theta > 0.0 && theta.is_finite()) {
                    return Err(FemError::NonPositiveJ { j: theta });
                }
                // alpha - 1 from the logarithms of 1 + small numbers: no digit lost at small strain.
                // The materials' own ln_1p and exp_m1 (series at small strain, no libm call), which
                // the device kernels (fem/cuda/projected.cu) repeat operation for operation.
                let am1 = exp_m1((ln_1p(theta_m) - ln_1p(v)) / 3.0);
                let alpha = 1.0 + am1;
                let b = cofactor(&(Matrix3::identity() + h));
                Ok(Self {
                    hbar: h * alpha + Matrix3::from_diagonal_element(am1),
                    alpha,
                    hinv: b / j,
                    b,
                    j,
                    theta,
                })
            }
            Kinematics::Linearised => Ok(Self {
                hbar: h + Matrix3::from_diagonal_element((theta_m - v) / 3.0),
                alpha: 1.0,
                hinv: Matrix3::identity(),
                b: Matrix3::identity(),
                j: 1.0,
                theta: 1.0,
            }),
        }
    }
}

/// `e_F` and `e_Theta` of `e(F, Theta) = psi(F_bar)` at a point with material stress `pb`
/// (at `F_bar`), through `s = pb : F_bar` (`tr sigma` linearised).
fn energy_gradient(
    kin: Kinematics,
    pk: &PointKinematics,
    pb: &Matrix3<f64>,
) -> (Matrix3<f64>, f64) {
    match kin {
        Kinematics::Finite => {
            let s = pb.trace() + pb.dot(&pk.hbar);
            (pb * pk.alpha - pk.hinv * (s / 3.0), s / (3.0 * pk.theta))
        }
        Kinematics::Linearised => {
            let s = pb.trace();
            (pb - Matrix3::from_diagonal_element(s / 3.0), s / 3.0)
        }
    }
}

/// The second derivatives at a point from the material's `pb` and `a` (at `F_bar`) and the
/// projected `q = Pi(e_Theta)` there: `(e_FF + q d2v/dF2, e_FTheta, e_ThetaTheta)`.
fn energy_hessian(
    kin: Kinematics,
    pk: &PointKinematics,
    pb: &Matrix3<f64>,
    a: &Tangent,
    q: f64,
) -> (Tangent, Matrix3<f64>, f64) {
    match kin {
        Kinematics::Finite => {
            // With V = A:F_bar + Pb, kb = F_bar:A:F_bar, s = Pb:F_bar, X_iJkL = H_iL H_kJ:
            // e_FF = alpha^2 A + s/3 X + (kb + s)/9 H (x) H - alpha/3 (H (x) V + V (x) H),
            // d2J/dF2 = J (H (x) H - X),
            // e_FTheta = (alpha V - (kb + s)/3 H) / (3 Theta), e_ThetaTheta = (kb - 2 s) / (9 Theta^2).
            let (alpha, h) = (pk.alpha, &pk.hinv);
            let fb = Matrix3::identity() + pk.hbar;
            let s = pb.dot(&fb);
            let av = contract(a, &fb);
            let kb = av.dot(&fb);
            let v = av + pb;
            let qj = q * pk.j;
            let mut d = a * (alpha * alpha);
            add_cross(&mut d, s / 3.0 - qj, h);
            add_dyad(&mut d, (kb + s) / 9.0 + qj, h, h);
            add_dyad(&mut d, -alpha / 3.0, h, &v);
            add_dyad(&mut d, -alpha / 3.0, &v, h);
            let c = (v * alpha - h * ((kb + s) / 3.0)) / (3.0 * pk.theta);
            (d, c, (kb - 2.0 * s) / (9.0 * pk.theta * pk.theta))
        }
        Kinematics::Linearised => {
            // h_bar = Dev(h) + Theta/3 I: e_hh = Dev A Dev, e_hTheta = Dev A I / 3,
            // e_ThetaTheta = I:A:I / 9 (no second derivative of tr h).
            let id = Matrix3::identity();
            let ai = contract(a, &id);
            let t = ai.trace();
            let mut d = *a;
            add_dyad(&mut d, -1.0 / 3.0, &ai, &id);
            add_dyad(&mut d, -1.0 / 3.0, &id, &ai);
            add_dyad(&mut d, t / 9.0, &id, &id);
            (d, (ai - id * (t / 3.0)) / 3.0, t / 9.0)
        }
    }
}

/// `(A : M)_kL = sum_iJ M_iJ A[(3 i + J, 3 k + L)]`.
fn contract(a: &Tangent, m: &Matrix3<f64>) -> Matrix3<f64> {
    Matrix3::from_fn(|k, l| {
        let col = 3 * k + l;
        let mut s = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                s += m[(i, j)] * a[(3 * i + j, col)];
            }
        }
        s
    })
}

/// `A[(3i+J, 3k+L)] += c X_iJ Y_kL`.
fn add_dyad(a: &mut Tangent, c: f64, x: &Matrix3<f64>, y: &Matrix3<f64>) {
    for r in 0..9 {
        let xr = c * x[(r / 3, r % 3)];
        for col in 0..9 {
            a[(r, col)] += xr * y[(col / 3, col % 3)];
        }
    }
}

/// `A[(3i+J, 3k+L)] += c X_iL X_kJ`.
fn add_cross(a: &mut Tangent, c: f64, x: &Matrix3<f64>) {
    for i in 0..3 {
        for j in 0..3 {
            for k in 0..3 {
                for l in 0..3 {
                    a[(3 * i + j, 3 * k + l)] += c * x[(i, l)] * x[(k, j)];
                }
            }
        }
    }
}

/// The cofactor `J F^{-T}` of `F` (`cof_iJ = dJ / dF_iJ`).
fn cofactor(f: &Matrix3<f64>) -> Matrix3<f64> {
    Matrix3::new(
        f[(1, 1)] * f[(2, 2)] - f[(1, 2)] * f[(2, 1)],
        f[(1, 2)] * f[(2, 0)] - f[(1, 0)] * f[(2, 2)],
        f[(1, 0)] * f[(2, 1)] - f[(1, 1)] * f[(2, 0)],
        f[(0, 2)] * f[(2, 1)] - f[(0, 1)] * f[(2, 2)],
        f[(0, 0)] * f[(2, 2)] - f[(0, 2)] * f[(2, 0)],
        f[(0, 1)] * f[(2, 0)] - f[(0, 0)] * f[(2, 1)],
        f[(0, 1)] * f[(1, 2)] - f[(0, 2)] * f[(1, 1)],
        f[(0, 2)] * f[(1, 0)] - f[(0, 0)] * f[(1, 2)],
        f[(0, 0)] * f[(1, 1)] - f[(0, 1)] * f[(1, 0)],
    )
}

/// `h = sum_a u_a (x) grad_X N_a`.
#[inline(always)]
fn displacement_gradient<const N: usize>(u: &[[f64; 3]; N], g: &[[f64; 3]; N]) -> Matrix3<f64> {
    let mut h = Matrix3::zeros();
    for a in 0..N {
        for i in 0..3 {
            for j in 0..3 {
                h[(i, j)] += u[a][i] * g[a][j];
            }
        }
    }
    h
}

/// `z[a] += m g_a` for every node.
#[inline(always)]
fn add_projected<const N: usize>(z: &mut [[f64; 3]; N], m: &Matrix3<f64>, g: &[[f64; 3]; N]) {
    for (za, ga) in z.iter_mut().zip(g) {
        for i in 0..3 {
            za[i] += m[(i, 0)] * ga[0] + m[(i, 1)] * ga[1] + m[(i, 2)] * ga[2];
        }
    }
}

/// A cell's projection with its measure `v` per point and the coefficients of `Pi v`.
struct CellVolume<const Q: usize> {
    kin: Kinematics,
    projection: CellProjection<Q>,
    v: [f64; Q],
    theta: [f64; MAX_MODES],
}

impl<const Q: usize> CellVolume<Q> {
    /// The first pass over the points: weights and measures (`LengthMismatch` where the rule has
    /// more than `Q` points).
    fn new<const N: usize>(
        space: &Projection,
        tab: &Tabulation,
        x: &[[f64; 3]; N],
        u: &[[f64; 3]; N],
        material: &Material,
    ) -> Result<Self> {
        let kin = Kinematics::of(material);
        if tab.weights.len() > Q {
            return Err(FemError::LengthMismatch {
                what: "projection buffers",
                expected: Q,
                got: tab.weights.len(),
            });
        }
        let (mut wd, mut v) = ([0.0; Q], [0.0; Q]);
        let mut n_qp = 0;
        ElementKernel::for_each_qp::<N>(tab, x, |q, w, _, g| {
            wd[q] = w;
            v[q] = kin.measure(&displacement_gradient(u, g));
            n_qp = q + 1;
            Ok(())
        })?;
        let projection = CellProjection::new(space, &wd[..n_qp])?;
        let theta = projection.coefficients(&v[..n_qp]);
        Ok(Self {
            kin,
            projection,
            v,
            theta,
        })
    }

    /// Runs `body(q, wd, N, grad N, point kinematics)` at every point.
    fn for_each_point<const N: usize>(
        &self,
        tab: &Tabulation,
        x: &[[f64; 3]; N],
        u: &[[f64; 3]; N],
        mut body: impl FnMut(usize, f64, &[f64; N], &[[f64; 3]; N], &PointKinematics) -> Result<()>,
    ) -> Result<()> {
        ElementKernel::for_each_qp::<N>(tab, x, |q, wd, nv, g| {
            let h = displacement_gradient(u, g);
            let theta = self.projection.value(&self.theta, q);
            let pk = PointKinematics::new(self.kin, &h, self.v[q], theta)?;
            body(q, wd, nv, g, &pk)
        })
    }
}

/// What the tangent pass reuses from the residual pass.
struct ResidualState<const N: usize, const Q: usize> {
    cell: CellVolume<Q>,
    /// Coefficients of `Pi(e_Theta)`.
    pressure: [f64; MAX_MODES],
    /// `Z_i[a] = sum_q wd psi_i(q) (dv/dF) g_a`.
    z: [[[f64; 3]; N]; MAX_MODES],
}

impl Projection {
    /// The residual (see the module doc); returns what the tangent needs.
    fn residual_state<const N: usize, const Q: usize>(
        &self,
        tab: &Tabulation,
        x: &[[f64; 3]; N],
        u: &[[f64; 3]; N],
        material: &Material,
        body_force: Load<'_>,
        r: &mut [[f64; 3]; N],
    ) -> Result<ResidualState<N, Q>> {
        let cell = CellVolume::<Q>::new(self, tab, x, u, material)?;
        let mut e_theta = [0.0; Q];
        let mut z = [[[0.0; 3]; N]; MAX_MODES];
        *r = [[0.0; 3]; N];
        let modes = self.modes;
        cell.for_each_point(tab, x, u, |q, wd, nv, g, pk| {
            let pb = material.stress(&pk.hbar)?;
            let (p, et) = energy_gradient(cell.kin, pk, &pb);
            e_theta[q] = et;
            add_internal_force(r, &p, wd, g);
            let psi = &cell.projection.psi[q];
            for (zi, psi_i) in z.iter_mut().zip(psi).take(modes) {
                add_projected(zi, &(pk.b * (wd * psi_i)), g);
            }
            add_body_force(r, body_force, wd, nv, x);
            Ok(())
        })?;
        let pressure = cell
            .projection
            .coefficients(&e_theta[..cell.projection.n_qp]);
        for (zi, c) in z.iter().zip(&pressure).take(modes) {
            for (ra, za) in r.iter_mut().zip(zi) {
                for d in 0..3 {
                    ra[d] += c * za[d];
                }
            }
        }
        Ok(ResidualState { cell, pressure, z })
    }

    /// [`ElementKernel::residual`] of this formulation.
    pub(super) fn residual<const N: usize>(
        &self,
        tab: &Tabulation,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        body_force: Load<'_>,
        r: &mut [[f64; 3]],
    ) -> Result<()> {
        let (x, u, r) = (
            fixed("element coordinates", x)?,
            fixed("element displacements", u)?,
            fixed_mut("element residual", r)?,
        );
        with_capacity!(self.phi.len(), Q => self
            .residual_state::<N, Q>(tab, x, u, material, body_force, r)
            .map(|_| ()))
    }

    /// [`ElementKernel::residual_tangent`] of this formulation (blocks `b >= a` integrated, the
    /// others mirrored: the tangent is symmetric).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn residual_tangent<const N: usize>(
        &self,
        tab: &Tabulation,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        body_force: Load<'_>,
        r: &mut [[f64; 3]],
        k: &mut [[f64; 9]],
    ) -> Result<()> {
        let x: &[[f64; 3]; N] = fixed("element coordinates", x)?;
        let u: &[[f64; 3]; N] = fixed("element displacements", u)?;
        let r: &mut [[f64; 3]; N] = fixed_mut("element residual", r)?;
        with_capacity!(self.phi.len(), Q => self
            .residual_tangent_q::<N, Q>(tab, x, u, material, body_force, r, k))
    }

    #[allow(clippy::too_many_arguments)]
    fn residual_tangent_q<const N: usize, const Q: usize>(
        &self,
        tab: &Tabulation,
        x: &[[f64; 3]; N],
        u: &[[f64; 3]; N],
        material: &Material,
        body_force: Load<'_>,
        r: &mut [[f64; 3]; N],
        k: &mut [[f64; 9]],
    ) -> Result<()> {
        let state = self.residual_state::<N, Q>(tab, x, u, material, body_force, r)?;
        let (cell, modes) = (&state.cell, self.modes);
        k.fill([0.0; 9]);
        let mut y = [[[0.0; 3]; N]; MAX_MODES];
        let mut gram = [[0.0; MAX_MODES]; MAX_MODES];
        cell.for_each_point(tab, x, u, |q, wd, _, g, pk| {
            let (pb, a) = material.stress_tangent(&pk.hbar)?;
            let pressure = cell.projection.value(&state.pressure, q);
            let (d, c, dtt) = energy_hessian(cell.kin, pk, &pb, &a, pressure);
            let d_rows: &[f64; 81] = fixed("projected tangent", d.as_slice())?;
            add_material_tangent(k, d_rows, wd, g);
            let psi = &cell.projection.psi[q];
            for i in 0..modes {
                add_projected(&mut y[i], &(c * (wd * psi[i])), g);
                for j in 0..modes {
                    gram[i][j] += wd * dtt * psi[i] * psi[j];
                }
            }
            Ok(())
        })?;
        // Y Z^T + Z Y^T + Z G Z^T = U Z^T + Z U^T with U_i = Y_i + G_ij Z_j / 2.
        let mut w = y;
        for (i, wi) in w.iter_mut().enumerate().take(modes) {
            for (j, zj) in state.z.iter().enumerate().take(modes) {
                let c = 0.5 * gram[i][j];
                for (wa, za) in wi.iter_mut().zip(zj) {
                    for d in 0..3 {
                        wa[d] += c * za[d];
                    }
                }
            }
        }
        for (wi, zi) in w.iter().zip(&state.z).take(modes) {
            for a in 0..N {
                for b in a..N {
                    let kab = &mut k[a * N + b];
                    for i in 0..3 {
                        for kk in 0..3 {
                            kab[3 * i + kk] += wi[a][i] * zi[b][kk] + zi[a][i] * wi[b][kk];
                        }
                    }
                }
            }
        }
        for a in 0..N {
            for b in 0..a {
                let kt = k[b * N + a];
                k[a * N + b] = [
                    kt[0], kt[3], kt[6], kt[1], kt[4], kt[7], kt[2], kt[5], kt[8],
                ];
            }
        }
        Ok(())
    }

    /// Runs `body(q, wd, h_bar)` at every point: the modified displacement gradient
    /// (`F_bar - I`) that post-processing (energy, stresses, volume ratio) evaluates the material
    /// at.
    pub(super) fn for_each_modified_gradient<const N: usize>(
        &self,
        tab: &Tabulation,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        mut body: impl FnMut(usize, f64, &Matrix3<f64>) -> Result<()>,
    ) -> Result<()> {
        let x: &[[f64; 3]; N] = fixed("element coordinates", x)?;
        let u: &[[f64; 3]; N] = fixed("element displacements", u)?;
        with_capacity!(self.phi.len(), Q => {
            let cell = CellVolume::<Q>::new(self, tab, x, u, material)?;
            cell.for_each_point(tab, x, u, |q, wd, _, _, pk| body(q, wd, &pk.hbar))
        })
    }
}
