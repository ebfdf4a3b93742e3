//! A Q1 elasticity operator on the unit cube for the tests and the example (the ex56 model problem
//! of GAMG.md, built here without the mesh/fem crates): `m^3` nodes, trilinear hexahedra, E = 1,
//! nu = 0.25, elements whose centroid lies within 0.25 of the centre scaled by `soft`, face z = 0
//! clamped (rows and columns replaced by identity), body force (1, 2, 0).
#![allow(dead_code)]

use amg::NearNullSpace;
use linalg::{BlockPattern, Bsr, Vector};
use std::sync::Arc;

/// 24x24 stiffness of a cube element of side `h` (2x2x2 Gauss), dofs `3 a + c`, corner
/// `a = i + 2 j + 4 k` (as `q1_element_stiffness` of the elasticity peer).
pub fn q1_element_stiffness(h: f64, e: f64, nu: f64) -> Vec<f64> {
    let lam = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
    let mu = e / (2.0 * (1.0 + nu));
    let mut d = [[0.0; 6]; 6];
    for i in 0..3 {
        d[i][..3].fill(lam);
        d[i][i] += 2.0 * mu;
        d[i + 3][i + 3] = mu;
    }
    let g = 1.0 / 3f64.sqrt();
    let mut ke = vec![0.0; 24 * 24];
    for &qz in &[-g, g] {
        for &qy in &[-g, g] {
            for &qx in &[-g, g] {
                let xi = [qx, qy, qz];
                let mut bmat = [[0.0; 24]; 6];
                for a in 0..8 {
                    let s = [
                        (2 * (a & 1)) as f64 - 1.0,
                        (2 * ((a >> 1) & 1)) as f64 - 1.0,
                        (2 * (a >> 2)) as f64 - 1.0,
                    ];
                    let mut dn = [0.0; 3];
                    for dd in 0..3 {
                        let mut t = s[dd] / 8.0;
                        for ee in 0..3 {
                            if ee != dd {
                                t *= 1.0 + s[ee] * xi[ee];
                            }
                        }
                        dn[dd] = t * 2.0 / h;
                    }
                    let (bx, by, bz) = (dn[0], dn[1], dn[2]);
                    bmat[0][3 * a] = bx;
                    bmat[1][3 * a + 1] = by;
                    bmat[2][3 * a + 2] = bz;
                    bmat[3][3 * a] = by;
                    bmat[3][3 * a + 1] = bx;
                    bmat[4][3 * a + 1] = bz;
                    bmat[4][3 * a + 2] = by;
                    bmat[5][3 * a] = bz;
                    bmat[5][3 * a + 2] = bx;
                }
                let det = (h / 2.0).powi(3);
                for p in 0..24 {
                    for q in 0..24 {
                        let mut s = 0.0;
                        for i in 0..6 {
                            for j in 0..6 {
                                s += bmat[i][p] * d[i][j] * bmat[j][q];
                            }
                        }
                        ke[p * 24 + q] += s * det;
                    }
                }
            }
        }
    }
    ke
}

/// The 6 rigid-body modes at `coords` about their centroid, node-major: the layout and modes of
/// `assembly::rigid_body_modes` (translations, then rotations `(-y, x, 0)`, `(0, -z, y)`,
/// `(z, 0, -x)`), rebuilt here so that the tests do not depend on the assembly crate.
pub fn rigid_body_modes(coords: &[[f64; 3]]) -> NearNullSpace {
    let n = coords.len().max(1) as f64;
    let mut c = [0.0; 3];
    for p in coords {
        for d in 0..3 {
            c[d] += p[d] / n;
        }
    }
    let mut values = Vec::with_capacity(coords.len() * 18);
    for p in coords {
        let (x, y, z) = (p[0] - c[0], p[1] - c[1], p[2] - c[2]);
        values.extend_from_slice(&[1.0, 0.0, 0.0, -y, 0.0, z]);
        values.extend_from_slice(&[0.0, 1.0, 0.0, x, -z, 0.0]);
        values.extend_from_slice(&[0.0, 0.0, 1.0, 0.0, y, -x]);
    }
    NearNullSpace::from_row_major(coords.len() * 3, 6, values).unwrap()
}

/// The assembled problem.
pub struct Problem {
    pub a: Bsr,
    pub b: Vector,
    pub coords: Vec<[f64; 3]>,
    pub near_null: NearNullSpace,
}

/// Builds the ex56-like problem with `m` nodes per side and soft-inclusion factor `soft`.
pub fn elasticity(m: usize, soft: f64) -> Problem {
    let n = m * m * m;
    let h = 1.0 / (m - 1) as f64;
    let id = |i: usize, j: usize, k: usize| i + m * (j + m * k);
    // 27-point pattern.
    let mut row_ptr = vec![0usize];
    let mut cols = Vec::new();
    let mut coords = Vec::with_capacity(n);
    for k in 0..m {
        for j in 0..m {
            for i in 0..m {
                coords.push([i as f64 * h, j as f64 * h, k as f64 * h]);
                for kk in k.saturating_sub(1)..(k + 2).min(m) {
                    for jj in j.saturating_sub(1)..(j + 2).min(m) {
                        for ii in i.saturating_sub(1)..(i + 2).min(m) {
                            cols.push(id(ii, jj, kk) as u32);
                        }
                    }
                }
                row_ptr.push(cols.len());
            }
        }
    }
    let pattern = Arc::new(BlockPattern::new(n, n, row_ptr, cols).unwrap());
    let mut a = Bsr::zeros(pattern.clone(), 3, 3);
    let mut b = vec![0.0; 3 * n];
    let ke_hard = q1_element_stiffness(h, 1.0, 0.25);
    for k in 0..m - 1 {
        for j in 0..m - 1 {
            for i in 0..m - 1 {
                let c = [
                    (i as f64 + 0.5) * h - 0.5,
                    (j as f64 + 0.5) * h - 0.5,
                    (k as f64 + 0.5) * h - 0.5,
                ];
                let scale = if (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt() < 0.25 {
                    soft
                } else {
                    1.0
                };
                let nodes: Vec<usize> = (0..8)
                    .map(|a| id(i + (a & 1), j + ((a >> 1) & 1), k + (a >> 2)))
                    .collect();
                for (la, &na) in nodes.iter().enumerate() {
                    b[3 * na] += h * h * h / 8.0;
                    b[3 * na + 1] += 2.0 * h * h * h / 8.0;
                    for (lb, &nb) in nodes.iter().enumerate() {
                        let slot = pattern.find(na, nb).unwrap();
                        let blk = a.host_block_mut(slot).unwrap();
                        for r in 0..3 {
                            for cc in 0..3 {
                                blk[r * 3 + cc] += scale * ke_hard[(3 * la + r) * 24 + 3 * lb + cc];
                            }
                        }
                    }
                }
            }
        }
    }
    // Clamp z = 0: identity rows and columns.
    for node in 0..m * m {
        for slot in pattern.row_ptr()[node]..pattern.row_ptr()[node + 1] {
            let col = pattern.col_idx()[slot] as usize;
            let blk = a.host_block_mut(slot).unwrap();
            blk.fill(0.0);
            if col == node {
                blk[0] = 1.0;
                blk[4] = 1.0;
                blk[8] = 1.0;
            } else {
                let back = pattern.find(col, node).unwrap();
                a.host_block_mut(back).unwrap().fill(0.0);
            }
        }
        b[3 * node..3 * node + 3].fill(0.0);
    }
    let near_null = rigid_body_modes(&coords);
    Problem {
        a,
        b: Vector::from_vec(b),
        coords,
        near_null,
    }
}
