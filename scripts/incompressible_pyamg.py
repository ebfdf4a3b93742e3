"""PyAMG's smoothed aggregation (six rigid-body modes) on the cube of `hexfem bench
incompressible` (Q1 displacement formulation): the unit cube of n^3 trilinear cells, E = 1,
clamped at z = 0 (those unknowns eliminated), right-hand side the traction [0.01, 0, -0.01] on
z = 1 as nodal forces; CG to a relative residual of 1e-8 at nu = 0.3 ... 0.4999. Independent of
hexfem's code (element stiffness with 2x2x2 Gauss points, as `/work/shared/peers/
elasticity_peer.py` builds it).

Usage: python3 scripts/incompressible_pyamg.py [CELLS] [--json]   (pip install pyamg)
"""
import json
import sys
import time

import numpy as np
import pyamg
import scipy.sparse as sp

POISSON_RATIOS = [0.3, 0.45, 0.49, 0.499, 0.4999]


def element_stiffness(h, nu, E=1.0):
    lam = E * nu / ((1 + nu) * (1 - 2 * nu))
    mu = E / (2 * (1 + nu))
    D = np.zeros((6, 6))
    D[:3, :3] = lam
    D[np.arange(3), np.arange(3)] += 2 * mu
    D[3, 3] = D[4, 4] = D[5, 5] = mu
    corners = np.array([[i, j, k] for k in (0, 1) for j in (0, 1) for i in (0, 1)], float)
    s = 2 * corners - 1
    g = 1 / np.sqrt(3)
    Ke = np.zeros((24, 24))
    for qz in (-g, g):
        for qy in (-g, g):
            for qx in (-g, g):
                xi = np.array([qx, qy, qz])
                dN = np.empty((8, 3))
                for d in range(3):
                    t = s[:, d] / 8.0
                    for e in range(3):
                        if e != d:
                            t = t * (1 + s[:, e] * xi[e])
                    dN[:, d] = t
                dNdx = dN * (2.0 / h)
                B = np.zeros((6, 24))
                for a in range(8):
                    bx, by, bz = dNdx[a]
                    B[0, 3 * a], B[1, 3 * a + 1], B[2, 3 * a + 2] = bx, by, bz
                    B[3, 3 * a], B[3, 3 * a + 1] = by, bx
                    B[4, 3 * a + 1], B[4, 3 * a + 2] = bz, by
                    B[5, 3 * a], B[5, 3 * a + 2] = bz, bx
                Ke += B.T @ D @ B * (h / 2) ** 3
    return Ke, corners.astype(np.int64)


def problem(n, nu):
    """A (free unknowns), b, and the rigid-body modes at the free unknowns."""
    m = n + 1
    h = 1.0 / n
    Ke, corners = element_stiffness(h, nu)
    e = np.arange(n ** 3)
    ex, ey, ez = e % n, (e // n) % n, e // (n * n)
    nodes = np.stack([(ex + c[0]) + m * ((ey + c[1]) + m * (ez + c[2])) for c in corners], axis=1)
    dofs = (3 * nodes[:, :, None] + np.arange(3)).reshape(-1, 24)
    rows = np.repeat(dofs, 24, axis=1).ravel()
    cols = np.tile(dofs, (1, 24)).ravel()
    A = sp.coo_matrix((np.tile(Ke.ravel(), n ** 3), (rows, cols)), shape=(3 * m ** 3,) * 2).tocsr()
    idx = np.arange(m ** 3)
    x = np.stack([(idx % m) * h, ((idx // m) % m) * h, (idx // (m * m)) * h], axis=1)
    # traction on z = 1: nodal forces of a bilinear face, weights h^2 / 4 per face corner
    b = np.zeros(3 * m ** 3)
    top = np.where(np.isclose(x[:, 2], 1.0))[0]
    i, j = top % m, (top // m) % m
    w = h * h * ((1 + ((i > 0) & (i < n))) * (1 + ((j > 0) & (j < n)))) / 4.0
    b[3 * top] = 0.01 * w
    b[3 * top + 2] = -0.01 * w
    free = np.repeat(~np.isclose(x[:, 2], 0.0), 3)
    c = x - x.mean(axis=0)
    modes = np.zeros((3 * m ** 3, 6))
    for d in range(3):
        modes[d::3, d] = 1.0
    modes[0::3, 3], modes[1::3, 3] = -c[:, 1], c[:, 0]
    modes[1::3, 4], modes[2::3, 4] = -c[:, 2], c[:, 1]
    modes[2::3, 5], modes[0::3, 5] = -c[:, 0], c[:, 2]
    return A[free][:, free].tocsr(), b[free], modes[free]


def solve(A, b, B, **options):
    started = time.perf_counter()
    ml = pyamg.smoothed_aggregation_solver(A, B=B, **options)
    residuals = []
    ml.solve(b, tol=1e-8, accel="cg", maxiter=2000, residuals=residuals)
    return len(residuals) - 1, time.perf_counter() - started


VARIANTS = {
    "default (symmetric strength, block GS)": {},
    "energy-minimising prolongator": {"smooth": "energy"},
}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 16
    rows = []
    for name, options in VARIANTS.items():
        for nu in POISSON_RATIOS:
            A, b, B = problem(n, nu)
            its, wall = solve(A, b, B, **options)
            rows.append({"variant": name, "poisson_ratio": nu, "unknowns": A.shape[0],
                         "cg_iterations": its, "wall_s": wall})
    if "--json" in sys.argv:
        print(json.dumps({"cells": n, "pyamg": pyamg.__version__, "cases": rows}))
        return
    print(f"PyAMG {pyamg.__version__} SA + CG to rtol 1e-8, cube of {n}^3 Q1 cells "
          f"({rows[0]['unknowns']} free unknowns)")
    print(f"{'variant':<40}" + "".join(f"{'nu ' + str(nu):>10}" for nu in POISSON_RATIOS))
    for i in range(0, len(rows), len(POISSON_RATIOS)):
        row = rows[i:i + len(POISSON_RATIOS)]
        print(f"{row[0]['variant']:<40}" + "".join(f"{r['cg_iterations']:>10}" for r in row))


if __name__ == "__main__":
    main()
