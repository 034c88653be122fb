//! Passes that several methods append to their own: rows too long for one invocation, and stored
//! zeros meeting NaN or ±Inf in `x` for formats that skip zero values.

mod kernels;
pub(crate) mod long_rows;
pub(crate) mod stored_zeros;

pub use kernels::*;
