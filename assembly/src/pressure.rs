//! Follower pressure on face sets: a force `-p n da` on the deformed surface, which turns with
//! it. Unlike the dead loads it depends on the displacement, so it enters the residual and the
//! tangent of every Newton iteration (after the element loop) instead of the constant `f_ext`.

use fem::FaceKernel;
use linalg::{Bsr, Vector};
use mesh::{face_local_nodes, CellFace, HexMesh};

use crate::AssemblyError;

/// A pressure (at load factor one, per unit current area, positive pushing into the body) on a
/// set of boundary faces. Built once from the mesh; evaluated at any displacement.
#[derive(Clone, Debug)]
pub struct FollowerPressure {
    /// Each face's global nodes in face-basis order, and its `Face::orientation`.
    faces: Vec<(Vec<usize>, f64)>,
    pressure: f64,
    kernel: FaceKernel,
    /// The factor of the pressure's own load curve at the current pseudo-time, replacing the
    /// load factor (`None`: it follows the load factor).
    pub own_factor: Option<f64>,
}

impl FollowerPressure {
    /// The pressure `pressure` on `faces` of `mesh`, integrated with `points_per_direction`^2
    /// Gauss points per face.
    pub fn new(
        mesh: &HexMesh,
        faces: &[CellFace],
        pressure: f64,
        points_per_direction: usize,
    ) -> Result<Self, AssemblyError> {
        let kernel =
            FaceKernel::new(mesh.order(), points_per_direction).map_err(AssemblyError::Kernel)?;
        let faces = faces
            .iter()
            .map(|cf| {
                if cf.cell >= mesh.n_cells() {
                    return Err(AssemblyError::SizeMismatch {
                        what: "pressure face cell",
                        expected: mesh.n_cells(),
                        got: cf.cell,
                    });
                }
                let nodes = mesh.cell_nodes(cf.cell);
                let local = face_local_nodes(mesh.kind, cf.face);
                Ok((
                    local.iter().map(|&a| nodes[a]).collect(),
                    cf.face.orientation(),
                ))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            faces,
            pressure,
            kernel,
            own_factor: None,
        })
    }

    /// Each face's global nodes in face-basis order and its orientation (`Face::orientation`).
    pub fn faces(&self) -> &[(Vec<usize>, f64)] {
        &self.faces
    }

    /// The pressure at load factor one.
    pub fn pressure(&self) -> f64 {
        self.pressure
    }

    /// The face kernel (order and quadrature).
    pub fn kernel(&self) -> &FaceKernel {
        &self.kernel
    }

    /// Adds the pressure's residual at `load_factor` and displacement `u` to `r` and, where `k` is
    /// given, its full load stiffness `d r / d u` to `k` (on the pattern the cells already give
    /// the face nodes). The load stiffness is not symmetric in general (its skew part cancels
    /// only where the loaded surface is closed or its boundary is fixed), so a tangent with a
    /// follower pressure needs a solver for nonsymmetric matrices (see
    /// [`crate::DiscreteProblem::tangent_is_symmetric`]); with it Newton converges
    /// quadratically. Faces are added in order on the host: the same bits for any thread count.
    pub fn add(
        &self,
        coords: &[[f64; 3]],
        u: &Vector,
        load_factor: f64,
        r: &mut Vector,
        mut k: Option<&mut Bsr>,
    ) -> Result<(), AssemblyError> {
        let p = self.own_factor.unwrap_or(load_factor) * self.pressure;
        let n = self.kernel.n_nodes();
        let (u, _) = u.host()?.as_chunks::<3>();
        let mut re = vec![[0.0; 3]; n];
        let mut ke = vec![[0.0; 9]; n * n];
        for (nodes, orientation) in &self.faces {
            let x: Vec<[f64; 3]> = nodes
                .iter()
                .map(|&g| {
                    let (x, d) = (coords[g], u[g]);
                    [x[0] + d[0], x[1] + d[1], x[2] + d[2]]
                })
                .collect();
            self.kernel
                .pressure_residual_tangent(
                    &x,
                    p,
                    *orientation,
                    &mut re,
                    k.is_some().then_some(&mut ke[..]),
                )
                .map_err(AssemblyError::Kernel)?;
            let rh = r.host_mut()?;
            for (&g, ra) in nodes.iter().zip(&re) {
                for d in 0..3 {
                    rh[3 * g + d] += ra[d];
                }
            }
            if let Some(k) = k.as_deref_mut() {
                for (a, &ga) in nodes.iter().enumerate() {
                    for (b, &gb) in nodes.iter().enumerate() {
                        let slot = k
                            .pattern()
                            .find(ga, gb)
                            .ok_or(AssemblyError::SizeMismatch {
                                what: "pressure face block outside the tangent's pattern",
                                expected: ga,
                                got: gb,
                            })?;
                        let block = k.host_block_mut(slot)?;
                        for (kij, e) in block.iter_mut().zip(&ke[a * n + b]) {
                            *kij += e;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
