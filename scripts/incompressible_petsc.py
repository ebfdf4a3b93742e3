"""PETSc's peers of `hexfem bench incompressible` on the systems it exports (the same matrices
hexfem's CG + AMG solves): CG + GAMG configured as a PETSc user would for elasticity (block size
3, the near-null space from MatNullSpaceCreateRigidBody on the nodal coordinates), with GAMG's
defaults and with the commonly recommended options, and hypre's BoomerAMG (nodal coarsening
and interpolation for systems) where this PETSc has hypre. Every solve: CG from a zero initial
guess to the relative tolerance of the manifest on the unpreconditioned residual (hexfem's
test), at most 10000 iterations, one process of one thread. Set-up (KSPSetUp: the preconditioner) and solve are timed
apart.

The bench runs this script (`hexfem bench incompressible`, `apps/bench/src/incompressible_peers.rs`);
by hand: `hexfem bench incompressible --export DIR --no-peers`, then
    /usr/bin/python3 scripts/incompressible_petsc.py --systems DIR/systems.json [--json] [--hypre-all]
On Debian, `apt-get install python3-petsc4py` installs petsc4py for the system interpreter
(/usr/bin/python3); without the PETSc development package its path is found here. Exit status
3 where petsc4py cannot be imported (the bench then skips this peer).
"""
import glob
import json
import os
import sys
import time

MODULE_MISSING = 3
MAX_ITERATIONS = 10000

# hypre runs on these systems only unless --hypre-all (about 0.1 s per iteration on the bench's
# 16^3 cube on a 2-core box: every system would take most of an hour)
HYPRE_ELEMENT = "q1_displacement"

# one thread, as PETSc's own runs (hypre's OpenMP threads would compete with each other)
os.environ.setdefault("OMP_NUM_THREADS", "1")


def import_petsc():
    try:
        import petsc4py
    except ImportError:
        # Debian's python3-petsc4py lives under /usr/lib/petscdir/...; its .pth file points at
        # /usr/lib/petsc, which only the development package creates
        found = sorted(glob.glob("/usr/lib/petscdir/petsc*/*-real/lib/python3/dist-packages"))
        if not found:
            raise
        sys.path.append(found[-1])
        import petsc4py
    petsc4py.init([])
    from petsc4py import PETSc
    return PETSc


try:
    PETSc = import_petsc()
except (ImportError, ValueError) as e:  # ValueError: built against another numpy
    print(f"petsc4py is not importable by {sys.executable} ({e}); "
          "apt-get install python3-petsc4py, or pip install petsc4py", file=sys.stderr)
    sys.exit(MODULE_MISSING)

CG = {
    "ksp_type": "cg",
    "ksp_norm_type": "unpreconditioned",
    "ksp_atol": "0",
    "ksp_max_it": str(MAX_ITERATIONS),
}


def solvers(has_hypre):
    """(name, options) of each solver, CG's options left out (they are common)."""
    out = [
        ("PETSc GAMG default", {"pc_type": "gamg"}),
        # the options PETSc's users' guide and ex56 recommend for elasticity: a drop threshold
        # for the graph, CG for the smoother's eigenvalue estimate (the operator is SPD);
        # Chebyshev/Jacobi smoothing and one smoothing of the prolongator are the defaults
        ("PETSc GAMG tuned", {
            "pc_type": "gamg",
            "pc_gamg_threshold": "0.01",
            "mg_levels_ksp_type": "chebyshev",
            "mg_levels_pc_type": "jacobi",
            "mg_levels_esteig_ksp_type": "cg",
            "pc_gamg_agg_nsmooths": "1",
        }),
        # as hexfem's smoother: Chebyshev with point-block (3x3) Jacobi
        ("PETSc GAMG pbjacobi", {
            "pc_type": "gamg",
            "pc_gamg_threshold": "0.01",
            "mg_levels_ksp_type": "chebyshev",
            "mg_levels_pc_type": "pbjacobi",
            "mg_levels_esteig_ksp_type": "cg",
        }),
    ]
    if has_hypre:
        # systems AMG as hypre's manual advises for 3D elasticity: coarsening on the nodes (the
        # 3x3 blocks' Frobenius norms, nodal option 6) for the matrix's block size, strength
        # threshold 0.5, HMIS coarsening with one aggressive level, ext+i interpolation with at
        # most 4 entries per row. Measured on the bench's cube (Q1, nu = 0.49): 107 iterations
        # in 10 s; without the aggressive level 149 in 43 s; hypre's defaults with nodal
        # coarsening alone 0.6 s per iteration; with its interpolation of the rigid-body modes
        # (-pc_hypre_boomeramg_vec_interp_variant 2, 8^3 cube at nu = 0.499) 89 iterations
        # instead of 114 at 5x the time
        out.append(("hypre BoomerAMG nodal", {
            "pc_type": "hypre",
            "pc_hypre_type": "boomeramg",
            "pc_hypre_boomeramg_nodal_coarsen": "6",
            "pc_hypre_boomeramg_strong_threshold": "0.5",
            "pc_hypre_boomeramg_coarsen_type": "HMIS",
            "pc_hypre_boomeramg_agg_nl": "1",
            "pc_hypre_boomeramg_interp_type": "ext+i",
            "pc_hypre_boomeramg_P_max": "4",
        }))
    return out


def read_vec(path):
    viewer = PETSc.Viewer().createBinary(path, "r", comm=PETSc.COMM_SELF)
    v = PETSc.Vec().create(comm=PETSc.COMM_SELF)
    v.load(viewer)
    viewer.destroy()
    return v


def load_system(d):
    viewer = PETSc.Viewer().createBinary(os.path.join(d, "A.petsc"), "r", comm=PETSc.COMM_SELF)
    A = PETSc.Mat().create(comm=PETSc.COMM_SELF)
    A.setType("aij")
    A.setBlockSize(3)
    A.load(viewer)
    viewer.destroy()
    if A.getBlockSize() != 3:
        raise RuntimeError(f"{d}: the matrix was loaded with block size {A.getBlockSize()}")
    b = read_vec(os.path.join(d, "b.petsc"))
    x = read_vec(os.path.join(d, "coordinates.petsc"))
    coords = PETSc.Vec().createSeq(x.getSize(), bsize=3, comm=PETSc.COMM_SELF)
    coords.setArray(x.getArray())
    null = PETSc.NullSpace().createRigidBody(coords)
    A.setNearNullSpace(null)
    return A, b


def solve(A, b, prefix, options):
    opts = PETSc.Options()
    for key, value in {**CG, **options}.items():
        opts[prefix + key] = value
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    ksp.setOptionsPrefix(prefix)
    ksp.setOperators(A)
    ksp.setFromOptions()
    x = b.duplicate()
    x.set(0.0)
    ksp.setInitialGuessNonzero(False)
    started = time.perf_counter()
    ksp.setUp()
    setup = time.perf_counter() - started
    started = time.perf_counter()
    ksp.solve(b, x)
    wall = time.perf_counter() - started
    its, reason = ksp.getIterationNumber(), ksp.getConvergedReason()
    ksp.destroy()
    return its, reason > 0, setup, wall


def main():
    args = sys.argv[1:]
    if "--systems" not in args:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    manifest_path = args[args.index("--systems") + 1]
    with open(manifest_path) as f:
        manifest = json.load(f)
    root = os.path.dirname(os.path.abspath(manifest_path))
    rtol = manifest["rtol"]
    has_hypre = PETSc.Sys.hasExternalPackage("hypre")
    chosen = solvers(has_hypre)
    hypre_all = "--hypre-all" in args
    results = []
    for system in manifest["systems"]:
        A, b = load_system(os.path.join(root, system["dir"]))
        for i, (name, options) in enumerate(chosen):
            if name.startswith("hypre") and not hypre_all and system["element"] != HYPRE_ELEMENT:
                continue
            its, converged, setup, wall = solve(A, b, f"s{i}_", {**options, "ksp_rtol": str(rtol)})
            results.append({"system": system["name"], "solver": name, "iterations": its,
                            "converged": converged, "setup_s": setup, "solve_s": wall})
            # progress, for a long sweep
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        A.destroy()
        b.destroy()
    version = ".".join(map(str, PETSc.Sys.getVersion()))
    described = [{"name": name, "options": " ".join(
        f"-{k} {v}" for k, v in {**CG, "ksp_rtol": str(rtol), **options}.items())
        + " (MatSetBlockSize 3, MatSetNearNullSpace(MatNullSpaceCreateRigidBody(coordinates)))"
        + ("" if hypre_all or not name.startswith("hypre") else
           f"; on the {HYPRE_ELEMENT} systems only (--hypre-all: all)")}
        for name, options in chosen]
    if not has_hypre:
        described.append({"name": "hypre BoomerAMG", "options": "not run: this PETSc has no hypre"})
    out = {"peer": "PETSc", "version": version, "solvers": described, "results": results}
    if "--json" in args:
        print(json.dumps(out))
        return
    print(f"PETSc {version}")
    for s in described:
        print(f"  {s['name']}: {s['options']}")
    for r in results:
        print(f"{r['system']:<36} {r['solver']:<24} {r['iterations']:>6}"
              f"{'' if r['converged'] else '*'} set-up {r['setup_s']:.3f} s, solve {r['solve_s']:.3f} s")


if __name__ == "__main__":
    main()
