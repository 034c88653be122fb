// Workgroup index across a 2-D dispatch (at most 65 535 workgroups per dimension).
fn linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

