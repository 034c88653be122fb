// Workgroup index across a 2-D dispatch (at most 65 535 workgroups per dimension).
fn linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// The (x, y, 1) grid of an indirect dispatch of `groups` workgroups, at most `max_dim` per
// dimension (as Gpu::grid splits a direct one).
fn indirect_grid(groups: u32, max_dim: u32) -> vec3<u32> {
    return vec3<u32>(min(groups, max_dim), max(1u, (groups + max_dim - 1u) / max_dim), 1u);
}
