//! Products with Aᵀ. A plan prepared with [`PlanOptions::transposed`](crate::PlanOptions::transposed)
//! holds a second plan, of Aᵀ (built from the transposed CSR, on the GPU: see
//! `matrix::transpose_on_gpu`, for the method `Auto` picks for Aᵀ's own structure), and for
//! each of its entries the entry of A it holds, so that a value update of A gathers Aᵀ's new
//! values and updates that plan in the same submission.

use super::SpmvPlan;
use crate::gpu::{DeviceBuffer, GpuVector};
use crate::{Error, Result, Scalar};

/// What a plan keeps for products with Aᵀ.
pub(crate) struct Transposed<T> {
    /// The plan of Aᵀ; its own value updates are refused (they come through A's plan).
    pub plan: SpmvPlan<T>,
    /// For each entry of Aᵀ in CSR order, the entry of A it holds.
    pub sources: DeviceBuffer,
}

impl<T: Scalar> SpmvPlan<T> {
    /// Gives the plan `plan` of Aᵀ, whose entry `k` holds A's entry `sources[k]`.
    pub(crate) fn with_transposed(mut self, mut plan: SpmvPlan<T>, sources: DeviceBuffer) -> Self {
        plan.is_transpose = true;
        // Gathers into `plan` may be recorded into a caller's encoder.
        sources.keep_out_of_pool();
        self.report.transposed = Some(Box::new(plan.report().clone()));
        self.report.setup_ms += plan.report().setup_ms;
        self.transposed = Some(Box::new(Transposed { plan, sources }));
        self
    }

    /// The plan of Aᵀ: every product of a plan (`run`, `record_with`, `run_spmm`, ...) with
    /// Aᵀ, whose `x` has [`nrows`](Self::nrows) elements and `y` [`ncols`](Self::ncols). Its
    /// values follow this plan's value updates; it refuses updates of its own. An error unless
    /// the plan was prepared with [`PlanOptions::transposed`](crate::PlanOptions::transposed).
    pub fn transposed(&self) -> Result<&SpmvPlan<T>> {
        match &self.transposed {
            Some(t) => Ok(&t.plan),
            None => Err(Error::Unsupported {
                method: self.report.method,
                what: "multiply by the transpose",
                why: if self.is_transpose {
                    "this plan is itself a transpose (use the plan it came from)"
                } else {
                    "the plan was prepared without `PlanOptions::transposed`"
                },
            }),
        }
    }

    /// Computes `y = Aᵀ·x` on the GPU (see [`transposed`](Self::transposed)).
    pub fn run_transposed(&self, x: &GpuVector<T>, y: &mut GpuVector<T>) -> Result<()> {
        self.transposed()?.run(x, y)
    }

    /// Computes `y = α·Aᵀ·x + β·y` on the GPU.
    pub fn run_transposed_axpby(
        &self,
        alpha: T,
        x: &GpuVector<T>,
        beta: T,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        self.transposed()?.run_axpby(alpha, x, beta, y)
    }

    /// Records `y = Aᵀ·x` into the caller's encoder.
    pub fn record_transposed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        x: &GpuVector<T>,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        self.transposed()?.record(encoder, x, y)
    }

    /// Records `y = α·Aᵀ·x + β·y` into the caller's encoder.
    pub fn record_transposed_axpby(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        alpha: T,
        x: &GpuVector<T>,
        beta: T,
        y: &mut GpuVector<T>,
    ) -> Result<()> {
        self.transposed()?.record_axpby(encoder, alpha, x, beta, y)
    }

    /// Refuses a value update of a plan of Aᵀ held by A's plan.
    pub(crate) fn check_own_update(&self) -> Result<()> {
        if self.is_transpose {
            return Err(Error::Unsupported {
                method: self.report.method,
                what: "update their values in place",
                why: "this plan is the transpose held by another plan: update that plan",
            });
        }
        Ok(())
    }

    /// Records the update of Aᵀ's values from A's new `values` (CSR order, a storage buffer of
    /// this device bound from its start), after the format's own.
    pub(crate) fn record_transposed_update(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        values: &wgpu::Buffer,
    ) -> Result<()> {
        let Some(t) = &self.transposed else {
            return Ok(());
        };
        let s = std::mem::size_of::<T>() as u64;
        let gathered = self.gpu.storage_overwritten(
            "transposed new values",
            self.nnz as u64 * s,
            wgpu::BufferUsages::empty(),
        )?;
        // Dropped before the encoder is submitted.
        gathered.keep_out_of_pool();
        let all = (self.nnz as u32, 0..self.nnz as u64);
        self.record_gather(encoder, &t.sources, values, &gathered, all, false)?;
        t.plan.record_update(encoder, &gathered, 0)
    }
}
