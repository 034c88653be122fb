//! `Y = α·A·X + β·Y` for dense `X` and `Y` of k columns (SpMM): the program of the plan's
//! format where it has one (its stages read each stored entry once for all k columns), else one
//! product per column through two vectors of the plan's (strided copies in and out).

use super::{CoeffSource, Operands, SpmvPlan, Stage, MAIN};
use crate::gpu::{Gpu, GpuMatrix, GpuVector};
use crate::kernel::{LaneMode, Variant, STRIDED_COPY};
use crate::{Error, Result, Scalar};
use std::sync::Arc;

/// The shape of one SpMM: the columns, and each operand's `(row step, column step)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DenseShape {
    pub k: usize,
    pub x_steps: (usize, usize),
    pub y_steps: (usize, usize),
}

/// A format's own SpMM: the stages of one product of a shape, binding `X`, `Y` and `Coeffs` as
/// an SpMV's stages bind `x`, `y` and `Coeffs`.
pub(crate) trait SpmmProgram<T>: Send + Sync {
    fn stages(&self, gpu: &Gpu, shape: DenseShape) -> Result<Vec<Stage>>;
}

/// Programs made for recent shapes, each with the id its bind groups are cached under.
pub(crate) type SpmmPrograms = std::sync::Mutex<Vec<(DenseShape, u64, Arc<Vec<Stage>>)>>;

/// The two vectors of SpMM by columns, made at its first use.
pub(crate) type SpmmScratch<T> = std::sync::Mutex<Option<Arc<(GpuVector<T>, GpuVector<T>)>>>;

/// Shapes whose stages a plan keeps.
const KEPT_SHAPES: usize = 4;

impl<T: Scalar> SpmvPlan<T> {
    /// Gives the plan its format's SpMM program.
    pub(crate) fn with_spmm(mut self, program: Arc<dyn SpmmProgram<T>>) -> Self {
        self.spmm = Some(program);
        self
    }

    /// Whether [`run_spmm`](Self::run_spmm) reads each stored entry once for all columns (a
    /// kernel of the plan's format: `csr-scalar` and `csr-vector` without row chunks), rather
    /// than running one product per column.
    pub fn has_spmm_kernel(&self) -> bool {
        self.spmm.is_some()
    }

    /// Computes `Y = A·X` for a dense `X` of `ncols` rows and `Y` of `nrows` rows with the same
    /// number of columns, each in either layout (submitted; the result stays on the GPU).
    pub fn run_spmm(&self, x: &GpuMatrix<T>, y: &mut GpuMatrix<T>) -> Result<()> {
        self.run_spmm_axpby(T::from_f64(1.0), x, T::from_f64(0.0), y)
    }

    /// Computes `Y = α·A·X + β·Y` (see [`run_spmm`](Self::run_spmm)); with β = 0, `Y` is not
    /// read.
    pub fn run_spmm_axpby(
        &self,
        alpha: T,
        x: &GpuMatrix<T>,
        beta: T,
        y: &mut GpuMatrix<T>,
    ) -> Result<()> {
        let _turn = self.gpu.gl_turn();
        let Some(shape) = self.check_spmm(x, y)? else {
            return Ok(());
        };
        if let Some((id, stages)) = self.spmm_stages(shape)? {
            let ops = Operands {
                x: x.as_vector(),
                y: y.as_vector(),
                coeffs: CoeffSource::Plan(alpha, beta),
            };
            return self
                .submit_product("running SpMM", &stages, id, &ops)
                .map(drop);
        }
        let mut enc = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        self.record_columns(&mut enc, alpha, x, beta, y, shape)?;
        self.gpu.scoped("running SpMM", || {
            self.gpu.submit([enc.finish()]);
        })
    }

    /// Records `Y = α·A·X + β·Y` into the caller's encoder (see
    /// [`run_spmm_axpby`](Self::run_spmm_axpby)).
    pub fn record_spmm_axpby(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        alpha: T,
        x: &GpuMatrix<T>,
        beta: T,
        y: &mut GpuMatrix<T>,
    ) -> Result<()> {
        let _turn = self.gpu.gl_turn();
        let Some(shape) = self.check_spmm(x, y)? else {
            return Ok(());
        };
        self.keep_out_of_pool();
        match self.spmm_stages(shape)? {
            Some((id, stages)) => {
                let ops = Operands {
                    x: x.as_vector(),
                    y: y.as_vector(),
                    coeffs: CoeffSource::Pair(alpha, beta),
                };
                let groups = self.bind(&stages, id, &ops)?;
                Self::record_stages(&stages, groups, encoder);
                Ok(())
            }
            None => self.record_columns(encoder, alpha, x, beta, y, shape),
        }
    }

    /// The shape of a product of `x` into `y`, `None` for no columns; a typed error for
    /// operands of another device, wrong rows, different columns or one buffer for both.
    fn check_spmm(&self, x: &GpuMatrix<T>, y: &GpuMatrix<T>) -> Result<Option<DenseShape>> {
        let (xv, yv) = (x.as_vector(), y.as_vector());
        if xv.gpu.inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice { what: "X" });
        }
        if yv.gpu.inner.id != self.gpu.inner.id {
            return Err(Error::WrongDevice { what: "Y" });
        }
        crate::gpu::check_not_aliased(&xv.buffer, &yv.buffer)?;
        for (what, expected, actual) in [
            ("rows of X", self.ncols, x.rows()),
            ("rows of Y", self.nrows, y.rows()),
            ("columns of Y (those of X)", x.cols(), y.cols()),
        ] {
            if expected != actual {
                return Err(Error::DimensionMismatch {
                    what,
                    expected,
                    actual,
                });
            }
        }
        if x.cols() == 0 || self.nrows == 0 {
            return Ok(None);
        }
        Ok(Some(DenseShape {
            k: x.cols(),
            x_steps: x.steps(),
            y_steps: y.steps(),
        }))
    }

    /// The format's stages for `shape` and the id their bind groups are cached under; `None`
    /// where the format has no SpMM program.
    fn spmm_stages(&self, shape: DenseShape) -> Result<Option<(u64, Arc<Vec<Stage>>)>> {
        let Some(program) = &self.spmm else {
            return Ok(None);
        };
        let mut kept = crate::lock(&self.spmm_programs);
        if let Some(i) = kept.iter().position(|(s, _, _)| *s == shape) {
            let hit = kept.remove(i);
            let found = (hit.1, hit.2.clone());
            kept.push(hit);
            return Ok(Some(found));
        }
        let stages = Arc::new(program.stages(&self.gpu, shape)?);
        // Work recorded into a caller's encoder may run after the plan is dropped: the
        // program's own buffers are never lent to another plan.
        for stage in stages.iter() {
            for b in &stage.bindings {
                if let super::Binding::Owned(buf) = b {
                    buf.keep_out_of_pool();
                }
            }
        }
        // Ids above the plan's own stages' (`MAIN`, `HOST_PATH`), never reused by this plan.
        let id = 2 + crate::gpu::next_id();
        if kept.len() == KEPT_SHAPES {
            kept.remove(0);
        }
        kept.push((shape, id, stages.clone()));
        Ok(Some((id, stages)))
    }

    /// One product per column: column j of `X` copied into a vector, multiplied into another
    /// (which holds column j of `Y` first where β ≠ 0), copied out into column j of `Y`; in one
    /// compute pass of `encoder`.
    fn record_columns(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        alpha: T,
        x: &GpuMatrix<T>,
        beta: T,
        y: &mut GpuMatrix<T>,
        shape: DenseShape,
    ) -> Result<()> {
        self.keep_out_of_pool();
        let scratch = self.spmm_scratch()?;
        let (tx, ty) = (&scratch.0, &scratch.1);
        let ops = Operands {
            x: tx,
            y: ty,
            coeffs: CoeffSource::Pair(alpha, beta),
        };
        let groups = self.bind(&self.stages, MAIN, &ops)?;
        let words = (std::mem::size_of::<T>() / 4) as u32;
        let copy = self.gpu.pipeline(&Variant::new(
            STRIDED_COPY,
            "u32",
            LaneMode::Workgroup,
            vec![("WG_SIZE", 256), ("WORDS", words)],
        ))?;
        let gpu = &self.gpu;
        // One strided copy: n elements from `src` (at, step) to `dst` (at, step).
        let copy_group =
            |src: &wgpu::Buffer, dst: &wgpu::Buffer, n: usize, from: [usize; 2], to: [usize; 2]| {
                let params: [u32; 5] = [
                    n as u32,
                    from[0] as u32,
                    from[1] as u32,
                    to[0] as u32,
                    to[1] as u32,
                ];
                let params =
                    gpu.uniform_buffer("wgspmv strided copy", bytemuck::cast_slice(&params));
                let group = gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("wgspmv strided copy"),
                    layout: &copy.get_bind_group_layout(0),
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: src.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: dst.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: params.as_entire_binding(),
                        },
                    ],
                });
                (group, gpu.grid((n as u32).div_ceil(256)))
            };
        let (xb, yb) = (&x.as_vector().buffer, &y.as_vector().buffer);
        let (xs, ys) = (shape.x_steps, shape.y_steps);
        gpu.scoped("recording SpMM by columns", || {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgspmv spmm by columns"),
                timestamp_writes: None,
            });
            let dispatch =
                |pass: &mut wgpu::ComputePass<'_>,
                 (group, [gx, gy]): (wgpu::BindGroup, [u32; 2])| {
                    pass.set_pipeline(&copy);
                    pass.set_bind_group(0, &group, &[]);
                    pass.dispatch_workgroups(gx, gy, 1);
                };
            for j in 0..shape.k {
                let (xa, ya) = (j * xs.1, j * ys.1);
                if self.ncols > 0 {
                    dispatch(
                        &mut pass,
                        copy_group(xb, &tx.buffer, self.ncols, [xa, xs.0], [0, 1]),
                    );
                }
                if beta != T::from_f64(0.0) && self.nrows > 0 {
                    dispatch(
                        &mut pass,
                        copy_group(yb, &ty.buffer, self.nrows, [ya, ys.0], [0, 1]),
                    );
                }
                Self::encode(&self.stages, &mut pass, &groups);
                if self.nrows > 0 {
                    dispatch(
                        &mut pass,
                        copy_group(&ty.buffer, yb, self.nrows, [0, 1], [ya, ys.0]),
                    );
                }
            }
        })
    }

    /// The two vectors SpMM by columns runs through (made at its first use). Products from
    /// several threads may share them: each command buffer copies in, multiplies and copies
    /// out before the next runs.
    fn spmm_scratch(&self) -> Result<Arc<(GpuVector<T>, GpuVector<T>)>> {
        let mut s = crate::lock(&self.spmm_scratch);
        if let Some(s) = &*s {
            return Ok(s.clone());
        }
        let zero = T::from_f64(0.0);
        let made = Arc::new((
            GpuVector::filled(&self.gpu, self.ncols, zero)?,
            GpuVector::filled(&self.gpu, self.nrows, zero)?,
        ));
        *s = Some(made.clone());
        Ok(made)
    }
}
