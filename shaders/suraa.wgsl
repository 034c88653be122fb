// SURAA's main dispatch: the paper runs its scalar, vector and dynamic kernels on separate
// streams; here they are the three roles of one grid, `[dynamic | vector classes | scalar]`
// (see Schedule), so they run concurrently without one dispatch each. The matrix arrays are in
// sorted row order (the setup rearranged them); every role writes y through `perm`, so y comes
// out in the original row order.

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<scalar>;
@group(0) @binding(3) var<storage, read> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> y: array<scalar>;
@group(0) @binding(5) var<uniform> coeffs: Coeffs;
@group(0) @binding(6) var<uniform> schedule: Schedule;
@group(0) @binding(7) var<storage, read> perm: array<u32>;
@group(0) @binding(8) var<storage, read> dynamic_ptr: array<u32>;
@group(0) @binding(9) var<storage, read_write> partials: array<scalar>;

override WG_SIZE: u32 = 256u;
// Narrowest vector width T: the smallest subgroup, or LANES lanes in workgroup memory.
override LANES: u32 = 32u;
// Nonzeros per lane of one dynamic workgroup.
override DYNAMIC_ITEMS: u32 = 16u;
override DYNAMIC_CHUNK: u32 = WG_SIZE * DYNAMIC_ITEMS;
// Products per lane the scalar role stages in workgroup memory per round; 0 reads each row
// directly (the paper's scalar kernel as written).
override SCALAR_STAGE: u32 = 8u;
override STAGE_CELLS: u32 = max(WG_SIZE * SCALAR_STAGE, 1u);

var<workgroup> staged: array<scalar, STAGE_CELLS>;
// The nonzero range of the scalar workgroup's rows, made uniform through workgroup memory.
var<workgroup> stage_span: vec2<u32>;

// Sum of vals[k] * x[col_idx[k]] for k = begin, begin + stride, ... below end.
fn strided_dot(begin: u32, end: u32, stride: u32) -> scalar {
    var sum = scalar(0);
    for (var k = begin; k < end; k += stride) {
        sum += vals[k] * x[col_idx[k]];
    }
    return sum;
}

// The G1 row (sorted position) that dynamic workgroup g works for: the last i with
// dynamic_ptr[i] <= g.
fn dynamic_row(g: u32) -> u32 {
    var lo = 0u;
    var hi = schedule.dynamic_rows;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (dynamic_ptr[mid] <= g) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        li: LaneInput) {
    let l = lanes_of(li);
    let v = lane_slot(l);
    let g = linear_group(wid, nwg);
    if (g >= schedule.main_groups) {
        return;
    }

    // Dynamic role (the paper's child kernels): one chunk of a long row per workgroup, summed
    // into partials[g]; suraa_combine adds a row's partials in order (no float atomics).
    if (g < schedule.dynamic_groups) {
        let i = dynamic_row(g);
        let row_end = row_ptr[i + 1u];
        let begin = min(row_ptr[i] + (g - dynamic_ptr[i]) * DYNAMIC_CHUNK, row_end);
        let end = min(begin + DYNAMIC_CHUNK, row_end);
        let total = width_sum(strided_dot(begin + v, end, WG_SIZE), l, WG_SIZE);
        if (v == 0u) {
            partials[g] = total;
        }
        return;
    }

    // Vector role: class c gives each row a team of LANES << c lanes.
    for (var c = 0u; (LANES << c) <= WG_SIZE; c++) {
        let width = LANES << c;
        let per_group = WG_SIZE / width;
        let first = pick(schedule.class_group, c);
        let rows = pick(schedule.class_rows, c);
        if (g >= first && g - first < (rows + per_group - 1u) / per_group) {
            let slot = (g - first) * per_group + v / width;
            let i = pick(schedule.class_begin, c) + slot;
            var sum = scalar(0);
            if (slot < rows) {
                sum = strided_dot(row_ptr[i] + v % width, row_ptr[i + 1u], width);
            }
            let total = width_sum(sum, l, width);
            if (slot < rows && v % width == 0u) {
                write_y(perm[i], total);
            }
            return;
        }
    }

    // Scalar role: one invocation per row; the last workgroups of the grid.
    let scalar_rows = schedule.nrows - schedule.scalar_begin;
    let first = schedule.main_groups - (scalar_rows + WG_SIZE - 1u) / WG_SIZE;
    let i0 = schedule.scalar_begin + (g - first) * WG_SIZE;
    let i = i0 + v;
    let live = i < schedule.nrows;
    if (SCALAR_STAGE == 0u) {
        if (live) {
            write_y(perm[i], strided_dot(row_ptr[i], row_ptr[i + 1u], 1u));
        }
        return;
    }
    // Staged: the workgroup's rows are contiguous (the setup rearranged them), but neighbouring
    // invocations' rows are not, so direct reads scatter each load across cache lines. Instead
    // the workgroup loads its whole nonzero range coalesced, STAGE_CELLS products per round, and
    // each invocation still sums exactly its own row, in order.
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
        write_y(perm[i], sum);
    }
}
