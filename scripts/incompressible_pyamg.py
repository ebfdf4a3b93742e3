"""PyAMG's smoothed aggregation (six rigid-body modes) on the cube of `hexfem bench
incompressible` (Q1 displacement formulation): the unit cube of n^3 trilinear cells, E = 1,
clamped at z = 0 (those unknowns eliminated), right-hand side the traction [0.01, 0, -0.01] on
z = 1 as nodal forces; CG to a relative residual of 1e-8 at nu = 0.3 ... 0.4999. Independent of
hexfem's code (element stiffness with 2x2x2 Gauss points, as `/work/shared/peers/
elasticity_peer.py` builds it).

Usage: python3 scripts/incompressible_pyamg.py [CELLS] [--json]   (pip install pyamg)

With `--systems DIR/systems.json` it solves instead the systems `hexfem bench incompressible`
exports (PETSc binary files: the matrices hexfem's CG + AMG solves, every case of the sweep),
the constrained unknowns (identity rows) removed and the rigid-body modes built from the
exported coordinates as above, to the manifest's tolerance; the bench runs it so. Exit status
3 where PyAMG cannot be imported (the bench then skips this peer).
"""
import json
import os
import sys
import time

MODULE_MISSING = 3

try:
    import numpy as np
    import pyamg
    import scipy.sparse as sp
except ImportError as e:
    print(f"PyAMG is not importable by {sys.executable} ({e}); pip install pyamg", file=sys.stderr)
    sys.exit(MODULE_MISSING)

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
    modes = rigid_body_modes(x)
    return A[free][:, free].tocsr(), b[free], modes[free]


def rigid_body_modes(x):
    """The six rigid-body modes at the nodes `x` (n x 3), node-major, rotations about the
    centroid."""
    c = x - x.mean(axis=0)
    modes = np.zeros((3 * len(x), 6))
    for d in range(3):
        modes[d::3, d] = 1.0
    modes[0::3, 3], modes[1::3, 3] = -c[:, 1], c[:, 0]
    modes[1::3, 4], modes[2::3, 4] = -c[:, 2], c[:, 1]
    modes[2::3, 5], modes[0::3, 5] = -c[:, 0], c[:, 2]
    return modes


def solve_timed(A, b, B, tol=1e-8, **options):
    """CG iterations, convergence, set-up and solve seconds."""
    started = time.perf_counter()
    ml = pyamg.smoothed_aggregation_solver(A, B=B, **options)
    setup = time.perf_counter() - started
    residuals = []
    started = time.perf_counter()
    x = ml.solve(b, tol=tol, accel="cg", maxiter=10000, residuals=residuals)
    wall = time.perf_counter() - started
    converged = np.linalg.norm(b - A @ x) <= 1.01 * tol * np.linalg.norm(b)
    return len(residuals) - 1, bool(converged), setup, wall


def solve(A, b, B, **options):
    its, _, setup, wall = solve_timed(A, b, B, **options)
    return its, setup + wall


def read_petsc_matrix(path):
    """A PETSc binary AIJ matrix (big-endian 32-bit indices, 64-bit reals) as CSR."""
    data = open(path, "rb").read()
    classid, m, n, nnz = np.frombuffer(data, ">i4", 4, 0)
    assert classid == 1211216, f"{path}: not a PETSc matrix"
    lengths = np.frombuffer(data, ">i4", m, 16).astype(np.int64)
    cols = np.frombuffer(data, ">i4", nnz, 16 + 4 * m).astype(np.int64)
    values = np.frombuffer(data, ">f8", nnz, 16 + 4 * (m + nnz)).astype(np.float64)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return sp.csr_matrix((values, cols, indptr), shape=(m, n))


def read_petsc_vector(path):
    data = open(path, "rb").read()
    classid, n = np.frombuffer(data, ">i4", 2, 0)
    assert classid == 1211214, f"{path}: not a PETSc vector"
    return np.frombuffer(data, ">f8", n, 8).astype(np.float64)


def solve_systems(manifest_path):
    """Every system of the manifest with every variant: the bench's peer output."""
    manifest = json.load(open(manifest_path))
    root = os.path.dirname(os.path.abspath(manifest_path))
    results = []
    for system in manifest["systems"]:
        d = os.path.join(root, system["dir"])
        A = read_petsc_matrix(os.path.join(d, "A.petsc"))
        b = read_petsc_vector(os.path.join(d, "b.petsc"))
        x = read_petsc_vector(os.path.join(d, "coordinates.petsc")).reshape(-1, 3)
        free = read_petsc_vector(os.path.join(d, "constrained.petsc")) == 0.0
        A, b, B = A[free][:, free].tocsr(), b[free], rigid_body_modes(x)[free]
        for name, options in VARIANTS.items():
            its, converged, setup, wall = solve_timed(A, b, B, tol=manifest["rtol"], **options)
            results.append({"system": system["name"], "solver": "PyAMG SA " + name,
                            "iterations": its, "converged": converged,
                            "setup_s": setup, "solve_s": wall})
    solvers = [{"name": "PyAMG SA " + name,
                "options": f"smoothed_aggregation_solver(A, B=rigid-body modes, **{options}), "
                           "CG (accel='cg'), constrained unknowns removed"}
               for name, options in VARIANTS.items()]
    return {"peer": "PyAMG", "version": pyamg.__version__, "solvers": solvers,
            "results": results}


VARIANTS = {
    "default": {},
    "energy": {"smooth": "energy"},
}


def main():
    if "--systems" in sys.argv:
        out = solve_systems(sys.argv[sys.argv.index("--systems") + 1])
        if "--json" in sys.argv:
            print(json.dumps(out))
        else:
            for r in out["results"]:
                print(f"{r['system']:<36} {r['solver']:<20} {r['iterations']:>6}")
        return
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
