import time, numpy as np, cupy as cp
n = 90_000_000 // 8
d = cp.arange(n, dtype=cp.float64); cp.cuda.runtime.deviceSynchronize()
def t(f, reps=3):
    best = 1e9
    for _ in range(reps):
        s = time.perf_counter(); f(); cp.cuda.runtime.deviceSynchronize(); best = min(best, time.perf_counter() - s)
    return best
def fresh_d2h():
    h = np.empty(n); d.get(out=h)
reuse = np.empty(n); reuse[:] = 0
pin = cp.cuda.alloc_pinned_memory(n * 8); ph = np.frombuffer(pin, np.float64, n)
print("d2h fresh pageable  %.1f ms" % (1e3 * t(fresh_d2h)))
print("d2h reused pageable %.1f ms" % (1e3 * t(lambda: d.get(out=reuse))))
print("d2h pinned          %.1f ms" % (1e3 * t(lambda: d.get(out=ph))))
print("h2d pageable        %.1f ms" % (1e3 * t(lambda: d.set(reuse))))
print("h2d pinned          %.1f ms" % (1e3 * t(lambda: d.set(ph))))
print("host memcpy 1 thread fresh %.1f ms" % (1e3 * t(lambda: np.array(reuse, copy=True))))
print("host memcpy reused  %.1f ms" % (1e3 * t(lambda: np.copyto(ph, reuse))))
