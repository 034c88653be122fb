//! Passes that several methods append to their own: rows too long for one invocation.

mod kernels;
pub(crate) mod long_rows;

pub use kernels::*;
