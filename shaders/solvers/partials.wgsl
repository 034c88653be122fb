// Deterministic partial sums (dot products, norms), one pair per workgroup: workgroup g takes
// elements [g * span, (g + 1) * span) below n, each invocation a strided run of them, then a
// fixed tree in workgroup memory, so a result depends on n and `groups` only, never on the
// adapter or the timing. `reduce.wgsl` adds the partials up. The kernel declares `params`.

struct DotParams {
    n: u32,
    // Elements per workgroup (a multiple of DOT_WG).
    span: u32,
    groups: u32,
    pad: u32,
}

const DOT_WG: u32 = 256u;

var<workgroup> sums: array<vec2<scalar>, DOT_WG>;

// The end of workgroup g's elements.
fn span_end(g: u32) -> u32 {
    return min((g + 1u) * params.span, params.n);
}

// Sums each invocation's pair over the workgroup and writes workgroup g's partials (the first
// at g, the second at groups + g). Called from uniform control flow: it has barriers.
fn write_partials(g: u32, lid: u32, s: vec2<scalar>) {
    sums[lid] = s;
    workgroupBarrier();
    for (var half = DOT_WG / 2u; half > 0u; half /= 2u) {
        if (lid < half) {
            sums[lid] += sums[lid + half];
        }
        workgroupBarrier();
    }
    if (lid == 0u && g < params.groups) {
        partials[g] = sums[0].x;
        partials[params.groups + g] = sums[0].y;
    }
}
