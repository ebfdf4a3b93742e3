#!/usr/bin/env python3
"""Writes the netCDF-4 twins of the classic Exodus II twins of mesh/tests/data/twins/ (see
make_mesh_twins.py and make_exodus_ids_twin.py), copied through the netCDF library variable by
variable, as `nccopy -k nc4` would:

- twin_q1_nc4c.exo: twin_q1_cdf1.exo as NETCDF4_CLASSIC;
- twin_q2_nc4.exo: twin_q2_cdf1.exo as NETCDF4, its integer variables (connectivity, sets,
  ids) widened to 64 bits and every variable deflate-compressed with the shuffle filter, as
  SEACAS writes large models;
- twin_q2_nc4c.exo: twin_q2_cdf1.exo as NETCDF4_CLASSIC;
- twin_q1_ids_nc4.exo: twin_q1_ids.exo (ids and names as Cubit writes them) as NETCDF4.

(twin_q1_nc4.exo is written by make_mesh_twins.py directly.)

Needs `pip install netCDF4`. Usage: python3 scripts/make_exodus_nc4_twins.py [dir]
"""
import os
import sys

import netCDF4
import numpy as np


def copy(src, dst, fmt, wide_ints=False, compress=False):
    with netCDF4.Dataset(src) as a, netCDF4.Dataset(dst, "w", format=fmt) as b:
        a.set_auto_maskandscale(False)
        b.setncatts({k: a.getncattr(k) for k in a.ncattrs()})
        for name, dim in a.dimensions.items():
            b.createDimension(name, None if dim.isunlimited() else len(dim))
        for name, var in a.variables.items():
            dtype = var.dtype
            if wide_ints and np.issubdtype(dtype, np.integer):
                dtype = np.int64
            out = b.createVariable(name, dtype, var.dimensions,
                                   zlib=compress and var.ndim > 0, shuffle=compress)
            out.setncatts({k: var.getncattr(k) for k in var.ncattrs()})
            out.set_auto_maskandscale(False)
            if var.size:
                out[:] = var[:]


def main(dir):
    path = lambda name: os.path.join(dir, name)
    copy(path("twin_q1_cdf1.exo"), path("twin_q1_nc4c.exo"), "NETCDF4_CLASSIC")
    copy(path("twin_q2_cdf1.exo"), path("twin_q2_nc4.exo"), "NETCDF4", wide_ints=True,
         compress=True)
    copy(path("twin_q2_cdf1.exo"), path("twin_q2_nc4c.exo"), "NETCDF4_CLASSIC")
    copy(path("twin_q1_ids.exo"), path("twin_q1_ids_nc4.exo"), "NETCDF4")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mesh/tests/data/twins")
