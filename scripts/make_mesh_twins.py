#!/usr/bin/env python3
"""Writes the twin meshes of mesh/tests/data/twins/: one box meshed by Gmsh, written as Gmsh MSH
4.1 and, from the same nodes and elements, as Exodus II (netCDF classic, 64-bit offset and
netCDF-4 through the netCDF library) and Abaqus input (Gmsh's own Abaqus export, and a file with
*SURFACE element faces, GENERATE sets, comments and continuation lines written here).

The box [0, 3] x [0, 2] x [0, 2] is two volumes (x < 1 and x > 1, "left_part" and
"right_part"), with surface groups "xmin" (x = 0), "xmax" (x = 3), "ymin" (y = 0, on both
volumes) and the point group "origin". Orders 1 (8-node) and 2 (27-node) hexahedra.

The Exodus and Abaqus side numbers and node orders are written from the manuals' own node
lists (sides by their corner node numbers, mid-side nodes by the nodes they lie between); the
Rust readers use tables of reference coordinates, checked in mesh/src/ordering.rs.

Needs `pip install gmsh netCDF4 meshio`. Usage: python3 scripts/make_mesh_twins.py [outdir]
"""
import os
import sys

import gmsh
import netCDF4
import numpy as np

# Exodus II HEX sides by corner node numbers (1-based), Exodus II manual.
EXODUS_SIDES = [(1, 2, 6, 5), (2, 3, 7, 6), (3, 4, 8, 7), (1, 5, 8, 4), (1, 4, 3, 2), (5, 6, 7, 8)]
# Abaqus brick faces S1..S6 by corner node numbers.
ABAQUS_FACES = [(1, 2, 3, 4), (5, 8, 7, 6), (1, 5, 6, 2), (2, 6, 7, 3), (3, 7, 8, 4), (4, 8, 5, 1)]
# Nodes 9.. of the 27-node orderings, each as the corner nodes it is the centre of.
EXODUS_HEX27_MIDS = (
    [(1, 2), (2, 3), (3, 4), (4, 1), (1, 5), (2, 6), (3, 7), (4, 8), (5, 6), (6, 7), (7, 8), (8, 5)]
    + [tuple(range(1, 9))]  # node 21: the centroid
    + [(1, 2, 3, 4), (5, 6, 7, 8), (1, 4, 8, 5), (2, 3, 7, 6), (1, 2, 6, 5), (3, 4, 8, 7)]
)
ABAQUS_C3D27_MIDS = (
    [(1, 2), (2, 3), (3, 4), (4, 1), (5, 6), (6, 7), (7, 8), (8, 5), (1, 5), (2, 6), (3, 7), (4, 8)]
    + [f for f in ABAQUS_FACES]
    + [tuple(range(1, 9))]  # node 27: the centroid
)


def build(order):
    gmsh.model.add(f"twin_q{order}")
    geo = gmsh.model.geo
    p = [geo.addPoint(0, y, z) for (y, z) in [(0, 0), (2, 0), (2, 2), (0, 2)]]
    lines = [geo.addLine(p[i], p[(i + 1) % 4]) for i in range(4)]
    for c in lines:
        geo.mesh.setTransfiniteCurve(c, 3)
    surf = geo.addPlaneSurface([geo.addCurveLoop(lines)])
    geo.mesh.setTransfiniteSurface(surf)
    geo.mesh.setRecombine(2, surf)
    first = geo.extrude([(2, surf)], 1, 0, 0, numElements=[1], recombine=True)
    second = geo.extrude([(2, first[0][1])], 2, 0, 0, numElements=[2], recombine=True)
    geo.synchronize()

    def surfaces(axis, value):
        lo = [-1, -1, -1]
        hi = [4, 4, 4]
        lo[axis] = value - 1e-6
        hi[axis] = value + 1e-6
        return [t for _, t in gmsh.model.getEntitiesInBoundingBox(*lo, *hi, dim=2)]

    gmsh.model.addPhysicalGroup(3, [first[1][1]], name="left_part")
    gmsh.model.addPhysicalGroup(3, [second[1][1]], name="right_part")
    gmsh.model.addPhysicalGroup(2, surfaces(0, 0.0), name="xmin")
    gmsh.model.addPhysicalGroup(2, surfaces(0, 3.0), name="xmax")
    gmsh.model.addPhysicalGroup(2, surfaces(1, 0.0), name="ymin")
    gmsh.model.addPhysicalGroup(0, [p[0]], name="origin")
    gmsh.model.mesh.generate(3)
    if order == 2:
        gmsh.option.setNumber("Mesh.SecondOrderIncomplete", 0)
        gmsh.model.mesh.setOrder(2)


def gather():
    """Nodes (tag -> xyz, in Gmsh order), hexahedra per volume group, quads per surface group,
    nodes per point group."""
    tags, xyz, _ = gmsh.model.mesh.getNodes()
    nodes = {int(t): xyz[3 * i:3 * i + 3] for i, t in enumerate(tags)}
    order = [int(t) for t in tags]
    groups = {}
    for dim, tag in gmsh.model.getPhysicalGroups():
        name = gmsh.model.getPhysicalName(dim, tag)
        elems = []
        for ent in gmsh.model.getEntitiesForPhysicalGroup(dim, tag):
            types, etags, enodes = gmsh.model.mesh.getElements(dim, ent)
            for t, et, en in zip(types, etags, enodes):
                _, _, _, n, _, _ = gmsh.model.mesh.getElementProperties(t)
                for k, e in enumerate(et):
                    elems.append((int(e), [int(x) for x in en[n * k:n * k + n]]))
        groups[(dim, name)] = elems
    return nodes, order, groups


def reorder_from_gmsh(gmsh_nodes, mids, coords):
    """A Gmsh hexahedron's nodes in the order whose mid-side nodes are `mids` (corners shared),
    found by position."""
    corners = gmsh_nodes[:8]
    out = list(corners)
    for m in mids:
        target = np.mean([coords[corners[i - 1]] for i in m], axis=0)
        best = min(gmsh_nodes, key=lambda n: np.linalg.norm(coords[n] - target))
        assert np.linalg.norm(coords[best] - target) < 1e-9, (m, target)
        out.append(best)
    assert len(set(out)) == len(gmsh_nodes)
    return out


def side_of(hex_nodes, quad_corners, table):
    """1-based side of a hexahedron (node list in the format's order) with these corners."""
    want = sorted(quad_corners)
    for s, side in enumerate(table):
        if sorted(hex_nodes[i - 1] for i in side) == want:
            return s + 1
    raise ValueError("not a face")


def write_exodus(path, fmt, nodes, node_order, blocks, side_sets, node_sets, npe):
    index = {t: i + 1 for i, t in enumerate(node_order)}
    ds = netCDF4.Dataset(path, "w", format=fmt)
    ds.title = "hexfem twin mesh"
    ds.api_version = np.float32(8.0)
    ds.version = np.float32(8.0)
    ds.floating_point_word_size = np.int32(8)
    ds.file_size = np.int32(1)
    ds.createDimension("len_string", 33)
    ds.createDimension("len_name", 33)
    ds.createDimension("four", 4)
    ds.createDimension("time_step", None)
    ds.createDimension("num_dim", 3)
    ds.createDimension("num_nodes", len(node_order))
    ds.createDimension("num_elem", sum(len(b[1]) for b in blocks))
    ds.createDimension("num_el_blk", len(blocks))
    ds.createDimension("num_node_sets", len(node_sets))
    ds.createDimension("num_side_sets", len(side_sets))
    ds.createVariable("time_whole", "f8", ("time_step",))

    def names(var, dim, items):
        v = ds.createVariable(var, "S1", (dim, "len_name"))
        for i, (name, _) in enumerate(items):
            v[i, :] = netCDF4.stringtochar(np.array([name.ljust(33, "\0")], "S33"))

    for axis, name in enumerate(["coordx", "coordy", "coordz"]):
        v = ds.createVariable(name, "f8", ("num_nodes",))
        v[:] = [nodes[t][axis] for t in node_order]
    names("eb_names", "num_el_blk", blocks)
    ds.createVariable("eb_status", "i4", ("num_el_blk",))[:] = [1] * len(blocks)
    prop = ds.createVariable("eb_prop1", "i4", ("num_el_blk",))
    prop.setncattr("name", "ID")
    prop[:] = [10 * (i + 1) for i in range(len(blocks))]
    for i, (_, elems) in enumerate(blocks):
        ds.createDimension(f"num_el_in_blk{i + 1}", len(elems))
        ds.createDimension(f"num_nod_per_el{i + 1}", npe)
        v = ds.createVariable(f"connect{i + 1}", "i4", (f"num_el_in_blk{i + 1}", f"num_nod_per_el{i + 1}"))
        v.elem_type = "HEX8" if npe == 8 else "HEX27"
        v[:] = [[index[n] for n in e] for e in elems]
    if node_sets:
        names("ns_names", "num_node_sets", node_sets)
        ds.createVariable("ns_status", "i4", ("num_node_sets",))[:] = [1] * len(node_sets)
        ds.createVariable("ns_prop1", "i4", ("num_node_sets",))[:] = list(range(1, len(node_sets) + 1))
        for i, (_, ns) in enumerate(node_sets):
            ds.createDimension(f"num_nod_ns{i + 1}", len(ns))
            ds.createVariable(f"node_ns{i + 1}", "i4", (f"num_nod_ns{i + 1}",))[:] = [index[n] for n in ns]
    if side_sets:
        names("ss_names", "num_side_sets", side_sets)
        ds.createVariable("ss_status", "i4", ("num_side_sets",))[:] = [1] * len(side_sets)
        ds.createVariable("ss_prop1", "i4", ("num_side_sets",))[:] = list(range(1, len(side_sets) + 1))
        for i, (_, sides) in enumerate(side_sets):
            ds.createDimension(f"num_side_ss{i + 1}", len(sides))
            ds.createVariable(f"elem_ss{i + 1}", "i4", (f"num_side_ss{i + 1}",))[:] = [e for e, _ in sides]
            ds.createVariable(f"side_ss{i + 1}", "i4", (f"num_side_ss{i + 1}",))[:] = [s for _, s in sides]
    ds.close()


def write_inp(path, nodes, node_order, blocks, surfaces, node_sets, c3d):
    """An Abaqus input with the features users meet: comments, a heading, mixed case, ELSET
    GENERATE, NSET by list, *SURFACE by element faces, wrapped element lines, and keywords of
    the analysis that the reader skips."""
    with open(path, "w") as f:
        f.write("*Heading\n hexfem twin mesh\n** written by scripts/make_mesh_twins.py\n")
        f.write("*NODE\n")
        for i, t in enumerate(node_order):
            x = nodes[t]
            f.write(f"{i + 1}, {float(x[0])!r}, {float(x[1])!r}, {float(x[2])!r}\n")
        index = {t: i + 1 for i, t in enumerate(node_order)}
        number = 1
        for name, elems in blocks:
            f.write(f"*Element, type={c3d}, elset={name}\n")
            first = number
            for e in elems:
                ids = [number] + [index[n] for n in e]
                # 16 entries per line at most, a wrapped line ends in a comma.
                chunks = [ids[k:k + 16] for k in range(0, len(ids), 16)]
                f.write(",\n".join(", ".join(map(str, c)) for c in chunks) + "\n")
                number += 1
            f.write(f"*ELSET, ELSET=all_{name}, GENERATE\n{first}, {number - 1}, 1\n")
        for name, ns in node_sets:
            f.write(f"*Nset, nset={name}\n" + ", ".join(str(index[n]) for n in ns) + ",\n")
        for name, faces in surfaces:
            f.write(f"*Surface, type=ELEMENT, name={name}\n")
            for e, s in faces:
                f.write(f"{e}, S{s}\n")
        f.write("** the analysis: skipped by the mesh reader\n*Material, name=steel\n*Elastic\n"
                "210000., 0.3\n*Solid Section, elset=all_left_part, material=steel\n,\n"
                "*Step\n*Static\n*Boundary\norigin, 1, 3\n*End Step\n")


def main(out):
    os.makedirs(out, exist_ok=True)
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    for order in (1, 2):
        gmsh.clear()
        build(order)
        stem = os.path.join(out, f"twin_q{order}")
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.write(stem + ".msh")
        # The twins hold the coordinates as the .msh text rounds them: read it back.
        gmsh.clear()
        gmsh.open(stem + ".msh")
        if order == 1:
            # Gmsh's own Abaqus export: C3D8, surface (CPS4) elements in ELSETs, NSETs of every group.
            gmsh.option.setNumber("Mesh.SaveGroupsOfNodes", 1)
            gmsh.write(stem + "_gmsh.inp")
        nodes, node_order, groups = gather()
        coords = {t: np.array(x) for t, x in nodes.items()}
        npe = 8 if order == 1 else 27
        exo_mids = [] if order == 1 else EXODUS_HEX27_MIDS
        abq_mids = [] if order == 1 else ABAQUS_C3D27_MIDS
        volume_names = [n for (d, n) in groups if d == 3]
        hexes = []  # (gmsh nodes, block)
        for name in volume_names:
            for _, en in groups[(3, name)]:
                hexes.append((en, name))
        exo_blocks = [(name, [reorder_from_gmsh(en, exo_mids, coords) for en, b in hexes if b == name])
                      for name in volume_names]
        abq_blocks = [(name, [reorder_from_gmsh(en, abq_mids, coords) for en, b in hexes if b == name])
                      for name in volume_names]
        exo_flat = [e for _, es in exo_blocks for e in es]
        abq_flat = [e for _, es in abq_blocks for e in es]
        side_sets, surfaces = [], []
        for (d, name), elems in groups.items():
            if d != 2:
                continue
            sides, faces = [], []
            for _, qn in elems:
                corners = qn[:4]
                for k, e in enumerate(exo_flat):
                    if set(corners) <= set(e[:8]):
                        sides.append((k + 1, side_of(e, corners, EXODUS_SIDES)))
                for k, e in enumerate(abq_flat):
                    if set(corners) <= set(e[:8]):
                        faces.append((k + 1, side_of(e, corners, ABAQUS_FACES)))
            side_sets.append((name, sides))
            surfaces.append((name, faces))
        node_sets = [(name, sorted({n for _, en in elems for n in en}))
                     for (d, name), elems in groups.items() if d < 2]
        for fmt, suffix in [("NETCDF3_CLASSIC", "cdf1"), ("NETCDF3_64BIT_OFFSET", "cdf2"),
                            ("NETCDF3_64BIT_DATA", "cdf5"), ("NETCDF4", "nc4")]:
            if fmt in ("NETCDF4", "NETCDF3_64BIT_DATA") and order == 2:
                continue
            write_exodus(f"{stem}_{suffix}.exo", fmt, nodes, node_order, exo_blocks, side_sets,
                         node_sets, npe)
        write_inp(stem + ".inp", nodes, node_order, abq_blocks, surfaces, node_sets,
                  "C3D8R" if order == 1 else "C3D27")
    gmsh.finalize()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mesh/tests/data/twins")
