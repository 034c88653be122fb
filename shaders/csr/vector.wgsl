#import shared/grid
#import shared/common
#import shared/lanes_{lanes}
#import shared/csr_bindings
#import shared/csr_chunk
// csr-vector: one team of lanes (a SIMD group) per row; lanes stride through the row and their
// partial sums are reduced by `team_sum` (subgroup operations or workgroup memory).

override WG_SIZE: u32 = 256u;
// Lanes per team on the workgroup-memory path; on the subgroup path, the smallest subgroup size
// the adapter reports (the host sizes the dispatch from it).
override LANES: u32 = 32u;
// Rows one workgroup covers.
override ROWS_PER_GROUP: u32 = WG_SIZE / LANES;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        li: LaneInput,
        si: ShapeInput) {
    let l = lanes_of(li, si);
    let sh = shape_of(si);
    let first_row = linear_group(wid, nwg) * ROWS_PER_GROUP;
    // A larger real subgroup than LANES gives fewer teams; they loop. The trip count is the same
    // for the whole workgroup, so team_sum stays in uniform control flow.
    let passes = (ROWS_PER_GROUP + sh.teams - 1u) / sh.teams;
    for (var p = 0u; p < passes; p++) {
        let i = p * sh.teams + l.team;
        let row = first_row + i;
        var sum = scalar(0);
        if (i < ROWS_PER_GROUP && row < chunk.nrows) {
            let begin = row_ptr[row];
            var end = row_ptr[row + 1u];
            if (end - begin > LONG_ROW_ITERATIONS * LANES) {
                end = begin;
            }
            for (var k = begin + l.lane; k < end; k += sh.width) {
                sum += vals[k] * x[col_idx[k]];
            }
        }
        let total = team_sum(sum, l);
        if (l.lane == 0u && i < ROWS_PER_GROUP && row < chunk.nrows) {
            write_y(chunk.row_begin + row, total);
        }
    }
}
