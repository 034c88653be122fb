// Bindings 0-5 of every kernel that reads a CSR matrix (csr_scalar, csr_vector, speculative, and
// SURAA's row kernels on the rearranged matrix), in the order the plans bind them. Binding 6 on
// is each family's own: shaders/shared/csr_chunk.wgsl, shaders/suraa/rows.wgsl.
@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<scalar>;
@group(0) @binding(3) var<storage, read> x: array<scalar>;
@group(0) @binding(4) var<storage, read_write> y: array<scalar>;
@group(0) @binding(5) var<uniform> coeffs: Coeffs;
