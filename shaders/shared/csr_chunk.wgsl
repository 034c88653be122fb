// Binding 6 of the plain CSR kernels (csr_scalar, csr_vector, speculative): the row chunk a
// dispatch covers.
@group(0) @binding(6) var<uniform> chunk: Chunk;
