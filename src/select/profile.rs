//! Adapter profiles: the cost model's coefficients as a small text file.
//!
//! ```text
//! wgspmv-profile 4
//! name nvidia
//! note where and when it was fitted (free text, any number of lines)
//! match vendor 0x10de            # any number of match lines; none = matches every adapter
//! match device_type cpu
//! cache_bytes 52428800
//! x_cache_share 0.15            # optional: the share of the cache that holds x (x_miss)
//! regressors bias ln_mean ln_cv long_share empty_frac scatter ln_x_cache aspect ln_mnnz ln_max_rel f64 x_miss
//! range_min 1 0.69 0 ...         # optional (version 2): the calibration data's range
//! range_max 1 8.3 3.2 ...
//! kernel width 0.5 prior 0.1 scale 0 1.2 0.8 ...   # optional (version 2)
//! method csr-scalar launch_ms 0.006 setup 0.2 0.9 1.5 host_setup 1 9 2 weights -6.1 0.2 ...
//! residual csr-scalar ln_ratio 0.12 at 1 3.3 0.1 ...  # any number, after its method
//! ```
//!
//! Per-product time of a method: `launch_ms + bytes · 1e-6 · exp(weights · regressors)`
//! ms (so `exp(weights · regressors)` is nanoseconds per byte), where `bytes` is the minimal
//! traffic plus what the method's format adds for certain (version 4; versions 1 to 3: the
//! minimal traffic alone, [`Traffic`]), times
//! `exp(correction)`. The regressors are first clamped to `range_min..=range_max` (the global
//! fit is not extrapolated beyond its data). The correction is a kernel-weighted mean of the
//! method's calibration residuals, `Σ kᵢ eᵢ / (prior + Σ kᵢ)` with
//! `kᵢ = exp(-½ Σⱼ ((rⱼ − aᵢⱼ) / scaleⱼ)² / width²)` (regressors with scale 0 are ignored): near
//! a calibration matrix the model is corrected towards its measurement, far from all of them
//! it is the global fit. Setup time: `s0 + s1 · (matrix MB) + s2 · (million rows)` ms, where
//! matrix MB = nnz · (4 + scalar) / 1e6; `host_setup` (optional, version 3) holds the
//! coefficients for when the format is built on the host rather than the GPU (`setup` then
//! covers the GPU builds), two regimes one line cannot fit. `#` starts a comment. A method
//! without a line is never chosen by this profile. Version 1 files (no range, kernel or
//! residual lines), version 2 files (no `host_setup`) and version 3 files (minimal traffic)
//! still parse.

pub use crate::profile::{
    profile_for, Kernel, Match, MethodModel, Profile, Residual, Traffic, NREG, REGRESSORS,
};
