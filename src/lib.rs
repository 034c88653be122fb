//! `wgspmv`: sparse matrix–vector multiplication (`y = α·A·x + β·y`) on any GPU that wgpu
//! reaches (Vulkan, Metal, DX12, and software adapters such as Mesa's lavapipe), with WGSL
//! kernels.
//!
//! ```no_run
//! use wgspmv::{CsrMatrix, Gpu, GpuVector, Method};
//! # fn main() -> wgspmv::Result<()> {
//! let gpu = Gpu::new()?;
//! let a = CsrMatrix::<f32>::from_triplets(2, 2, vec![(0, 0, 2.0), (1, 0, 1.0), (1, 1, 3.0)])?;
//! let plan = gpu.prepare(&a, Method::Auto)?;
//! let x = GpuVector::from_slice(&gpu, &[1.0, 2.0])?;
//! let mut y = GpuVector::filled(&gpu, 2, 0.0)?;
//! plan.run(&x, &mut y)?;
//! assert_eq!(y.read()?, vec![2.0, 7.0]);
//! # Ok(()) }
//! ```

pub mod error;
pub mod gpu;
pub mod kernel;
pub mod matrix;
pub mod methods;
pub mod plan;
pub mod scalar;
pub mod select;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, Result};
pub use gpu::{Gpu, GpuInfo, GpuOptions, GpuVector, Timer, Timing};
pub use matrix::{CsrMatrix, RowStats};
pub use methods::{LanePolicy, Method, PlanOptions};
pub use plan::{Report, SpmvPlan};
pub use scalar::Scalar;
/// wgpu, re-exported so that an application can match the version this crate uses.
pub use wgpu;

/// The WGSL sources, for validation and inspection (no GPU needed).
pub mod shaders {
    pub use crate::kernel::{Kernel, LaneMode, Variant, LANE_WIDTHS, WORKGROUP_SIZES};
    pub use crate::methods::all_kernels;
}
