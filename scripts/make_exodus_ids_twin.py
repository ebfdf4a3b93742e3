#!/usr/bin/env python3
"""Writes mesh/tests/data/twins/twin_q1_ids.exo: twin_q1_cdf1.exo (see make_mesh_twins.py) with
the ids and names a Cubit file has, some sets unnamed: element blocks 10 (unnamed, was
"left_part") and 20 "right_part"; side sets 12 "xmin", 40 (unnamed, was "xmax") and 3 "ymin";
node set 7 (unnamed, was "origin"). The reader names an unnamed set by its id; the input may
name every set by its id too.

Needs `pip install netCDF4`. Usage: python3 scripts/make_exodus_ids_twin.py [dir]
"""
import os
import shutil
import sys

import netCDF4
import numpy as np


def name_row(name):
    return netCDF4.stringtochar(np.array([name.ljust(33, "\0")], "S33"))[0]


def main(dir):
    out = os.path.join(dir, "twin_q1_ids.exo")
    shutil.copyfile(os.path.join(dir, "twin_q1_cdf1.exo"), out)
    ds = netCDF4.Dataset(out, "r+")
    for prefix, ids, names in [("eb", [10, 20], ["", "right_part"]),
                               ("ss", [12, 40, 3], ["xmin", "", "ymin"]),
                               ("ns", [7], [""])]:
        ds.variables[f"{prefix}_prop1"][:] = ids
        for i, name in enumerate(names):
            ds.variables[f"{prefix}_names"][i, :] = name_row(name)
    ds.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mesh/tests/data/twins")
