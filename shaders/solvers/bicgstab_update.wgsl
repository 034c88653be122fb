#import shared/grid
#import shared/scalar
// BiCGStab, after ω: x += ω·s and r = s − ω·t, where r holds s (= r − α·v, made by
// bicgstab_half_step). ω = 0 (t = 0, or stopped): x and r stay as they are, whatever t holds.

const UPDATE_WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read> t: array<scalar>;
@group(0) @binding(2) var<storage, read_write> x: array<scalar>;
@group(0) @binding(3) var<storage, read_write> r: array<scalar>;
@group(0) @binding(4) var<uniform> len: vec4<u32>;

const OMEGA: u32 = 6u;

@compute @workgroup_size(UPDATE_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * UPDATE_WG + lid;
    if (i >= len.x) {
        return;
    }
    let omega = scalars[OMEGA];
    if (omega != scalar(0)) {
        let s = r[i];
        x[i] += omega * s;
        r[i] = s - omega * t[i];
    }
}
