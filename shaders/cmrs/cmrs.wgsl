#import shared/grid
#import shared/common
#import shared/lanes_{lanes}
// cmrs: one team of lanes (a SIMD group) per strip of HEIGHT rows (Koza et al., Algorithm 1).
// Each lane adds its products into a buffer cell of the item's row; each row's cells are then
// summed by a transposed reduction: S = cols / HEIGHT lanes per row each add every S-th cell,
// then one lane per row adds those S partials. Rows are padded to cols + 1 cells, so both the
// accumulation (lanes of a pass, consecutive columns) and the reduction (lanes of a row, strided
// columns) spread over the memory banks. The host keeps a strip's items within
// LONG_ROW_ITERATIONS per lane by moving its longest rows to the long-row passes.
@group(0) @binding(0) var<storage, read> strip_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_words: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<scalar>;
@group(0) @binding(3) var<storage, read> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> y: array<scalar>;
@group(0) @binding(5) var<uniform> coeffs: Coeffs;
@group(0) @binding(6) var<uniform> chunk: Chunk;
// Row-in-strip numbers, eight per word, when the column words do not carry them (PACKED == 0).
@group(0) @binding(7) var<storage, read> row_in_strip: array<u32>;

override WG_SIZE: u32 = 128u;
// Team width on the workgroup-memory path; the smallest subgroup on the subgroup path.
override LANES: u32 = 32u;
override HEIGHT: u32 = 8u;
// 0: one buffer column per lane (Algorithm 1). M > 0: the smaller buffer of section 6.7, M
// columns, lane l using column l mod M; the host lays items out so that each cell has one owner.
override BUF_COLS: u32 = 0u;
// 1: row-in-strip in the low 4 bits of the column word; 0: in `row_in_strip`.
override PACKED: u32 = 1u;
// Workgroup buffer cells: (WG_SIZE / LANES) * HEIGHT * (cols + 1), cols = LANES or BUF_COLS.
override CELLS: u32 = 1056u;
override STRIPS_PER_GROUP: u32 = WG_SIZE / LANES;

// Padding items of the smaller-buffer layout: skipped, so never 0 * inf.
const PADDING: u32 = 0xffffffffu;

var<workgroup> cells: array<scalar, CELLS>;

// (row in strip, column) of item j.
fn row_and_col(j: u32, word: u32) -> vec2<u32> {
    if (PACKED != 0u) {
        return vec2<u32>(word & 15u, word >> 4u);
    }
    return vec2<u32>((row_in_strip[j >> 3u] >> ((j & 7u) * 4u)) & 15u, word);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        li: LaneInput,
        si: ShapeInput) {
    let l = lanes_of(li, si);
    let sh = shape_of(si);
    let first = linear_group(wid, nwg) * STRIPS_PER_GROUP;
    let nstrips = (chunk.nrows + HEIGHT - 1u) / HEIGHT;
    // A larger real subgroup than LANES gives fewer teams, which loop; the trip count is the same
    // for the whole workgroup, so barriers and team_sum stay in uniform control flow.
    let passes = (STRIPS_PER_GROUP + sh.teams - 1u) / sh.teams;
    let cols = select(sh.width, BUF_COLS, BUF_COLS > 0u);
    let stride = cols + 1u;
    let base = l.team * HEIGHT * stride;
    let my_col = l.lane % cols;
    // Reduction lanes per row.
    let per_row = max(cols / HEIGHT, 1u);
    for (var p = 0u; p < passes; p++) {
        let i = p * sh.teams + l.team;
        let strip = first + i;
        let live = i < STRIPS_PER_GROUP && strip < nstrips;
        if (l.lane < cols) {
            for (var r = 0u; r < HEIGHT; r++) {
                cells[base + r * stride + l.lane] = scalar(0);
            }
        }
        if (BUF_COLS > 0u) {
            // Cells are zeroed by one lane and filled by their owner, another lane.
            workgroupBarrier();
        }
        if (live) {
            let end = strip_ptr[strip + 1u];
            for (var j = strip_ptr[strip] + l.lane; j < end; j += sh.width) {
                let word = col_words[j];
                if (word != PADDING) {
                    let rc = row_and_col(j, word);
                    cells[base + rc.x * stride + my_col] += vals[j] * x[rc.y];
                }
            }
        }
        workgroupBarrier();
        // Partial q of row r: cells q, q + per_row, ... of the row, stored back into cell q (which
        // no other partial reads).
        for (var t = l.lane; t < per_row * HEIGHT; t += sh.width) {
            let r = t % HEIGHT;
            let q = t / HEIGHT;
            let row_cells = base + r * stride;
            var sum = scalar(0);
            for (var c = q; c < cols; c += per_row) {
                sum += cells[row_cells + c];
            }
            cells[row_cells + q] = sum;
        }
        workgroupBarrier();
        if (live) {
            for (var r = l.lane; r < HEIGHT; r += sh.width) {
                let row = strip * HEIGHT + r;
                if (row < chunk.nrows) {
                    var total = scalar(0);
                    for (var q = 0u; q < per_row; q++) {
                        total += cells[base + r * stride + q];
                    }
                    write_y(chunk.row_begin + row, total);
                }
            }
        }
        // The next pass zeroes these cells.
        workgroupBarrier();
    }
}
