// speculative_finish: the check stage on the GPU, for plans recorded into a caller's encoder
// and for discrete GPUs. The first SYNC groups add the synchronizer into y (lines 62-68); the
// others re-arrange the dirty records into their true rows. The last workgroup to finish resets
// the dirty counter for the next product.

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<scalar>;
@group(0) @binding(2) var<uniform> coeffs: Coeffs;
@group(0) @binding(3) var<uniform> chunk: Chunk;
@group(0) @binding(4) var<storage, read> sync: array<SyncEntry>;
@group(0) @binding(5) var<storage, read_write> spec: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read> shadow: array<scalar>;
@group(0) @binding(7) var<uniform> finish: FinishParams;

// Mirrors `FinishParams` in src/methods/speculative/mod.rs.
struct FinishParams {
    // Synchronizer entries.
    teams: u32,
    // Workgroups adding the synchronizer; the rest re-arrange records.
    sync_groups: u32,
    // All workgroups of the pass (a 2-D grid may hold more; they return at once).
    groups: u32,
    pad: u32,
}

override WG_SIZE: u32 = 256u;

var<workgroup> shared_word: u32;
var<workgroup> shared_range: vec2<u32>;
var<workgroup> scan: array<u32, WG_SIZE>;

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

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (g >= finish.groups) {
        return;
    }
    if (g < finish.sync_groups) {
        // The first entry of each run of one row sums the run and adds it.
        let i = g * WG_SIZE + lid;
        if (i < finish.teams) {
            let r = sync[i].row;
            if (r != NONE && (i == 0u || sync[i - 1u].row != r)) {
                var s = sync[i].val;
                for (var j = i + 1u; j < finish.teams && sync[j].row == r; j++) {
                    s += sync[j].val;
                }
                y[chunk.row_begin + r] += coeffs.alpha * s;
            }
        }
    } else {
        if (lid == 0u) {
            shared_word = atomicLoad(&spec[SPEC_COUNT]);
        }
        let count = workgroupUniformLoad(&shared_word);
        let stride = finish.groups - finish.sync_groups;
        for (var rec = g - finish.sync_groups; rec < count; rec += stride) {
            if (lid == 0u) {
                shared_range = vec2(atomicLoad(&spec[SPEC_RECORDS + 2u * rec]), atomicLoad(&spec[SPEC_RECORDS + 2u * rec + 1u]));
            }
            let rows = workgroupUniformLoad(&shared_range);
            // The k-th non-empty row of the record takes shadow[first row + k].
            var taken = 0u;
            for (var r0 = rows.x; r0 < rows.y; r0 += WG_SIZE) {
                let r = r0 + lid;
                let nonempty = r < rows.y && row_ptr[r + 1u] > row_ptr[r];
                let s = group_scan(select(0u, 1u, nonempty), lid);
                if (r < rows.y) {
                    var v = scalar(0);
                    if (nonempty) {
                        v = shadow[rows.x + taken + s.x];
                    }
                    write_y(chunk.row_begin + r, v);
                }
                taken += s.y;
            }
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        let done = atomicAdd(&spec[SPEC_DONE], 1u);
        if (done + 1u == finish.groups) {
            atomicStore(&spec[SPEC_COUNT], 0u);
            atomicStore(&spec[SPEC_DONE], 0u);
        }
    }
}
