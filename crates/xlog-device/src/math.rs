//! `f32` / `f64` math for kernels, without libdevice.
//!
//! `core` has no float math on the device, and the NVPTX backend turns `f64::exp`
//! and friends into calls to C functions that do not exist on the GPU. This module
//! provides them, generic over [`Float`] (`f32` and `f64`):
//!
//! | function | how | accuracy |
//! | --- | --- | --- |
//! | [`sqrt`] | `sqrt.rn` | correctly rounded (IEEE) |
//! | [`fma`] | `fma.rn` | correctly rounded (single rounding) |
//! | [`exp`], [`ln`], [`sin`], [`cos`] | software (fdlibm algorithms) in `f64` | `f64`: < 1 ulp; `f32`: computed in `f64`, ≤ 0.5 ulp + double rounding (≤ 1 ulp) |
//! | [`pow`] | `exp(y · ln x)` in `f64`, with IEEE special cases | `f32`: ≤ 1 ulp; `f64`: relative error ≈ (1 + abs(y · ln x)) · 2⁻⁵² |
//! | [`floor`], [`ceil`], [`trunc`], [`abs`] | bit manipulation | exact |
//! | [`fast`]`::*` (`f32`) | `ex2.approx`, `lg2.approx`, `sin.approx`, `cos.approx`, `rsqrt.approx` | CUDA's `__expf` class: about 2 ulp near 0, absolute error ~2⁻²¹ for sin/cos on \[-π, π\], worse outside |
//!
//! `sin` / `cos` reduce the argument with a three-part Cody–Waite π/2 (≈ 118 bits),
//! accurate for `abs(x)` below about 2²⁰·π/2 ≈ 1.6·10⁶; past that the result stays in
//! \[-1, 1\] but loses accuracy progressively.
//!
//! The software routines are plain Rust, so they run on the host too (and are tested
//! there against `std`); [`sqrt`], [`fma`] and [`fast`] use PTX instructions on the
//! GPU and `std`'s functions in the simulator (correctly rounded for `sqrt` and `fma`,
//! as on the GPU; more accurate than the GPU's approximations for [`fast`]).

// The polynomial coefficients and constants are fdlibm's, transcribed digit for
// digit so they can be checked against the source.
#![allow(clippy::excessive_precision, clippy::approx_constant)]

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` and `f64`: the types [`math`](self)'s functions accept.
pub trait Float: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn __to_f64(self) -> f64;
    #[doc(hidden)]
    fn __from_f64(v: f64) -> Self;
    #[doc(hidden)]
    fn __sqrt(self) -> Self;
    #[doc(hidden)]
    fn __fma(self, b: Self, c: Self) -> Self;
    #[doc(hidden)]
    fn __pow(self, y: Self) -> Self;
}

impl Float for f64 {
    #[inline(always)]
    fn __to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn __from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn __sqrt(self) -> Self {
        device_or_sim!(
            device: {
                let r: f64;
                // SAFETY: arithmetic only.
                unsafe {
                    core::arch::asm!("sqrt.rn.f64 {r}, {x};", r = out(reg64) r, x = in(reg64) self, options(pure, nomem, nostack))
                };
                r
            },
            sim: { std::primitive::f64::sqrt(self) }
        )
    }
    #[inline(always)]
    fn __fma(self, b: Self, c: Self) -> Self {
        device_or_sim!(
            device: {
                let r: f64;
                // SAFETY: arithmetic only.
                unsafe {
                    core::arch::asm!("fma.rn.f64 {r}, {a}, {b}, {c};", r = out(reg64) r, a = in(reg64) self, b = in(reg64) b, c = in(reg64) c, options(pure, nomem, nostack))
                };
                r
            },
            sim: { std::primitive::f64::mul_add(self, b, c) }
        )
    }
    #[inline(always)]
    fn __pow(self, y: Self) -> Self {
        pow_f64(self, y)
    }
}

impl Float for f32 {
    #[inline(always)]
    fn __to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn __from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn __sqrt(self) -> Self {
        device_or_sim!(
            device: {
                let r: f32;
                // SAFETY: arithmetic only.
                unsafe {
                    core::arch::asm!("sqrt.rn.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) self, options(pure, nomem, nostack))
                };
                r
            },
            sim: { std::primitive::f32::sqrt(self) }
        )
    }
    #[inline(always)]
    fn __fma(self, b: Self, c: Self) -> Self {
        device_or_sim!(
            device: {
                let r: f32;
                // SAFETY: arithmetic only.
                unsafe {
                    core::arch::asm!("fma.rn.f32 {r}, {a}, {b}, {c};", r = out(reg32) r, a = in(reg32) self, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack))
                };
                r
            },
            sim: { std::primitive::f32::mul_add(self, b, c) }
        )
    }
    #[inline(always)]
    fn __pow(self, y: Self) -> Self {
        pow_f64(self as f64, y as f64) as f32
    }
}

/// Square root, correctly rounded (`sqrt.rn`; `std`'s in the simulator).
#[inline(always)]
pub fn sqrt<T: Float>(x: T) -> T {
    x.__sqrt()
}

/// `a * b + c` with a single rounding (`fma.rn`; `std`'s `mul_add` in the simulator).
#[inline(always)]
pub fn fma<T: Float>(a: T, b: T, c: T) -> T {
    a.__fma(b, c)
}

/// `e^x`.
#[inline]
pub fn exp<T: Float>(x: T) -> T {
    T::__from_f64(exp_f64(x.__to_f64()))
}

/// Natural logarithm; NaN for negative input, -∞ at 0.
#[inline]
pub fn ln<T: Float>(x: T) -> T {
    T::__from_f64(ln_f64(x.__to_f64()))
}

/// Sine (radians).
#[inline]
pub fn sin<T: Float>(x: T) -> T {
    T::__from_f64(sin_f64(x.__to_f64()))
}

/// Cosine (radians).
#[inline]
pub fn cos<T: Float>(x: T) -> T {
    T::__from_f64(cos_f64(x.__to_f64()))
}

/// `x^y`, with the IEEE 754 special cases of C's `pow`.
#[inline]
pub fn pow<T: Float>(x: T, y: T) -> T {
    x.__pow(y)
}

/// Absolute value (clears the sign bit).
#[inline(always)]
pub fn abs<T: Float>(x: T) -> T {
    T::__from_f64(f64::from_bits(x.__to_f64().to_bits() & !(1u64 << 63)))
}

/// Rounds toward zero.
#[inline]
pub fn trunc<T: Float>(x: T) -> T {
    T::__from_f64(trunc_f64(x.__to_f64()))
}

/// Rounds toward -∞.
#[inline]
pub fn floor<T: Float>(x: T) -> T {
    let x = x.__to_f64();
    let t = trunc_f64(x);
    T::__from_f64(if t > x { t - 1.0 } else { t })
}

/// Rounds toward +∞.
#[inline]
pub fn ceil<T: Float>(x: T) -> T {
    let x = x.__to_f64();
    let t = trunc_f64(x);
    T::__from_f64(if t < x { t + 1.0 } else { t })
}

fn trunc_f64(x: f64) -> f64 {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32 - 1023;
    if exp >= 52 {
        return x; // already integral, or inf/NaN
    }
    if exp < 0 {
        return f64::from_bits(bits & (1u64 << 63)); // |x| < 1: signed zero
    }
    let mask = (1u64 << (52 - exp)) - 1;
    f64::from_bits(bits & !mask)
}

/// `x * 2^k` without overflow in the intermediate scale factor.
fn scalbn(mut y: f64, mut k: i32) -> f64 {
    const TWO_1023: f64 = f64::from_bits(0x7fe0_0000_0000_0000);
    const TWO_M1022: f64 = f64::from_bits(0x0010_0000_0000_0000);
    if k > 1023 {
        y *= TWO_1023;
        k -= 1023;
        if k > 1023 {
            y *= TWO_1023;
            k -= 1023;
            k = k.min(1023);
        }
    } else if k < -1022 {
        // Scale by 2^-1022 * 2^53 so the final multiply rounds once into subnormals.
        y *= TWO_M1022 * f64::from_bits(0x4340_0000_0000_0000);
        k += 1022 - 53;
        if k < -1022 {
            y *= TWO_M1022 * f64::from_bits(0x4340_0000_0000_0000);
            k += 1022 - 53;
            k = k.max(-1022);
        }
    }
    y * f64::from_bits(((0x3ff + k) as u64) << 52)
}

/// Rounds to the nearest integer, ties away from zero, as `i32` (|x| < 2^31).
fn round_i32(x: f64) -> i32 {
    (x + if x < 0.0 { -0.5 } else { 0.5 }) as i32
}

fn exp_f64(x: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01;
    const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
    const INV_LN2: f64 = 1.442_695_040_888_963_387_00e+00;
    const P1: f64 = 1.666_666_666_666_660_190_37e-01;
    const P2: f64 = -2.777_777_777_701_559_338_42e-03;
    const P3: f64 = 6.613_756_321_437_934_361_17e-05;
    const P4: f64 = -1.653_390_220_546_525_153_90e-06;
    const P5: f64 = 4.138_136_797_057_238_460_39e-08;

    if x.is_nan() {
        return x;
    }
    if x > 709.782_712_893_383_973_096 {
        return f64::INFINITY;
    }
    if x < -745.133_219_101_941_108_42 {
        return 0.0;
    }
    if abs(x) < f64::from_bits(0x3e30_0000_0000_0000) {
        return 1.0 + x; // |x| < 2^-28
    }
    let k = round_i32(x * INV_LN2);
    let kf = k as f64;
    let hi = x - kf * LN2_HI;
    let lo = kf * LN2_LO;
    let r = hi - lo;
    let t = r * r;
    let c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    if k == 0 {
        y
    } else {
        scalbn(y, k)
    }
}

fn ln_f64(x: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01;
    const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
    const LG1: f64 = 6.666_666_666_666_735_130e-01;
    const LG2: f64 = 3.999_999_999_940_941_908e-01;
    const LG3: f64 = 2.857_142_874_366_239_149e-01;
    const LG4: f64 = 2.222_219_843_214_978_396e-01;
    const LG5: f64 = 1.818_357_216_161_805_012e-01;
    const LG6: f64 = 1.531_383_769_920_937_332e-01;
    const LG7: f64 = 1.479_819_860_511_658_591e-01;

    let mut x = x;
    let mut bits = x.to_bits();
    let mut hx = (bits >> 32) as u32;
    let mut k: i32 = 0;
    if hx < 0x0010_0000 || (hx >> 31) != 0 {
        if bits << 1 == 0 {
            return f64::NEG_INFINITY; // ±0
        }
        if hx >> 31 != 0 {
            return f64::NAN; // negative (or -NaN)
        }
        // Subnormal: scale up by 2^54.
        k -= 54;
        x *= f64::from_bits(0x4350_0000_0000_0000);
        bits = x.to_bits();
        hx = (bits >> 32) as u32;
    } else if hx >= 0x7ff0_0000 {
        return x; // inf or NaN
    } else if hx == 0x3ff0_0000 && bits << 32 == 0 {
        return 0.0;
    }
    // Reduce x into [sqrt(2)/2, sqrt(2)].
    hx = hx.wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    k += (hx >> 20) as i32 - 0x3ff;
    hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    bits = ((hx as u64) << 32) | (bits & 0xffff_ffff);
    x = f64::from_bits(bits);

    let f = x - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let dk = k as f64;
    s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI
}

/// `x mod π/2` as `(n, y0 + y1)` with `x ≈ n·π/2 + y0 + y1`.
fn rem_pio2(x: f64) -> (i32, f64, f64) {
    const INV_PIO2: f64 = 6.366_197_723_675_813_824_33e-01;
    const PIO2_1: f64 = 1.570_796_326_734_125_614_17e+00;
    const PIO2_1T: f64 = 6.077_100_506_506_192_249_32e-11;
    const PIO2_2: f64 = 6.077_100_506_303_965_976_60e-11;
    const PIO2_2T: f64 = 2.022_266_248_795_950_631_54e-21;
    const PIO2_3: f64 = 2.022_266_248_711_166_455_80e-21;
    const PIO2_3T: f64 = 8.478_427_660_368_899_569_97e-32;

    let fnum = {
        let q = x * INV_PIO2;
        if abs(q) < 2.0e9 {
            round_i32(q) as f64
        } else {
            trunc_f64(q + if q < 0.0 { -0.5 } else { 0.5 })
        }
    };
    let n = (fnum as i64 & 0x7fff_ffff) as i32;
    // Cody-Waite reduction, as fdlibm's __ieee754_rem_pio2 (medium case): each
    // round subtracts the next 33 bits of pi/2 and replaces the previous round's
    // tail. Running all three rounds is harmless when fewer would do.
    let _ = PIO2_1T; // the one-round tail, unused because rounds 2 and 3 always run
    let r = x - fnum * PIO2_1;
    let t = r;
    let w = fnum * PIO2_2;
    let r = t - w;
    let t = r;
    let _ = PIO2_2T; // replaced by round 3's PIO2_3 + PIO2_3T
    let w = fnum * PIO2_3;
    let r = t - w;
    let w = fnum * PIO2_3T - ((t - r) - w);
    let y0 = r - w;
    let y1 = (r - y0) - w;
    (n, y0, y1)
}

fn k_sin(x: f64, y: f64, iy: bool) -> f64 {
    const S1: f64 = -1.666_666_666_666_663_243_48e-01;
    const S2: f64 = 8.333_333_333_322_489_461_24e-03;
    const S3: f64 = -1.984_126_982_985_794_931_34e-04;
    const S4: f64 = 2.755_731_370_707_006_767_89e-06;
    const S5: f64 = -2.505_076_025_340_686_341_95e-08;
    const S6: f64 = 1.589_690_995_211_550_102_21e-10;
    let z = x * x;
    let w = z * z;
    let r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
    let v = z * x;
    if !iy {
        x + v * (S1 + z * r)
    } else {
        x - ((z * (0.5 * y - v * r) - y) - v * S1)
    }
}

fn k_cos(x: f64, y: f64) -> f64 {
    const C1: f64 = 4.166_666_666_666_660_190_37e-02;
    const C2: f64 = -1.388_888_888_887_410_957_49e-03;
    const C3: f64 = 2.480_158_728_947_672_941_78e-05;
    const C4: f64 = -2.755_731_435_139_066_330_35e-07;
    const C5: f64 = 2.087_572_321_298_174_827_90e-09;
    const C6: f64 = -1.135_964_755_778_819_482_65e-11;
    let z = x * x;
    let w = z * z;
    let r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + (z * r - x * y))
}

fn sin_f64(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    if abs(x) <= core::f64::consts::FRAC_PI_4 {
        if abs(x) < f64::from_bits(0x3e40_0000_0000_0000) {
            return x; // |x| < 2^-27
        }
        return k_sin(x, 0.0, false);
    }
    let (n, y0, y1) = rem_pio2(x);
    match n & 3 {
        0 => k_sin(y0, y1, true),
        1 => k_cos(y0, y1),
        2 => -k_sin(y0, y1, true),
        _ => -k_cos(y0, y1),
    }
}

fn cos_f64(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    if abs(x) <= core::f64::consts::FRAC_PI_4 {
        if abs(x) < f64::from_bits(0x3e46_a09e_667f_3bcd) {
            return 1.0; // |x| < 2^-27 * sqrt(2)
        }
        return k_cos(x, 0.0);
    }
    let (n, y0, y1) = rem_pio2(x);
    match n & 3 {
        0 => k_cos(y0, y1),
        1 => -k_sin(y0, y1, true),
        2 => -k_cos(y0, y1),
        _ => k_sin(y0, y1, true),
    }
}

/// Whether `y` is an integer, and if so whether it is odd.
fn integer_parity(y: f64) -> Option<bool> {
    if trunc_f64(y) != y || !y.is_finite() {
        return None;
    }
    // Every double of magnitude >= 2^53 is even.
    Some(abs(y) < 9_007_199_254_740_992.0 && (y as i64) & 1 == 1)
}

fn pow_f64(x: f64, y: f64) -> f64 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let parity = integer_parity(y);
    let ax = abs(x);
    if y.is_infinite() {
        return if ax == 1.0 {
            1.0
        } else if (ax > 1.0) == (y > 0.0) {
            f64::INFINITY
        } else {
            0.0
        };
    }
    if x == 0.0 || x.is_infinite() {
        // 0^y and inf^y: magnitude 0 or inf, sign kept for odd integer y.
        let grows = (x == 0.0) == (y < 0.0);
        let mag = if grows { f64::INFINITY } else { 0.0 };
        let negative = x.is_sign_negative() && parity == Some(true);
        return if negative { -mag } else { mag };
    }
    let sign = if x < 0.0 {
        match parity {
            None => return f64::NAN,
            Some(odd) => {
                if odd {
                    -1.0
                } else {
                    1.0
                }
            }
        }
    } else {
        1.0
    };
    sign * exp_f64(y * ln_f64(ax))
}

/// Fast `f32` approximations built on PTX's `.approx` instructions (CUDA's `__expf`,
/// `__logf`, `__sinf`, `__cosf`, `rsqrtf`). See the module table for accuracy; flush
/// subnormals to zero. The simulator computes them with `std` (flushing subnormals
/// too), so its results are closer to exact than the GPU's.
pub mod fast {
    macro_rules! approx {
        ($(#[$doc:meta])* $name:ident, $body:literal, |$x:ident| $host:expr) => {
            $(#[$doc])*
            #[inline(always)]
            pub fn $name(x: f32) -> f32 {
                device_or_sim!(
                    device: {
                        let r: f32;
                        // SAFETY: arithmetic only; the scratch register is block-scoped.
                        unsafe {
                            core::arch::asm!($body, r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
                        };
                        r
                    },
                    sim: { // Flush subnormal inputs and results to zero, as `.ftz` does.
                    let flush = |v: f32| if v.is_subnormal() { 0.0f32.copysign(v) } else { v };
                    let $x = flush(x);
                    flush($host) }
                )
            }
        };
    }

    approx!(
        /// `2^x` (`ex2.approx.ftz.f32`).
        exp2, "ex2.approx.ftz.f32 {r}, {x};", |x| x.exp2()
    );
    approx!(
        /// `e^x` as `2^(x·log2 e)`: the error grows with abs(x) (about 2 + 1.5·abs(x) ulp).
        exp, "{{ .reg .f32 %t; mul.ftz.f32 %t, {x}, 0f3FB8AA3B; ex2.approx.ftz.f32 {r}, %t; }}", |x| x.exp()
    );
    approx!(
        /// `log2(x)` (`lg2.approx.ftz.f32`).
        log2, "lg2.approx.ftz.f32 {r}, {x};", |x| x.log2()
    );
    approx!(
        /// `ln(x)` as `log2(x)·ln 2`.
        ln, "{{ .reg .f32 %t; lg2.approx.ftz.f32 %t, {x}; mul.ftz.f32 {r}, %t, 0f3F317218; }}", |x| x.ln()
    );
    approx!(
        /// Sine (`sin.approx.ftz.f32`): absolute error about 2⁻²¹ on \[-π, π\].
        sin, "sin.approx.ftz.f32 {r}, {x};", |x| x.sin()
    );
    approx!(
        /// Cosine (`cos.approx.ftz.f32`): absolute error about 2⁻²¹ on \[-π, π\].
        cos, "cos.approx.ftz.f32 {r}, {x};", |x| x.cos()
    );
    approx!(
        /// `1/sqrt(x)` (`rsqrt.approx.ftz.f32`).
        rsqrt, "rsqrt.approx.ftz.f32 {r}, {x};", |x| 1.0 / x.sqrt()
    );
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// Distance in units in the last place between two f64s of the same sign.
    fn ulps(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        let (a, b) = (a.to_bits() as i64, b.to_bits() as i64);
        (a - b).unsigned_abs()
    }

    /// A tiny xorshift (the one of `xlog-test-support`, seeded with the state itself) so
    /// the sweep needs no dependency: that crate's `gpu` feature, on in workspace
    /// builds, would bring xlog-runtime and a second xlog-device into these tests.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
        }
    }

    #[test]
    fn exp_is_within_one_ulp() {
        let mut rng = Rng(0x1234_5678);
        for _ in 0..20_000 {
            let x = rng.uniform(-700.0, 700.0);
            assert!(
                ulps(exp(x), x.exp()) <= 1,
                "exp({x}) = {} vs {}",
                exp(x),
                x.exp()
            );
        }
        for x in [0.0, -0.0, 1e-300, 1.0, -1.0, 709.7, -744.0, -745.2, 710.0] {
            assert!(ulps(exp(x), x.exp()) <= 1, "exp({x})");
        }
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn ln_is_within_one_ulp() {
        let mut rng = Rng(0x9e37_79b9);
        for _ in 0..20_000 {
            let x = f64::from_bits(rng.next() >> 2); // positive, all magnitudes
            if x.is_finite() && x > 0.0 {
                assert!(
                    ulps(ln(x), x.ln()) <= 1,
                    "ln({x}) = {} vs {}",
                    ln(x),
                    x.ln()
                );
            }
        }
        for x in [1.0, 2.0, 0.5, 1e-310, f64::MAX, core::f64::consts::E] {
            assert!(ulps(ln(x), x.ln()) <= 1, "ln({x})");
        }
        assert_eq!(ln(0.0f64), f64::NEG_INFINITY);
        assert!(ln(-1.0f64).is_nan());
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn sin_cos_are_within_one_ulp() {
        let mut rng = Rng(42);
        for _ in 0..20_000 {
            let x = rng.uniform(-1.0e5, 1.0e5);
            assert!(
                ulps(sin(x), x.sin()) <= 1 || (sin(x) - x.sin()).abs() < 1e-16,
                "sin({x}) = {} vs {}",
                sin(x),
                x.sin()
            );
            assert!(
                ulps(cos(x), x.cos()) <= 1 || (cos(x) - x.cos()).abs() < 1e-16,
                "cos({x}) = {} vs {}",
                cos(x),
                x.cos()
            );
        }
        for _ in 0..20_000 {
            let x = rng.uniform(-4.0, 4.0);
            assert!(ulps(sin(x), x.sin()) <= 1, "sin({x})");
            assert!(ulps(cos(x), x.cos()) <= 1, "cos({x})");
        }
        assert!(sin(f64::INFINITY).is_nan() && cos(f64::NAN).is_nan());
        assert_eq!(sin(1e-30f64), 1e-30);
    }

    #[test]
    fn f32_versions_round_from_f64() {
        let mut rng = Rng(7);
        for _ in 0..20_000 {
            let x = rng.uniform(-80.0, 80.0) as f32;
            let e = exp(x);
            let want = (x as f64).exp() as f32;
            assert!(ulps(e as f64, want as f64) <= 1 || e == want, "expf({x})");
            assert_eq!(sin(x), (x as f64).sin() as f32, "sinf({x})");
            assert_eq!(cos(x), (x as f64).cos() as f32, "cosf({x})");
            if x > 0.0 {
                assert_eq!(ln(x), (x as f64).ln() as f32, "lnf({x})");
            }
        }
    }

    #[test]
    fn pow_matches_std() {
        let mut rng = Rng(99);
        for _ in 0..20_000 {
            let x = rng.uniform(0.0, 100.0);
            let y = rng.uniform(-20.0, 20.0);
            let (got, want) = (pow(x, y), x.powf(y));
            let tol = (1.0 + (y * x.ln()).abs()) * 4.0 * f64::EPSILON * want.abs();
            assert!((got - want).abs() <= tol, "pow({x}, {y}) = {got} vs {want}");
            let (xf, yf) = (x as f32, (y / 4.0) as f32);
            let (gf, wf) = (pow(xf, yf), xf.powf(yf));
            assert!(
                ulps(gf as f64, wf as f64) <= 1 || (gf - wf).abs() <= f32::EPSILON * wf.abs(),
                "powf({xf}, {yf}) = {gf} vs {wf}"
            );
        }
        let cases: [(f64, f64); 16] = [
            (-2.0, 3.0),
            (-2.0, 2.0),
            (-2.0, 0.5),
            (0.0, -1.0),
            (-0.0, -1.0),
            (-0.0, 3.0),
            (0.0, 2.0),
            (2.0, f64::INFINITY),
            (0.5, f64::INFINITY),
            (-1.0, f64::INFINITY),
            (f64::INFINITY, -2.0),
            (f64::NEG_INFINITY, 3.0),
            (f64::NAN, 0.0),
            (1.0, f64::NAN),
            (2.0, -1075.0),
            (10.0, 308.0),
        ];
        for (x, y) in cases {
            let (got, want) = (pow(x, y), x.powf(y));
            assert!(
                (got.is_nan() && want.is_nan())
                    || got == want
                    || (got - want).abs() <= 1e-13 * want.abs(),
                "pow({x}, {y}) = {got} vs {want}"
            );
            if !want.is_nan() {
                assert_eq!(
                    got.is_sign_negative(),
                    want.is_sign_negative(),
                    "sign of pow({x}, {y})"
                );
            }
        }
    }

    #[test]
    fn rounding_helpers() {
        for x in [
            -2.5f64,
            -1.0,
            -0.5,
            -0.0,
            0.0,
            0.3,
            1.0,
            2.7,
            1e300,
            -1e17 + 0.5,
            4503599627370497.0,
        ] {
            assert_eq!(floor(x), x.floor(), "floor({x})");
            assert_eq!(ceil(x), x.ceil(), "ceil({x})");
            assert_eq!(trunc(x), x.trunc(), "trunc({x})");
            assert_eq!(abs(x), x.abs());
        }
        assert_eq!(floor(-0.5f32), -1.0);
        assert!(trunc(f64::NAN).is_nan());
    }
}
