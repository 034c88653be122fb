#import bccoo/build_layout
// What the kernels of the GPU build of BCCOO share (src/methods/bccoo/gpu_build.rs; format.rs is
// its CPU twin): the parameters, the statistics words read back, and where a block sits in the
// transposed layout.

struct BuildParams {
    nrows: u32,
    ncols: u32,
    nnz: u32,
    height: u32,
    width: u32,
    slices: u32,
    slice_width: u32,
    block_rows: u32,
    // Stored blocks in natural order, before padding.
    blocks: u32,
    padded_blocks: u32,
    tile: u32,
    group_threads: u32,
    groups: u32,
    threads: u32,
    // BCCOO+ leaves empty block rows out (1) or gives each a zero block (0).
    compact: u32,
    // 0: u32 columns, 1: 16-bit, 2: 16-bit differences with escapes.
    coding: u32,
    // Where the list of non-empty block rows starts in `nonempty`.
    list_base: u32,
    // Where group info, the carry list and thread escapes start in `aux`.
    group_info_base: u32,
    carry_base: u32,
    thread_escape_base: u32,
    // Where the escapes start in the column words.
    escape_base: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// Words of the statistics buffer (read back between submissions; gpu_build.rs mirrors them):
// blocks of every size ((height - 1) * 3 + width index), the largest column, the stored zeros,
// the empty block rows and the stored blocks of the chosen size, the escapes of delta16, the
// carried workgroups and the longest carry chain.
const STAT_COUNTS: u32 = 0u;
const STAT_MAX_COL: u32 = 12u;
const STAT_ZEROS: u32 = 13u;
const STAT_EMPTY_ROWS: u32 = 14u;
const STAT_OWNERS: u32 = 15u;
const STAT_ESCAPES: u32 = 16u;
const STAT_CARRIES: u32 = 17u;
const STAT_CHAIN: u32 = 18u;

// Flags of a workgroup's info word (format.rs GROUP_*), the chain length above them.
const GROUP_ALL_STOP: u32 = 1u;
const GROUP_HAS_STOP: u32 = 2u;
const GROUP_NEEDS_CARRY: u32 = 4u;
const GROUP_CHAIN_SHIFT: u32 = 3u;

const NONE: u32 = 0xFFFFFFFFu;
const WG: u32 = 256u;

// Layout position of natural block n at the build's tile and workgroup size.
fn layout_of(n: u32) -> u32 {
    return layout_in(n, params.tile, params.group_threads);
}

// Natural block at layout position p (the inverse of layout_of).
fn natural_of(p: u32) -> u32 {
    return natural_in(p, params.tile, params.group_threads);
}
