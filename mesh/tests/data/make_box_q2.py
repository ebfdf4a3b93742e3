#!/usr/bin/env python3
"""Writes box_q2.msh: the box [0,2] x [0,1] x [0,1] meshed with 2 x 1 x 1 27-node hexahedra.

Physical groups: "left" (surface x = 0), "right" (surface x = 2), "solid" (the volume), and an
unnamed curve group 7 (the edge x = 0, y = 0). Needs the gmsh Python API (`pip install gmsh`).
Usage: python3 make_box_q2.py [output.msh]
"""
import sys

import gmsh


def main(path):
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add("box_q2")
    geo = gmsh.model.geo
    p0 = geo.addPoint(0, 0, 0)
    p1 = geo.addPoint(0, 1, 0)
    edge = geo.addLine(p0, p1)
    geo.mesh.setTransfiniteCurve(edge, 2)
    out = geo.extrude([(1, edge)], 2, 0, 0, numElements=[2], recombine=True)
    surf = [t for d, t in out if d == 2][0]
    out = geo.extrude([(2, surf)], 0, 0, 1, numElements=[1], recombine=True)
    geo.synchronize()
    volume = [t for d, t in out if d == 3]

    def surface_at_x(x):
        eps = 1e-6
        found = gmsh.model.getEntitiesInBoundingBox(x - eps, -1, -1, x + eps, 2, 2, dim=2)
        assert len(found) == 1, found
        return found[0][1]

    def curve_at(x, y):
        eps = 1e-6
        found = gmsh.model.getEntitiesInBoundingBox(x - eps, y - eps, -1, x + eps, y + eps, 2, dim=1)
        assert len(found) == 1, found
        return found[0][1]

    gmsh.model.addPhysicalGroup(2, [surface_at_x(0.0)], name="left")
    gmsh.model.addPhysicalGroup(2, [surface_at_x(2.0)], name="right")
    gmsh.model.addPhysicalGroup(3, volume, name="solid")
    gmsh.model.addPhysicalGroup(1, [curve_at(0.0, 0.0)], tag=7)
    gmsh.model.mesh.generate(3)
    gmsh.model.mesh.setOrder(2)
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    gmsh.option.setNumber("Mesh.Binary", 0)
    gmsh.write(path)
    gmsh.finalize()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "box_q2.msh")
