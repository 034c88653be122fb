//! `wgspmv`: sparse matrix–vector multiplication (`y = α·A·x + β·y`) on any GPU that wgpu
//! reaches (Vulkan, Metal, DX12, GL, and software adapters such as Mesa's lavapipe), with WGSL
//! kernels.
//!
//! ```
//! use wgspmv::{CsrMatrix, Gpu, GpuVector, Method};
//! # fn main() -> wgspmv::Result<()> {
//! # let gpu = match Gpu::new() {
//! #     Err(_) if std::env::var_os("CI").is_none() => return Ok(()), // no adapter here
//! #     g => g?,
//! # };
//! # /*
//! let gpu = Gpu::new()?;
//! # */
//! let a = CsrMatrix::<f32>::from_triplets(2, 2, vec![(0, 0, 2.0), (1, 0, 1.0), (1, 1, 3.0)])?;
//! let plan = gpu.prepare(&a, Method::Auto)?;
//! let x = GpuVector::from_slice(&gpu, &[1.0, 2.0])?;
//! let mut y = GpuVector::filled(&gpu, 2, 0.0)?;
//! plan.run(&x, &mut y)?;
//! assert_eq!(y.read()?, vec![2.0, 7.0]);
//! # Ok(()) }
//! ```
//!
//! # In an application that owns the device
//!
//! The app creates its device with [`Gpu::device_descriptor`] (the features and limits at which
//! every method runs at its best), shares it with [`Gpu::from_device`], records SpMV into its own
//! encoder beside its own passes, and runs one plan from several threads. wgpu's requests are
//! `async`: here `pollster` (a dependency the app adds, `pollster = "0.4"`) waits on them; any
//! executor does.
//!
//! ```
//! use wgspmv::{matrix::io, wgpu, CsrMatrix, Gpu, GpuVector, Method};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let mtx = std::env::temp_dir().join(format!("wgspmv-doc-{}.mtx", std::process::id()));
//! # std::fs::write(&mtx, "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 2\n2 1 1\n2 3 -1\n3 3 4\n")?;
//! let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
//! # let adapter = match pollster::block_on(instance.request_adapter(&Default::default())) {
//! #     Err(_) if std::env::var_os("CI").is_none() => return Ok(()), // no adapter here
//! #     a => a?,
//! # };
//! # /*
//! let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
//! # */
//! let (device, queue) = pollster::block_on(adapter.request_device(&Gpu::device_descriptor(&adapter)))?;
//! let gpu = Gpu::from_device(device.clone(), queue.clone());
//!
//! let a: CsrMatrix<f32> = io::read_matrix_market(&mtx)?;
//! let plan = gpu.prepare(&a, Method::Auto)?;
//! println!("{}", plan.report()); // what Auto chose, and why
//! let x = GpuVector::from_slice(&gpu, &[1.0f32, 2.0, 3.0])?;
//! let mut y = GpuVector::filled(&gpu, 3, 0.0f32)?;
//!
//! // SpMV recorded into the app's encoder, then the app's own copy of y.
//! let mine = device.create_buffer(&wgpu::BufferDescriptor {
//!     label: Some("app's y"),
//!     size: 12,
//!     usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
//!     mapped_at_creation: false,
//! });
//! let mut encoder = device.create_command_encoder(&Default::default());
//! plan.record(&mut encoder, &x, &mut y)?;
//! encoder.copy_buffer_to_buffer(y.buffer(), 0, &mine, 0, 12);
//! queue.submit([encoder.finish()]);
//! let mine = GpuVector::<f32>::from_buffer(&gpu, mine, 3)?;
//! assert_eq!(mine.read()?, vec![2.0, -2.0, 12.0]);
//!
//! // A plan is shared between threads; each thread brings its own output.
//! std::thread::scope(|s| {
//!     for _ in 0..2 {
//!         s.spawn(|| -> wgspmv::Result<()> {
//!             let mut y = GpuVector::filled(&gpu, 3, f32::NAN)?;
//!             plan.run(&x, &mut y)?;
//!             assert_eq!(y.read()?, vec![2.0, -2.0, 12.0]);
//!             Ok(())
//!         });
//!     }
//! });
//! # std::fs::remove_file(&mtx)?;
//! # Ok(()) }
//! ```
//!
//! # Choosing the adapter
//!
//! [`Gpu::new`] takes wgpu's high-performance adapter. On a laptop, `WGPU_POWER_PREF=low` picks
//! the integrated GPU; `WGSPMV_ADAPTER=intel` (part of the adapter's name) or `nvidia/vulkan`
//! (name and backend) picks one by name, and `WGPU_BACKEND=vulkan|metal|dx12|gl` limits the
//! backends. [`GpuInfo`]'s `chosen_because` says which rule applied. In headless CI, Mesa's
//! lavapipe (`apt-get install mesa-vulkan-drivers libvulkan1`) is a Vulkan adapter on the CPU;
//! without it, Mesa's GL driver (llvmpipe) is found through the GL backend.
//!
//! # Features
//!
//! - `gzip` (default): read gzipped Matrix Market files.
//! - `sprs`, `nalgebra-sparse`, `faer`: `TryFrom` conversions into [`CsrMatrix`] (and back for
//!   the first two).
//! - `testing`: the synthetic suite and the f64 CPU reference.
//! - `cli`: the `wgspmv` command (`cargo install --path . --features cli`).

#![warn(missing_docs)]

pub mod error;
pub mod gpu;
pub mod kernel;
pub mod matrix;
mod method;
pub mod methods;
pub mod plan;
mod prepare;
mod profile;
pub mod scalar;
pub mod select;
pub mod solvers;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, Result};
pub use gpu::{
    Coefficient, Coefficients, Gpu, GpuInfo, GpuMatrix, GpuOptions, GpuVector, Layout, Timer,
    Timing,
};
pub use matrix::{CsrMatrix, GpuCsr, RowStats};
pub use method::Method;
pub use methods::{BuildOn, CallerBuffers, LanePolicy, PlanOptions};
pub use plan::{Report, SetupSplit, SpmvPlan};
pub use scalar::Scalar;
/// wgpu, re-exported so that an application can match the version this crate uses.
pub use wgpu;

/// The WGSL sources, for validation and inspection (no GPU needed).
pub mod shaders {
    pub use crate::kernel::{Kernel, LaneMode, Variant, LANE_WIDTHS, WORKGROUP_SIZES};
    pub use crate::methods::all_kernels;
}

/// Locks `m`, also after a thread panicked while holding it: every value behind this crate's
/// locks (caches, pools, reports) stays valid at any step, so a panic in a caller's thread must
/// not make the `Gpu` or a plan unusable for the others.
pub(crate) fn lock<T: ?Sized>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
