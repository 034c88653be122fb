#import shared/grid
#import bccoo/build_common
// bccoo_build_tiles: per thread and workgroup tile, for the GPU build of BCCOO
// (src/methods/bccoo/gpu_build.rs; format.rs's `thread_rows`, `group_chains` and
// `encode_columns` are the CPU twins).
// PASS 0, one invocation per thread tile: its row stops (into `aux`, scanned next into each
//   thread's first result row) and, for 16-bit differences, its escapes (scanned next).
// PASS 1, one invocation per workgroup tile: its info word (any stop, all threads with a stop,
//   needs a carry, the chain back to the workgroup holding the last stop before it) and
//   whether it is carried (scanned next); the escapes' total and the longest chain read back.
// PASS 2, one invocation per workgroup tile: the list of carried workgroups and its length.
// PASS 3, one invocation per column word: block columns in layout order, as u32, 16-bit, or
//   16-bit differences from the previous block of the same thread (escape 0x8000).
// PASS 4, one invocation per thread tile: its escaped columns, and its first escape into `aux`.

@group(0) @binding(0) var<storage, read> flags: array<u32>;
@group(0) @binding(1) var<storage, read> cols: array<u32>;
// Thread rows, group info, carry list, thread escapes (at the bases in `params`).
@group(0) @binding(2) var<storage, read_write> aux: array<u32>;
@group(0) @binding(3) var<storage, read_write> thread_escapes: array<u32>;
@group(0) @binding(4) var<storage, read_write> carried: array<u32>;
@group(0) @binding(5) var<storage, read_write> stats: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> col_words: array<u32>;
@group(0) @binding(7) var<uniform> params: BuildParams;

override PASS: u32 = 0u;

const DELTA_ESCAPE: u32 = 0x8000u;

fn is_stop(n: u32) -> bool {
    return ((flags[n / 32u] >> (n % 32u)) & 1u) == 0u;
}

// Whether block column c is within a 16-bit difference of prev.
fn fits(c: u32, prev: u32) -> bool {
    return select(prev - c, c - prev, c >= prev) <= 32767u;
}

// The 16-bit word of natural block n under the coding.
fn code(n: u32) -> u32 {
    let c = cols[n];
    if (params.coding == 1u) {
        return c;
    }
    var prev = 0u;
    if (n % params.tile != 0u) {
        prev = cols[n - 1u];
    }
    return select(DELTA_ESCAPE, (c - prev) & 0xFFFFu, fits(c, prev));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let k = linear_group(wid, nwg) * WG + lid;
    let tile = params.tile;
    let wg = params.group_threads;
    if (PASS == 0u) {
        if (k >= params.threads) {
            return;
        }
        var stops = 0u;
        var escapes = 0u;
        var prev = 0u;
        for (var b = 0u; b < tile; b += 1u) {
            let n = k * tile + b;
            stops += select(0u, 1u, is_stop(n));
            let c = cols[n];
            escapes += select(1u, 0u, fits(c, prev));
            prev = c;
        }
        aux[k] = stops;
        if (params.coding == 2u) {
            thread_escapes[k] = escapes;
        }
        return;
    }
    if (PASS == 1u) {
        if (k >= params.groups) {
            return;
        }
        let base = k * wg;
        let before = aux[base];
        let has = aux[base + wg] > before;
        var all = true;
        for (var t = 0u; t < wg; t += 1u) {
            all = all && aux[base + t + 1u] > aux[base + t];
        }
        let continues = k > 0u && !is_stop(k * tile * wg - 1u);
        let needs = has && continues;
        var chain = 0u;
        if (needs) {
            // The workgroup holding the last stop before this one: the thread holding stop
            // number `before` (the first whose next thread row reaches it), else workgroup 0.
            var last = 0u;
            if (before > 0u) {
                var lo = 0u;
                var hi = base - 1u;
                while (lo < hi) {
                    let mid = lo + (hi - lo) / 2u;
                    if (aux[mid + 1u] >= before) {
                        hi = mid;
                    } else {
                        lo = mid + 1u;
                    }
                }
                last = lo / wg;
            }
            chain = k - last;
            atomicMax(&stats[STAT_CHAIN], chain);
        }
        aux[params.group_info_base + k] = select(0u, GROUP_HAS_STOP, has)
            | select(0u, GROUP_ALL_STOP, all)
            | select(0u, GROUP_NEEDS_CARRY, needs)
            | (chain << GROUP_CHAIN_SHIFT);
        carried[k] = select(0u, 1u, needs);
        if (k == 0u && params.coding == 2u) {
            atomicStore(&stats[STAT_ESCAPES], thread_escapes[params.threads]);
        }
        return;
    }
    if (PASS == 2u) {
        if (k >= params.groups) {
            return;
        }
        if (carried[k + 1u] > carried[k]) {
            aux[params.carry_base + carried[k]] = k;
        }
        if (k == 0u) {
            atomicStore(&stats[STAT_CARRIES], carried[params.groups]);
        }
        return;
    }
    if (PASS == 3u) {
        if (params.coding == 0u) {
            if (k < params.padded_blocks) {
                col_words[k] = cols[natural_of(k)];
            }
        } else if (k < params.padded_blocks / 2u) {
            col_words[k] = code(natural_of(2u * k)) | (code(natural_of(2u * k + 1u)) << 16u);
        }
        return;
    }
    // PASS 4.
    if (k >= params.threads) {
        return;
    }
    var at = params.escape_base + thread_escapes[k];
    var prev = 0u;
    for (var b = 0u; b < tile; b += 1u) {
        let c = cols[k * tile + b];
        if (!fits(c, prev)) {
            col_words[at] = c;
            at += 1u;
        }
        prev = c;
    }
    aux[params.thread_escape_base + k] = thread_escapes[k];
}
