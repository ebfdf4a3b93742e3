# Opens a hexfem XDMF file with ParaView's XDMF3 reader, prints what ParaView sees (time steps,
# points, cells, arrays, ranges) and renders the last step: the deformed body at its true scale
# (no exaggeration unless --scale is given) over the outline of the undeformed one, coloured by
# the nodal von Mises stress (the cell field where nodal stress was not written).
# A manual check, not part of CI (ParaView is a large install). On Debian or Ubuntu:
#   apt-get install --no-install-recommends paraview python3-paraview xvfb xauth
#   xvfb-run -a pvbatch scripts/render_with_paraview.py results/twisting_column.xdmf twist.png
#   (or: xvfb-run -a python3 scripts/render_with_paraview.py ...; options: --scale S, --time T)
import argparse

from paraview.simple import (
    ColorBy,
    GetActiveViewOrCreate,
    GetColorTransferFunction,
    Render,
    ResetCamera,
    SaveScreenshot,
    Show,
    WarpByVector,
    Xdmf3ReaderS,
)

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("xdmf")
parser.add_argument("png")
parser.add_argument("--scale", type=float, default=1.0, help="displacement scale (default 1)")
parser.add_argument("--time", type=float, default=None, help="load factor (default: the last)")
args = parser.parse_args()

reader = Xdmf3ReaderS(FileName=[args.xdmf])
times = reader.TimestepValues
times = list(times) if hasattr(times, "__len__") else [times]
time = times[-1] if args.time is None else args.time
print("timesteps:", times)
reader.UpdatePipeline(time)
info = reader.GetDataInformation()
print("points", info.GetNumberOfPoints(), "cells", info.GetNumberOfCells())
point_arrays = [reader.PointData.GetArray(i).GetName() for i in range(len(reader.PointData))]
cell_arrays = [reader.CellData.GetArray(i).GetName() for i in range(len(reader.CellData))]
print("point arrays:", point_arrays)
print("cell arrays:", cell_arrays)
print("displacement range:", reader.PointData["displacement"].GetRange(-1))

view = GetActiveViewOrCreate("RenderView")
view.ViewSize = [900, 700]
view.ViewTime = time
view.OrientationAxesVisibility = 1

undeformed = Show(reader, view)
undeformed.SetRepresentationType("Outline")
undeformed.AmbientColor = [0.4, 0.4, 0.4]
undeformed.DiffuseColor = [0.4, 0.4, 0.4]

warp = WarpByVector(Input=reader, Vectors=["POINTS", "displacement"], ScaleFactor=args.scale)
deformed = Show(warp, view)
deformed.SetRepresentationType("Surface With Edges")
if "nodal_von_mises" in point_arrays:
    ColorBy(deformed, ("POINTS", "nodal_von_mises"))
    field = "nodal_von_mises"
else:
    ColorBy(deformed, ("CELLS", "von_mises"))
    field = "von_mises"
deformed.RescaleTransferFunctionToDataRange(True, False)
deformed.SetScalarBarVisibility(view, True)
GetColorTransferFunction(field).ApplyPreset("Viridis (matplotlib)", True)

# An oblique view from the front, z up, framing the deformed body.
view.CameraPosition = [1.0, -2.0, 1.2]
view.CameraFocalPoint = [0.0, 0.0, 0.0]
view.CameraViewUp = [0.0, 0.0, 1.0]
ResetCamera()
Render(view)
SaveScreenshot(args.png, view)
print(f"saved {args.png} (load factor {time}, displacement x {args.scale}, colour: {field})")
