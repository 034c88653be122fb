//! Matrices: the validated host CSR every plan is built from, its row statistics, Matrix Market
//! input and output, and a CSR the caller already holds on the GPU.

mod csr;
mod fingerprint;
mod gpu_csr;
mod interop;
pub mod io;
mod transpose;

pub(crate) use csr::{check_u32, try_filled, try_push, try_with_capacity};
pub use csr::{CsrMatrix, RowStats};
pub(crate) use fingerprint::{fingerprint, fingerprint_gpu, fnv, FNV0};
pub use gpu_csr::GpuCsr;
pub(crate) use gpu_csr::{csr_bytes, Checked, SharedUpload, UploadedCsr};
pub(crate) use transpose::transpose_on_gpu;
