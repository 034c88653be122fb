#import shared/grid
#import shared/common
#import shared/lanes_{lanes}
#import shared/team_scan_{lanes}
#import shared/csr_chunk
#import speculative/common
#import speculative/operands_{scalar}
// speculative: the GPU stage of the speculative segmented sum CSR SpMV (Liu & Vinter,
// Algorithm 1 lines 1-59). Nonzeros are cut into tiles of LANES x WORK; each team of LANES
// lanes runs TILES consecutive tiles. Where each segment sum goes (y, the transmitter, the
// synchronizer, or the shadow of a dirty tile) is explained in src/methods/speculative/tiles.rs,
// whose CPU twin follows this kernel step by step.

// Eight storage buffers at most (WebGPU's default limit): the columns and values are bound once,
// four at a time (the host pads them to whole quads), and the tile rows ride at the end of the
// row pointers. Binding 6: shaders/shared/csr_chunk.wgsl.
// row_ptr[0..=nrows] are the chunk's row pointers; with TILE_ROWS, entry nrows + 1 + team * TILES + i
// is the first row of the team's tile i (the rightmost row starting at or before its first
// nonzero), computed once by the plan.
@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
// Bindings 1 and 2, the columns and values: shaders/speculative/operands_{scalar}.wgsl.
@group(0) @binding(3) var<storage, read> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> y: array<scalar>;
@group(0) @binding(5) var<uniform> coeffs: Coeffs;
@group(0) @binding(7) var<storage, read_write> sync: array<SyncEntry>;
@group(0) @binding(8) var<storage, read_write> spec: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read_write> shadow: array<scalar>;

override WG_SIZE: u32 = 256u;
// T: lanes per team (the smallest subgroup size on the subgroup path).
override LANES: u32 = 32u;
// W: nonzeros per lane and tile (at most 32: a lane's head flags are one u32).
override WORK: u32 = 8u;
// Products a lane that loads them itself keeps (the host allows W up to this without STAGED). A
// driver may keep this array in local memory in f64 (examples/pipeline_stats shows it), which is
// why f64 stages products by default.
const MAX_LANE_WORK: u32 = 16u;
// S: tiles per team.
override TILES: u32 = 7u;
override TEAMS: u32 = WG_SIZE / LANES;
// STAGED: products are loaded coalesced and staged lane-major in workgroup memory (the paper's
// lines 22-26); otherwise each lane loads its WORK consecutive nonzeros itself, which leaves the
// kernel almost no workgroup memory (more workgroups per core) and one barrier per tile.
override STAGED: bool = true;
// RESOLVE: the lanes building a tile's descriptor also note, at the position of each row's last
// nonzero, which row ends there, and write the empty rows they meet; a dirty tile (one holding
// an empty row) then finds the row of each segment there, so the check stage has only the
// synchronizer to add. Otherwise (the paper's speculation) a dirty tile's middle segments go to
// the shadow and its rows to a speculator record. (A binary search per segment instead stops
// the unrolling of the segmented sum's loop.)
override RESOLVE: bool = false;
// TILE_ROWS: read the team's tile boundaries from row_ptr's tail (one load each) rather than search
// the row pointers for them (the paper's lines 4-7: about log2(rows) dependent loads).
override TILE_ROWS: bool = false;
// Products of one tile per team, lane-major, with one padding cell after every PAD_RUN so that
// lanes reading their WORK consecutive products hit distinct banks: PAD_RUN cells fill one row of
// 32 four-byte banks (32 f32, 16 f64; with 32 for f64, lanes 2k and 2k + 1 shared banks).
override PAD_RUN: u32 = 32u;
override TEAM_CELLS: u32 = LANES * WORK + (LANES * WORK + PAD_RUN - 1u) / PAD_RUN;
override PROD_CELLS: u32 = select(1u, TEAMS * TEAM_CELLS, STAGED);
override BOUND_CELLS: u32 = TEAMS * (TILES + 1u);
override ROW_CELLS: u32 = select(1u, 2u * WG_SIZE * WORK, RESOLVE);

var<workgroup> prod: array<scalar, PROD_CELLS>;
// The descriptor and the transmitter are double-buffered by tile parity: tile i + 2 reuses a
// buffer only after every lane has passed tile i + 1's barrier, i.e. has finished with tile i.
// Segment descriptor: bit w of a lane's word flags a row start at its w-th product.
var<workgroup> heads: array<atomic<u32>, 2 * WG_SIZE>;
// With RESOLVE, the row whose last nonzero is at each position of a tile, double-buffered by
// tile parity like the descriptor (only the positions of rows inside the tile are written).
var<workgroup> row_ends: array<u32, ROW_CELLS>;
// Rows at the team's TILES + 1 tile boundaries (the paper's tile_offset).
var<workgroup> bounds: array<u32, BOUND_CELLS>;
// The transmitter: the last segment of a tile that runs on into the team's next tile.
var<workgroup> transmit: array<scalar, 2 * TEAMS>;
// Dirty tiles, bit i for the team's tile i (written by the team's lane 0 only), and where the
// team's records go within the workgroup's. The workgroup counts its dirty tiles with one
// global atomic at the end: one per tile serialised every workgroup on the counter's address
// where most tiles are dirty.
var<workgroup> team_dirty: array<u32, TEAMS>;
var<workgroup> team_record_offset: array<u32, TEAMS>;
var<workgroup> group_records: atomic<u32>;
var<workgroup> group_record_base: u32;

// The rightmost row whose first nonzero is at or before `b` (`nrows` when b == nnz).
fn rightmost_row(b: u32) -> u32 {
    var lo = 0u;
    var hi = chunk.nrows;
    while (lo < hi) {
        let mid = hi - (hi - lo) / 2u;
        if (row_ptr[mid] <= b) {
            lo = mid;
        } else {
            hi = mid - 1u;
        }
    }
    return lo;
}

fn store_record(pos: u32, begin: u32, end: u32) {
    atomicStore(&spec[SPEC_RECORDS + 2u * pos], begin);
    atomicStore(&spec[SPEC_RECORDS + 2u * pos + 1u], end);
}

fn product(g: u32, end: u32) -> scalar {
    if (g < end) {
        return value(g) * x[column(g)];
    }
    return scalar(0);
}

struct TileCtx {
    slot: u32,
    // Tile index within the team.
    index: u32,
    // The transmitter cell this tile writes.
    transmit_cell: u32,
    // The tile's first nonzero, and where its cells of row_ends begin.
    begin: u32,
    row_base: u32,
    start: u32,
    stop: u32,
    // Index of the tile's last segment, and whether it runs past the tile's end.
    last_seg: u32,
    carries_on: bool,
    dirty: bool,
    team: u32,
    team_first_row: u32,
    team_cont: bool,
}

// Stores segment `k` of a tile, which ends just before nonzero `end` (lines 36-52, with the
// places explained in tiles.rs).
fn emit(t: TileCtx, k: u32, end: u32, v: scalar) {
    var row: u32;
    if (k == t.last_seg && t.carries_on) {
        if (t.index + 1u < TILES) {
            transmit[t.transmit_cell] = v;
            return;
        }
        row = t.stop;
    } else if (k == 0u) {
        row = t.start;
    } else if (t.dirty && RESOLVE) {
        row = row_ends[t.row_base + end - 1u - t.begin];
    } else if (t.dirty) {
        shadow[t.start + k] = v;
        return;
    } else {
        row = t.start + k;
    }
    if (row == t.team_first_row && t.team_cont) {
        sync[t.team] = SyncEntry(row, v);
    } else {
        write_y(chunk.row_begin + row, v);
    }
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        li: LaneInput,
        si: ShapeInput) {
    let l = lanes_of(li, si);
    let sh = shape_of(si);
    let tl = team_lane(l);
    let nnz = row_ptr[chunk.nrows];
    let tile_len = LANES * WORK;
    let team = linear_group(wid, nwg) * TEAMS + tl.slot;
    let team_begin = team * TILES * tile_len;

    // Lines 4-7: the team's tile boundaries, one binary search per lane (or one load).
    let bb = tl.slot * (TILES + 1u);
    for (var i = tl.lane; i <= TILES; i += LANES) {
        if (TILE_ROWS) {
            // Teams past the last nonzero (a 2-D grid can launch more than the plan counted)
            // have no entry; every boundary of theirs is nrows.
            let tile_rows = chunk.nrows + 1u;
            let last = arrayLength(&row_ptr) - 1u;
            bounds[bb + i] = select(chunk.nrows, row_ptr[min(tile_rows + team * TILES + i, last)], team_begin < nnz);
        } else {
            bounds[bb + i] = rightmost_row(min(team_begin + i * tile_len, nnz));
        }
    }
    atomicStore(&heads[tl.cell], 0u);
    atomicStore(&heads[WG_SIZE + tl.cell], 0u);
    if (tl.lane == 0u) {
        team_dirty[tl.slot] = 0u;
    }
    if (l.lid == 0u) {
        atomicStore(&group_records, 0u);
    }
    workgroupBarrier();
    let team_first_row = bounds[bb];
    let team_cont = team_begin < nnz && row_ptr[team_first_row] < team_begin;
    if (tl.lane == 0u) {
        if (!team_cont) {
            sync[team] = SyncEntry(NONE, scalar(0));
        }
    }

    for (var i = 0u; i < TILES; i++) {
        let parity = i % 2u;
        let pbase = tl.slot * TEAM_CELLS;
        let hbase = parity * WG_SIZE + tl.slot * LANES;
        let rbase = select(0u, parity * WG_SIZE * WORK + tl.slot * LANES * WORK, RESOLVE);
        let tile_begin = team_begin + i * tile_len;
        let live = tile_begin < nnz;
        let tile_end = min(tile_begin + tile_len, nnz);
        let start = bounds[bb + i];
        let stop = bounds[bb + i + 1u];

        // Unstaged products are loaded first, all at once, so that their latency overlaps the
        // descriptor's construction and the barrier (the segmented sum below has stores between
        // its loads, which the compiler will not hoist loads above).
        var own: array<scalar, MAX_LANE_WORK>;
        if (!STAGED) {
            let first = tile_begin + tl.lane * WORK;
            if (WORK % 4u == 0u) {
                // Tiles start on whole quads, so a quad only straddles the end of the matrix.
                for (var q = 0u; q < WORK / 4u; q++) {
                    let e = first + 4u * q;
                    var c = vec4(0u);
                    var v = vec4(scalar(0));
                    if (e < tile_end) {
                        c = column_quad(e / 4u);
                        v = value_quad(e / 4u);
                    }
                    for (var k = 0u; k < 4u; k++) {
                        own[4u * q + k] = scalar(0);
                        if (e + k < tile_end) {
                            own[4u * q + k] = v[k] * x[c[k]];
                        }
                    }
                }
            } else {
                for (var w = 0u; w < WORK; w++) {
                    own[w] = product(first + w, tile_end);
                }
            }
        }
        // Lines 14-21: the segment descriptor, a head flag where each row inside the tile starts
        // (an empty row shares its position with the next row; the count below notices).
        if (live) {
            if (tl.lane == 0u && row_ptr[start] == tile_begin) {
                atomicOr(&heads[hbase], 1u);
            }
            for (var j = start + 1u + tl.lane; j <= stop; j += LANES) {
                let p = row_ptr[j];
                if (p < tile_end) {
                    let o = p - tile_begin;
                    atomicOr(&heads[hbase + o / WORK], 1u << (o % WORK));
                }
                // Rows strictly between start and stop belong to this tile alone (start and stop
                // hold nonzeros, and stop's last one is past the tile): an empty one has no
                // segment, so it is written here; the others end inside the tile, after p.
                if (RESOLVE && j < stop) {
                    let q = row_ptr[j + 1u];
                    if (q == p) {
                        write_y(chunk.row_begin + j, scalar(0));
                    } else {
                        row_ends[rbase + q - 1u - tile_begin] = j;
                    }
                }
            }
        }
        // Lines 22-26: products, loaded coalesced and stored lane-major.
        if (STAGED) {
            for (var k = 0u; k < WORK; k++) {
                let e = k * LANES + tl.lane;
                prod[pbase + e + e / PAD_RUN] = product(tile_begin + e, tile_end);
            }
        }
        workgroupBarrier();

        // Each lane alone reads its descriptor word, so it clears it for tile i + 2 at once.
        let mask = atomicExchange(&heads[hbase + tl.lane], 0u);
        let cont = select(0u, 1u, live && row_ptr[start] < tile_begin);
        let hs = team_scan_u32(countOneBits(mask), tl);
        let carries_on = live && tile_end < nnz && row_ptr[stop] < tile_end;
        // Without empty rows the tile's segments are exactly rows start..stop (less stop when it
        // begins at the next tile): any other count means an empty row, i.e. a dirty tile.
        let dirty = live && hs.total + cont != stop - start + select(0u, 1u, carries_on);
        let ctx = TileCtx(tl.slot, i, parity * TEAMS + tl.slot, tile_begin, rbase, start, stop, hs.total + cont - 1u, carries_on, dirty, team, team_first_row, team_cont);

        // Lines 27-33: each lane's sequential segmented sum over its WORK products; the first
        // lane starts from the transmitter when the tile continues the previous tile's row.
        let lane_first = tile_begin + tl.lane * WORK;
        var acc = scalar(0);
        if (tl.lane == 0u && cont == 1u && i > 0u) {
            acc = transmit[(1u - parity) * TEAMS + tl.slot];
        }
        var prefix = scalar(0);
        var seen = false;
        var h = hs.excl;
        for (var w = 0u; w < WORK; w++) {
            if ((mask & (1u << w)) != 0u) {
                if (seen) {
                    emit(ctx, h + cont - 1u, lane_first + w, acc);
                } else {
                    prefix = acc;
                    seen = true;
                }
                acc = scalar(0);
                h++;
            }
            if (STAGED) {
                let e = tl.lane * WORK + w;
                acc += prod[pbase + e + e / PAD_RUN];
            } else {
                acc += own[w];
            }
        }
        // The segment open at a lane's first head gathers the lanes before it.
        let carry = team_seg_scan(seen, acc, tl);
        if (live) {
            if (seen && (hs.excl > 0u || cont == 1u)) {
                emit(ctx, hs.excl + cont - 1u, lane_first + firstTrailingBit(mask), carry.excl + prefix);
            }
            if (tl.lane == LANES - 1u) {
                emit(ctx, ctx.last_seg, tile_end, select(carry.excl + acc, acc, seen));
            }
            if (dirty && !RESOLVE && tl.lane == 0u) {
                team_dirty[tl.slot] |= 1u << i;
            }
        }
        if (STAGED) {
            // The next tile's products reuse `prod`.
            workgroupBarrier();
        }
    }

    // Lines 53-58: count the dirty tiles and record their rows for the check stage. Rows before
    // the first nonzero are empty; the first team records them too.
    let leading = select(0u, 1u, team == 0u && team_first_row > 0u);
    if (tl.lane == 0u) {
        team_record_offset[tl.slot] = atomicAdd(&group_records, countOneBits(team_dirty[tl.slot]) + leading);
    }
    workgroupBarrier();
    if (l.lid == 0u) {
        let total = atomicLoad(&group_records);
        if (total > 0u) {
            group_record_base = atomicAdd(&spec[SPEC_COUNT], total);
        }
    }
    workgroupBarrier();
    let first = group_record_base + team_record_offset[tl.slot];
    let dirty_mask = team_dirty[tl.slot];
    if (leading == 1u && tl.lane == 0u) {
        store_record(first, 0u, team_first_row);
    }
    for (var i = tl.lane; i < TILES; i += LANES) {
        if ((dirty_mask & (1u << i)) != 0u) {
            let pos = first + leading + countOneBits(dirty_mask & ((1u << i) - 1u));
            store_record(pos, bounds[bb + i] + 1u, bounds[bb + i + 1u]);
        }
    }
}
