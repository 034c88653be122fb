//! Every integration test in one binary: each test binary links wgpu and monomorphises the
//! library's generic code again (CI build time, docs/measurements.md).
//! One module per former test file: `cargo test --test integration bccoo::` runs bccoo's.

mod common;

mod auto;
mod bccoo;
mod buffer_pool;
mod caller_buffers;
mod cli;
mod cmrs;
mod coefficients;
mod copies;
mod csr_io;
mod gpu_csr;
mod gpu_methods;
mod ieee_specials;
mod interop;
mod layering;
mod long_rows;
mod mtx_fuzz;
mod pipeline_cache;
mod real_matrices;
mod shaders;
mod shared_plans;
mod solvers;
mod speculative;
mod spmm;
mod suraa;
mod transpose;
