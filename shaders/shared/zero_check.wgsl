#import shared/grid
#import shared/common
// Value updates of formats whose kernels skip zero values (BCCOO): sets `changed` unless the new
// values (`src`, CSR order) are zero (±0) at exactly the entries whose bit is set in `was_zero`,
// the stored zeros the format's zero pass was built for.
@group(0) @binding(0) var<storage, read> was_zero: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<scalar>;
@group(0) @binding(2) var<storage, read_write> changed: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: ZeroCheckParams;
// Declared for shaders/shared/common.wgsl's helpers; unused, so not in the layout.
@group(0) @binding(4) var<uniform> coeffs: Coeffs;
@group(0) @binding(5) var<storage, read_write> y: array<scalar>;

struct ZeroCheckParams {
    count: u32,
    pad: u32,
}

override WG_SIZE: u32 = 256u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG_SIZE + lid;
    if (i < params.count) {
        let zero_now = src[i] == scalar(0);
        let zero_then = ((was_zero[i / 32u] >> (i % 32u)) & 1u) == 1u;
        if (zero_now != zero_then) {
            atomicOr(&changed[0], 1u);
        }
    }
}
