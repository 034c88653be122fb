// A workgroup-wide inclusive scan of u32 (Hillis–Steele in workgroup memory), for kernels of
// SCAN_WG invocations.

const SCAN_WG: u32 = 256u;

var<workgroup> scan_buf: array<u32, SCAN_WG>;

// Inclusive scan of one value per invocation over the workgroup (Hillis–Steele), and the
// workgroup's total. Called in uniform control flow.
fn workgroup_inclusive_scan(v: u32, lid: u32) -> vec2<u32> {
    scan_buf[lid] = v;
    workgroupBarrier();
    for (var o = 1u; o < SCAN_WG; o = o * 2u) {
        var add = 0u;
        if (lid >= o) {
            add = scan_buf[lid - o];
        }
        workgroupBarrier();
        scan_buf[lid] += add;
        workgroupBarrier();
    }
    let out = vec2<u32>(scan_buf[lid], scan_buf[SCAN_WG - 1u]);
    workgroupBarrier();
    return out;
}
