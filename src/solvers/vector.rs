//! Vector operations on [`GpuVector`] with the solvers' kernels: a dot product summed in a fixed
//! order (the same bits every run), read back or written into α or β of a [`Coefficients`]
//! buffer without a read back, and `y = α·x + β·y` with α and β from the host or from such a
//! buffer, so that one operation's result feeds the next product or update on the GPU.

use super::common::{check_length_and_device, Workspace};
use crate::gpu::{Coefficient, Coefficients, GpuVector};
use crate::{Error, Result, Scalar};

impl<T: Scalar> GpuVector<T> {
    /// Checks that `other` matches this vector's length and device.
    fn check_pair(&self, other: &GpuVector<T>, what: &'static str) -> Result<()> {
        check_length_and_device(&self.gpu, self.len(), other, what)
    }

    /// `self · other`, summed in a fixed order on the GPU (the same bits every run and on
    /// every adapter of one kind), read back.
    pub fn dot(&self, other: &GpuVector<T>) -> Result<T> {
        self.check_pair(other, "other")?;
        let _turn = self.gpu.gl_turn();
        let w = Workspace::<T>::for_vectors(&self.gpu, self.len())?;
        let enc = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        let (a, b) = (&self.buffer, &other.buffer);
        Ok(T::from_f64(w.dots(enc, [a, b, a, b])?.0))
    }

    /// Records `self · other` into `encoder`, written into α or β of `out` when the work runs
    /// (no read back: a product run with `out` then reads it, see [`Coefficients`]).
    pub fn record_dot(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        other: &GpuVector<T>,
        out: &Coefficients<T>,
        which: Coefficient,
    ) -> Result<()> {
        self.check_pair(other, "other")?;
        if out.gpu().inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice {
                what: "coefficients",
            });
        }
        let _turn = self.gpu.gl_turn();
        let w = Workspace::<T>::for_vectors(&self.gpu, self.len())?;
        let (a, b) = (&self.buffer, &other.buffer);
        let dot = w.dot([a, b, a, b], false)?;
        let slot = match which {
            Coefficient::Alpha => 0,
            Coefficient::Beta => 1,
        };
        let sum = w.reduce_into(out.buffer(), slot)?;
        let mut pass = encoder.begin_compute_pass(&Default::default());
        dot.dispatch(&mut pass, w.dot_grid);
        sum.dispatch(&mut pass, [1, 1]);
        Ok(())
    }

    /// Records `self = α·x + β·self` into `encoder`, α and β read from `coeffs` when the work
    /// runs. With β = 0, `self` is not read (it may hold NaN). `x` must be another buffer.
    pub fn record_axpby_with(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        coeffs: &Coefficients<T>,
        x: &GpuVector<T>,
    ) -> Result<()> {
        self.record_update(encoder, coeffs, Some(x), 0)
    }

    /// Records `self = self ⊙ x` (elementwise; a diagonal scaling) into `encoder`.
    pub fn record_mul(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        x: &GpuVector<T>,
    ) -> Result<()> {
        let one = Coefficients::new(&self.gpu, T::from_f64(1.0), T::from_f64(0.0))?;
        self.record_update(encoder, &one, Some(x), 1)
    }

    /// Records `self = α·self` into `encoder`, α read from `coeffs` when the work runs.
    pub fn record_scale_with(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        coeffs: &Coefficients<T>,
    ) -> Result<()> {
        self.record_update(encoder, coeffs, None, 2)
    }

    /// `self = α·x + β·self` on the GPU (submitted; see
    /// [`record_axpby_with`](Self::record_axpby_with)). `axpby(1, x, 0)` copies `x`.
    pub fn axpby(&mut self, alpha: T, x: &GpuVector<T>, beta: T) -> Result<()> {
        let coeffs = Coefficients::new(&self.gpu, alpha, beta)?;
        self.submit_update(&coeffs, Some(x), 0)
    }

    /// `self = self ⊙ x` (elementwise) on the GPU, submitted.
    pub fn mul(&mut self, x: &GpuVector<T>) -> Result<()> {
        let one = Coefficients::new(&self.gpu, T::from_f64(1.0), T::from_f64(0.0))?;
        self.submit_update(&one, Some(x), 1)
    }

    /// `self = α·self` on the GPU, submitted.
    pub fn scale(&mut self, alpha: T) -> Result<()> {
        let coeffs = Coefficients::new(&self.gpu, alpha, T::from_f64(0.0))?;
        self.submit_update(&coeffs, None, 2)
    }

    /// `op` (see shaders/solvers/axpby.wgsl) recorded and submitted.
    fn submit_update(
        &mut self,
        coeffs: &Coefficients<T>,
        x: Option<&GpuVector<T>>,
        op: u32,
    ) -> Result<()> {
        let gpu = self.gpu.clone();
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        self.record_update(&mut enc, coeffs, x, op)?;
        gpu.scoped("submitting an update", || {
            gpu.submit([enc.finish()]);
        })
    }

    /// Records update `op` of shaders/solvers/axpby.wgsl; without `x` (α·self) a placeholder
    /// is bound in its place.
    fn record_update(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        coeffs: &Coefficients<T>,
        x: Option<&GpuVector<T>>,
        op: u32,
    ) -> Result<()> {
        if let Some(x) = x {
            self.check_pair(x, "x")?;
            crate::gpu::check_not_aliased(&x.buffer, &self.buffer)?;
        }
        if coeffs.gpu().inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice {
                what: "coefficients",
            });
        }
        let _turn = self.gpu.gl_turn();
        let w = Workspace::<T>::for_vectors(&self.gpu, self.len())?;
        let placeholder;
        let xb = match x {
            Some(x) => &x.buffer,
            None => {
                placeholder = self
                    .gpu
                    .storage_zeroed("no x", 16, wgpu::BufferUsages::empty())?;
                &*placeholder
            }
        };
        let update = w.bound(
            crate::kernel::AXPBY,
            vec![("OP", op)],
            &[coeffs.buffer(), xb, &self.buffer, &w.len],
        )?;
        let mut pass = encoder.begin_compute_pass(&Default::default());
        update.dispatch(&mut pass, w.vector_grid);
        Ok(())
    }
}
