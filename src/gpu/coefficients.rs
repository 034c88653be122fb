//! α and β of a product in a GPU buffer.

use super::{Gpu, GpuVector};
use crate::{Result, Scalar};

/// α and β of `y = α·A·x + β·y` in a GPU buffer, read by the product when it runs: for
/// coefficients that change every call (a product bound to them is rebound never, only their
/// two values are written) or that the GPU computes (a solver's kernels write them in place).
///
/// The buffer holds `[α, β]` as two `T` at offset 0 (WGSL `struct { alpha: T, beta: T }`), with
/// `UNIFORM | STORAGE | COPY_SRC | COPY_DST` usage, so a kernel of the application may write
/// it as a storage buffer of two elements ([`as_vector`](Self::as_vector)).
pub struct Coefficients<T> {
    vector: GpuVector<T>,
}

impl<T: Scalar> Coefficients<T> {
    /// A buffer holding `alpha` and `beta`.
    pub fn new(gpu: &Gpu, alpha: T, beta: T) -> Result<Self> {
        let _turn = gpu.gl_turn();
        gpu.check_scalar::<T>()?;
        use wgpu::util::DeviceExt;
        use wgpu::BufferUsages as U;
        let buffer = gpu.scoped("allocating coefficients", || {
            gpu.device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("wgspmv coefficients"),
                    contents: bytemuck::cast_slice(&[alpha, beta]),
                    usage: U::UNIFORM | U::STORAGE | U::COPY_SRC | U::COPY_DST,
                })
        })?;
        Ok(Self {
            vector: GpuVector::from_buffer(gpu, buffer, 2)?,
        })
    }

    /// Sets α and β for the products submitted after this call (a queue write: products
    /// already submitted, or recorded into an encoder submitted before it, keep the old ones).
    pub fn set(&self, alpha: T, beta: T) -> Result<()> {
        let gpu = &self.vector.gpu;
        let _turn = gpu.gl_turn();
        gpu.queue()
            .write_buffer(&self.vector.buffer, 0, bytemuck::cast_slice(&[alpha, beta]));
        Ok(())
    }

    /// Reads `(α, β)` back (waits for the work submitted before).
    pub fn read(&self) -> Result<(T, T)> {
        let v = self.vector.read()?;
        Ok((v[0], v[1]))
    }

    /// The two values as a vector `[α, β]`, for the application's own kernels and copies.
    pub fn as_vector(&self) -> &GpuVector<T> {
        &self.vector
    }

    /// The buffer (see the type's docs for its layout).
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.vector.buffer()
    }

    pub(crate) fn gpu(&self) -> &Gpu {
        &self.vector.gpu
    }
}

/// One of the two values of [`Coefficients`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coefficient {
    /// α, the first.
    Alpha,
    /// β, the second.
    Beta,
}

impl<T> std::fmt::Debug for Coefficients<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coefficients").finish_non_exhaustive()
    }
}
