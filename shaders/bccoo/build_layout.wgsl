// The offline transpose of BCCOO's blocks (format.rs's layout), for tiles of `tile` blocks and
// `threads` invocations per workgroup: shared by the build's kernels (build_common.wgsl, at the
// build's own tile) and the rearranging of placed blocks for another tile (build_relayout.wgsl).

// Layout position of natural block n: within a workgroup tile, block k of thread t sits at
// k * threads + t.
fn layout_in(n: u32, tile: u32, threads: u32) -> u32 {
    let gb = tile * threads;
    let m = n % gb;
    return n - m + (m % tile) * threads + m / tile;
}

// Natural block at layout position p (the inverse of layout_in).
fn natural_in(p: u32, tile: u32, threads: u32) -> u32 {
    let gb = tile * threads;
    let m = p % gb;
    return p - m + (m % threads) * tile + m / threads;
}
