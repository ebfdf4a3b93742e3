#!/usr/bin/env python3
"""Writes cook_q1.msh: a Cook's-membrane slab meshed with 8 x 8 x 1 hexahedra (MSH 4.1 ASCII).

Geometry: the tapered panel with corners (0,0), (48,44), (48,60), (0,44) in the x-y plane,
extruded to thickness 1 along z. Physical groups:
  "clamped" (surface x = 0), "load" (surface x = 48), "body" (the volume),
  "tip" (the point (48, 60, 0)).

Needs the gmsh Python API (`pip install gmsh`). Usage: python3 make_cook.py [output.msh]
"""
import sys

import gmsh

N = 8  # cells per in-plane direction
THICKNESS = 1.0


def main(path):
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add("cook")
    geo = gmsh.model.geo
    corners = [(0, 0), (48, 44), (48, 60), (0, 44)]
    pts = [geo.addPoint(x, y, 0.0) for x, y in corners]
    lines = [geo.addLine(pts[i], pts[(i + 1) % 4]) for i in range(4)]
    loop = geo.addCurveLoop(lines)
    surf = geo.addPlaneSurface([loop])
    for line in lines:
        geo.mesh.setTransfiniteCurve(line, N + 1)
    geo.mesh.setTransfiniteSurface(surf, cornerTags=pts)
    geo.mesh.setRecombine(2, surf)
    out = geo.extrude([(2, surf)], 0, 0, THICKNESS, numElements=[1], recombine=True)
    geo.synchronize()
    volume = [tag for dim, tag in out if dim == 3]

    def surface_at_x(x):
        eps = 1e-6
        found = gmsh.model.getEntitiesInBoundingBox(
            x - eps, -1e3, -1e3, x + eps, 1e3, 1e3, dim=2
        )
        assert len(found) == 1, found
        return found[0][1]

    gmsh.model.addPhysicalGroup(2, [surface_at_x(0.0)], name="clamped")
    gmsh.model.addPhysicalGroup(2, [surface_at_x(48.0)], name="load")
    gmsh.model.addPhysicalGroup(3, volume, name="body")
    gmsh.model.addPhysicalGroup(0, [pts[2]], name="tip")
    gmsh.model.mesh.generate(3)
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    gmsh.option.setNumber("Mesh.Binary", 0)
    gmsh.write(path)
    gmsh.finalize()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cook_q1.msh")
