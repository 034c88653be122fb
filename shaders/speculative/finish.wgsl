#import shared/grid
#import shared/common
#import speculative/common
// speculative_finish: the check stage on the GPU, for plans recorded into a caller's encoder
// and for discrete GPUs. Three kinds of workgroups, in this order:
// - short synchronizer runs, one invocation each: add the run's entries into the row (lines
//   62-68 of Algorithm 1);
// - long synchronizer runs (a row across many teams), one workgroup each, summed as a tree;
// - dirty records, WG_SIZE per workgroup: an invocation re-arranges a short record alone, the
//   workgroup together each long one (a scan over its rows' emptiness).
// The last workgroup to finish resets the dirty counter for the next product.

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<scalar>;
@group(0) @binding(2) var<uniform> coeffs: Coeffs;
@group(0) @binding(3) var<uniform> chunk: Chunk;
@group(0) @binding(4) var<storage, read> sync: array<SyncEntry>;
@group(0) @binding(5) var<storage, read_write> spec: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read> shadow: array<scalar>;
// Synchronizer runs (first entry, entries): the short ones, then the long ones.
@group(0) @binding(7) var<storage, read> runs: array<vec2<u32>>;
@group(0) @binding(8) var<uniform> finish: FinishParams;

// Mirrors `FinishParams` in src/methods/speculative/mod.rs.
struct FinishParams {
    short_runs: u32,
    long_runs: u32,
    // Workgroups of each kind.
    short_groups: u32,
    record_groups: u32,
}

override WG_SIZE: u32 = 64u;
// Loads in flight per invocation when a workgroup sums a long synchronizer run.
const RUN_LOADS: u32 = 8u;
// Records with more rows than this are re-arranged by the whole workgroup.
const LONG_RECORD: u32 = 256u;

var<workgroup> shared_word: u32;
var<workgroup> shared_range: vec2<u32>;
var<workgroup> scan: array<u32, WG_SIZE>;
var<workgroup> partial: array<scalar, WG_SIZE>;
var<workgroup> long_records: array<u32, WG_SIZE>;
var<workgroup> long_count: atomic<u32>;
var<workgroup> long_total: u32;

// Exclusive sum of `v` over the workgroup and the total (Hillis-Steele).
fn group_scan(v: u32, lid: u32) -> vec2<u32> {
    var incl = v;
    scan[lid] = incl;
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d = d * 2u) {
        var o = 0u;
        if (lid >= d) {
            o = scan[lid - d];
        }
        workgroupBarrier();
        incl += o;
        scan[lid] = incl;
        workgroupBarrier();
    }
    let total = scan[WG_SIZE - 1u];
    workgroupBarrier();
    return vec2(incl - v, total);
}

fn record(rec: u32) -> vec2<u32> {
    return vec2(atomicLoad(&spec[SPEC_RECORDS + 2u * rec]), atomicLoad(&spec[SPEC_RECORDS + 2u * rec + 1u]));
}

fn nonempty(r: u32) -> bool {
    return row_ptr[r + 1u] > row_ptr[r];
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let groups = finish.short_groups + finish.long_runs + finish.record_groups;
    if (g >= groups) {
        return;
    }
    if (g < finish.short_groups) {
        let i = g * WG_SIZE + lid;
        if (i < finish.short_runs) {
            let run = runs[i];
            var s = scalar(0);
            for (var j = run.x; j < run.x + run.y; j++) {
                s += sync[j].val;
            }
            let r = sync[run.x].row;
            y[chunk.row_begin + r] += coeffs.alpha * s;
        }
    } else if (g < finish.short_groups + finish.long_runs) {
        let run = runs[finish.short_runs + g - finish.short_groups];
        // A row across thousands of teams (a dense row) is summed by this workgroup alone:
        // RUN_LOADS independent loads in flight per invocation rather than one, or each entry
        // costs a full memory latency.
        var acc: array<scalar, RUN_LOADS>;
        let end = run.x + run.y;
        var j = run.x + lid;
        for (; j + (RUN_LOADS - 1u) * WG_SIZE < end; j += RUN_LOADS * WG_SIZE) {
            for (var k = 0u; k < RUN_LOADS; k++) {
                acc[k] += sync[j + k * WG_SIZE].val;
            }
        }
        for (; j < end; j += WG_SIZE) {
            acc[0] += sync[j].val;
        }
        var s = scalar(0);
        for (var k = 0u; k < RUN_LOADS; k++) {
            s += acc[k];
        }
        partial[lid] = s;
        workgroupBarrier();
        for (var d = WG_SIZE / 2u; d > 0u; d = d / 2u) {
            if (lid < d) {
                partial[lid] += partial[lid + d];
            }
            workgroupBarrier();
        }
        if (lid == 0u) {
            let r = sync[run.x].row;
            y[chunk.row_begin + r] += coeffs.alpha * partial[0];
        }
    } else {
        if (lid == 0u) {
            shared_word = atomicLoad(&spec[SPEC_COUNT]);
            atomicStore(&long_count, 0u);
        }
        let count = workgroupUniformLoad(&shared_word);
        let base = (g - finish.short_groups - finish.long_runs) * WG_SIZE;
        let stride = finish.record_groups * WG_SIZE;
        for (var first = base; first < count; first += stride) {
            // One record per invocation; long ones are set aside for the whole workgroup.
            let rec = first + lid;
            if (rec < count) {
                let rows = record(rec);
                if (rows.y - rows.x > LONG_RECORD) {
                    long_records[atomicAdd(&long_count, 1u)] = rec;
                } else {
                    // The k-th non-empty row of the record takes shadow[first row + k].
                    var k = rows.x;
                    for (var r = rows.x; r < rows.y; r++) {
                        var v = scalar(0);
                        if (nonempty(r)) {
                            v = shadow[k];
                            k++;
                        }
                        write_y(chunk.row_begin + r, v);
                    }
                }
            }
            workgroupBarrier();
            if (lid == 0u) {
                long_total = atomicLoad(&long_count);
            }
            let longs = workgroupUniformLoad(&long_total);
            for (var l = 0u; l < longs; l++) {
                if (lid == 0u) {
                    shared_range = record(long_records[l]);
                }
                let rows = workgroupUniformLoad(&shared_range);
                var taken = 0u;
                for (var r0 = rows.x; r0 < rows.y; r0 += WG_SIZE) {
                    let r = r0 + lid;
                    let ne = r < rows.y && nonempty(r);
                    let s = group_scan(select(0u, 1u, ne), lid);
                    if (r < rows.y) {
                        var v = scalar(0);
                        if (ne) {
                            v = shadow[rows.x + taken + s.x];
                        }
                        write_y(chunk.row_begin + r, v);
                    }
                    taken += s.y;
                }
            }
            workgroupBarrier();
            if (lid == 0u) {
                atomicStore(&long_count, 0u);
            }
            workgroupBarrier();
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        let done = atomicAdd(&spec[SPEC_DONE], 1u);
        if (done + 1u == groups) {
            atomicStore(&spec[SPEC_COUNT], 0u);
            atomicStore(&spec[SPEC_DONE], 0u);
        }
    }
}
