#import solvers/span
#import solvers/sum_partials
// Deterministic partial sums (dot products, norms), one pair per workgroup: workgroup g takes
// the elements span.wgsl gives it, each invocation a strided run of them, then
// sum_partials.wgsl's fixed tree, so a result depends on n and `groups` only (fewer on a CPU
// adapter than on a GPU), never on the timing. `sum_partials` adds the partials up. The kernel declares `params`
// and `partials`.

// Sums each invocation's pair over the workgroup and writes workgroup g's partials from `base`
// (the first at base + g, the second at base + groups + g). Called from uniform control flow.
fn write_partials(g: u32, lid: u32, s: vec2<scalar>, base: u32) {
    let total = workgroup_sum(lid, s);
    if (lid == 0u && g < params.groups) {
        partials[base + g] = total.x;
        partials[base + params.groups + g] = total.y;
    }
}
