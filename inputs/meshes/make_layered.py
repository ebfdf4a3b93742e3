#!/usr/bin/env python3
"""Writes layered_q1.msh: a bar 9 x 1 x 1 of 9 x 2 x 2 hexahedra in three layers along x, one
volume physical group each (MSH 2.2 ASCII; plain Python, no gmsh needed).

Physical groups: volumes "left" (x < 3), "middle" (3 < x < 6), "right" (x > 6); surfaces
"clamped" (x = 0) and "load" (x = 9). Cells are listed x fastest, so the three layers interleave
in cell order (each row of cells crosses all three).

Usage: python3 make_layered.py [output.msh]
"""
import sys

NX, NY, NZ = 9, 2, 2
LENGTH = 9.0
LAYERS = ["left", "middle", "right"]  # physical tags 1, 2, 3
CLAMPED, LOAD = 4, 5


def node(i, j, k):
    return 1 + i + (NX + 1) * (j + (NY + 1) * k)


def main(path):
    nodes = []
    for k in range(NZ + 1):
        for j in range(NY + 1):
            for i in range(NX + 1):
                nodes.append((node(i, j, k), i * LENGTH / NX, j / NY, k / NZ))
    elements = []
    for j in range(NY):
        for k in range(NZ):
            # quadrangles of the end faces (type 3)
            elements.append((3, CLAMPED, [node(0, j, k), node(0, j + 1, k), node(0, j + 1, k + 1), node(0, j, k + 1)]))
            elements.append((3, LOAD, [node(NX, j, k), node(NX, j + 1, k), node(NX, j + 1, k + 1), node(NX, j, k + 1)]))
    for k in range(NZ):
        for j in range(NY):
            for i in range(NX):
                corners = [
                    node(i, j, k), node(i + 1, j, k), node(i + 1, j + 1, k), node(i, j + 1, k),
                    node(i, j, k + 1), node(i + 1, j, k + 1), node(i + 1, j + 1, k + 1), node(i, j + 1, k + 1),
                ]
                elements.append((5, 1 + i * len(LAYERS) // NX, corners))
    with open(path, "w") as f:
        f.write("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n5\n")
        for tag, name in enumerate(LAYERS, start=1):
            f.write(f'3 {tag} "{name}"\n')
        f.write(f'2 {CLAMPED} "clamped"\n2 {LOAD} "load"\n$EndPhysicalNames\n')
        f.write(f"$Nodes\n{len(nodes)}\n")
        for tag, x, y, z in nodes:
            f.write(f"{tag} {x:.17g} {y:.17g} {z:.17g}\n")
        f.write(f"$EndNodes\n$Elements\n{len(elements)}\n")
        for n, (kind, physical, conn) in enumerate(elements, start=1):
            f.write(f"{n} {kind} 2 {physical} {physical} {' '.join(map(str, conn))}\n")
        f.write("$EndElements\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "layered_q1.msh")
