//! Value updates in place: a plan whose format holds the matrix's values in runs of CSR order
//! (CSR itself, CMRS with one row per strip, the speculative method's quads, the long-row pass)
//! keeps where each run lies, and `update_values` copies new values into them, from the host or
//! from a GPU buffer, with no analysis and no rebuild. Formats that reorder values (CMRS strips,
//! BCCOO blocks, SURAA's rearranged rows) would need a gather by a permutation: not built yet.

use super::SpmvPlan;
use crate::{Error, Result, Scalar};
use std::sync::Arc;

/// `len` values of CSR entries `src..src + len`, at element `dst` of `buffer`.
#[derive(Clone, Debug)]
pub(crate) struct ValueRun {
    pub buffer: Arc<wgpu::Buffer>,
    pub dst: u64,
    pub src: u64,
    pub len: u64,
}

/// Where a plan's format keeps the matrix's values.
#[derive(Clone, Debug)]
pub(crate) enum ValueLayout {
    /// Runs in CSR order that together hold every value (some possibly twice).
    Runs(Vec<ValueRun>),
    /// Values are reordered by the format; the reason, for the error.
    Reordered(&'static str),
}

impl Default for ValueLayout {
    fn default() -> Self {
        ValueLayout::Reordered("the format reorders the values")
    }
}

impl<T: Scalar> SpmvPlan<T> {
    fn value_runs(&self) -> Result<&[ValueRun]> {
        match &self.values {
            ValueLayout::Runs(runs) => Ok(runs),
            ValueLayout::Reordered(why) => Err(Error::Unsupported {
                method: self.report.method,
                what: "update their values in place",
                why,
            }),
        }
    }

    /// Replaces the matrix's values (same pattern, `values` in CSR order, one per stored entry)
    /// without rebuilding the plan. Products submitted before run with the old values, later
    /// ones with the new. An error leaves the plan as it was.
    pub fn update_values(&self, values: &[T]) -> Result<()> {
        if values.len() != self.nnz {
            return Err(Error::DimensionMismatch {
                what: "values",
                expected: self.nnz,
                actual: values.len(),
            });
        }
        let runs = self.value_runs()?;
        let s = std::mem::size_of::<T>() as u64;
        self.gpu.scoped("updating values", || {
            for r in runs {
                let src = &values[r.src as usize..(r.src + r.len) as usize];
                if !src.is_empty() {
                    self.gpu
                        .queue()
                        .write_buffer(&r.buffer, r.dst * s, bytemuck::cast_slice(src));
                }
            }
        })
    }

    /// Records into `encoder` the copies that replace the matrix's values with those in
    /// `values` (CSR order, starting `offset` bytes in; the buffer needs `COPY_SRC`), for an
    /// application whose values are computed on the GPU. Nothing is submitted.
    pub fn record_update_values(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        values: &wgpu::Buffer,
        offset: u64,
    ) -> Result<()> {
        let runs = self.value_runs()?;
        let s = std::mem::size_of::<T>() as u64;
        let needed = offset.checked_add(self.nnz as u64 * s);
        if needed.is_none_or(|n| n > values.size()) {
            return Err(Error::DimensionMismatch {
                what: "values buffer (bytes after offset)",
                expected: self.nnz * s as usize,
                actual: values.size().saturating_sub(offset) as usize,
            });
        }
        if !values.usage().contains(wgpu::BufferUsages::COPY_SRC) || offset % 4 != 0 {
            return Err(Error::InvalidParameter {
                name: "values",
                value: format!("{:?} at offset {offset}", values.usage()),
                reason: "a buffer with COPY_SRC usage, read from a multiple of 4 bytes".into(),
            });
        }
        self.gpu.scoped("recording a value update", || {
            for r in runs.iter().filter(|r| r.len > 0) {
                encoder.copy_buffer_to_buffer(
                    values,
                    offset + r.src * s,
                    &r.buffer,
                    r.dst * s,
                    r.len * s,
                );
            }
        })
    }

    /// [`record_update_values`](Self::record_update_values), submitted.
    pub fn update_values_from_buffer(&self, values: &wgpu::Buffer, offset: u64) -> Result<()> {
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        self.record_update_values(&mut encoder, values, offset)?;
        self.gpu.scoped("submitting a value update", || {
            self.gpu.queue().submit([encoder.finish()]);
        })
    }

    /// Tells the plan where its format keeps the values (methods call this from `prepare`).
    pub(crate) fn with_values(mut self, values: ValueLayout) -> Self {
        self.values = values;
        self
    }
}
