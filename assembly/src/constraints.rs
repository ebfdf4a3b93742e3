//! Dirichlet constraints: which components of which nodes are prescribed, their values as a function
//! of the load factor, and their symmetric elimination from a blocked tangent.
//!
//! The constrained components are a [`linalg::DofMask`] (one bit per component of each node):
//! zeroing, copying (lifting) and elimination are `linalg` mask kernels, which run where the
//! vectors and the matrix live; the elimination's block slots are an [`EliminationPlan`] built on
//! the first call for the tangent's pattern and reused. Only the prescribed values themselves
//! (rotations of node coordinates) are computed here, on the host.
//!
//! Elimination keeps the block pattern: a constrained component's row and column are zeroed inside
//! their blocks but its diagonal entry, which keeps a fixed fraction of its magnitude (the
//! tangent's scale: the eliminated system is the same in any units up to their factor;
//! `linalg::ELIMINATED_DIAGONAL_FRACTION`). Calling order per Newton iteration: assemble
//! residual and tangent, read reactions from the residual, then `eliminate_in_matrix` and
//! `zero_constrained` before the linear solve.

use std::sync::OnceLock;

use linalg::{BlockPattern, Bsr, DofMask, EliminationPlan, Vector};

use crate::AssemblyError;

/// A displacement component as a function of the reference position and pseudo-time (an input's
/// expression of `x, y, z, t`), with the text that identifies it: two are equal when their texts are (so the same
/// expression on two faces sharing an edge is no conflict).
#[derive(Clone)]
pub struct PositionFn {
    pub text: String,
    /// The value at a reference position and pseudo-time.
    pub f: std::sync::Arc<dyn Fn([f64; 3], f64) -> f64 + Send + Sync>,
    /// Whether `f` depends on the time: then it is the value itself at that time, not scaled by
    /// the load factor.
    pub uses_time: bool,
}

impl std::fmt::Debug for PositionFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PositionFn({})", self.text)
    }
}

impl PartialEq for PositionFn {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// A prescribed displacement on a set of nodes; values are scaled by the load factor.
#[derive(Clone, Debug, PartialEq)]
pub enum Prescribed {
    /// `u_c = load_factor * value_c(X)` at each node's reference position `X` for each given
    /// component `c` (`u_c = value_c(X, t)` at the time of [`Constraints::set_time`] where the
    /// value uses the time); `None` leaves a component free.
    Field {
        set: String,
        nodes: Vec<usize>,
        values: [Option<PositionFn>; 3],
    },
    /// `u_c = load_factor * value_c` for each given component `c`; `None` leaves a component free.
    Components {
        set: String,
        nodes: Vec<usize>,
        values: [Option<f64>; 3],
    },
    /// All three components follow a rotation about `axis` (through `center`) by `load_factor * angle`
    /// radians, plus a displacement `load_factor * axial` along the axis.
    Twist {
        set: String,
        nodes: Vec<usize>,
        axis: [f64; 3],
        center: [f64; 3],
        angle: f64,
        axial: f64,
    },
}

impl Prescribed {
    /// The prescribed components as bits (`1 << c`).
    fn component_bits(&self) -> u8 {
        match self {
            Prescribed::Components { values, .. } => (0..3)
                .filter(|&c| values[c].is_some())
                .fold(0u8, |m, c| m | 1 << c),
            Prescribed::Field { values, .. } => (0..3)
                .filter(|&c| values[c].is_some())
                .fold(0u8, |m, c| m | 1 << c),
            Prescribed::Twist { .. } => 0b111,
        }
    }

    /// What it prescribes, for people: `'xmin' (x, z)` or `'top' (twist)`.
    pub fn summary(&self) -> String {
        let what = match self {
            Prescribed::Twist { .. } => "twist".to_string(),
            _ => {
                let bits = self.component_bits();
                let names: Vec<&str> = (0..3)
                    .filter(|c| bits & (1 << c) != 0)
                    .map(|c| ["x", "y", "z"][c])
                    .collect();
                names.join(", ")
            }
        };
        format!("'{}' ({what})", self.set())
    }

    pub(crate) fn nodes(&self) -> &[usize] {
        match self {
            Prescribed::Components { nodes, .. }
            | Prescribed::Twist { nodes, .. }
            | Prescribed::Field { nodes, .. } => nodes,
        }
    }
    fn set(&self) -> &str {
        match self {
            Prescribed::Components { set, .. }
            | Prescribed::Twist { set, .. }
            | Prescribed::Field { set, .. } => set,
        }
    }
}

/// The constrained components of every node and how to compute their values.
///
/// Invariant: `mask.bits(node)` has bit `c` set iff component `c` of `node` is prescribed by at
/// least one entry of `prescribed` (or the node belongs to no cell, see [`Constraints::new`]).
#[derive(Clone, Debug)]
pub struct Constraints {
    mask: DofMask,
    prescribed: Vec<Prescribed>,
    /// The blocks of the tangent's pattern the elimination writes (built on first use).
    elimination: OnceLock<EliminationPlan>,
    /// Per entry of `prescribed`: the factor of its own load curve at the current pseudo-time,
    /// replacing the load factor (`None`: it follows the load factor).
    own_factors: Vec<Option<f64>>,
    /// The pseudo-time at which time-dependent field values are evaluated.
    time: f64,
}

impl Constraints {
    /// Builds the constraints of a mesh with `n_nodes` nodes. Nodes in `orphans` (belonging to no
    /// cell) are fixed at zero in all components so that every block row of the tangent is regular.
    /// Two entries that prescribe one component of one node differently (a twist and a Dirichlet
    /// value, or two different values) are an error naming both; equal ones are fine (`x: 0` on
    /// two faces sharing an edge).
    pub fn new(
        n_nodes: usize,
        prescribed: Vec<Prescribed>,
        orphans: &[usize],
    ) -> Result<Self, AssemblyError> {
        let mut mask = vec![0u8; n_nodes];
        // the entry (index into `prescribed`) that first prescribed each component
        let mut owner: Vec<[Option<usize>; 3]> = vec![[None; 3]; n_nodes];
        for (index, p) in prescribed.iter().enumerate() {
            if let Prescribed::Twist { axis, .. } = p {
                if norm(axis) == 0.0 {
                    return Err(AssemblyError::InvalidBoundaryCondition {
                        set: p.set().to_owned(),
                        reason: "the rotation axis is the zero vector".into(),
                    });
                }
            }
            let bits = p.component_bits();
            if bits == 0 {
                return Err(AssemblyError::InvalidBoundaryCondition {
                    set: p.set().to_owned(),
                    reason: "no component is prescribed".into(),
                });
            }
            for &node in p.nodes() {
                if node >= n_nodes {
                    return Err(AssemblyError::SizeMismatch {
                        what: "constrained node index",
                        expected: n_nodes,
                        got: node,
                    });
                }
                for c in (0..3).filter(|c| bits & (1 << c) != 0) {
                    match owner[node][c] {
                        Some(first) if !agree(&prescribed[first], p, c) => {
                            return Err(AssemblyError::ConflictingConstraints {
                                node,
                                component: ["x", "y", "z"][c],
                                first: describe(&prescribed[first], c),
                                second: describe(p, c),
                            });
                        }
                        Some(_) => {}
                        None => owner[node][c] = Some(index),
                    }
                }
                mask[node] |= bits;
            }
        }
        for &node in orphans {
            mask[node] = 0b111;
        }
        Ok(Self {
            mask: DofMask::new(3, mask)?,
            own_factors: vec![None; prescribed.len()],
            time: 0.0,
            prescribed,
            elimination: OnceLock::new(),
        })
    }

    /// The prescriptions, in the order given to [`Constraints::new`].
    pub fn prescribed(&self) -> &[Prescribed] {
        &self.prescribed
    }

    /// Per node, the components its prescriptions fix (bit `1 << c`); unlike [`Self::mask`],
    /// without the orphan nodes fixed only to keep the tangent regular: what holds the body.
    pub fn prescribed_components(&self) -> Vec<u8> {
        let mut bits = vec![0u8; self.mask.n_blocks()];
        for p in &self.prescribed {
            let b = p.component_bits();
            for &node in p.nodes() {
                bits[node] |= b;
            }
        }
        bits
    }

    /// Makes entry `entry` of the prescriptions (in the order given to [`Constraints::new`])
    /// follow `factor` instead of the load factor (`None`: the load factor again).
    pub fn set_own_factor(&mut self, entry: usize, factor: Option<f64>) {
        if let Some(f) = self.own_factors.get_mut(entry) {
            *f = factor;
        }
    }

    /// Whether some entry follows a load curve of its own (see [`Constraints::set_own_factor`]).
    pub fn has_own_factors(&self) -> bool {
        self.own_factors.iter().any(Option::is_some)
    }

    /// Sets the pseudo-time at which values that depend on it are evaluated.
    pub fn set_time(&mut self, t: f64) {
        self.time = t;
    }

    /// The pseudo-time of [`Constraints::set_time`].
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Per entry of the prescriptions: the factor of its own load curve (see
    /// [`Constraints::set_own_factor`]), `None` where it follows the load factor.
    pub fn own_factors(&self) -> &[Option<f64>] {
        &self.own_factors
    }

    /// Whether some prescribed value depends on the pseudo-time.
    pub fn uses_time(&self) -> bool {
        self.prescribed.iter().any(|p| match p {
            Prescribed::Field { values, .. } => values.iter().flatten().any(|v| v.uses_time),
            _ => false,
        })
    }

    /// Bit `c` set iff component `c` of `node` is constrained.
    pub fn mask(&self, node: usize) -> u8 {
        self.mask.bits(node)
    }

    /// The constrained components as a `linalg` mask (3 unknowns per node).
    pub fn dof_mask(&self) -> &DofMask {
        &self.mask
    }

    /// Number of constrained scalar unknowns.
    pub fn n_constrained(&self) -> usize {
        self.mask.n_constrained()
    }

    /// Writes the prescribed displacement at `load_factor` into the constrained entries of `u`
    /// (node-major, 3 per node, in host memory), leaving free entries untouched.
    pub fn write_prescribed(
        &self,
        load_factor: f64,
        coords: &[[f64; 3]],
        u: &mut Vector,
    ) -> Result<(), AssemblyError> {
        let n = 3 * self.mask.n_blocks();
        if u.len() != n {
            return Err(AssemblyError::SizeMismatch {
                what: "prescribed displacement vector",
                expected: n,
                got: u.len(),
            });
        }
        let u = u.host_mut()?;
        let common = load_factor;
        for (p, own) in self.prescribed.iter().zip(&self.own_factors) {
            let load_factor = own.unwrap_or(common);
            match p {
                Prescribed::Components { nodes, values, .. } => {
                    for &node in nodes {
                        for (c, v) in values.iter().enumerate() {
                            if let Some(v) = v {
                                u[3 * node + c] = load_factor * v;
                            }
                        }
                    }
                }
                Prescribed::Field { nodes, values, .. } => {
                    for &node in nodes {
                        for (c, v) in values.iter().enumerate() {
                            if let Some(v) = v {
                                let value = (v.f)(coords[node], self.time);
                                u[3 * node + c] = if v.uses_time {
                                    value
                                } else {
                                    load_factor * value
                                };
                            }
                        }
                    }
                }
                Prescribed::Twist {
                    nodes,
                    axis,
                    center,
                    angle,
                    axial,
                    ..
                } => {
                    let rotation = rotation_matrix(axis, load_factor * angle);
                    let n = unit(axis);
                    for &node in nodes {
                        let x = coords[node];
                        let r = [x[0] - center[0], x[1] - center[1], x[2] - center[2]];
                        for i in 0..3 {
                            let rotated: f64 = (0..3).map(|j| rotation[i][j] * r[j]).sum();
                            u[3 * node + i] = rotated - r[i] + load_factor * axial * n[i];
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets the constrained entries of `v` to zero (residuals and Newton corrections).
    pub fn zero_constrained(&self, v: &mut Vector) -> Result<(), AssemblyError> {
        Ok(self.mask.zero(v)?)
    }

    /// Copies the constrained entries of `from` into `to` (free entries of `to` untouched).
    pub fn copy_constrained(&self, from: &Vector, to: &mut Vector) -> Result<(), AssemblyError> {
        Ok(self.mask.copy(from, to)?)
    }

    /// Symmetric elimination in a 3x3-blocked square matrix over the mesh nodes: constrained rows and
    /// columns become zero, their diagonal entries keep `linalg::ELIMINATED_DIAGONAL_FRACTION` of their magnitude (one where zero). The block pattern is unchanged. The blocks
    /// to write are found once per pattern (the plan of the first call is kept and reused for every
    /// matrix on the same pattern).
    pub fn eliminate_in_matrix(&self, k: &mut Bsr) -> Result<(), AssemblyError> {
        let n = self.mask.n_blocks();
        if k.block_rows() != 3 || k.block_cols() != 3 || k.pattern().n_block_rows() != n {
            return Err(AssemblyError::SizeMismatch {
                what: "tangent block rows",
                expected: n,
                got: k.pattern().n_block_rows(),
            });
        }
        let cached = match self.elimination.get() {
            Some(plan) => plan,
            None => {
                let plan = self.mask.elimination_plan(k.pattern())?;
                self.elimination.get_or_init(|| plan)
            }
        };
        if BlockPattern::same(cached.pattern(), k.pattern()) {
            self.mask.eliminate(cached, k)?;
        } else {
            let plan = self.mask.elimination_plan(k.pattern())?;
            self.mask.eliminate(&plan, k)?;
        }
        Ok(())
    }
}

/// Whether two entries prescribe component `c` identically at every load factor: the same
/// component value, or the same twist.
fn agree(a: &Prescribed, b: &Prescribed, c: usize) -> bool {
    match (a, b) {
        (Prescribed::Components { values: va, .. }, Prescribed::Components { values: vb, .. }) => {
            va[c] == vb[c]
        }
        (
            Prescribed::Twist {
                axis: a1,
                center: c1,
                angle: g1,
                axial: x1,
                ..
            },
            Prescribed::Twist {
                axis: a2,
                center: c2,
                angle: g2,
                axial: x2,
                ..
            },
        ) => unit(a1) == unit(a2) && c1 == c2 && g1 == g2 && x1 == x2,
        (Prescribed::Field { values: va, .. }, Prescribed::Field { values: vb, .. }) => {
            va[c] == vb[c]
        }
        _ => false,
    }
}

/// An entry as people name it in an input file, for component `c`.
fn describe(p: &Prescribed, c: usize) -> String {
    match p {
        Prescribed::Components { set, values, .. } => format!(
            "dirichlet on set '{set}' ({} = {})",
            ["x", "y", "z"][c],
            values[c].unwrap_or(f64::NAN)
        ),
        Prescribed::Twist { set, .. } => format!("twist on set '{set}'"),
        Prescribed::Field { set, values, .. } => format!(
            "dirichlet on set '{set}' ({} = {})",
            ["x", "y", "z"][c],
            values[c].as_ref().map_or("free", |v| v.text.as_str())
        ),
    }
}

/// Euclidean norm without overflow or underflow: the components are scaled by the largest
/// magnitude first, so `[0, 0, 1e155]` and `[0, 0, 1e-170]` have the norms they should (squaring
/// would give infinity and zero).
fn norm(a: &[f64; 3]) -> f64 {
    let m = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if m == 0.0 || !m.is_finite() {
        return m;
    }
    let [x, y, z] = a.map(|v| v / m);
    m * (x * x + y * y + z * z).sqrt()
}

pub(crate) fn unit(a: &[f64; 3]) -> [f64; 3] {
    let n = norm(a);
    [a[0] / n, a[1] / n, a[2] / n]
}

/// Rotation by `angle` radians about the (not necessarily unit) `axis` (Rodrigues' formula).
pub fn rotation_matrix(axis: &[f64; 3], angle: f64) -> [[f64; 3]; 3] {
    let [x, y, z] = unit(axis);
    let (s, c) = angle.sin_cos();
    let t = 1.0 - c;
    [
        [c + x * x * t, x * y * t - z * s, x * z * t + y * s],
        [y * x * t + z * s, c + y * y * t, y * z * t - x * s],
        [z * x * t - y * s, z * y * t + x * s, c + z * z * t],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn twist_rotates_about_the_axis_through_the_center() {
        let coords = [[1.0, 0.0, 2.0], [0.0, 0.0, 2.0]];
        let twist = Prescribed::Twist {
            set: "top".into(),
            nodes: vec![0, 1],
            axis: [0.0, 0.0, 2.0],
            center: [0.0, 0.0, 0.0],
            angle: std::f64::consts::FRAC_PI_2,
            axial: 0.5,
        };
        let cons = Constraints::new(2, vec![twist], &[]).unwrap();
        let mut u = Vector::zeros(6);
        cons.write_prescribed(1.0, &coords, &mut u).unwrap();
        let u = u.host().unwrap();
        // (1,0,2) rotated by 90 degrees about z is (0,1,2), lifted by 0.5: u = (-1, 1, 0.5)
        for (got, want) in u[0..3].iter().zip([-1.0, 1.0, 0.5]) {
            assert!((got - want).abs() < 1e-14);
        }
        // a node on the axis only moves along it
        for (got, want) in u[3..6].iter().zip([0.0, 0.0, 0.5]) {
            assert!((got - want).abs() < 1e-14);
        }
    }

    #[test]
    fn elimination_is_symmetric_and_keeps_the_pattern() {
        // two nodes, full 6x6 coupling
        let pattern =
            Arc::new(linalg::BlockPattern::new(2, 2, vec![0, 2, 4], vec![0, 1, 0, 1]).unwrap());
        let dense: Vec<f64> = (0..36).map(|e| 1.0 + (e / 6 + e % 6) as f64).collect(); // symmetric
        let mut k = Bsr::from_dense(&dense, 6, 6, 3, 3).unwrap();
        let mut k_again = k.clone();
        assert_eq!(k.pattern().nnz(), pattern.nnz());
        let fix_y_of_node1 = Prescribed::Components {
            set: "s".into(),
            nodes: vec![1],
            values: [None, Some(0.0), None],
        };
        let cons = Constraints::new(2, vec![fix_y_of_node1], &[]).unwrap();
        cons.eliminate_in_matrix(&mut k).unwrap();
        // A second matrix on the same pattern reuses the plan and gets the same result.
        cons.eliminate_in_matrix(&mut k_again).unwrap();
        assert_eq!(k, k_again);
        let out = k.to_dense().unwrap();
        let fixed = 4; // node 1, component y
        for i in 0..6 {
            for j in 0..6 {
                let want = if i == fixed || j == fixed {
                    if i == j {
                        linalg::ELIMINATED_DIAGONAL_FRACTION * dense[6 * i + j]
                    } else {
                        0.0
                    }
                } else {
                    dense[6 * i + j]
                };
                assert_eq!(out[6 * i + j], want, "entry ({i},{j})");
            }
        }
        assert_eq!(cons.n_constrained(), 1);
    }

    #[test]
    fn a_prescription_without_components_is_rejected() {
        let p = Prescribed::Components {
            set: "left".into(),
            nodes: vec![0],
            values: [None; 3],
        };
        let err = Constraints::new(1, vec![p], &[]).unwrap_err();
        assert!(err.to_string().contains("left"), "{err}");
    }

    /// A huge or tiny axis describes the same rotation as the unit axis: the norm is scaled, so
    /// `[0, 0, 1e155]` does not overflow (squaring it gives infinity, which turned the rotation
    /// into a radial squeeze) and `[0, 0, 1e-170]` does not underflow to zero.
    #[test]
    fn scaled_twist_axes_give_the_unit_axis_result() {
        let coords = [[1.0, 0.5, 2.0], [-0.3, 0.7, 1.0]];
        let prescribed = |axis: [f64; 3]| {
            let twist = Prescribed::Twist {
                set: "top".into(),
                nodes: vec![0, 1],
                axis,
                center: [0.1, 0.0, 0.0],
                angle: 1.1,
                axial: 0.25,
            };
            let cons = Constraints::new(2, vec![twist], &[]).unwrap();
            let mut u = Vector::zeros(6);
            cons.write_prescribed(0.7, &coords, &mut u).unwrap();
            u.to_host_vec().unwrap()
        };
        let unit_axis = prescribed([0.0, 0.6, 0.8]);
        for scale in [1e155, 1e300, 1e-170, 1e-300] {
            let scaled = prescribed([0.0, 0.6 * scale, 0.8 * scale]);
            for (a, b) in scaled.iter().zip(&unit_axis) {
                assert!(
                    (a - b).abs() < 1e-14,
                    "scale {scale}: {scaled:?} vs {unit_axis:?}"
                );
            }
        }
        assert!((norm(&[3e200, 4e200, 0.0]) / 5e200 - 1.0).abs() < 1e-15);
        assert_eq!(norm(&[0.0; 3]), 0.0);
    }

    /// Two conditions on one component of one node: equal values are fine, different ones (or a
    /// twist and a value) are an error naming both.
    #[test]
    fn conflicting_constraints_name_both_conditions() {
        let fix = |set: &str, nodes: Vec<usize>, x: f64| Prescribed::Components {
            set: set.into(),
            nodes,
            values: [Some(x), None, None],
        };
        assert!(Constraints::new(
            3,
            vec![fix("a", vec![0, 1], 0.0), fix("b", vec![1, 2], 0.0)],
            &[]
        )
        .is_ok());
        let err = Constraints::new(
            3,
            vec![fix("a", vec![0, 1], 0.0), fix("b", vec![1, 2], 0.5)],
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("node 1")
                && err.contains("dirichlet on set 'a' (x = 0)")
                && err.contains("dirichlet on set 'b' (x = 0.5)"),
            "{err}"
        );
        let twist = Prescribed::Twist {
            set: "top".into(),
            nodes: vec![2],
            axis: [0.0, 0.0, 1.0],
            center: [0.0; 3],
            angle: 1.0,
            axial: 0.0,
        };
        let err = Constraints::new(3, vec![fix("side", vec![2], 0.0), twist], &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("dirichlet on set 'side'") && err.contains("twist on set 'top'"),
            "{err}"
        );
    }
}
