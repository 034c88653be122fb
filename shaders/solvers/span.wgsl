// The elements of a solver kernel's workgroup g: [g * span, (g + 1) * span) below n (the
// layout of the dot products' partials, partials.wgsl). The kernel declares `params`.

struct DotParams {
    n: u32,
    // Elements per workgroup (a multiple of the workgroup size, SUM_WG).
    span: u32,
    groups: u32,
    // CG: which of two slots holds this iteration's ρ (0 for other kernels).
    parity: u32,
}

// The end of workgroup g's elements.
fn span_end(g: u32) -> u32 {
    return min((g + 1u) * params.span, params.n);
}
