//! `ln` and `exp` written with `+ - * /` and exact bit operations only (fdlibm's
//! `__ieee754_log` and `__ieee754_exp`: argument reduction, then a minimax polynomial; under
//! 1 ulp), so that their device twins in `fem/cuda/element.cu` (`ln_portable`, `exp_portable`:
//! the same operations in the same order, compiled with `--fmad=false`) give the host's bits.
//! The C library's and CUDA's `log` and `exp` round differently in the last bit for some
//! arguments, which made a GPU run's tangent differ from the CPU run's in a few entries where a
//! volume changed by 10 % or more.

/// `2^54`, which scales a subnormal argument to a normal one.
const TWO54: f64 = 18_014_398_509_481_984.0;

/// `ln 2` split so that `k ln2_hi` is exact for `|k| < 2^11`.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);

/// The log's minimax coefficients of `(ln(1 + f) - 2s) / s` in `s^2` (`s = f / (2 + f)`).
const LG: [f64; 7] = [
    f64::from_bits(0x3FE5_5555_5555_5593),
    f64::from_bits(0x3FD9_9999_9997_FA04),
    f64::from_bits(0x3FD2_4924_9422_9359),
    f64::from_bits(0x3FCC_71C5_1D8E_78AF),
    f64::from_bits(0x3FC7_4664_96CB_03DE),
    f64::from_bits(0x3FC3_9A09_D078_C69F),
    f64::from_bits(0x3FC2_F112_DF3E_5244),
];

/// The exponential's minimax coefficients of `r (e^r + 1) / (e^r - 1)` in `r^2`.
const P: [f64; 5] = [
    f64::from_bits(0x3FC5_5555_5555_553E),
    f64::from_bits(0xBF66_C16C_16BE_BD93),
    f64::from_bits(0x3F11_566A_AF25_DE2C),
    f64::from_bits(0xBEBB_BD41_C5D2_6BF1),
    f64::from_bits(0x3E66_3769_72BE_A4D0),
];
const INV_LN2: f64 = f64::from_bits(0x3FF7_1547_652B_82FE);
/// Above it `e^x` overflows, below the other `e^x` is zero.
const EXP_OVERFLOW: f64 = f64::from_bits(0x4086_2E42_FEFA_39EF);
const EXP_UNDERFLOW: f64 = f64::from_bits(0xC087_4910_D52D_3051);
/// `2^-1000`, which scales a result whose exponent would be subnormal.
const TWO_M1000: f64 = f64::from_bits(0x0170_0000_0000_0000);

fn high_word(x: f64) -> i32 {
    (x.to_bits() >> 32) as u32 as i32
}

fn with_high_word(x: f64, hi: i32) -> f64 {
    f64::from_bits(((hi as u32 as u64) << 32) | (x.to_bits() & 0xFFFF_FFFF))
}

/// The natural logarithm, within 1 ulp; NaN below zero, `-inf` at zero, `u` itself for `+inf`
/// and NaN.
pub(crate) fn ln(u: f64) -> f64 {
    let mut x = u;
    let mut hx = high_word(x);
    let lx = x.to_bits() as u32;
    let mut k: i32 = 0;
    if hx < 0x0010_0000 {
        // x < 2^-1022: zero, negative or subnormal
        if ((hx & 0x7FFF_FFFF) as u32 | lx) == 0 {
            return f64::NEG_INFINITY;
        }
        if hx < 0 {
            return f64::NAN;
        }
        k -= 54;
        x *= TWO54;
        hx = high_word(x);
    }
    if hx >= 0x7FF0_0000 {
        return x + x;
    }
    k += (hx >> 20) - 1023;
    hx &= 0x000F_FFFF;
    // the mantissa, or half of it, in [sqrt(2)/2, sqrt(2))
    let i = (hx + 0x95F64) & 0x10_0000;
    x = with_high_word(x, hx | (i ^ 0x3FF0_0000));
    k += i >> 20;
    let f = x - 1.0;
    let dk = f64::from(k);
    if (0x000F_FFFF & (2 + hx)) < 3 {
        // |f| < 2^-20
        if f == 0.0 {
            return if k == 0 {
                0.0
            } else {
                dk * LN2_HI + dk * LN2_LO
            };
        }
        let r = f * f * (0.5 - 0.333_333_333_333_333_3 * f);
        return if k == 0 {
            f - r
        } else {
            dk * LN2_HI - ((r - dk * LN2_LO) - f)
        };
    }
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let r = t2 + t1;
    if ((hx - 0x6147A) | (0x6B851 - hx)) > 0 {
        let hfsq = 0.5 * f * f;
        if k == 0 {
            f - (hfsq - s * (hfsq + r))
        } else {
            dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f)
        }
    } else if k == 0 {
        f - s * (f - r)
    } else {
        dk * LN2_HI - ((s * (f - r) - dk * LN2_LO) - f)
    }
}

/// The exponential, within 1 ulp; `+inf` above about 709.78, zero below about -745.13, NaN for
/// NaN.
pub(crate) fn exp(x: f64) -> f64 {
    let hx_signed = high_word(x);
    let negative = hx_signed < 0;
    let hx = hx_signed & 0x7FFF_FFFF;
    if hx >= 0x4086_2E42 {
        // |x| >= 709.78 or not finite
        if hx >= 0x7FF0_0000 {
            let lx = x.to_bits() as u32;
            if ((hx & 0x000F_FFFF) as u32 | lx) != 0 {
                return x + x; // NaN
            }
            return if negative { 0.0 } else { x };
        }
        if x > EXP_OVERFLOW {
            return f64::INFINITY;
        }
        if x < EXP_UNDERFLOW {
            return 0.0;
        }
    }
    let (hi, lo, k, r) = if hx > 0x3FD6_2E42 {
        // |x| > ln(2) / 2
        let (hi, lo, k) = if hx < 0x3FF0_A2B2 {
            // and |x| < 1.5 ln(2)
            if negative {
                (x + LN2_HI, -LN2_LO, -1)
            } else {
                (x - LN2_HI, LN2_LO, 1)
            }
        } else {
            let half = if negative { -0.5 } else { 0.5 };
            let k = (INV_LN2 * x + half) as i32;
            let t = f64::from(k);
            (x - t * LN2_HI, t * LN2_LO, k)
        };
        (hi, lo, k, hi - lo)
    } else if hx < 0x3E30_0000 {
        // |x| < 2^-28
        return 1.0 + x;
    } else {
        (0.0, 0.0, 0, x)
    };
    let t = r * r;
    let c = r - t * (P[0] + t * (P[1] + t * (P[2] + t * (P[3] + t * P[4]))));
    if k == 0 {
        return 1.0 - ((r * c) / (c - 2.0) - r);
    }
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    if k >= -1021 {
        with_high_word(y, high_word(y) + (k << 20))
    } else {
        with_high_word(y, high_word(y) + ((k + 1000) << 20)) * TWO_M1000
    }
}
