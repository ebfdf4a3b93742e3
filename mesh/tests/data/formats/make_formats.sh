#!/usr/bin/env bash
# Writes the same small hexahedral mesh (box.geo: 3 x 2 x 2 cells, physical groups of every
# dimension) in every MSH encoding the reader supports, and a tetrahedral mesh (tets.geo) for the
# unsupported-element test. Needs the gmsh command line (Debian: apt-get install gmsh).
# Usage: ./make_formats.sh   (run in this folder)
set -euo pipefail
cd "$(dirname "$0")"
mesh() { gmsh "$1" -3 -format "$2" "${@:4}" -o "$3" > /dev/null; }
mesh box.geo msh41 box41.msh
mesh box.geo msh41 box41_binary.msh -bin
mesh box.geo msh22 box22.msh
mesh box.geo msh22 box22_binary.msh -bin
gzip -9 -n -c box41.msh > box41.msh.gz
gzip -9 -n -c box22_binary.msh > box22_binary.msh.gz
mesh tets.geo msh41 tets41.msh
