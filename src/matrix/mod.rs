//! Host matrices: the validated CSR every plan is built from, its row statistics, and Matrix
//! Market input and output.

mod csr;
mod interop;
pub mod io;

pub(crate) use csr::{check_u32, try_filled, try_push, try_with_capacity};
pub use csr::{CsrMatrix, RowStats};
