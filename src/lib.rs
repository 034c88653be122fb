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

pub mod csr;
pub mod error;
pub mod gpu;
pub mod io;
pub mod methods;
pub mod plan;
pub mod reference;
pub mod scalar;
pub mod select;
pub mod suite;

pub use csr::{CsrMatrix, RowStats};
pub use error::{Error, Result};
pub use gpu::{Gpu, GpuInfo, GpuOptions, GpuVector, Timer, Timing};
pub use methods::{LanePolicy, Method, PlanOptions};
pub use plan::SpmvPlan;
pub use scalar::Scalar;
pub use suite::SuiteClass;

/// The WGSL sources, for validation and inspection (no GPU needed).
pub mod shaders {
    pub use crate::gpu::shader::{Kernel, LaneMode, ALL_KERNELS, LANE_WIDTHS, WORKGROUP_SIZES};
}
