#import shared/scalar
// Shared by every SpMV kernel.

// y = alpha * A x + beta * y.
struct Coeffs {
    alpha: scalar,
    beta: scalar,
}

// The slice of rows one dispatch covers (large matrices are split into row chunks).
struct Chunk {
    // Index in y of the chunk's first row.
    row_begin: u32,
    // Rows in this chunk.
    nrows: u32,
}

// Loop iterations one invocation may spend on a row or strip (long_rows.rs: some drivers stop
// longer loops); longer ones are treated as empty and added by the long-row passes.
const LONG_ROW_ITERATIONS: u32 = 16384u;

// Every SpMV kernel declares `y` and `coeffs`; with beta == 0, y is not read (it may hold NaN).
fn write_y(i: u32, sum: scalar) {
    if (coeffs.beta == scalar(0)) {
        y[i] = coeffs.alpha * sum;
    } else {
        y[i] = coeffs.alpha * sum + coeffs.beta * y[i];
    }
}

// Where an invocation sits in its team of lanes (a subgroup, or LANES invocations in workgroup
// memory): filled by `lanes_of` of the lane module the kernel is assembled with.
struct Lanes {
    lid: u32,
    team: u32,
    teams: u32,
    lane: u32,
    width: u32,
}

// The team count and width alone, from uniform values only (`shape_of`): WGSL's uniformity
// analysis taints a whole struct, so loops and branches around barriers and subgroup operations
// read these, never `Lanes`.
struct Shape {
    teams: u32,
    width: u32,
}
