#!/usr/bin/env bash
# Checks fem/cuda/projected.cu (with fem/cuda/element.cu) against the host's projected kernels
# without a GPU: the CUDA source compiled as C++ by g++ (CUDA's qualifiers and intrinsics stubbed,
# one thread per block, so the blocked kernels run their passes in order), fed the host's inputs
# and compared bit for bit with the host's residual, tangent, energy and cell fields (the dump of
# fem's ignored test `dump_cases_for_the_device_harness`: Q1/Q2, full and reduced rules, five
# models at nu = 0.3 and 0.4999, strains 1e-6 to 0.25). g++ uses the C library's log/exp, as the
# host does, so every value should be the host's bits; on the GPU CUDA's log/exp (used by the
# materials and alpha above the series' range) may differ in the last bit.
#
# Usage: scripts/projected_harness.sh   (CARGO_TARGET_DIR as for the other builds)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/dump"
(cd "$root" && HEXFEM_PROJECTED_DUMP="$work/dump" cargo test --release -q -p hexfem-fem --lib \
    dump_cases_for_the_device_harness -- --ignored >/dev/null)
cat >"$work/stub.h" <<'STUB'
#include <cmath>
#include <cstring>
#include <cstddef>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static
typedef unsigned int u32;
#define NOT_FOUND 0xffffffffu
struct D3 { unsigned x, y, z; };
static D3 blockIdx, threadIdx, blockDim;
static inline void __syncthreads() {}
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline u32 atomicMin(u32* a, u32 v) { u32 o = *a; if (v < o) *a = v; return o; }
static inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double x) { long long d; memcpy(&d, &x, 8); return d; }
using std::isfinite; using std::isnan;
STUB
cat >"$work/main.cpp" <<'MAIN'
#include <cstdio>
#include <cstdint>
#include <vector>
#include <string>
static FILE* in;
static double rd() { unsigned long long b; if (fscanf(in, "%llx", &b) != 1) { fprintf(stderr, "short file\n"); exit(2); } double d; memcpy(&d, &b, 8); return d; }
static std::vector<double> rdv(size_t n) { std::vector<double> v(n); for (auto& x : v) x = rd(); return v; }
static long same(const double* a, const std::vector<double>& b, size_t off, size_t n) { long s = 0; for (size_t i = 0; i < n; ++i) { double x = a[i], y = b[off + i]; s += memcmp(&x, &y, 8) == 0; } return s; }
int main(int argc, char** argv) {
    in = fopen(argv[1], "r");
    int n, nqp, modes;
    if (fscanf(in, "%d %d %d", &n, &nqp, &modes) != 3 || n != NODES || nqp != NQP || modes != MODES) return 2;
    auto p = rdv(3); auto w = rdv(NQP); auto dn = rdv(NQP * NODES * 3); auto phi = rdv(4 * NQP);
    char tag[32]; double scale; int count; long bad = 0, total = 0;
    while (fscanf(in, "%31s %lf %d", tag, &scale, &count) == 3) {
        std::vector<double> x, u, r, k, f;
        for (int c = 0; c < count; ++c) {
            auto xc = rdv(3 * n), uc = rdv(3 * n), rc = rdv(3 * n), kc = rdv(9 * n * n), fc = rdv(11);
            x.insert(x.end(), xc.begin(), xc.end()); u.insert(u.end(), uc.begin(), uc.end());
            r.insert(r.end(), rc.begin(), rc.end()); k.insert(k.end(), kc.begin(), kc.end());
            f.insert(f.end(), fc.begin(), fc.end());
        }
        std::vector<u32> cells(count * n); for (size_t i = 0; i < cells.size(); ++i) cells[i] = i;
        std::vector<double> ro(3 * n * count), r2(3 * n * count), ko(9 * n * n * count), eo(count), fo(10 * count);
        u32 fail = 0xffffffffu;
        blockDim.x = 1; threadIdx.x = 0;
        for (int c = 0; c < count; ++c) {
            blockIdx.x = c;
            projected_residual_tangent(count, nullptr, cells.data(), x.data(), u.data(), w.data(), dn.data(), phi.data(), p[0], p[1], p[2], ro.data(), ko.data(), &fail);
            projected_residual(count, nullptr, cells.data(), x.data(), u.data(), w.data(), dn.data(), phi.data(), p[0], p[1], p[2], r2.data(), &fail);
        }
        blockIdx.x = 0; blockDim.x = count;
        for (int c = 0; c < count; ++c) {
            threadIdx.x = c;
            projected_energy(count, nullptr, cells.data(), x.data(), u.data(), w.data(), dn.data(), phi.data(), p[0], p[1], p[2], eo.data(), &fail);
            projected_cell_fields(count, nullptr, cells.data(), x.data(), u.data(), w.data(), dn.data(), phi.data(), p[0], p[1], p[2], fo.data(), &fail);
        }
        long sr = 0, sr2 = 0, sk = 0, se = 0, sf = 0;
        for (int c = 0; c < count; ++c) {
            sr += same(ro.data() + 3 * n * c, r, 3 * n * c, 3 * n);
            sr2 += same(r2.data() + 3 * n * c, r, 3 * n * c, 3 * n);
            sk += same(ko.data() + 9 * n * n * c, k, 9 * n * n * c, 9 * n * n);
            sf += same(fo.data() + 10 * c, f, 11 * c, 10);
            se += same(eo.data() + c, f, 11 * c + 10, 1);
        }
        long want = (long)count * (3 * n * 2 + 9 * n * n + 11);
        long got = sr + sr2 + sk + se + sf;
        total += want; bad += want - got;
        printf("  strain %-6g cells %d: residual %ld/%d, residual-only %ld/%d, tangent %ld/%d, energy %ld/%d, fields %ld/%d, fail flag %s\n",
               scale, count, sr, 3 * n * count, sr2, 3 * n * count, sk, 9 * n * n * count, se, count, sf, 10 * count,
               fail == 0xffffffffu ? "clear" : "SET");
        if (fail != 0xffffffffu) bad += 1;
    }
    printf("  %ld of %ld values differ from the host's bits\n", bad, total);
    return bad != 0;
}
MAIN
status=0
for file in "$work"/dump/*.txt; do
    name=$(basename "$file" .txt)
    read -r nodes nqp modes < "$file"
    material=$(echo "$name" | sed 's/.*_m\([0-9]\).*/\1/')
    {
        cat "$work/stub.h"
        printf '#define NODES %s\n#define NQP %s\n#define MODES %s\n#define MATERIAL %s\n#define EPB 1\n#define INDIRECT 0\n' \
            "$nodes" "$nqp" "$modes" "$material"
        cat "$root/fem/cuda/element.cu" "$root/fem/cuda/projected.cu" "$work/main.cpp"
    } >"$work/$name.cpp"
    g++ -std=c++17 -O1 -ffp-contract=off -w "$work/$name.cpp" -o "$work/$name"
    echo "$name"
    "$work/$name" "$file" || status=1
done
[ "$status" = 0 ] && echo "projected harness: every value is the host's bits" || echo "projected harness: DIFFERENCES"
exit "$status"
