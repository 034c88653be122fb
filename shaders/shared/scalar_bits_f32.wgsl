// The 32-bit words of an f32, for values published through atomics (bccoo's carry slots).
// 0xFFFFFFFF is the slots' "not yet written" sentinel (a NaN no arithmetic produces); a value that
// carries that exact NaN payload is published as the canonical NaN instead.
const SCALAR_WORDS: u32 = 1u;
const SENTINEL: u32 = 0xFFFFFFFFu;

fn to_words(v: scalar) -> vec2<u32> {
    let b = bitcast<u32>(v);
    return vec2<u32>(select(b, 0x7FC00000u, b == SENTINEL), 0u);
}

fn from_words(w: vec2<u32>) -> scalar {
    return bitcast<scalar>(w.x);
}

// Whether v is +0 exactly (bccoo's fill; a stored zero is kept as -0).
fn is_positive_zero(v: scalar) -> bool {
    return bitcast<u32>(v) == 0u;
}

// Whether v is neither NaN nor ±Inf, from its bits (a shader compiler may assume finite math and
// fold comparisons such as v - v == 0).
fn is_finite(v: scalar) -> bool {
    return (bitcast<u32>(v) & 0x7F800000u) != 0x7F800000u;
}
