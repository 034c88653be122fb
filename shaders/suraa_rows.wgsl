// The bindings SURAA's row kernels (suraa.wgsl, suraa_scalar.wgsl) share: the matrix in sorted
// row order (the setup rearranged it), x, y and the permutation (sorted row i is original row
// perm[i]).

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<scalar>;
@group(0) @binding(3) var<storage, read> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> y: array<scalar>;
@group(0) @binding(5) var<uniform> coeffs: Coeffs;
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
