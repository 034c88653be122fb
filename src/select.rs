//! `Method::Auto`: choose a method from the matrix's row statistics and the adapter.

use crate::gpu::GpuInfo;
use crate::{Method, RowStats};

/// Picks a method. Today's rule is the classic one for the CSR baselines: a SIMD group per row
/// pays off once rows are long enough to fill it (mean ≥ 8) or a few rows are very long (a scalar
/// thread on a 10 000-entry row stalls its whole group); otherwise one invocation per row.
/// Later methods and timing-based tuning will extend this.
pub fn choose(stats: &RowStats, _info: &GpuInfo) -> Method {
    if stats.mean >= 8.0 || stats.max_len as f64 > 64.0 * stats.mean.max(1.0) {
        Method::CsrVector
    } else {
        Method::CsrScalar
    }
}
