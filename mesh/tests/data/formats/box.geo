// A 3 x 2 x 2 box of hexahedra with physical groups of every dimension.
Point(1) = {0, 0, 0}; Point(2) = {3, 0, 0}; Point(3) = {3, 2, 0}; Point(4) = {0, 2, 0};
Line(1) = {1, 2}; Line(2) = {2, 3}; Line(3) = {3, 4}; Line(4) = {4, 1};
Curve Loop(1) = {1, 2, 3, 4}; Plane Surface(1) = {1};
Transfinite Curve {1, 3} = 4; Transfinite Curve {2, 4} = 3;
Transfinite Surface {1}; Recombine Surface {1};
out[] = Extrude {0, 0, 2} { Surface{1}; Layers{2}; Recombine; };
Physical Volume("body") = {out[1]};
Physical Surface("left") = {out[5]};
Physical Surface("bottom") = {1};
Physical Point("origin") = {1};
