//! `csr-stream`'s kernels (shaders/csr_stream/).

use crate::kernel::Kernel;

/// `csr-stream`: one workgroup per tile of rows, the tile's gathers in column order.
pub const CSR_STREAM: Kernel = Kernel {
    name: "csr_stream",
    file: "csr_stream/stream",
    heights: &[],
    overrides: &[("WG_SIZE", &[256])],
    derive: None,
};

/// The tiles cut on the GPU from a CSR's row pointers (`TILE` 2048 for f32, 1024 for f64).
pub const CSR_STREAM_BUILD_TILES: Kernel = Kernel {
    name: "csr_stream_build_tiles",
    file: "csr_stream/build_tiles",
    heights: &[],
    overrides: &[("PASS", &[0, 1])],
    derive: None,
};

/// Each tile's entries sorted by column on the GPU; values move as `VAL_WORDS` u32 words.
pub const CSR_STREAM_BUILD_SORT: Kernel = Kernel {
    name: "csr_stream_build_sort",
    file: "csr_stream/build_sort",
    heights: &[],
    overrides: &[("PASS", &[0, 1]), ("VAL_WORDS", &[1, 2])],
    derive: Some(|set| {
        let words = set.iter().find(|p| p.0 == "VAL_WORDS").unwrap().1;
        set.push(("TILE", tile_for_words(words)));
        true
    }),
};

/// Entries of a tile whose values take `words` u32 words each: 8 KiB of products.
pub const fn tile_for_words(words: u32) -> u32 {
    2048 / words
}

/// Every kernel of `csr-stream`, for validation.
pub const KERNELS: &[Kernel] = &[CSR_STREAM, CSR_STREAM_BUILD_TILES, CSR_STREAM_BUILD_SORT];
