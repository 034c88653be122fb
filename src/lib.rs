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
//! # Where things are
//!
//! The types above are at the crate root. [`matrix::io`] reads and writes Matrix Market files;
//! [`methods`] holds each method's options (gathered in [`PlanOptions`]) and its plans' reports;
//! [`select`] is how `Method::Auto` chooses (the cost model, its profiles and
//! [`select::choose`]); [`solvers`] runs CG, BiCGStab and PageRank on the GPU;
//! [`reference`](mod@reference) is the CPU reference in f64 (SpMV, the accuracy check this
//! crate's tests use, the solvers' twins) to check GPU results against on the host.
//!
//! # Features
//!
//! - `gzip` (default): read gzipped Matrix Market files.
//! - `sprs`, `nalgebra-sparse`, `faer`: `TryFrom` conversions into [`CsrMatrix`] (and back for
//!   the first two).
//! - `testing`: the synthetic matrix suite the tests, examples and benchmarks use.
//! - `cli`: the `wgspmv` command (`cargo install --path . --features cli`).

#![warn(missing_docs)]

pub mod error;
pub mod gpu;
mod kernel;
pub mod matrix;
mod method;
pub mod methods;
pub mod plan;
mod prepare;
mod profile;
pub mod reference;
pub mod scalar;
pub mod select;
pub mod solvers;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, Result};
pub use gpu::{
    Coefficient, Coefficients, DeviceTurn, Gpu, GpuInfo, GpuMatrix, GpuOptions, GpuVector, Layout,
    Timer, Timing,
};
pub use matrix::{CsrMatrix, GpuCsr, RowStats};
pub use method::Method;
pub use methods::{BuildOn, CallerBuffers, LanePolicy, PlanOptions};
pub use plan::{Report, SetupSplit, SpmvPlan};
pub use scalar::Scalar;
/// wgpu, re-exported so that an application can match the version this crate uses.
pub use wgpu;

#[doc(hidden)]
pub mod internals {
    //! For the `wgspmv` command, the tests, benchmarks and calibration: the kernels and their
    //! WGSL, each method's host format and CPU twins, and the cost model's fitting, calibration
    //! set, built-in profiles and remembered choices. Internal modules are re-exported whole;
    //! the few items that public modules define are forwarded by a function or constant here.
    //!
    //! No stability promise: this follows the implementation and changes with it. Not needed to
    //! use the library, and hidden from its documentation.

    use crate::{CsrMatrix, GpuInfo, Method, Scalar};

    /// The kernels: WGSL assembly, variants and pipeline keys, the shared kernels.
    pub mod kernel {
        pub use crate::kernel::*;
    }

    /// Every kernel the library can dispatch, each once.
    pub fn all_kernels() -> Vec<kernel::Kernel> {
        crate::methods::all_kernels()
    }

    /// Bytes one product must move at least (see [`crate::SpmvPlan::minimal_traffic_bytes`]).
    pub fn minimal_traffic_bytes<T>(nrows: usize, ncols: usize, nnz: usize) -> u64 {
        crate::plan::minimal_traffic_bytes::<T>(nrows, ncols, nnz)
    }

    /// `bccoo` and `bccoo-plus`.
    pub mod bccoo {
        use super::*;
        /// The host build, the GPU build's twin.
        pub mod format {
            pub use crate::methods::bccoo::format::*;
        }
        /// The block size with the smallest footprint, and the four smallest.
        pub fn smallest_footprints<T: Scalar>(a: &CsrMatrix<T>) -> Vec<(u32, u32)> {
            crate::methods::bccoo::smallest_footprints(a)
        }
    }

    /// `cmrs` and `cmrs-padded`.
    pub mod cmrs {
        use super::*;
        /// The host format and the paper's traffic model.
        pub mod format {
            pub use crate::methods::cmrs::format::*;
        }
        /// Memory segment size λ of the traffic model.
        pub const SEGMENT_BYTES: f64 = crate::methods::cmrs::SEGMENT_BYTES;
        /// The default strip height for this adapter, mean row length and value size.
        pub fn default_height(info: &GpuInfo, mean_row_len: f64, value_bytes: usize) -> u32 {
            crate::methods::cmrs::default_height(info, mean_row_len, value_bytes)
        }
    }

    /// `speculative`.
    pub mod speculative {
        /// The tile geometry, the CPU twin of the GPU stage and the check stage.
        pub mod tiles {
            pub use crate::methods::speculative::tiles::*;
        }
    }

    /// `suraa`.
    pub mod suraa {
        /// The host setup, the GPU setup's twin.
        pub mod setup {
            pub use crate::methods::suraa::setup::*;
        }
        /// The GPU setup's results read back.
        pub mod gpu_setup {
            pub use crate::methods::suraa::gpu_setup::*;
        }
    }

    /// The cost model behind `Method::Auto`.
    pub mod select {
        use super::*;
        use crate::select::{Candidate, Features};
        /// The synthetic set profiles are calibrated on.
        pub mod calibration {
            pub use crate::select::calibration::*;
        }
        /// Fitting a profile from measurements.
        pub mod fit {
            pub use crate::select::fit::*;
        }
        /// Timed choices remembered in the process and in files.
        pub mod remember {
            pub use crate::select::remember::*;
        }
        pub use crate::profile::{builtin_for, BUILTIN};
        /// The model's candidates for `features`, best first (see `select::choose`).
        pub fn predict(
            profile: &crate::select::profile::Profile,
            features: &Features,
            expected_products: u64,
            on_gpu: &dyn Fn(Method) -> bool,
        ) -> Vec<Candidate> {
            crate::select::predict(profile, features, expected_products, on_gpu)
        }
    }
}

/// Locks `m`, also after a thread panicked while holding it: every value behind this crate's
/// locks (caches, pools, reports) stays valid at any step, so a panic in a caller's thread must
/// not make the `Gpu` or a plan unusable for the others.
pub(crate) fn lock<T: ?Sized>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
