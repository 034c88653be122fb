// BCCOO+'s second pass (section 2.3): y = alpha * (sum of the slices' partial results) + beta * y.

// Mirrors `CombineParams` in src/methods/bccoo/mod.rs.
struct CombineParams {
    nrows: u32,
    slices: u32,
}

@group(0) @binding(0) var<storage, read> partial: array<scalar>;
@group(0) @binding(1) var<storage, read_write> y: array<scalar>;
@group(0) @binding(2) var<uniform> coeffs: Coeffs;
@group(0) @binding(3) var<uniform> combine: CombineParams;

override WG_SIZE: u32 = 256u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG_SIZE + lid;
    if (i < combine.nrows) {
        var s = scalar(0);
        for (var k = 0u; k < combine.slices; k++) {
            s += partial[k * combine.nrows + i];
        }
        write_y(i, s);
    }
}
