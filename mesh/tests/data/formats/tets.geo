// A unit cube of tetrahedra with a triangle face group: not a hexahedral mesh.
SetFactory("OpenCASCADE");
Box(1) = {0, 0, 0, 1, 1, 1};
Mesh.MeshSizeMin = 2;
Mesh.MeshSizeMax = 2;
Physical Surface("clamped") = {1};
Physical Volume("solid") = {1};
