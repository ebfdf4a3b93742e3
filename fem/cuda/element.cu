// Volume kernels of hexahedral elements on the device (total Lagrangian): residual, 3x3 tangent
// blocks and strain energy per cell, the device twin of fem::ElementKernel (fem/src/element.rs)
// and of the material models of fem/src/material/ (formulas in the comments there).
//
// Injected defines:
//   NODES     nodes per cell (8: Q1, 27: Q2)
//   NQP       quadrature points (points per direction cubed)
//   MATERIAL  0 linear, 1 Saint Venant-Kirchhoff, 2 neo-Hookean, 3 decoupled neo-Hookean,
//             4 Mooney-Rivlin (fem::Material::device_code); parameters p0, p1, p2 as
//             fem::Material::device_params
//   EPB       cells per thread block (the block's threads share out each cell's work)
//   INDIRECT  1: a launch's cells are group[0..n_group); 0: cells 0..n_group (one material)
//
// Operation order mirrors the host kernel one for one (compiled with --fmad=false), so the device
// values are the host's bits: j^(-2/3), ln, exp, ln(1 + x), x - ln(1 + x) and e^y - 1 - y are
// computed with the host's own operations (pow_minus_two_thirds, ln_portable, exp_portable,
// ln_1p, ln_1p_defect, exp_defect), never with CUDA's log, exp or pow, which round differently
// from the C library's in the last bit for some arguments.
// Materials take the displacement gradient h = grad_X u (F = I + h), as the host's do, and are
// written without cancellation at small strain (fem/src/material/kinematics.rs).
// Each launch covers the cells of one material: group[0..n_group) lists them (ascending cell
// indices; a mesh of several materials launches once per material, each with its own MATERIAL and
// p0..p2; a mesh of one material launches once with INDIRECT 0). Outputs follow the assembler's contribution layout, whatever the launch: cell c writes
// residual contributions r[(c NODES + a) 3 + i] and tangent blocks
// k[((c NODES + a) NODES + b) 9 + 3 i + k] (energies and cell fields at c), so the launches of
// several materials fill one stream that the COO plans sum in the host's order.
// A cell whose isoparametric map or deformation is inverted (det <= 0, J <= 0, NaN) lowers
// *fail to its index (atomicMin on a flag, never on values: results stay deterministic).

#ifndef MATERIAL
#error "MATERIAL must be defined"
#endif

// The cell of a launch's slot: group[slot], or the slot itself where one material covers the
// whole mesh (INDIRECT 0: no list is read).
#if INDIRECT
#define CELL_OF(slot) __ldg(group + (slot))
#else
#define CELL_OF(slot) (slot)
#endif

// Linear and neo-Hookean tangents split as c0 I + c1 G (x) G + c2 G_iL G_kJ (G = F^{-T}, contracted
// through G g_a); the other models form the 9x9 tangent A[(3i+J)(3k+L)].
#define SPLIT (MATERIAL == 0 || MATERIAL == 2)

// Row-major 3x3: m[3 i + j] = M_ij.
struct M3 {
    double v[9];
};

// nalgebra's trace, operation for operation (summed from 0).
__device__ __forceinline__ double tr3(const double* m) { return 0.0 + m[0] + m[4] + m[8]; }

// ---- kinematics of F = I + h from the displacement gradient h (fem/src/material/kinematics.rs) ----

// The cofactor matrix, cof(M)_iJ = d det M / dM_iJ.
__device__ __forceinline__ void cofactor3(const double* m, double* c) {
    c[0] = m[4] * m[8] - m[5] * m[7];
    c[1] = m[5] * m[6] - m[3] * m[8];
    c[2] = m[3] * m[7] - m[4] * m[6];
    c[3] = m[2] * m[7] - m[1] * m[8];
    c[4] = m[0] * m[8] - m[2] * m[6];
    c[5] = m[1] * m[6] - m[0] * m[7];
    c[6] = m[1] * m[5] - m[2] * m[4];
    c[7] = m[2] * m[3] - m[0] * m[5];
    c[8] = m[0] * m[4] - m[1] * m[3];
}

// The volume change of F = I + h: J - 1 = tr h + nonlinear, nonlinear = i2(h) + det h (no 1 + small
// rounding), J = 1 + (J - 1); cof = cof h.
struct Volume {
    double jm1, j, tr, nonlinear, cof[9];
};

__device__ __forceinline__ void volume_change(const double* h, Volume* v) {
    cofactor3(h, v->cof);
    const double det = h[0] * v->cof[0] + h[1] * v->cof[1] + h[2] * v->cof[2];
    v->tr = tr3(h);
    v->nonlinear = tr3(v->cof) + det;
    v->jm1 = v->tr + v->nonlinear;
    v->j = 1.0 + v->jm1;
}

// The host's volume: false unless J > 0 and finite (NaN included).
__device__ __forceinline__ bool volume(const double* h, Volume* v) {
    volume_change(h, v);
    return v->j > 0.0 && isfinite(v->j);
}

// J - 1, unchecked (the host's j_minus_one).
__device__ __forceinline__ double j_minus_one(const double* h) {
    Volume v;
    volume_change(h, &v);
    return v.jm1;
}

// G = F^{-T} = (I + (tr h I - h^T + cof h)) / J and I - G = ((J - 1 - tr h) I + h^T - cof h) / J
// (the host's Volume::inverse_transpose: off the diagonal cof h - h^T and h^T - cof h).
__device__ __forceinline__ void inverse_transpose(const Volume& v, const double* h, double* g, double* d) {
    const double s = 1.0 / v.j;
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) {
            if (i == k) {
                g[4 * i] = (1.0 + ((v.tr - h[4 * i]) + v.cof[4 * i])) * s;
                d[4 * i] = ((v.nonlinear + h[4 * i]) - v.cof[4 * i]) * s;
            } else {
                g[3 * i + k] = (v.cof[3 * i + k] - h[3 * k + i]) * s;
                d[3 * i + k] = (h[3 * k + i] - v.cof[3 * i + k]) * s;
            }
        }
}

// The natural logarithm of fem/src/material/elementary.rs::ln (fdlibm's __ieee754_log), with its
// operations in its order: the host's bits.
__device__ __forceinline__ int high_word(double x) { return (int)(__double_as_longlong(x) >> 32); }
__device__ __forceinline__ double with_high_word(double x, int hi) {
    const unsigned long long lo = (unsigned long long)__double_as_longlong(x) & 0xFFFFFFFFull;
    return __longlong_as_double((long long)((((unsigned long long)(unsigned int)hi) << 32) | lo));
}
__device__ __forceinline__ double ln_portable(double u) {
    const double ln2_hi = __longlong_as_double(0x3FE62E42FEE00000ll);
    const double ln2_lo = __longlong_as_double(0x3DEA39EF35793C76ll);
    const double lg1 = __longlong_as_double(0x3FE5555555555593ll);
    const double lg2 = __longlong_as_double(0x3FD999999997FA04ll);
    const double lg3 = __longlong_as_double(0x3FD2492494229359ll);
    const double lg4 = __longlong_as_double(0x3FCC71C51D8E78AFll);
    const double lg5 = __longlong_as_double(0x3FC7466496CB03DEll);
    const double lg6 = __longlong_as_double(0x3FC39A09D078C69Fll);
    const double lg7 = __longlong_as_double(0x3FC2F112DF3E5244ll);
    double x = u;
    int hx = high_word(x);
    const unsigned int lx = (unsigned int)((unsigned long long)__double_as_longlong(x) & 0xFFFFFFFFull);
    int k = 0;
    if (hx < 0x00100000) {
        if ((((unsigned int)(hx & 0x7FFFFFFF)) | lx) == 0u) return __longlong_as_double((long long)0xFFF0000000000000ull); // -inf
        if (hx < 0) return __longlong_as_double(0x7FF8000000000000ll); // NaN
        k -= 54;
        x *= 18014398509481984.0;
        hx = high_word(x);
    }
    if (hx >= 0x7FF00000) return x + x;
    k += (hx >> 20) - 1023;
    hx &= 0x000FFFFF;
    const int i = (hx + 0x95F64) & 0x100000;
    x = with_high_word(x, hx | (i ^ 0x3FF00000));
    k += i >> 20;
    const double f = x - 1.0;
    const double dk = (double)k;
    if ((0x000FFFFF & (2 + hx)) < 3) {
        if (f == 0.0) return k == 0 ? 0.0 : dk * ln2_hi + dk * ln2_lo;
        const double r = f * f * (0.5 - 0.33333333333333333 * f);
        return k == 0 ? f - r : dk * ln2_hi - ((r - dk * ln2_lo) - f);
    }
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double w = z * z;
    const double t1 = w * (lg2 + w * (lg4 + w * lg6));
    const double t2 = z * (lg1 + w * (lg3 + w * (lg5 + w * lg7)));
    const double r = t2 + t1;
    if (((hx - 0x6147A) | (0x6B851 - hx)) > 0) {
        const double hfsq = 0.5 * f * f;
        if (k == 0) return f - (hfsq - s * (hfsq + r));
        return dk * ln2_hi - ((hfsq - (s * (hfsq + r) + dk * ln2_lo)) - f);
    }
    if (k == 0) return f - s * (f - r);
    return dk * ln2_hi - ((s * (f - r) - dk * ln2_lo) - f);
}

// The exponential of fem/src/material/elementary.rs::exp (fdlibm's __ieee754_exp), with its
// operations in its order: the host's bits.
__device__ __forceinline__ double exp_portable(double x) {
    const double ln2_hi = __longlong_as_double(0x3FE62E42FEE00000ll);
    const double ln2_lo = __longlong_as_double(0x3DEA39EF35793C76ll);
    const double p1 = __longlong_as_double(0x3FC555555555553Ell);
    const double p2 = __longlong_as_double((long long)0xBF66C16C16BEBD93ull);
    const double p3 = __longlong_as_double(0x3F11566AAF25DE2Cll);
    const double p4 = __longlong_as_double((long long)0xBEBBBD41C5D26BF1ull);
    const double p5 = __longlong_as_double(0x3E66376972BEA4D0ll);
    const double inv_ln2 = __longlong_as_double(0x3FF71547652B82FEll);
    const int hx_signed = high_word(x);
    const bool negative = hx_signed < 0;
    const int hx = hx_signed & 0x7FFFFFFF;
    if (hx >= 0x40862E42) {
        if (hx >= 0x7FF00000) {
            const unsigned int lx = (unsigned int)((unsigned long long)__double_as_longlong(x) & 0xFFFFFFFFull);
            if ((((unsigned int)(hx & 0x000FFFFF)) | lx) != 0u) return x + x;
            return negative ? 0.0 : x;
        }
        if (x > __longlong_as_double(0x40862E42FEFA39EFll)) return __longlong_as_double(0x7FF0000000000000ll); // +inf
        if (x < __longlong_as_double((long long)0xC0874910D52D3051ull)) return 0.0;
    }
    double hi = 0.0, lo = 0.0, r;
    int k = 0;
    if (hx > 0x3FD62E42) {
        if (hx < 0x3FF0A2B2) {
            if (negative) { hi = x + ln2_hi; lo = -ln2_lo; k = -1; }
            else { hi = x - ln2_hi; lo = ln2_lo; k = 1; }
        } else {
            k = (int)(inv_ln2 * x + (negative ? -0.5 : 0.5));
            const double t = (double)k;
            hi = x - t * ln2_hi;
            lo = t * ln2_lo;
        }
        r = hi - lo;
    } else if (hx < 0x3E300000) {
        return 1.0 + x;
    } else {
        r = x;
    }
    const double t = r * r;
    const double c = r - t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * p5))));
    if (k == 0) return 1.0 - ((r * c) / (c - 2.0) - r);
    const double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    if (k >= -1021) return with_high_word(y, high_word(y) + (int)((unsigned int)k << 20));
    return with_high_word(y, high_word(y) + (int)((unsigned int)(k + 1000) << 20)) * __longlong_as_double(0x0170000000000000ll);
}

// 1/3 + s2/5 + ... + s2^6/15 in Estrin's scheme (the host's atanh_tail).
__device__ __forceinline__ double atanh_tail(double s2) {
    const double s4 = s2 * s2;
    const double s8 = s4 * s4;
    const double low = (1.0 / 3.0 + s2 * (1.0 / 5.0)) + s4 * (1.0 / 7.0 + s2 * (1.0 / 9.0));
    const double high = (1.0 / 11.0 + s2 * (1.0 / 13.0)) + s4 * (1.0 / 15.0);
    return low + s8 * high;
}

// ln(1 + x): 2 atanh(x / (2 + x)) by its series for |x| < 0.1, else Kahan's ln(u) x / (u - 1).
__device__ __forceinline__ double ln_1p(double x) {
    if (fabs(x) < 0.1) {
        const double s = x / (2.0 + x);
        const double s2 = s * s;
        const double two_s = 2.0 * s;
        return two_s + two_s * (s2 * atanh_tail(s2));
    }
    const double u = 1.0 + x;
    return ln_portable(u) * (x / (u - 1.0));
}

// x - ln(1 + x) without cancellation.
__device__ __forceinline__ double ln_1p_defect(double x) {
    if (fabs(x) < 0.1) {
        const double s = x / (2.0 + x);
        const double s2 = s * s;
        return s * (x - 2.0 * (s2 * atanh_tail(s2)));
    }
    return x - ln_1p(x);
}

// e^y - 1 - y without cancellation: its Taylor series to y^16/16! for |y| < 0.5; exp_y = e^y is used
// above only.
__device__ __forceinline__ double exp_defect(double y, double exp_y) {
    if (fabs(y) < 0.5) {
        double t = 1.0 / 20922789888000.0;
        t = 1.0 / 1307674368000.0 + y * t;
        t = 1.0 / 87178291200.0 + y * t;
        t = 1.0 / 6227020800.0 + y * t;
        t = 1.0 / 479001600.0 + y * t;
        t = 1.0 / 39916800.0 + y * t;
        t = 1.0 / 3628800.0 + y * t;
        t = 1.0 / 362880.0 + y * t;
        t = 1.0 / 40320.0 + y * t;
        t = 1.0 / 5040.0 + y * t;
        t = 1.0 / 720.0 + y * t;
        t = 1.0 / 120.0 + y * t;
        t = 1.0 / 24.0 + y * t;
        t = 1.0 / 6.0 + y * t;
        t = 1.0 / 2.0 + y * t;
        return y * y * t;
    }
    return (exp_y - 1.0) - y;
}

// tr h - ln J, second order in h.
__device__ __forceinline__ double tr_minus_ln_j(const Volume& v) { return ln_1p_defect(v.jm1) - v.nonlinear; }

// j^(-2/3) for finite j > 0 with the host's operations in the host's order (integer arithmetic on
// the bits, then *, -, /; fem/src/material/decoupled_neo_hookean.rs::pow_minus_two_thirds): the
// host's bits, where CUDA's pow and the C library's round differently.
__device__ __forceinline__ double pow_minus_two_thirds(double j) {
    double x = j, scale = 1.0;
    if (j < 2.2250738585072014e-308) {  // subnormal: scale by 2^54, (2^54)^(-1/3) = 2^-18
        x = j * 18014398509481984.0;
        scale = 262144.0;
    }
    double y = __longlong_as_double(
        (long long)(0x5540000000000000ull - (unsigned long long)__double_as_longlong(x) / 3ull));
    for (int s = 0; s < 8; ++s) {
        const double c = x * y * y * y;
        y *= (4.0 - c) / 3.0;
    }
    y = y * scale;
    return y * y;
}

// ---- tangent patterns (fem/src/material/tensor.rs) ----
__device__ __forceinline__ void add_identity(double* a, double c) {
    for (int r = 0; r < 9; ++r) a[r * 9 + r] += c;
}
// c (X_iJ Y_kL + Y_iJ X_kL), or c X_iJ X_kL when y is null.
__device__ __forceinline__ void add_dyad(double* a, double c, const double* x, const double* y) {
    for (int col = 0; col < 9; ++col)
        for (int row = 0; row < 9; ++row) {
            const double v = y ? x[row] * y[col] + y[row] * x[col] : x[row] * x[col];
            a[row * 9 + col] += c * v;
        }
}
// c X_iL X_kJ
__device__ __forceinline__ void add_cross(double* a, double c, const double* x) {
    for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 3; ++l)
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) a[(3 * i + j) * 9 + 3 * k + l] += c * x[3 * i + l] * x[3 * k + j];
}
// c (d_ik M_JL + N_ik d_JL), either may be null.
__device__ __forceinline__ void add_kronecker(double* a, double c, const double* m, const double* n) {
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k)
            for (int j = 0; j < 3; ++j)
                for (int l = 0; l < 3; ++l) {
                    double v = 0.0;
                    if (m && i == k) v += m[3 * j + l];
                    if (n && j == l) v += n[3 * i + k];
                    a[(3 * i + j) * 9 + 3 * k + l] += c * v;
                }
}
// C = A B
__device__ __forceinline__ void mul3(const double* a, const double* b, double* c) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            c[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
}
// C = A^T B
__device__ __forceinline__ void mul3_tn(const double* a, const double* b, double* c) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            c[3 * i + j] = a[i] * b[j] + a[3 + i] * b[3 + j] + a[6 + i] * b[6 + j];
}
// C = A B^T
__device__ __forceinline__ void mul3_nt(const double* a, const double* b, double* c) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            c[3 * i + j] = a[3 * i] * b[3 * j] + a[3 * i + 1] * b[3 * j + 1] + a[3 * i + 2] * b[3 * j + 2];
}
__device__ __forceinline__ double sum_sq(const double* m) {
    // nalgebra's component_mul(..).sum() adds column-major: (0,0),(1,0),(2,0),(0,1),...
    double s = 0.0;
    for (int c = 0; c < 3; ++c)
        for (int r = 0; r < 3; ++r) s += m[3 * r + c] * m[3 * r + c];
    return s;
}

// ---- the models: energy, stress P, and the tangent (split or full), from h = F - I ----

// F = I + h (for tangents only: F's rounding is harmless there).
__device__ __forceinline__ void identity_plus(const double* h, double* f) {
    for (int r = 0; r < 9; ++r) f[r] = ((r % 4 == 0) ? 1.0 : 0.0) + h[r];
}
// eps = (h + h^T) / 2
__device__ __forceinline__ void small_strain(const double* h, double* e) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) e[3 * i + j] = (h[3 * i + j] + h[3 * j + i]) * 0.5;
}
// E = (h + h^T + h^T h) / 2
__device__ __forceinline__ void green_lagrange(const double* h, double* e) {
    double hth[9];
    mul3_tn(h, h, hth);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) e[3 * i + j] = ((h[3 * i + j] + h[3 * j + i]) + hth[3 * i + j]) * 0.5;
}
// lambda tr(e) I + 2 mu e
__device__ __forceinline__ void hooke(const double* e, double lambda, double mu, double* s) {
    const double le = lambda * tr3(e);
    for (int r = 0; r < 9; ++r) s[r] = e[r] * (2.0 * mu) + ((r % 4 == 0) ? le : 0.0);
}

#if MATERIAL == 3
// J^{-2/3} I1 - 3 = J^{-2/3} (2 (tr h - ln J) + h:h - 3 (e^y - 1 - y)), y = 2/3 ln J.
__device__ __forceinline__ double isochoric_invariant_change(const Volume& v, const double* h) {
    const double a = pow_minus_two_thirds(v.j);
    const double y = 2.0 / 3.0 * ln_1p(v.jm1);
    const double defect = exp_defect(y, 1.0 / a);
    const double change = 2.0 * tr_minus_ln_j(v) + sum_sq(h) - 3.0 * defect;
    return a * change;
}
#endif

// Energy density psi(h); false on J <= 0 (every model but the linear one checks).
__device__ bool material_energy(const double* h, double p0, double p1, double p2, double* psi) {
#if MATERIAL == 0
    double e[9];
    small_strain(h, e);
    const double t = tr3(e);
    *psi = 0.5 * p0 * t * t + p1 * sum_sq(e);
    return true;
#else
    Volume v;
    if (!volume(h, &v)) return false;
#if MATERIAL == 1
    double e[9];
    green_lagrange(h, e);
    const double t = tr3(e);
    *psi = 0.5 * p0 * t * t + p1 * sum_sq(e);
#elif MATERIAL == 2
    const double lnj = ln_1p(v.jm1);
    *psi = 0.5 * p0 * lnj * lnj + p1 * (tr_minus_ln_j(v) + 0.5 * sum_sq(h));
#elif MATERIAL == 3
    // J^2 - 1 - 2 ln J = 2 (J - 1 - ln J) + (J - 1)^2
    const double volumetric = 2.0 * ln_1p_defect(v.jm1) + v.jm1 * v.jm1;
    *psi = 0.25 * p0 * volumetric + 0.5 * p1 * isochoric_invariant_change(v, h);
#elif MATERIAL == 4
    const double lnj = ln_1p(v.jm1);
    double e[9], ce[9];
    green_lagrange(h, e);
    cofactor3(e, ce);
    *psi = 0.5 * p0 * lnj * lnj + (p1 + 2.0 * p2) * (tr_minus_ln_j(v) + 0.5 * sum_sq(h)) + 2.0 * p2 * tr3(ce);
#endif
    return true;
#endif
}

#if SPLIT
// P, G and c = [c_id, c_dyad, c_cross] (linear: G = I; neo-Hookean: G = F^{-T},
// P = mu (h + (I - G)) + lambda ln J G).
__device__ bool material_split(const double* h, double p0, double p1, double p2, double* p, double* g,
                               double* c) {
#if MATERIAL == 0
    double e[9];
    small_strain(h, e);
    hooke(e, p0, p1, p);
    for (int r = 0; r < 9; ++r) g[r] = (r % 4 == 0) ? 1.0 : 0.0;
    c[0] = p1; c[1] = p0; c[2] = p1;
    return true;
#else
    Volume v;
    if (!volume(h, &v)) return false;
    double d[9];
    inverse_transpose(v, h, g, d);
    const double lnj = ln_1p(v.jm1);
    const double s = p0 * lnj;
    for (int r = 0; r < 9; ++r) p[r] = (h[r] + d[r]) * p1 + g[r] * s;
    c[0] = p1; c[1] = p0; c[2] = p1 - p0 * lnj;
    return true;
#endif
}
#else
// P and the full tangent a[81] (row-major, symmetric).
__device__ bool material_full(const double* h, double p0, double p1, double p2, double* p, double* a) {
    Volume v;
    if (!volume(h, &v)) return false;
    for (int r = 0; r < 81; ++r) a[r] = 0.0;
    double f[9];
    identity_plus(h, f);
#if MATERIAL == 1
    // P = S + h S
    double e[9], s[9], b[9], hs[9];
    green_lagrange(h, e);
    hooke(e, p0, p1, s);
    mul3_nt(f, f, b);
    add_kronecker(a, 1.0, s, nullptr);
    add_kronecker(a, p1, nullptr, b);
    add_dyad(a, p0, f, nullptr);
    add_cross(a, p1, f);
    mul3(h, s, hs);
    for (int r = 0; r < 9; ++r) p[r] = s[r] + hs[r];
#elif MATERIAL == 3
    // P = pr G + mu J^{-2/3} (h + (I - G) - (I1 - 3)/3 G)
    double g[9], d[9];
    inverse_transpose(v, h, g, d);
    const double i1m = 2.0 * v.tr + sum_sq(h);
    const double mua = p1 * pow_minus_two_thirds(v.j);
    const double pr = 0.5 * p0 * (v.jm1 * (2.0 + v.jm1));
    const double gs = i1m / 3.0;
    for (int r = 0; r < 9; ++r) p[r] = g[r] * pr + ((h[r] + d[r]) - g[r] * gs) * mua;
    const double j = v.j, i1 = 3.0 + i1m;
    add_identity(a, mua);
    add_dyad(a, p0 * j * j + 2.0 / 9.0 * mua * i1, g, nullptr);
    add_cross(a, mua * i1 / 3.0 - pr, g);
    add_dyad(a, -2.0 / 3.0 * mua, f, g);
#elif MATERIAL == 4
    // P = lambda ln J G + (mu1 + 2 mu2)(h + (I - G)) + mu2 (M + M h), M = (I1 - 3) I - (h + h^T + h h^T)
    double g[9], d[9], hht[9], mm[9], mh[9], b[9], c[9];
    inverse_transpose(v, h, g, d);
    const double lnj = ln_1p(v.jm1);
    const double i1m = 2.0 * v.tr + sum_sq(h);
    mul3_nt(h, h, hht);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            mm[3 * i + j] = (i == j ? i1m : 0.0) - ((h[3 * i + j] + h[3 * j + i]) + hht[3 * i + j]);
    mul3(mm, h, mh);
    const double gs = p0 * lnj;
    const double cs = p1 + 2.0 * p2;
    for (int r = 0; r < 9; ++r) p[r] = (g[r] * gs + (h[r] + d[r]) * cs) + (mm[r] + mh[r]) * p2;
    mul3_nt(f, f, b);
    mul3_tn(f, f, c);
    const double i1 = 3.0 + i1m;
    add_identity(a, p1 + p2 * i1);
    add_dyad(a, p0, g, nullptr);
    add_cross(a, p1 + 2.0 * p2 - p0 * lnj, g);
    add_dyad(a, 2.0 * p2, f, nullptr);
    add_kronecker(a, -p2, c, b);
    add_cross(a, -p2, f);
#endif
    return true;
}
#endif

// ---- per quadrature point: geometry and deformation ----

// Reference gradients g[a][e] = dN_a/dX_e and w det at point q of a cell with nodes x[NODES*3];
// false if det dX/dxi <= 0 or NaN. dn: dN_a/dxi tabulated as dn[(q NODES + a) 3 + e].
__device__ __forceinline__ bool point_gradients(const double* __restrict__ x, const double* __restrict__ dn,
                                                double w, double* g, double* wd) {
    double jm[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int a = 0; a < NODES; ++a)
        for (int d = 0; d < 3; ++d)
            for (int e = 0; e < 3; ++e) jm[3 * d + e] += x[3 * a + d] * __ldg(dn + 3 * a + e);
    const double c00 = jm[4] * jm[8] - jm[5] * jm[7];
    const double c01 = jm[5] * jm[6] - jm[3] * jm[8];
    const double c02 = jm[3] * jm[7] - jm[4] * jm[6];
    const double det = jm[0] * c00 + jm[1] * c01 + jm[2] * c02;
    if (det <= 0.0 || isnan(det)) return false;
    const double s = 1.0 / det;
    double inv[9];
    inv[0] = c00 * s;
    inv[1] = (jm[2] * jm[7] - jm[1] * jm[8]) * s;
    inv[2] = (jm[1] * jm[5] - jm[2] * jm[4]) * s;
    inv[3] = c01 * s;
    inv[4] = (jm[0] * jm[8] - jm[2] * jm[6]) * s;
    inv[5] = (jm[2] * jm[3] - jm[0] * jm[5]) * s;
    inv[6] = c02 * s;
    inv[7] = (jm[1] * jm[6] - jm[0] * jm[7]) * s;
    inv[8] = (jm[0] * jm[4] - jm[1] * jm[3]) * s;
    for (int a = 0; a < NODES; ++a) {
        const double d0 = __ldg(dn + 3 * a), d1 = __ldg(dn + 3 * a + 1), d2 = __ldg(dn + 3 * a + 2);
        for (int e = 0; e < 3; ++e) g[3 * a + e] = d0 * inv[e] + d1 * inv[3 + e] + d2 * inv[6 + e];
    }
    *wd = w * det;
    return true;
}

// h = grad_X u = sum_a u_a (x) g_a (F = I + h is never formed here: the materials take h)
__device__ __forceinline__ void displacement_gradient(const double* u, const double* g, double* h) {
    for (int r = 0; r < 9; ++r) h[r] = 0.0;
    for (int a = 0; a < NODES; ++a)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) h[3 * i + j] += u[3 * a + i] * g[3 * a + j];
}

// Shared memory of one cell.
struct CellShared {
    double x[NODES * 3];
    double u[NODES * 3];
    double g[NQP][NODES * 3];  // grad_X N_a at each point
    double pw[NQP][9];         // wd P
    double wd[NQP];
#if SPLIT
    double hg[NQP][NODES * 3];  // G g_a
    double c[NQP][3];           // wd [c_id, c_dyad, c_cross]
#else
    double a[NQP][81];  // material tangent (unweighted)
#endif
};

__device__ __forceinline__ void gather_cell(CellShared& s, u32 cell, const u32* __restrict__ cells,
                                            const double* __restrict__ coords, const double* __restrict__ u,
                                            int lane, int width) {
    for (int t = lane; t < NODES * 3; t += width) {
        const u32 node = __ldg(cells + (size_t)cell * NODES + t / 3);
        s.x[t] = __ldg(coords + (size_t)node * 3 + t % 3);
        s.u[t] = __ldg(u + (size_t)node * 3 + t % 3);
    }
}

// Residual and tangent blocks of EPB cells per block.
extern "C" __global__ void element_residual_tangent(const u32 n_group, const u32* __restrict__ group, const u32* __restrict__ cells,
                                                    const double* __restrict__ coords,
                                                    const double* __restrict__ u,
                                                    const double* __restrict__ weights,
                                                    const double* __restrict__ dn, const double p0,
                                                    const double p1, const double p2,
                                                    double* __restrict__ r_out, double* __restrict__ k_out,
                                                    u32* __restrict__ fail) {
    __shared__ CellShared sh[EPB];
    const u32 first = blockIdx.x * EPB;
    // Gather.
    for (int t = threadIdx.x; t < EPB * NODES * 3; t += blockDim.x) {
        const int e = t / (NODES * 3), l = t % (NODES * 3);
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        const u32 node = __ldg(cells + (size_t)cell * NODES + l / 3);
        sh[e].x[l] = __ldg(coords + (size_t)node * 3 + l % 3);
        sh[e].u[l] = __ldg(u + (size_t)node * 3 + l % 3);
    }
    __syncthreads();
    // Per (cell, point): gradients, deformation, material.
    for (int t = threadIdx.x; t < EPB * NQP; t += blockDim.x) {
        const int e = t / NQP, q = t % NQP;
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        CellShared& s = sh[e];
        double wd;
        bool ok = point_gradients(s.x, dn + (size_t)q * NODES * 3, __ldg(weights + q), s.g[q], &wd);
        double h[9], p[9];
        if (ok) {
            displacement_gradient(s.u, s.g[q], h);
#if SPLIT
            double gm[9], c[3];
            ok = material_split(h, p0, p1, p2, p, gm, c);
            if (ok) {
                for (int a = 0; a < NODES; ++a)
                    for (int i = 0; i < 3; ++i)
                        s.hg[q][3 * a + i] = gm[3 * i] * s.g[q][3 * a] + gm[3 * i + 1] * s.g[q][3 * a + 1] +
                                             gm[3 * i + 2] * s.g[q][3 * a + 2];
                s.c[q][0] = wd * c[0];
                s.c[q][1] = wd * c[1];
                s.c[q][2] = wd * c[2];
            }
#else
            ok = material_full(h, p0, p1, p2, p, s.a[q]);
#endif
        }
        if (!ok) {
            atomicMin(fail, cell);
            for (int r = 0; r < 9; ++r) p[r] = 0.0;
            wd = 0.0;
        }
        s.wd[q] = wd;
        for (int r = 0; r < 9; ++r) s.pw[q][r] = p[r] * wd;
    }
    __syncthreads();
    // Residual entries (cell, a, i): r_a += wd P g_a, point after point.
    for (int t = threadIdx.x; t < EPB * NODES * 3; t += blockDim.x) {
        const int e = t / (NODES * 3), l = t % (NODES * 3), a = l / 3, i = l % 3;
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        const CellShared& s = sh[e];
        double acc = 0.0;
        for (int q = 0; q < NQP; ++q)
            acc += s.pw[q][3 * i] * s.g[q][3 * a] + s.pw[q][3 * i + 1] * s.g[q][3 * a + 1] +
                   s.pw[q][3 * i + 2] * s.g[q][3 * a + 2];
        r_out[(size_t)cell * NODES * 3 + l] = acc;
    }
    // Tangent blocks (cell, a, b): block (lo, hi) = (min, max) integrated as the host does for b >= a,
    // and written transposed when a > b (the host's mirror).
    for (int t = threadIdx.x; t < EPB * NODES * NODES; t += blockDim.x) {
        const int e = t / (NODES * NODES), ab = t % (NODES * NODES), a = ab / NODES, b = ab % NODES;
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        const CellShared& s = sh[e];
        const int lo = a < b ? a : b, hi = a < b ? b : a;
        double k[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int q = 0; q < NQP; ++q) {
            const double* ga = s.g[q] + 3 * lo;
            const double* gb = s.g[q] + 3 * hi;
#if SPLIT
            const double* ha = s.hg[q] + 3 * lo;
            const double* hb = s.hg[q] + 3 * hi;
            const double c_id = s.c[q][0], c_dyad = s.c[q][1], c_cross = s.c[q][2];
            const double hd[3] = {c_dyad * ha[0], c_dyad * ha[1], c_dyad * ha[2]};
            const double hc[3] = {c_cross * ha[0], c_cross * ha[1], c_cross * ha[2]};
            const double dot = c_id * (ga[0] * gb[0] + ga[1] * gb[1] + ga[2] * gb[2]);
            for (int i = 0; i < 3; ++i) {
                for (int kk = 0; kk < 3; ++kk) k[3 * i + kk] += hd[i] * hb[kk] + hb[i] * hc[kk];
                k[4 * i] += dot;
            }
#else
            const double wd = s.wd[q];
            const double gw[3] = {wd * ga[0], wd * ga[1], wd * ga[2]};
            const double* am = s.a[q];
            // The host reads A column by column (nalgebra stores it column-major): rows[c] of
            // add_material_tangent is A[c][3 i + m]. A is symmetric only up to rounding (add_cross
            // rounds (c x_iL) x_kJ), so reading its rows instead would differ from the host.
            for (int i = 0; i < 3; ++i) {
                double gaa[9];
                for (int c = 0; c < 9; ++c)
                    gaa[c] = gw[0] * am[c * 9 + 3 * i] + gw[1] * am[c * 9 + 3 * i + 1] +
                             gw[2] * am[c * 9 + 3 * i + 2];
                for (int kk = 0; kk < 3; ++kk)
                    k[3 * i + kk] += gaa[3 * kk] * gb[0] + gaa[3 * kk + 1] * gb[1] + gaa[3 * kk + 2] * gb[2];
            }
#endif
        }
        double* out = k_out + ((size_t)cell * NODES * NODES + ab) * 9;
        if (a <= b) {
            for (int r = 0; r < 9; ++r) out[r] = k[r];
        } else {
            for (int i = 0; i < 3; ++i)
                for (int kk = 0; kk < 3; ++kk) out[3 * i + kk] = k[3 * kk + i];
        }
    }
}

// Residual only (line searches): EPB cells per block, no tangent work.
extern "C" __global__ void element_residual(const u32 n_group, const u32* __restrict__ group, const u32* __restrict__ cells,
                                            const double* __restrict__ coords, const double* __restrict__ u,
                                            const double* __restrict__ weights, const double* __restrict__ dn,
                                            const double p0, const double p1, const double p2,
                                            double* __restrict__ r_out, u32* __restrict__ fail) {
    __shared__ double xs[EPB][NODES * 3];
    __shared__ double us[EPB][NODES * 3];
    __shared__ double gs[EPB][NQP][NODES * 3];
    __shared__ double pws[EPB][NQP][9];
    const u32 first = blockIdx.x * EPB;
    for (int t = threadIdx.x; t < EPB * NODES * 3; t += blockDim.x) {
        const int e = t / (NODES * 3), l = t % (NODES * 3);
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        const u32 node = __ldg(cells + (size_t)cell * NODES + l / 3);
        xs[e][l] = __ldg(coords + (size_t)node * 3 + l % 3);
        us[e][l] = __ldg(u + (size_t)node * 3 + l % 3);
    }
    __syncthreads();
    for (int t = threadIdx.x; t < EPB * NQP; t += blockDim.x) {
        const int e = t / NQP, q = t % NQP;
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        double wd, h[9], p[9];
        bool ok = point_gradients(xs[e], dn + (size_t)q * NODES * 3, __ldg(weights + q), gs[e][q], &wd);
        if (ok) {
            displacement_gradient(us[e], gs[e][q], h);
#if SPLIT
            double gm[9], c[3];
            ok = material_split(h, p0, p1, p2, p, gm, c);
#else
            double a[81];
            ok = material_full(h, p0, p1, p2, p, a);
#endif
        }
        if (!ok) {
            atomicMin(fail, cell);
            for (int r = 0; r < 9; ++r) p[r] = 0.0;
            wd = 0.0;
        }
        for (int r = 0; r < 9; ++r) pws[e][q][r] = p[r] * wd;
    }
    __syncthreads();
    for (int t = threadIdx.x; t < EPB * NODES * 3; t += blockDim.x) {
        const int e = t / (NODES * 3), l = t % (NODES * 3), a = l / 3, i = l % 3;
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        double acc = 0.0;
        for (int q = 0; q < NQP; ++q)
            acc += pws[e][q][3 * i] * gs[e][q][3 * a] + pws[e][q][3 * i + 1] * gs[e][q][3 * a + 1] +
                   pws[e][q][3 * i + 2] * gs[e][q][3 * a + 2];
        r_out[(size_t)cell * NODES * 3 + l] = acc;
    }
}

// Strain energy int psi dV of every cell (one thread per cell).
extern "C" __global__ void element_energy(const u32 n_group, const u32* __restrict__ group, const u32* __restrict__ cells,
                                          const double* __restrict__ coords, const double* __restrict__ u,
                                          const double* __restrict__ weights, const double* __restrict__ dn,
                                          const double p0, const double p1, const double p2,
                                          double* __restrict__ energy_out, u32* __restrict__ fail) {
    const u32 slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n_group) return;
    const u32 cell = CELL_OF(slot);
    double x[NODES * 3], uu[NODES * 3], g[NODES * 3];
    for (int l = 0; l < NODES * 3; ++l) {
        const u32 node = __ldg(cells + (size_t)cell * NODES + l / 3);
        x[l] = __ldg(coords + (size_t)node * 3 + l % 3);
        uu[l] = __ldg(u + (size_t)node * 3 + l % 3);
    }
    double energy = 0.0;
    for (int q = 0; q < NQP; ++q) {
        double wd, h[9], psi;
        if (!point_gradients(x, dn + (size_t)q * NODES * 3, __ldg(weights + q), g, &wd)) {
            atomicMin(fail, cell);
            energy = 0.0;
            break;
        }
        displacement_gradient(uu, g, h);
        if (!material_energy(h, p0, p1, p2, &psi)) {
            atomicMin(fail, cell);
            energy = 0.0;
            break;
        }
        energy += wd * psi;
    }
    energy_out[cell] = energy;
}

// First Piola stress of any model at h (the tangent formed and dropped where the model has no split).
__device__ bool material_stress(const double* h, double p0, double p1, double p2, double* p) {
#if SPLIT
    double gm[9], c[3];
    return material_split(h, p0, p1, p2, p, gm, c);
#else
    double a[81];
    return material_full(h, p0, p1, p2, p, a);
#endif
}

// Weighted sums of a cell's output fields over its points: Cauchy stress, J, energy, volume.
struct CellFieldSums {
    double vol, jsum, e, sig[9];
};

// Adds the point with displacement gradient h and weight wd (fem::ElementKernel::cell_fields'
// loop body); false on J <= 0.
__device__ bool add_cell_fields(const double* h, double wd, double p0, double p1, double p2, CellFieldSums* sums) {
    double p[9], psi;
    if (!(material_stress(h, p0, p1, p2, p) && material_energy(h, p0, p1, p2, &psi))) return false;
    double cs[9];
#if MATERIAL == 0
    for (int r = 0; r < 9; ++r) cs[r] = p[r];
#else
    // s = (P + P h^T) / J (= P F^T / J), then (s + s^T) / 2
    const double d = 1.0 + j_minus_one(h);
    double pft[9];
    mul3_nt(p, h, pft);
    for (int r = 0; r < 9; ++r) pft[r] = (p[r] + pft[r]) / d;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) cs[3 * i + j] = (pft[3 * i + j] + pft[3 * j + i]) * 0.5;
#endif
    for (int r = 0; r < 9; ++r) sums->sig[r] += cs[r] * wd;
    sums->jsum += wd * (1.0 + j_minus_one(h));
    sums->e += wd * psi;
    sums->vol += wd;
    return true;
}

// The averages of the sums: o[0..10) = Cauchy [xx, yy, zz, xy, yz, xz], von Mises, J, energy
// density, strain energy.
__device__ void write_cell_fields(const CellFieldSums& sums, double* o) {
    double s[9];
    for (int r = 0; r < 9; ++r) s[r] = sums.sig[r] / sums.vol;
    // von Mises of the average: sqrt(3/2 dev:dev), summed column-major as nalgebra does
    const double pm = tr3(s) / 3.0;
    double dev[9];
    for (int r = 0; r < 9; ++r) dev[r] = s[r] - ((r % 4 == 0) ? pm : 0.0);
    o[0] = s[0]; o[1] = s[4]; o[2] = s[8]; o[3] = s[1]; o[4] = s[5]; o[5] = s[2];
    o[6] = sqrt(1.5 * sum_sq(dev));
    o[7] = sums.jsum / sums.vol;
    o[8] = sums.e / sums.vol;
    o[9] = sums.e;
}

// A cell's outputs of `width` values at out[width c + ..]: width 10 every field of
// write_cell_fields; width 2 the checks' pair (J, strain energy), J NaN where some field of
// the cell is not finite (the caller then takes every field); zeros for a failed cell.
__device__ void write_cell_outputs(const CellFieldSums* sums, u32 width, u32 cell, double* __restrict__ out) {
    double* w = out + (size_t)cell * width;
    if (sums == nullptr) {
        for (u32 r = 0; r < width; ++r) w[r] = 0.0;
        return;
    }
    double o[10];
    write_cell_fields(*sums, o);
    if (width == 10) {
        for (int r = 0; r < 10; ++r) w[r] = o[r];
        return;
    }
    bool finite = true;
    for (int r = 0; r < 9; ++r) finite = finite && isfinite(o[r]);
    w[0] = finite ? o[7] : __longlong_as_double(0x7ff8000000000000ll);
    w[1] = o[9];
}

// Volume averages of a cell for output (fem::ElementKernel::cell_fields): out[10 c + ..] =
// Cauchy [xx, yy, zz, xy, yz, xz], von Mises, J, energy density, strain energy (width 10), or
// the checks' pair of write_cell_outputs (width 2). One thread per cell.
extern "C" __global__ void element_cell_fields(const u32 n_group, const u32* __restrict__ group, const u32* __restrict__ cells,
                                               const double* __restrict__ coords, const double* __restrict__ u,
                                               const double* __restrict__ weights, const double* __restrict__ dn,
                                               const double p0, const double p1, const double p2, const u32 width,
                                               double* __restrict__ out, u32* __restrict__ fail) {
    const u32 slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n_group) return;
    const u32 cell = CELL_OF(slot);
    double x[NODES * 3], uu[NODES * 3], g[NODES * 3];
    for (int l = 0; l < NODES * 3; ++l) {
        const u32 node = __ldg(cells + (size_t)cell * NODES + l / 3);
        x[l] = __ldg(coords + (size_t)node * 3 + l % 3);
        uu[l] = __ldg(u + (size_t)node * 3 + l % 3);
    }
    CellFieldSums sums = {};
    bool ok = true;
    for (int q = 0; q < NQP && ok; ++q) {
        double wd, h[9];
        ok = point_gradients(x, dn + (size_t)q * NODES * 3, __ldg(weights + q), g, &wd);
        if (!ok) break;
        displacement_gradient(uu, g, h);
        ok = add_cell_fields(h, wd, p0, p1, p2, &sums);
    }
    if (!ok) atomicMin(fail, cell);
    write_cell_outputs(ok ? &sums : nullptr, width, cell, out);
}

// The output's strain measures the device computes (DeviceElements::cell_strains' codes of
// fem::StrainMeasure): the material model's (the small strain for the linear model,
// Green-Lagrange for the others) and Green-Lagrange. The logarithmic strain stays on the host (its
// eigen-decomposition and ln_1p are nalgebra's and the C library's).
#define STRAIN_MODEL 0u
#define STRAIN_GREEN_LAGRANGE 1u

// Adds wd times the strain `measure` of h to sum (fem::ElementKernel::cell_strain's loop body,
// sum += strain(measure, material, h) * wd, entry by entry as nalgebra rounds it).
__device__ __forceinline__ void add_cell_strain(const double* h, double wd, u32 measure, double* sum) {
    double e[9];
#if MATERIAL == 0
    if (measure == STRAIN_MODEL)
        small_strain(h, e);
    else
        green_lagrange(h, e);
#else
    (void)measure;
    green_lagrange(h, e);
#endif
    for (int r = 0; r < 9; ++r) sum[r] += e[r] * wd;
}

// Reference-volume average of the strain `measure` over each cell (fem::ElementKernel::cell_strain,
// the displacement formulation): out[9 c + 3 i + j] = E_ij, row-major. One thread per cell; p0..p2
// unused (the launch's common arguments).
extern "C" __global__ void element_cell_strains(const u32 n_group, const u32* __restrict__ group, const u32* __restrict__ cells,
                                                const double* __restrict__ coords, const double* __restrict__ u,
                                                const double* __restrict__ weights, const double* __restrict__ dn,
                                                const double p0, const double p1, const double p2,
                                                const u32 measure, double* __restrict__ out, u32* __restrict__ fail) {
    const u32 slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n_group) return;
    const u32 cell = CELL_OF(slot);
    double x[NODES * 3], uu[NODES * 3], g[NODES * 3];
    for (int l = 0; l < NODES * 3; ++l) {
        const u32 node = __ldg(cells + (size_t)cell * NODES + l / 3);
        x[l] = __ldg(coords + (size_t)node * 3 + l % 3);
        uu[l] = __ldg(u + (size_t)node * 3 + l % 3);
    }
    double sum[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, vol = 0.0;
    bool ok = true;
    for (int q = 0; q < NQP; ++q) {
        double wd, h[9];
        ok = point_gradients(x, dn + (size_t)q * NODES * 3, __ldg(weights + q), g, &wd);
        if (!ok) break;
        displacement_gradient(uu, g, h);
        add_cell_strain(h, wd, measure, sum);
        vol += wd;
    }
    double* o = out + (size_t)cell * 9;
    if (!ok) {
        atomicMin(fail, cell);
        for (int r = 0; r < 9; ++r) o[r] = 0.0;
        return;
    }
    for (int r = 0; r < 9; ++r) o[r] = sum[r] / vol;
}

// Residual slots of the vector plan (3 per slot) to node-major entries; nodes in no cell get 0.
extern "C" __global__ void scatter_node_slots(const u32 n_nodes, const u32* __restrict__ slot_of_node,
                                              const double* __restrict__ slots, double* __restrict__ r) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 3 * n_nodes) return;
    const u32 s = __ldg(slot_of_node + t / 3);
    r[t] = s == NOT_FOUND ? 0.0 : __ldg(slots + (size_t)s * 3 + t % 3);
}
