// SURAA's schedule: which sorted rows each part of the main dispatch covers (mirrored by
// `Schedule` in src/methods/suraa/setup.rs). Computed once by the setup, read as a uniform so
// that every role decision is workgroup-uniform. Sorted row i is original row perm[i].
struct Schedule {
    nrows: u32,
    // G1: sorted rows [0, dynamic_rows), run by the dynamic kernel in dynamic_groups workgroups.
    dynamic_rows: u32,
    dynamic_groups: u32,
    // G3: sorted rows [scalar_begin, nrows), one invocation each, in scalar_groups workgroups of
    // their own dispatch.
    scalar_begin: u32,
    // Workgroups of the main dispatch (G1 and G2).
    main_groups: u32,
    segment_rows: u32,
    segments: u32,
    scalar_groups: u32,
    // Vector class c (lane width LANES << c): sorted rows [class_begin[c], + class_rows[c]),
    // main-grid workgroups from class_group[c]. Eight u32 each, as two vec4 (uniform layout).
    class_begin: array<vec4<u32>, 2>,
    class_rows: array<vec4<u32>, 2>,
    class_group: array<vec4<u32>, 2>,
}

fn pick(a: array<vec4<u32>, 2>, c: u32) -> u32 {
    return a[c / 4u][c % 4u];
}
