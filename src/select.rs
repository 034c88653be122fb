//! `Method::Auto`: choose a method from the matrix's row statistics and the adapter.

use crate::gpu::Gpu;
use crate::plan::Choice;
use crate::{CsrMatrix, Method, PlanOptions, Result, Scalar};

/// What `Auto` chose, with what it weighed.
pub struct AutoChoice {
    pub method: Method,
    pub report: Choice,
    /// Time spent timing candidates on the device, in ms.
    pub timing_ms: f64,
}

/// Picks a method. Today's rule is the classic one for the CSR baselines: a SIMD group per row
/// pays off once rows are long enough to fill it or a few rows are very long.
pub fn choose<T: Scalar>(_gpu: &Gpu, a: &CsrMatrix<T>, _opts: &PlanOptions) -> Result<AutoChoice> {
    let stats = a.row_stats();
    let method = if stats.mean >= 8.0 || stats.max_len as f64 > 64.0 * stats.mean.max(1.0) {
        Method::CsrVector
    } else {
        Method::CsrScalar
    };
    Ok(AutoChoice {
        method,
        report: Choice::default(),
        timing_ms: 0.0,
    })
}
