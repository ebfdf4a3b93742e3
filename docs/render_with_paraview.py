# Opens a hexfem XDMF file with ParaView's own XDMF3 reader, prints what ParaView sees (time steps,
# points, cells, arrays, ranges) and renders the last step, warped by 5x the displacement and
# coloured by von Mises stress. A manual check, not part of CI (ParaView is a large install):
#   apt-get install --no-install-recommends paraview python3-paraview xvfb xauth
#   xvfb-run -a pvbatch docs/render_with_paraview.py results/twisting_column.xdmf twist.png
import sys
from paraview.simple import *
path = sys.argv[1]
r = Xdmf3ReaderS(FileName=[path])
times = r.TimestepValues
times = list(times) if hasattr(times, "__len__") else [times]
print("timesteps:", times)
r.UpdatePipeline(times[-1])
info = r.GetDataInformation()
print("points", info.GetNumberOfPoints(), "cells", info.GetNumberOfCells())
print("point arrays:", [r.PointData.GetArray(i).GetName() for i in range(len(r.PointData))])
print("cell arrays:", [r.CellData.GetArray(i).GetName() for i in range(len(r.CellData))])
print("displacement range:", r.PointData["displacement"].GetRange(-1))
print("von_mises range:", r.CellData["von_mises"].GetRange())
warp = WarpByVector(Input=r, Vectors=["POINTS", "displacement"], ScaleFactor=5.0)
view = GetActiveViewOrCreate("RenderView")
view.ViewSize = [800, 600]
view.ViewTime = times[-1]
d = Show(warp, view)
ColorBy(d, ("CELLS", "von_mises"))
d.RescaleTransferFunctionToDataRange(True)
d.SetScalarBarVisibility(view, True)
view.CameraPosition = [1, -3, 1]
view.CameraFocalPoint = [0, 0, 0]
view.CameraViewUp = [0, 0, 1]
ResetCamera()
SaveScreenshot(sys.argv[2], view)
print("saved", sys.argv[2])
