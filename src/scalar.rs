//! The value types a matrix can hold on the GPU.

/// A floating-point value type that has a WGSL counterpart: `f32` everywhere, `f64` where the
/// adapter has `Features::SHADER_F64` (Vulkan, DX12; not Metal).
pub trait Scalar:
    bytemuck::Pod
    + Copy
    + Default
    + PartialEq
    + PartialOrd
    + Send
    + Sync
    + std::fmt::Debug
    + std::fmt::Display
    + 'static
{
    /// The WGSL spelling of the type, substituted for `SCALAR` in the shaders.
    const WGSL: &'static str;
    /// Short name used in reports ("f32", "f64").
    const NAME: &'static str;
    /// Whether the GPU needs `Features::SHADER_F64` for this type.
    const NEEDS_F64: bool;
    /// Converts from f64, rounding to nearest.
    fn from_f64(v: f64) -> Self;
    /// Converts to f64 exactly.
    fn to_f64(self) -> f64;
    /// Machine epsilon of the type, as f64.
    const EPSILON: f64;
    /// A quiet NaN, used to poison outputs so that unwritten elements are caught.
    const NAN: Self;
    /// Parses a number as C's `strtod` and SciPy's `mmread` read it, correctly rounded straight
    /// into this type (one rounding, not two via f64): decimal with an optional exponent (`-2.5e-1`,
    /// `1.`, `.5`), `inf`, `infinity` and `nan` in any case with an optional sign, and C99
    /// hexadecimal floats (`0x1.8p1`, `-0X.4P-2`; the binary exponent may be left out). A value
    /// beyond the type's range is ±infinity (`1e400`, and `1e39` for `f32`), as a cast would make
    /// it; one below half the smallest subnormal is ±0. `None` for anything else (no surrounding
    /// blanks, no `_` separators, no Fortran `d` exponents).
    fn parse_decimal(s: &str) -> Option<Self>;
}

impl Scalar for f32 {
    const WGSL: &'static str = "f32";
    const NAME: &'static str = "f32";
    const NEEDS_F64: bool = false;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const EPSILON: f64 = f32::EPSILON as f64;
    const NAN: Self = f32::NAN;
    fn parse_decimal(s: &str) -> Option<Self> {
        // The hexadecimal value is rounded to f32's precision and range, so it is exact in f64
        // and the cast keeps it (or makes the overflowing value infinite).
        s.parse()
            .ok()
            .or_else(|| parse_hex(s, 24, -126).map(|v| v as f32))
    }
}

impl Scalar for f64 {
    const WGSL: &'static str = "f64";
    const NAME: &'static str = "f64";
    const NEEDS_F64: bool = true;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    const EPSILON: f64 = f64::EPSILON;
    const NAN: Self = f64::NAN;
    fn parse_decimal(s: &str) -> Option<Self> {
        s.parse().ok().or_else(|| parse_hex(s, 53, -1022))
    }
}

/// A C99 hexadecimal float (`[+-]0x<hex>[.<hex>][p[+-]<decimal>]`, `.` and the exponent optional,
/// at least one hex digit) rounded to nearest, ties to even, to a binary float of `precision`
/// significand bits whose smallest normal exponent is `min_exp` (subnormals below it), and returned
/// as the f64 of that value: exact for f32 (24, -126) and f64 (53, -1022). Overflow is ±infinity
/// for f64 and a finite f64 beyond f32's range, which the cast to f32 makes infinite. Rust's float
/// parsers refuse hexadecimal; C's `strtod`, hence the reference Matrix Market reader, takes it.
fn parse_hex(s: &str, precision: u32, min_exp: i64) -> Option<f64> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let rest = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))?;
    let (digits, exponent) = match rest.find(['p', 'P']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    // The value is mantissa · 2^exp, plus something below the mantissa's last bit if `sticky`.
    // The mantissa keeps at least 61 significant bits, more than any precision asked for.
    let (mut mantissa, mut exp, mut sticky) = (0u64, 0i64, false);
    for (part, is_frac) in [(int, false), (frac, true)] {
        for c in part.bytes() {
            let d = (c as char).to_digit(16)? as u64;
            if mantissa >> 60 == 0 {
                mantissa = mantissa << 4 | d;
                exp -= if is_frac { 4 } else { 0 };
            } else {
                sticky |= d != 0;
                exp += if is_frac { 0 } else { 4 };
            }
        }
    }
    if let Some(e) = exponent {
        let (sign, digits) = match e.as_bytes().first()? {
            b'-' => (-1, &e[1..]),
            b'+' => (1, &e[1..]),
            _ => (1, e),
        };
        if digits.is_empty() {
            return None;
        }
        // Saturated far beyond any float's range (a longer exponent changes nothing).
        let mut value: i64 = 0;
        for c in digits.bytes() {
            let d = (c as char).to_digit(10)? as i64;
            value = (value * 10 + d).min(1 << 40);
        }
        exp += sign * value;
    }
    let sign = if negative { -1.0 } else { 1.0 };
    if mantissa == 0 {
        return Some(sign * 0.0);
    }
    // The exponent of the leading bit, and that of the last bit the target keeps there.
    let lead = exp + 63 - mantissa.leading_zeros() as i64;
    let ulp = lead.max(min_exp) - (precision as i64 - 1);
    let shift = ulp - exp;
    let q: u64 = if shift <= 0 {
        // Exact: no bit is dropped (then nothing was dropped into `sticky` either, as the
        // mantissa is shorter than 61 bits whenever `precision` bits reach its end).
        mantissa << -shift
    } else if shift > 65 {
        // Below a quarter of the smallest step: rounds to zero.
        0
    } else {
        let (m, s) = (mantissa as u128, shift as u32);
        let (q, rest, half) = (m >> s, m & ((1u128 << s) - 1), 1u128 << (s - 1));
        let up = rest > half || (rest == half && (sticky || q & 1 == 1));
        (q + up as u128) as u64
    };
    if q == 0 {
        return Some(sign * 0.0);
    }
    // q < 2^54 is exact in f64, and q · 2^ulp is a multiple of f64's smallest step, so the one
    // multiplication below is exact unless it overflows, which makes it infinite.
    if ulp + 63 - (q.leading_zeros() as i64) > 1023 {
        return Some(sign * f64::INFINITY);
    }
    let step = if ulp >= -1022 {
        f64::from_bits(((ulp + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (ulp + 1074))
    };
    Some(sign * q as f64 * step)
}
