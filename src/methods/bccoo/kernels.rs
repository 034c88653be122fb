//! BCCOO's kernels (shaders/bccoo/) and the parameter values the library sets.

use super::format::BLOCK_HEIGHTS;
use crate::kernel::{Kernel, WORKGROUP_SIZES};

/// Blocks per thread tile of `bccoo` (the paper's strategy-2 tile sizes, and 4); a uniform, not an
/// override.
pub const BCCOO_TILES: &[u32] = &[4, 8, 16, 24, 32, 40, 64, 96, 128];
/// Result-cache rows per invocation of `bccoo` (the paper limits it to 1 and 2).
pub const BCCOO_CACHE_FACTORS: &[u32] = &[1, 2];
/// Spin limits the library sets: the default and 0 (nobody waits; tests of the last workgroup's
/// finishing).
pub const BCCOO_SPIN_LIMITS: &[u32] = &[0, 1 << 20];

/// The main `bccoo` kernel: per-thread segmented sums over thread tiles, a workgroup scan, and
/// carries across workgroups (single pass or first of two).
pub const BCCOO: Kernel = Kernel {
    name: "bccoo",
    file: "bccoo/bccoo",
    heights: BLOCK_HEIGHTS,
    overrides: &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("WIDTH", &[1, 2, 4]),
        ("COLS", &[0, 1, 2]),
        ("STRATEGY", &[1, 2]),
        ("CACHE_FACTOR", BCCOO_CACHE_FACTORS),
        ("SINGLE_PASS", &[0, 1]),
        ("SPIN_LIMIT", BCCOO_SPIN_LIMITS),
        ("ORDERED_FINISH", &[0, 1]),
    ],
    derive: None,
};

/// The second pass of two-pass carries: adds each carried workgroup's chain sums into its first row.
pub const BCCOO_CARRY: Kernel = Kernel {
    name: "bccoo_carry",
    file: "bccoo/carry",
    heights: BLOCK_HEIGHTS,
    overrides: &[("WG_SIZE", WORKGROUP_SIZES)],
    derive: None,
};

/// BCCOO+'s second pass: adds up the slices' partial results into `y`.
pub const BCCOO_COMBINE: Kernel = Kernel {
    name: "bccoo_combine",
    file: "bccoo/combine",
    heights: &[],
    overrides: &[
        ("WG_SIZE", &[256]),
        ("HEIGHT", &[1, 2, 3, 4]),
        ("SLICES", &[2, 4, 8, 16, 32]),
        ("MAPPED", &[0, 1]),
    ],
    derive: None,
};

/// The GPU build's counts before sizing anything (blocks of every size, largest column, stored
/// zeros) and BCCOO+'s row map.
pub const BCCOO_BUILD_STATS: Kernel = Kernel {
    name: "bccoo_build_stats",
    file: "bccoo/build_stats",
    heights: &[],
    overrides: &[("PASS", &[0, 1]), ("VAL_WORDS", &[1, 2])],
    derive: None,
};

/// The GPU build's per-entry passes: which entries open a block, and every entry placed.
pub const BCCOO_BUILD_BLOCKS: Kernel = Kernel {
    name: "bccoo_build_blocks",
    file: "bccoo/build_blocks",
    heights: &[],
    overrides: &[("PASS", &[0, 1, 2, 3]), ("VAL_WORDS", &[1, 2])],
    derive: None,
};

/// The GPU build's per-block-row passes: blocks per block row, row stops, zero blocks.
pub const BCCOO_BUILD_ROWS: Kernel = Kernel {
    name: "bccoo_build_rows",
    file: "bccoo/build_rows",
    heights: &[],
    overrides: &[("PASS", &[0, 1, 2, 3, 4])],
    derive: None,
};

/// The GPU build's per-tile passes: thread rows, workgroup info, carry list, column words.
pub const BCCOO_BUILD_TILES: Kernel = Kernel {
    name: "bccoo_build_tiles",
    file: "bccoo/build_tiles",
    heights: &[],
    overrides: &[("PASS", &[0, 1, 2, 3, 4])],
    derive: None,
};

/// A tuning candidate's blocks rearranged from an earlier candidate's tile and workgroup size.
pub const BCCOO_BUILD_RELAYOUT: Kernel = Kernel {
    name: "bccoo_build_relayout",
    file: "bccoo/build_relayout",
    heights: &[],
    overrides: &[("VAL_WORDS", &[1, 2])],
    derive: None,
};

/// Every kernel of `bccoo` and `bccoo-plus`, for validation.
pub const KERNELS: &[Kernel] = &[
    BCCOO,
    BCCOO_CARRY,
    BCCOO_COMBINE,
    BCCOO_BUILD_STATS,
    BCCOO_BUILD_BLOCKS,
    BCCOO_BUILD_ROWS,
    BCCOO_BUILD_TILES,
    BCCOO_BUILD_RELAYOUT,
];
