#import shared/grid
#import shared/common
#import suraa/rows
// SURAA's scalar kernel (G3): one invocation per row, sorted rows [scalar_begin, nrows), WG_SIZE
// rows per workgroup. Sums go to y through `perm`, or (GATHER) to sorted_sums in sorted order,
// for shaders/suraa/gather.wgsl to move into y.

@group(0) @binding(8) var<storage, read_write> sorted_sums: array<scalar>;

override WG_SIZE: u32 = 256u;
// Products per invocation staged in workgroup memory per round; 0 reads each row directly (the
// paper's scalar kernel as written).
override SCALAR_STAGE: u32 = 4u;
override STAGE_CELLS: u32 = max(WG_SIZE * SCALAR_STAGE, 1u);
// 1: store sums in sorted order (ScalarWrites::Gather); 0: write y[perm[i]].
override GATHER: u32 = 1u;

fn store_sum(i: u32, sum: scalar) {
    if (GATHER == 1u) {
        sorted_sums[i] = sum;
    } else {
        write_y(perm[i], sum);
    }
}

var<workgroup> staged: array<scalar, STAGE_CELLS>;
// The nonzero range of the workgroup's rows, made uniform through workgroup memory.
var<workgroup> stage_span: vec2<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) v: u32) {
    let i0 = schedule.scalar_begin + linear_group(wid, nwg) * WG_SIZE;
    if (i0 >= schedule.nrows) {
        return;
    }
    let i = i0 + v;
    let live = i < schedule.nrows;
    if (SCALAR_STAGE == 0u) {
        if (live) {
            store_sum(i, strided_dot(row_ptr[i], row_ptr[i + 1u], 1u));
        }
        return;
    }
    // Staged: the workgroup's rows are contiguous, but neighbouring invocations' rows are not,
    // so direct reads scatter each load across cache lines. Instead the workgroup loads its
    // whole nonzero range coalesced, STAGE_CELLS products per round, and each invocation still
    // sums exactly its own row, in order.
    if (v == 0u) {
        stage_span = vec2<u32>(row_ptr[i0], row_ptr[min(i0 + WG_SIZE, schedule.nrows)]);
    }
    let span = workgroupUniformLoad(&stage_span);
    var begin = 0u;
    var end = 0u;
    if (live) {
        begin = row_ptr[i];
        end = row_ptr[i + 1u];
    }
    var sum = scalar(0);
    for (var c = span.x; c < span.y; c += STAGE_CELLS) {
        let round_end = min(c + STAGE_CELLS, span.y);
        for (var k = c + v; k < round_end; k += WG_SIZE) {
            staged[k - c] = vals[k] * x[col_idx[k]];
        }
        workgroupBarrier();
        for (var k = max(begin, c); k < min(end, round_end); k++) {
            sum += staged[k - c];
        }
        workgroupBarrier();
    }
    if (live) {
        store_sum(i, sum);
    }
}
