//! Vector operations on [`GpuVector`] with the solvers' kernels: a dot product summed in a fixed
//! order (the same bits every run), read back or written into α or β of a [`Coefficients`]
//! buffer without a read back, and `y = α·x + β·y` with α and β from the host or from such a
//! buffer, so that one operation's result feeds the next product or update on the GPU.

use super::common::Workspace;
use crate::gpu::{Coefficient, Coefficients, GpuVector};
use crate::{Error, Result, Scalar};

impl<T: Scalar> GpuVector<T> {
    /// Checks that `other` matches this vector's length and device.
    fn check_pair(&self, other: &GpuVector<T>, what: &'static str) -> Result<()> {
        if other.gpu.inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice { what });
        }
        if other.len() != self.len() {
            return Err(Error::DimensionMismatch {
                what,
                expected: self.len(),
                actual: other.len(),
            });
        }
        Ok(())
    }

    /// `self · other`, summed in a fixed order on the GPU (the same bits every run and on
    /// every adapter of one kind), read back.
    pub fn dot(&self, other: &GpuVector<T>) -> Result<T> {
        self.check_pair(other, "other")?;
        let _turn = self.gpu.gl_turn();
        let w = Workspace::<T>::new(&self.gpu, self.len(), 0)?;
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
        let w = Workspace::<T>::new(&self.gpu, self.len(), 0)?;
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
        self.check_pair(x, "x")?;
        if coeffs.gpu().inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice {
                what: "coefficients",
            });
        }
        crate::gpu::check_not_aliased(&x.buffer, &self.buffer)?;
        let _turn = self.gpu.gl_turn();
        let w = Workspace::<T>::new(&self.gpu, self.len(), 0)?;
        let update = w.bound(
            crate::kernel::AXPBY,
            vec![],
            &[coeffs.buffer(), &x.buffer, &self.buffer, &w.len],
        )?;
        let mut pass = encoder.begin_compute_pass(&Default::default());
        update.dispatch(&mut pass, w.vector_grid);
        Ok(())
    }

    /// `self = α·x + β·self` on the GPU (submitted; see
    /// [`record_axpby_with`](Self::record_axpby_with)).
    pub fn axpby(&mut self, alpha: T, x: &GpuVector<T>, beta: T) -> Result<()> {
        let coeffs = Coefficients::new(&self.gpu, alpha, beta)?;
        let gpu = self.gpu.clone();
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        self.record_axpby_with(&mut enc, &coeffs, x)?;
        gpu.scoped("submitting an update", || {
            gpu.submit([enc.finish()]);
        })
    }
}
