import h5py, numpy as np, sys
a = h5py.File(sys.argv[1], 'r'); b = h5py.File(sys.argv[2], 'r')
paths = []
a.visit(lambda n: paths.append(n) if isinstance(a[n], h5py.Dataset) else None)
changed = {}
for p in paths:
    x = a[p][()]; y = b[p][()]
    if x.shape != y.shape: print("shape", p); continue
    if np.array_equal(x.view(np.uint8) if x.dtype.kind=='f' else x, y.view(np.uint8) if y.dtype.kind=='f' else y): continue
    name = p.split('/')[-1]
    d = np.max(np.abs(x - y)); s = np.max(np.abs(y))
    changed.setdefault(name, []).append((p, d, d / s if s else 0))
print(len(paths), "datasets compared")
for k, v in changed.items():
    print(k, len(v), "steps differ; max abs", max(t[1] for t in v), "max rel", max(t[2] for t in v))
