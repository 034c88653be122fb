// The two 32-bit words of an f64 (low, high), for values published through atomics (bccoo's carry
// slots); needs SHADER_INT64 for the bit cast. Each word is written once and read only once it
// differs from the sentinel 0xFFFFFFFF, so no ordering between the two stores is needed. A high
// word equal to the sentinel is a NaN (published as the canonical NaN); a low word equal to it is
// moved by one unit in the last place (a relative change of 2^-52, below f64 SpMV rounding).
const SCALAR_WORDS: u32 = 2u;
const SENTINEL: u32 = 0xFFFFFFFFu;

fn to_words(v: scalar) -> vec2<u32> {
    let b = bitcast<u64>(v);
    var lo = u32(b & 0xFFFFFFFFlu);
    var hi = u32(b >> 32u);
    if (hi == SENTINEL) {
        hi = 0x7FF80000u;
        lo = 0u;
    }
    if (lo == SENTINEL) {
        lo = SENTINEL - 1u;
    }
    return vec2<u32>(lo, hi);
}

fn from_words(w: vec2<u32>) -> scalar {
    return bitcast<scalar>((u64(w.y) << 32u) | u64(w.x));
}

// Whether v is +0 exactly (bccoo's fill; a stored zero is kept as -0).
fn is_positive_zero(v: scalar) -> bool {
    return bitcast<u64>(v) == 0lu;
}

// Whether v is neither NaN nor ±Inf, from its bits (a shader compiler may assume finite math and
// fold comparisons such as v - v == 0).
fn is_finite(v: scalar) -> bool {
    return (u32(bitcast<u64>(v) >> 32u) & 0x7FF00000u) != 0x7FF00000u;
}
