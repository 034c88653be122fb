#import shared/grid
#import shared/common
#import shared/scalar_bits_{scalar}
// Stored zeros of a format that skips zero values (bccoo cannot tell a stored zero from the fill
// of its blocks, so its kernels skip both): 0 * x[col] is NaN where x[col] is NaN or ±Inf, and a
// NaN product makes the row NaN whatever else it holds (and alpha * NaN + beta * y is NaN), so
// this pass writes NaN into y after the main passes. Finite x changes nothing; writers of one row
// all write NaN.
//
// `zeros`: [count, (row, column) per stored zero].
@group(0) @binding(0) var<storage, read> zeros: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<scalar>;
@group(0) @binding(2) var<storage, read_write> y: array<scalar>;
// Declared for shaders/shared/common.wgsl; unused, so not in the layout.
@group(0) @binding(3) var<uniform> coeffs: Coeffs;

override WG_SIZE: u32 = 256u;

// The word holding the exponent, and the exponent's bits, of the scalar type. Bits, not float
// arithmetic: compilers may fold 0 * v to 0 and v != v to false.
fn exponent_word(v: scalar) -> u32 {
    let w = to_words(v);
    return select(w.x, w.y, SCALAR_WORDS == 2u);
}
const EXPONENT: u32 = select(0x7F800000u, 0x7FF00000u, SCALAR_WORDS == 2u);

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG_SIZE + lid;
    if (i < zeros[0]) {
        if ((exponent_word(x[zeros[2u + 2u * i]]) & EXPONENT) == EXPONENT) {
            // The canonical quiet NaN of the scalar type.
            y[zeros[1u + 2u * i]] = from_words(select(vec2<u32>(0x7FC00000u, 0u), vec2<u32>(0u, 0x7FF80000u), SCALAR_WORDS == 2u));
        }
    }
}
