#import shared/grid
#import shared/common
#import shared/lanes_{lanes}
#import shared/width_sum_{lanes}
#import suraa/rows
// SURAA's main dispatch for G1 and G2: the paper runs its scalar, vector and dynamic kernels on
// separate streams; here the dynamic and vector kernels are the two roles of one grid,
// `[dynamic | vector classes]` (see Schedule), so they run concurrently without one dispatch
// each. G3 has its own kernel (shaders/suraa/scalar.wgsl): its workgroup memory would otherwise cut the
// occupancy of these roles too. Every role writes y through `perm`, so y comes out in the
// original row order.

@group(0) @binding(8) var<storage, read> dynamic_ptr: array<u32>;
@group(0) @binding(9) var<storage, read_write> partials: array<scalar>;

override WG_SIZE: u32 = 256u;
// Narrowest vector width T: the smallest subgroup, or LANES lanes in workgroup memory.
override LANES: u32 = 32u;
// Nonzeros per lane of one dynamic workgroup.
override DYNAMIC_ITEMS: u32 = 16u;
override DYNAMIC_CHUNK: u32 = WG_SIZE * DYNAMIC_ITEMS;

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
        li: LaneInput,
        si: ShapeInput) {
    let l = lanes_of(li, si);
    let sh = shape_of(si);
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
        let total = width_sum(strided_dot(begin + v, end, WG_SIZE), l, sh, WG_SIZE);
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
            let total = width_sum(sum, l, sh, width);
            if (slot < rows && v % width == 0u) {
                write_y(perm[i], total);
            }
            return;
        }
    }
}
