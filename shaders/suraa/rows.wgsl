#import shared/csr_bindings
#import suraa/common
// What SURAA's row kernels (shaders/suraa/suraa.wgsl, shaders/suraa/scalar.wgsl) share. Bindings 0-5 (shaders/shared/csr_bindings.wgsl)
// hold the matrix in sorted row order (the setup rearranged it); then the schedule and the
// permutation (sorted row i is original row perm[i]).

@group(0) @binding(6) var<uniform> schedule: Schedule;
@group(0) @binding(7) var<storage, read> perm: array<u32>;

// Sum of vals[k] * x[col_idx[k]] for k = begin, begin + stride, ... below end.
fn strided_dot(begin: u32, end: u32, stride: u32) -> scalar {
    var sum = scalar(0);
    for (var k = begin; k < end; k += stride) {
        sum += vals[k] * x[col_idx[k]];
    }
    return sum;
}
