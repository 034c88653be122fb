// Shared by shaders/bccoo/group_scan_subgroup.wgsl and shaders/bccoo/group_scan_workgroup.wgsl: what their
// workgroup-wide scans of block-row partial sums return, and their workgroup arrays.

struct GroupScan {
    // Sum over the invocations before this one, back to and including the nearest one whose
    // `head` is set.
    excl: rows,
    // No invocation before this one has `head` set (its segment reaches back to the workgroup's
    // start, so the carry from earlier workgroups belongs to it).
    open: bool,
}

var<workgroup> gs_val: array<rows, WG_SIZE>;
var<workgroup> gs_flag: array<u32, WG_SIZE>;
