//! SURAA's kernels (shaders/suraa/): the product's, then the GPU setup's (with the radix sort
//! and u32 scans of shaders/shared/).

use crate::kernel::{Kernel, LANE_WIDTHS, WORKGROUP_SIZES};

/// Nonzeros per lane of one workgroup of SURAA's dynamic kernel.
pub const SURAA_DYNAMIC_ITEMS: &[u32] = &[1, 2, 4, 8, 16, 32, 64];
/// Products per lane SURAA's scalar role stages per round (0: rows are read directly).
pub const SURAA_SCALAR_STAGE: &[u32] = &[0, 1, 2, 4, 8, 16];

const fn kernel(
    name: &'static str,
    file: &'static str,
    overrides: crate::kernel::Overrides,
) -> Kernel {
    Kernel {
        name,
        file,
        heights: &[],
        overrides,
        derive: None,
    }
}

/// SURAA's main dispatch: the dynamic (G1) and vector (G2) roles in one grid.
pub const SURAA: Kernel = kernel(
    "suraa",
    "suraa/suraa",
    &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("LANES", LANE_WIDTHS),
        ("DYNAMIC_ITEMS", SURAA_DYNAMIC_ITEMS),
    ],
);
/// SURAA's scalar kernel for the short rows (G3): one invocation per row.
pub const SURAA_SCALAR: Kernel = kernel(
    "suraa_scalar",
    "suraa/scalar",
    &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("SCALAR_STAGE", SURAA_SCALAR_STAGE),
        ("GATHER", &[0, 1]),
    ],
);
/// With `ScalarWrites::Gather`, the last pass: moves G3 sums from sorted order into `y`.
pub const SURAA_GATHER: Kernel = kernel(
    "suraa_gather",
    "suraa/gather",
    &[("WG_SIZE", WORKGROUP_SIZES)],
);
/// Adds each G1 row's per-workgroup partial sums in order and writes the row.
pub const SURAA_COMBINE: Kernel = kernel(
    "suraa_combine",
    "suraa/combine",
    &[("WG_SIZE", WORKGROUP_SIZES), ("LANES", LANE_WIDTHS)],
);
/// GPU setup, step 1: each row's sort key (longest first, then first column).
pub const SURAA_KEYS: Kernel = kernel("suraa_keys", "suraa/keys", &[]);
/// GPU setup after the sort: the sorted rows' lengths and the inverse permutation.
pub const SURAA_LENGTHS: Kernel = kernel("suraa_lengths", "suraa/lengths", &[]);
/// GPU setup: copies the matrix into sorted row order.
pub const SURAA_REARRANGE: Kernel = kernel(
    "suraa_rearrange",
    "suraa/rearrange",
    &[("VAL_WORDS", &[1, 2])],
);
/// GPU setup, last step: segments, row groups, vector classes and dispatch sizes.
pub const SURAA_PLAN: Kernel = kernel("suraa_plan", "suraa/plan", &[]);
/// The value-update map (each rearranged entry's CSR entry), made at the first update.
pub const SURAA_SOURCES: Kernel = kernel("suraa_sources", "suraa/sources", &[("PASS", &[0, 1])]);

/// Every kernel of `suraa`, its GPU setup included, for validation.
pub const KERNELS: &[Kernel] = &[
    SURAA,
    SURAA_SCALAR,
    SURAA_GATHER,
    SURAA_COMBINE,
    SURAA_KEYS,
    SURAA_LENGTHS,
    SURAA_PLAN,
    SURAA_REARRANGE,
    SURAA_SOURCES,
];
