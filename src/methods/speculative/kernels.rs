//! The speculative segmented sum's kernels (shaders/speculative/).

use crate::kernel::{Kernel, LANE_WIDTHS, WORKGROUP_SIZES};

/// Nonzeros per lane and tile (W) of `speculative`: a lane's head flags are one u32.
pub const SPECULATIVE_WORK: &[u32] = &[1, 2, 4, 8, 16, 32];
/// Tiles per team (S) of `speculative`.
pub const SPECULATIVE_TILES: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16];

/// The speculative segmented sum's GPU stage over tiles of nonzeros.
pub const SPECULATIVE: Kernel = Kernel {
    name: "speculative",
    file: "speculative/speculative",
    heights: &[],
    overrides: &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("LANES", LANE_WIDTHS),
        ("WORK", SPECULATIVE_WORK),
        ("TILES", SPECULATIVE_TILES),
        ("STAGED", &[0, 1]),
        ("RESOLVE", &[0, 1]),
        ("TILE_ROWS", &[0, 1]),
        ("PAD_RUN", &[16, 32]),
    ],
    derive: None,
};

/// The check stage on the GPU: adds synchronizer runs into their rows and re-arranges dirty
/// tiles.
pub const SPECULATIVE_FINISH: Kernel = Kernel {
    name: "speculative_finish",
    file: "speculative/finish",
    heights: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES)],
    derive: None,
};

/// The structure analysis on the GPU, for matrices given in GPU buffers: tile rows, dirty
/// tiles, synchronizer runs.
pub const SPECULATIVE_ANALYSE: Kernel = Kernel {
    name: "speculative_analyse",
    file: "speculative/analyse",
    heights: &[],
    overrides: &[("PASS", &[0, 1, 2])],
    derive: None,
};

/// Every kernel of `speculative`, for validation.
pub const KERNELS: &[Kernel] = &[SPECULATIVE, SPECULATIVE_FINISH, SPECULATIVE_ANALYSE];
