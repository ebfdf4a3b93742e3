//! Volume kernels of a hexahedral element in the total Lagrangian setting: residual and tangent
//! blocks, geometry checks, post-processed cell fields, energies and discretisation errors.
//!
//! An [`ElementKernel`] tabulates the basis at the quadrature points once; every method then takes
//! the element's reference nodal coordinates `x` and displacements `u` (node order of
//! ARCHITECTURE.md), works on stack arrays only (monomorphised for 8 and 27 nodes, picked by
//! `with_node_count!`) and writes into caller buffers, so one kernel can serve many threads at once.

use nalgebra::Matrix3;

mod projected;
#[cfg(test)]
mod tests;

pub use projected::{Formulation, LOCKING_POISSON_RATIO};

use crate::basis::LagrangeHex;
use crate::error::{FemError, Result};
use crate::load::Load;
use crate::material::{
    cauchy_from_piola, j_minus_one, split_tangent, von_mises, Material, SplitTangent,
};
use crate::quadrature::{Quadrature, MAX_POINTS};
use crate::reference::CellKind;
use crate::strain::{strain, StrainMeasure};

/// Evaluates `$body` with the constant `$n` bound to the number of nodes of the cell kind `$kind`:
/// the one place where a kernel method picks its instance monomorphised for 8 or 27 nodes.
macro_rules! with_node_count {
    ($kind:expr, $n:ident => $body:expr) => {
        match $kind {
            CellKind::Hex8 => {
                const $n: usize = CellKind::Hex8.nodes_per_cell();
                $body
            }
            CellKind::Hex27 => {
                const $n: usize = CellKind::Hex27.nodes_per_cell();
                $body
            }
        }
    };
}

/// Basis values and reference gradients tabulated at the points of a tensor Gauss rule.
#[derive(Debug, Clone)]
struct Tabulation {
    weights: Vec<f64>,
    /// `values[q * n + a] = N_a(xi_q)`.
    values: Vec<f64>,
    /// `grads[q * n + a] = dN_a/dxi (xi_q)`.
    grads: Vec<[f64; 3]>,
}

impl Tabulation {
    fn new(basis: &LagrangeHex, points_per_direction: usize) -> Result<Self> {
        let rule = Quadrature::hex(points_per_direction)?;
        let n = basis.n_nodes();
        let mut values = vec![0.0; rule.len() * n];
        let mut grads = vec![[0.0; 3]; rule.len() * n];
        for (q, xi) in rule.points().iter().enumerate() {
            basis.eval(
                *xi,
                &mut values[q * n..(q + 1) * n],
                &mut grads[q * n..(q + 1) * n],
            )?;
        }
        Ok(Self {
            weights: rule.weights().to_vec(),
            values,
            grads,
        })
    }
}

/// Volume-averaged fields of a deformed cell (averages over the reference volume).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellFields {
    /// Average Cauchy stress, components `[xx, yy, zz, xy, yz, xz]`.
    pub cauchy: [f64; 6],
    /// Von Mises stress of the average Cauchy stress.
    pub von_mises: f64,
    /// Average volume ratio `J` (= deformed volume / reference volume).
    pub j: f64,
    /// Strain energy per unit reference volume.
    pub energy_density: f64,
    /// Strain energy of the cell, `int psi dV` (= `energy_density` times the reference volume).
    pub strain_energy: f64,
}

/// Which of the [`CellFields`] a state's output takes from the element loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellFieldSet {
    /// Every field (a cell field or nodal stress written or probed).
    Every,
    /// `J` and the strain energy only: what every state's checks and figures read (inverted
    /// cells, the total strain energy).
    Checks,
}

/// A state's cell fields as the element loop computed them, per cell in cell order.
#[derive(Debug, Clone, PartialEq)]
pub enum StateCellFields {
    /// Every field ([`CellFieldSet::Every`], or where some field of [`CellFieldSet::Checks`]'
    /// cells was not finite: the state's checks then name it).
    Every(Vec<CellFields>),
    /// [`CellFieldSet::Checks`]: `J` and the strain energy of each cell, every other field of
    /// each cell finite (checked where they were computed).
    Checks {
        j: Vec<f64>,
        strain_energy: Vec<f64>,
    },
}

impl StateCellFields {
    /// Cells described.
    pub fn len(&self) -> usize {
        match self {
            Self::Every(fields) => fields.len(),
            Self::Checks { j, .. } => j.len(),
        }
    }

    /// Whether no cell is described.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Precomputed element integration for one Lagrange order and one Gauss rule.
#[derive(Debug, Clone)]
pub struct ElementKernel {
    kind: CellKind,
    basis: LagrangeHex,
    points_per_direction: usize,
    main: Tabulation,
    /// Rule with two more points per direction (at most `MAX_POINTS`) for error norms.
    error: Tabulation,
    /// The projection of [`Formulation::Projected`]; `None`: the displacement formulation.
    projection: Option<projected::Projection>,
}

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(FemError::LengthMismatch {
            what,
            expected,
            got,
        })
    }
}

/// Fixed-size view of a slice whose length the caller already checked.
#[inline(always)]
fn fixed<'s, T, const N: usize>(what: &'static str, s: &'s [T]) -> Result<&'s [T; N]> {
    s.try_into().map_err(|_| FemError::LengthMismatch {
        what,
        expected: N,
        got: s.len(),
    })
}

#[inline(always)]
fn fixed_mut<'s, T, const N: usize>(what: &'static str, s: &'s mut [T]) -> Result<&'s mut [T; N]> {
    let got = s.len();
    s.try_into().map_err(|_| FemError::LengthMismatch {
        what,
        expected: N,
        got,
    })
}

/// The displacement gradient `h = grad_X u = sum_a u_a (x) grad_X N_a` (`F = I + h`, never formed
/// here: the materials take `h`, which keeps the digits of small strains).
#[inline(always)]
fn displacement_gradient<const N: usize>(u: &[[f64; 3]; N], g: &[[f64; 3]; N]) -> Matrix3<f64> {
    let mut h = [[0.0; 3]; 3];
    for a in 0..N {
        for i in 0..3 {
            for j in 0..3 {
                h[i][j] += u[a][i] * g[a][j];
            }
        }
    }
    Matrix3::new(
        h[0][0], h[0][1], h[0][2], h[1][0], h[1][1], h[1][2], h[2][0], h[2][1], h[2][2],
    )
}

impl ElementKernel {
    /// Kernel for Lagrange `order` (1 or 2) with a `points_per_direction`^3 Gauss rule
    /// (`1..=6`; full integration is `order + 1`).
    pub fn new(order: usize, points_per_direction: usize) -> Result<Self> {
        let kind = CellKind::from_order(order)?;
        let basis = LagrangeHex::new(order)?;
        let main = Tabulation::new(&basis, points_per_direction)?;
        let error = Tabulation::new(&basis, (points_per_direction + 2).min(MAX_POINTS))?;
        Ok(Self {
            kind,
            basis,
            points_per_direction,
            main,
            error,
            projection: None,
        })
    }

    /// The same kernel with `formulation` (fails where the projection lacks Gauss points).
    pub fn with_formulation(mut self, formulation: Formulation) -> Result<Self> {
        self.projection = match formulation {
            Formulation::Displacement => None,
            Formulation::Projected => Some(projected::Projection::new(
                self.order(),
                self.points_per_direction,
            )?),
        };
        Ok(self)
    }

    /// The element formulation.
    pub fn formulation(&self) -> Formulation {
        match self.projection {
            None => Formulation::Displacement,
            Some(_) => Formulation::Projected,
        }
    }

    /// The projected formulation's space at the main rule's points: its number of modes (1: `P0`,
    /// 4: `P1`) and `[1, xi, eta, zeta]` at every point, `[4 q + i]` (what the device kernels
    /// take); `None` in the displacement formulation.
    pub fn projection_table(&self) -> Option<(usize, Vec<f64>)> {
        self.projection.as_ref().map(|p| p.table())
    }

    /// The reference cell.
    pub fn kind(&self) -> CellKind {
        self.kind
    }

    /// Lagrange order.
    pub fn order(&self) -> usize {
        self.basis.order()
    }

    /// Nodes per element (8 or 27).
    pub fn n_nodes(&self) -> usize {
        self.basis.n_nodes()
    }

    /// Gauss points per direction of the main rule.
    pub fn points_per_direction(&self) -> usize {
        self.points_per_direction
    }

    /// Quadrature points of the main rule.
    pub fn n_qp(&self) -> usize {
        self.main.weights.len()
    }

    /// Weights of the main rule's points (reference cell), in point order.
    pub fn qp_weights(&self) -> &[f64] {
        &self.main.weights
    }

    /// `dN_a/dxi` at the main rule's points, `[q * n_nodes + a]` (what the device kernels take).
    pub fn qp_reference_gradients(&self) -> &[[f64; 3]] {
        &self.main.grads
    }

    /// `N_a` at the main rule's points, `[q * n_nodes + a]` (what the device body-force kernel
    /// takes).
    pub fn qp_values(&self) -> &[f64] {
        &self.main.values
    }

    /// The reference positions of the main rule's points in the cell with nodes at `x`, in point
    /// order: where a body force that is a field is evaluated (the same operations as the
    /// residual's, so the same bits).
    pub fn quadrature_points(&self, x: &[[f64; 3]]) -> Result<Vec<[f64; 3]>> {
        self.check_x(x)?;
        let n = self.n_nodes();
        Ok(self
            .main
            .values
            .chunks_exact(n)
            .map(|nv| point_position(nv, x))
            .collect())
    }

    fn check_x(&self, x: &[[f64; 3]]) -> Result<()> {
        check_len("element coordinates", self.n_nodes(), x.len())
    }

    fn check_xu(&self, x: &[[f64; 3]], u: &[[f64; 3]]) -> Result<()> {
        self.check_x(x)?;
        check_len("element displacements", self.n_nodes(), u.len())
    }

    /// Runs `body(q, w det, N(xi_q), grad_X N(xi_q))` at every point of `tab`; stops with
    /// `NonPositiveJacobian` at the first point with `det dX/dxi <= 0`.
    #[inline(always)]
    fn for_each_qp<const N: usize>(
        tab: &Tabulation,
        x: &[[f64; 3]; N],
        mut body: impl FnMut(usize, f64, &[f64; N], &[[f64; 3]; N]) -> Result<()>,
    ) -> Result<()> {
        let shape = tab.values.chunks_exact(N).zip(tab.grads.chunks_exact(N));
        for (q, (&w, (nv, dn))) in tab.weights.iter().zip(shape).enumerate() {
            let nv: &[f64; N] = fixed("tabulated values", nv)?;
            let dn: &[[f64; 3]; N] = fixed("tabulated gradients", dn)?;
            // jm[d][e] = dX_d / dxi_e
            let mut jm = [[0.0; 3]; 3];
            for a in 0..N {
                for d in 0..3 {
                    for e in 0..3 {
                        jm[d][e] += x[a][d] * dn[a][e];
                    }
                }
            }
            let c00 = jm[1][1] * jm[2][2] - jm[1][2] * jm[2][1];
            let c01 = jm[1][2] * jm[2][0] - jm[1][0] * jm[2][2];
            let c02 = jm[1][0] * jm[2][1] - jm[1][1] * jm[2][0];
            let det = jm[0][0] * c00 + jm[0][1] * c01 + jm[0][2] * c02;
            if det <= 0.0 || det.is_nan() {
                return Err(FemError::NonPositiveJacobian { qp: q, det });
            }
            let s = 1.0 / det;
            // inv[d][e] = dxi_d / dX_e = cof(jm)[e][d] / det
            let inv = [
                [
                    c00 * s,
                    (jm[0][2] * jm[2][1] - jm[0][1] * jm[2][2]) * s,
                    (jm[0][1] * jm[1][2] - jm[0][2] * jm[1][1]) * s,
                ],
                [
                    c01 * s,
                    (jm[0][0] * jm[2][2] - jm[0][2] * jm[2][0]) * s,
                    (jm[0][2] * jm[1][0] - jm[0][0] * jm[1][2]) * s,
                ],
                [
                    c02 * s,
                    (jm[0][1] * jm[2][0] - jm[0][0] * jm[2][1]) * s,
                    (jm[0][0] * jm[1][1] - jm[0][1] * jm[1][0]) * s,
                ],
            ];
            let mut g = [[0.0; 3]; N];
            for a in 0..N {
                for e in 0..3 {
                    g[a][e] = dn[a][0] * inv[0][e] + dn[a][1] * inv[1][e] + dn[a][2] * inv[2][e];
                }
            }
            body(q, w * det, nv, &g)?;
        }
        Ok(())
    }

    /// Fails with `NonPositiveJacobian { qp, det }` at the first quadrature point where the
    /// isoparametric map is inverted or degenerate.
    pub fn check_geometry(&self, x: &[[f64; 3]]) -> Result<()> {
        self.volume(x).map(|_| ())
    }

    /// Reference volume `int dV` (fails like [`Self::check_geometry`]).
    pub fn volume(&self, x: &[[f64; 3]]) -> Result<f64> {
        self.check_x(x)?;
        with_node_count!(self.kind, N => self.volume_n::<N>(x))
    }

    fn volume_n<const N: usize>(&self, x: &[[f64; 3]]) -> Result<f64> {
        let mut v = 0.0;
        Self::for_each_qp::<N>(
            &self.main,
            fixed("element coordinates", x)?,
            |_, wd, _, _| {
                v += wd;
                Ok(())
            },
        )?;
        Ok(v)
    }

    /// Element residual `r_a = int P : grad_X N_a dV - int f N_a dV` and, when `k` is given, its
    /// tangent blocks `k[a n + b][3 i + j] = d r_{a,i} / d u_{b,j}` (`n` = nodes). `r` (length `n`)
    /// and `k` (length `n^2`) are overwritten. Only blocks `b >= a` are integrated; the others are
    /// mirrored, which relies on the major symmetry of the (hyperelastic) material tangent.
    pub fn residual_tangent(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        body_force: Load<'_>,
        r: &mut [[f64; 3]],
        k: Option<&mut [[f64; 9]]>,
    ) -> Result<()> {
        self.check_xu(x, u)?;
        let n = self.n_nodes();
        check_len("element residual", n, r.len())?;
        match k {
            Some(k) => {
                check_len("element tangent", n * n, k.len())?;
                with_node_count!(self.kind, N => match &self.projection {
                    Some(p) => p.residual_tangent::<N>(&self.main, x, u, material, body_force, r, k),
                    None => self.residual_tangent_n::<N>(x, u, material, body_force, r, k),
                })
            }
            None => self.residual(x, u, material, body_force, r),
        }
    }

    /// Residual only (no tangent work; for line searches and energy checks). Same contract as
    /// [`Self::residual_tangent`].
    pub fn residual(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        body_force: Load<'_>,
        r: &mut [[f64; 3]],
    ) -> Result<()> {
        self.check_xu(x, u)?;
        check_len("element residual", self.n_nodes(), r.len())?;
        with_node_count!(self.kind, N => match &self.projection {
            Some(p) => p.residual::<N>(&self.main, x, u, material, body_force, r),
            None => self.residual_n::<N>(x, u, material, body_force, r),
        })
    }

    fn residual_n<const N: usize>(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        body_force: Load<'_>,
        r: &mut [[f64; 3]],
    ) -> Result<()> {
        let x: &[[f64; 3]; N] = fixed("element coordinates", x)?;
        let u: &[[f64; 3]; N] = fixed("element displacements", u)?;
        let r: &mut [[f64; 3]; N] = fixed_mut("element residual", r)?;
        *r = [[0.0; 3]; N];
        Self::for_each_qp::<N>(&self.main, x, |_, wd, nv, g| {
            let p = material.stress(&displacement_gradient(u, g))?;
            add_internal_force(r, &p, wd, g);
            add_body_force(r, body_force, wd, nv, x);
            Ok(())
        })
    }

    fn residual_tangent_n<const N: usize>(
        &self,
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
        *r = [[0.0; 3]; N];
        k.fill([0.0; 9]);
        Self::for_each_qp::<N>(&self.main, x, |_, wd, nv, g| {
            let h = displacement_gradient(u, g);
            if let Some(split) = split_tangent(material, &h) {
                // A = c_id I + c_dyad G (x) G + c_cross G_iL G_kJ: contract through G g_a.
                let SplitTangent {
                    p,
                    finv_t: gm,
                    c: [c_id, c_dyad, c_cross],
                } = split?;
                add_internal_force(r, &p, wd, g);
                let mut hg = [[0.0; 3]; N];
                for (hga, ga) in hg.iter_mut().zip(g) {
                    for i in 0..3 {
                        hga[i] = gm[(i, 0)] * ga[0] + gm[(i, 1)] * ga[1] + gm[(i, 2)] * ga[2];
                    }
                }
                add_split_tangent(k, [wd * c_id, wd * c_dyad, wd * c_cross], g, &hg);
            } else {
                let (p, a) = material.stress_tangent(&h)?;
                add_internal_force(r, &p, wd, g);
                // A is symmetric (hyperelastic), so its column-major storage read row-major is A.
                let a_rows: &[f64; 81] = fixed("material tangent", a.as_slice())?;
                add_material_tangent(k, a_rows, wd, g);
            }
            add_body_force(r, body_force, wd, nv, x);
            Ok(())
        })?;
        // Mirror the upper block triangle: K_ba = K_ab^T.
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

    /// Strain energy `int psi dV` (of `F_bar` in the projected formulation).
    pub fn strain_energy(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
    ) -> Result<f64> {
        self.check_xu(x, u)?;
        with_node_count!(self.kind, N => self.strain_energy_n::<N>(x, u, material))
    }

    fn strain_energy_n<const N: usize>(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
    ) -> Result<f64> {
        let mut e = 0.0;
        self.for_each_gradient::<N>(x, u, material, |_, wd, h| {
            e += wd * material.energy(h)?;
            Ok(())
        })?;
        Ok(e)
    }

    /// Cauchy stress at every quadrature point of the main rule (`out.len() == n_qp`).
    pub fn cauchy_at_points(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        out: &mut [Matrix3<f64>],
    ) -> Result<()> {
        self.check_xu(x, u)?;
        check_len("quadrature-point stresses", self.n_qp(), out.len())?;
        with_node_count!(self.kind, N => self.cauchy_at_points_n::<N>(x, u, material, out))
    }

    fn cauchy_at_points_n<const N: usize>(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        out: &mut [Matrix3<f64>],
    ) -> Result<()> {
        self.for_each_gradient::<N>(x, u, material, |q, _, h| {
            out[q] = cauchy_from_piola(material, &material.stress(h)?, h);
            Ok(())
        })
    }

    /// Reference-volume averages of Cauchy stress, `J` and energy density over the cell.
    pub fn cell_fields(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
    ) -> Result<CellFields> {
        self.check_xu(x, u)?;
        with_node_count!(self.kind, N => self.cell_fields_n::<N>(x, u, material))
    }

    fn cell_fields_n<const N: usize>(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
    ) -> Result<CellFields> {
        let (mut vol, mut sig, mut j, mut e) = (0.0, Matrix3::zeros(), 0.0, 0.0);
        self.for_each_gradient::<N>(x, u, material, |_, wd, h| {
            let p = material.stress(h)?;
            sig += cauchy_from_piola(material, &p, h) * wd;
            j += wd * (1.0 + j_minus_one(h));
            e += wd * material.energy(h)?;
            vol += wd;
            Ok(())
        })?;
        let s = sig / vol;
        Ok(CellFields {
            cauchy: [
                s[(0, 0)],
                s[(1, 1)],
                s[(2, 2)],
                s[(0, 1)],
                s[(1, 2)],
                s[(0, 2)],
            ],
            von_mises: von_mises(&s),
            j: j / vol,
            energy_density: e / vol,
            strain_energy: e,
        })
    }

    /// Reference-volume average of the strain `measure` over the cell, full 3x3 row-major,
    /// from the gradient the formulation evaluates the material at (as [`Self::cell_fields`]).
    pub fn cell_strain(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        measure: StrainMeasure,
    ) -> Result<[f64; 9]> {
        self.check_xu(x, u)?;
        with_node_count!(self.kind, N => self.cell_strain_n::<N>(x, u, material, measure))
    }

    fn cell_strain_n<const N: usize>(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        measure: StrainMeasure,
    ) -> Result<[f64; 9]> {
        let (mut vol, mut sum) = (0.0, Matrix3::zeros());
        self.for_each_gradient::<N>(x, u, material, |_, wd, h| {
            sum += strain(measure, material, h) * wd;
            vol += wd;
            Ok(())
        })?;
        let e = sum / vol;
        Ok(std::array::from_fn(|k| e[(k / 3, k % 3)]))
    }

    /// Runs `body(q, wd, h)` at every point of the main rule with the displacement gradient the
    /// formulation evaluates the material at: `h = grad_X u`, or the projected formulation's
    /// `h_bar = F_bar - I`.
    fn for_each_gradient<const N: usize>(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        material: &Material,
        mut body: impl FnMut(usize, f64, &Matrix3<f64>) -> Result<()>,
    ) -> Result<()> {
        if let Some(p) = &self.projection {
            return p.for_each_modified_gradient::<N>(&self.main, x, u, material, body);
        }
        let u: &[[f64; 3]; N] = fixed("element displacements", u)?;
        Self::for_each_qp::<N>(
            &self.main,
            fixed("element coordinates", x)?,
            |q, wd, _, g| body(q, wd, &displacement_gradient(u, g)),
        )
    }

    /// Squared errors `(||u_h - u||_L2^2, |u_h - u|_H1^2)` over the cell against an exact solution
    /// `exact(X) = (u, grad u)` with `grad u[i][j] = du_i/dX_j`, integrated with two more Gauss
    /// points per direction than the main rule (at most 6).
    pub fn errors(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        exact: &dyn Fn([f64; 3]) -> ([f64; 3], [[f64; 3]; 3]),
    ) -> Result<(f64, f64)> {
        self.check_xu(x, u)?;
        with_node_count!(self.kind, N => self.errors_n::<N>(x, u, exact))
    }

    fn errors_n<const N: usize>(
        &self,
        x: &[[f64; 3]],
        u: &[[f64; 3]],
        exact: &dyn Fn([f64; 3]) -> ([f64; 3], [[f64; 3]; 3]),
    ) -> Result<(f64, f64)> {
        let x: &[[f64; 3]; N] = fixed("element coordinates", x)?;
        let u: &[[f64; 3]; N] = fixed("element displacements", u)?;
        let (mut l2, mut h1) = (0.0, 0.0);
        Self::for_each_qp::<N>(&self.error, x, |_, wd, nv, g| {
            let (mut xq, mut uq, mut gq) = ([0.0; 3], [0.0; 3], [[0.0; 3]; 3]);
            for a in 0..N {
                for i in 0..3 {
                    xq[i] += nv[a] * x[a][i];
                    uq[i] += nv[a] * u[a][i];
                    for j in 0..3 {
                        gq[i][j] += u[a][i] * g[a][j];
                    }
                }
            }
            let (ue, ge) = exact(xq);
            for i in 0..3 {
                l2 += wd * (uq[i] - ue[i]).powi(2);
                for j in 0..3 {
                    h1 += wd * (gq[i][j] - ge[i][j]).powi(2);
                }
            }
            Ok(())
        })?;
        Ok((l2, h1))
    }
}

/// `r_a += wd P grad_X N_a`.
#[inline(always)]
fn add_internal_force<const N: usize>(
    r: &mut [[f64; 3]; N],
    p: &Matrix3<f64>,
    wd: f64,
    g: &[[f64; 3]; N],
) {
    let pw = p * wd;
    for a in 0..N {
        for i in 0..3 {
            r[a][i] += pw[(i, 0)] * g[a][0] + pw[(i, 1)] * g[a][1] + pw[(i, 2)] * g[a][2];
        }
    }
}

/// `X_q = sum_a N_a(xi_q) X_a`.
#[inline(always)]
fn point_position(nv: &[f64], x: &[[f64; 3]]) -> [f64; 3] {
    let mut xq = [0.0; 3];
    for (na, xa) in nv.iter().zip(x) {
        for i in 0..3 {
            xq[i] += na * xa[i];
        }
    }
    xq
}

/// `r_a -= wd f(X_q) N_a`.
#[inline(always)]
fn add_body_force<const N: usize>(
    r: &mut [[f64; 3]; N],
    load: Load<'_>,
    wd: f64,
    nv: &[f64; N],
    x: &[[f64; 3]; N],
) {
    let f = match load {
        Load::None => return,
        Load::Constant(f) => f,
        Load::Field(field) => field(point_position(nv, x)),
    };
    for a in 0..N {
        for i in 0..3 {
            r[a][i] -= wd * nv[a] * f[i];
        }
    }
}

/// `K_ab += wd g_a . A . g_b` for `b >= a`, with `A` row-major 9x9 (`a[9 r + c] = A[(r, c)]`):
/// first `G_a[i][3k+L] = wd sum_J g_aJ A[3i+J][3k+L]`, then `K_ab[3i+k] += sum_L G_a[i][3k+L] g_bL`.
#[inline(always)]
fn add_material_tangent<const N: usize>(
    k: &mut [[f64; 9]],
    a: &[f64; 81],
    wd: f64,
    g: &[[f64; 3]; N],
) {
    for ia in 0..N {
        let ga = [wd * g[ia][0], wd * g[ia][1], wd * g[ia][2]];
        let mut gaa = [[0.0; 9]; 3];
        for i in 0..3 {
            let rows = &a[27 * i..27 * i + 27];
            for c in 0..9 {
                gaa[i][c] = ga[0] * rows[c] + ga[1] * rows[9 + c] + ga[2] * rows[18 + c];
            }
        }
        for ib in ia..N {
            let gb = g[ib];
            let kab = &mut k[ia * N + ib];
            for i in 0..3 {
                for kk in 0..3 {
                    let row = &gaa[i][3 * kk..3 * kk + 3];
                    kab[3 * i + kk] += row[0] * gb[0] + row[1] * gb[1] + row[2] * gb[2];
                }
            }
        }
    }
}

/// `K_ab += c_id (g_a . g_b) I + c_dyad h_a h_b^T + c_cross h_b h_a^T` for `b >= a` (weight folded
/// into `c`): the contraction of `A = c_id I + c_dyad G (x) G + c_cross G_iL G_kJ` with `h_a = G g_a`.
/// Linear elasticity is the case `G = I`, `c = [mu, lambda, mu]`.
#[inline(always)]
fn add_split_tangent<const N: usize>(
    k: &mut [[f64; 9]],
    c: [f64; 3],
    g: &[[f64; 3]; N],
    h: &[[f64; 3]; N],
) {
    let [c_id, c_dyad, c_cross] = c;
    for a in 0..N {
        let (ga, ha) = (g[a], h[a]);
        let hd = [c_dyad * ha[0], c_dyad * ha[1], c_dyad * ha[2]];
        let hc = [c_cross * ha[0], c_cross * ha[1], c_cross * ha[2]];
        for b in a..N {
            let (gb, hb) = (g[b], h[b]);
            let dot = c_id * (ga[0] * gb[0] + ga[1] * gb[1] + ga[2] * gb[2]);
            let kab = &mut k[a * N + b];
            for i in 0..3 {
                for kk in 0..3 {
                    kab[3 * i + kk] += hd[i] * hb[kk] + hb[i] * hc[kk];
                }
                kab[4 * i] += dot;
            }
        }
    }
}
