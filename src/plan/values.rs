//! Value updates in place, with no analysis and no rebuild, from the host or from a GPU buffer:
//! * a plan whose format holds the values in runs of CSR order (CSR itself, CMRS with one row
//!   per strip, the speculative method's quads, the long-row pass) keeps where each run lies and
//!   copies the new values into them;
//! * a format that reorders them (CMRS strips) keeps, for each stored value, the CSR entry it
//!   came from (4 bytes each, on the host; uploaded at the first update) and gathers;
//!   SURAA's rows, rearranged by length, are gathered the same way, their sources made on the
//!   GPU at the first update from its permutation and sorted row pointers;
//! * BCCOO's blocks are gathered the same way, their sources made at the first update by
//!   building the format once more over entry numbers (or kept from the GPU build); its kernels
//!   skip +0 (fill and padding), so the gather stores a zero value as -0, as the builds do, and
//!   any new pattern of zeros is taken.

use super::SpmvPlan;
use crate::gpu::recorder::Recorder;
use crate::gpu::DeviceBuffer;
use crate::{Error, Result, Scalar};
use std::sync::Arc;

/// `len` values of CSR entries `src..src + len`, at element `dst` of `buffer`.
#[derive(Clone, Debug)]
pub(crate) struct ValueRun {
    pub buffer: Arc<DeviceBuffer>,
    pub dst: u64,
    pub src: u64,
    pub len: u64,
}

/// A buffer of the format filled by a gather: element `i` is CSR entry `sources[i]`, or 0 where
/// that is [`NONE`] (padding).
pub(crate) struct GatherPart {
    pub buffer: Arc<DeviceBuffer>,
    /// `sources` and the CSR entries they read: given at construction (the count and range
    /// alone where the map is on the GPU), or made by `make` at the first update.
    sources: std::sync::OnceLock<Sources>,
    make: Option<SourceMaker>,
    /// Makes `on_gpu` at the first update, on the GPU.
    make_on_gpu: Option<GpuSourceMaker>,
    /// `sources` on the GPU, uploaded (or made there) at the first update.
    pub on_gpu: std::sync::OnceLock<Arc<DeviceBuffer>>,
}

/// What a gather reads: `count` elements' sources (on the host unless the format was built on
/// the GPU, which holds them in `GatherPart::on_gpu`), and the range of CSR entries they read
/// (empty for padding only).
struct Sources {
    host: Vec<u32>,
    count: usize,
    range: std::ops::Range<u64>,
}

/// Makes a gather's `sources` when they are first needed.
pub(crate) type SourceMaker = Box<dyn Fn() -> Result<Vec<u32>> + Send + Sync>;

/// Makes a gather's `sources` on the GPU when they are first needed: the work is submitted at
/// once, so an update recorded after it (into a caller's encoder too) runs after it.
pub(crate) type GpuSourceMaker = Box<dyn Fn() -> Result<DeviceBuffer> + Send + Sync>;

impl std::fmt::Debug for GatherPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatherPart")
            .field("elements", &self.sources.get().map(|s| s.count))
            .finish()
    }
}

/// A padding element of a gathered buffer.
pub(crate) const NONE: u32 = u32::MAX;

fn with_range(sources: Vec<u32>) -> Sources {
    let live = sources.iter().filter(|&&s| s != NONE);
    let range = match (live.clone().min(), live.max()) {
        (Some(&lo), Some(&hi)) => lo as u64..hi as u64 + 1,
        _ => 0..0,
    };
    Sources {
        count: sources.len(),
        host: sources,
        range,
    }
}

impl GatherPart {
    pub(crate) fn new(buffer: Arc<DeviceBuffer>, sources: Vec<u32>) -> Arc<Self> {
        Arc::new(Self {
            buffer,
            sources: std::sync::OnceLock::from(with_range(sources)),
            make: None,
            make_on_gpu: None,
            on_gpu: Default::default(),
        })
    }

    /// A part whose `count` sources a GPU build wrote into `sources`, reading CSR entries
    /// `range`.
    pub(crate) fn on_gpu(
        buffer: Arc<DeviceBuffer>,
        sources: Arc<DeviceBuffer>,
        count: usize,
        range: std::ops::Range<u64>,
    ) -> Arc<Self> {
        Self::mapped_on_gpu(
            buffer,
            (count, range),
            std::sync::OnceLock::from(sources),
            None,
        )
    }

    /// A part whose map lives on the GPU: `count` sources reading CSR entries `range`, in
    /// `on_gpu` or made there by `make` at the first update.
    fn mapped_on_gpu(
        buffer: Arc<DeviceBuffer>,
        (count, range): (usize, std::ops::Range<u64>),
        on_gpu: std::sync::OnceLock<Arc<DeviceBuffer>>,
        make: Option<GpuSourceMaker>,
    ) -> Arc<Self> {
        Arc::new(Self {
            buffer,
            sources: std::sync::OnceLock::from(Sources {
                host: Vec::new(),
                count,
                range,
            }),
            make: None,
            make_on_gpu: make,
            on_gpu,
        })
    }

    /// A part whose sources are made at the first update, so a plan that never updates never
    /// pays for them.
    pub(crate) fn lazy(buffer: Arc<DeviceBuffer>, make: SourceMaker) -> Arc<Self> {
        Arc::new(Self {
            buffer,
            sources: Default::default(),
            make: Some(make),
            make_on_gpu: None,
            on_gpu: Default::default(),
        })
    }

    /// A part whose `count` sources, reading CSR entries `range`, `make` writes on the GPU at
    /// the first update.
    pub(crate) fn lazy_on_gpu(
        buffer: Arc<DeviceBuffer>,
        count: usize,
        range: std::ops::Range<u64>,
        make: GpuSourceMaker,
    ) -> Arc<Self> {
        Self::mapped_on_gpu(buffer, (count, range), Default::default(), Some(make))
    }

    fn sources(&self) -> Result<&Sources> {
        if let Some(s) = self.sources.get() {
            return Ok(s);
        }
        let make = self
            .make
            .as_ref()
            .expect("a part without sources has a maker");
        let made = with_range(make()?);
        Ok(self.sources.get_or_init(|| made))
    }
}

/// Where a plan's format keeps the matrix's values.
#[derive(Clone, Debug)]
pub(crate) enum ValueLayout {
    /// Runs in CSR order that together hold every value (some possibly twice).
    Runs(Vec<ValueRun>),
    /// Buffers filled by a gather (and runs beside them, e.g. the long-row pass).
    Gather(Vec<Arc<GatherPart>>, Vec<ValueRun>),
    /// BCCOO's blocks, filled by a gather that keeps a zero value as -0 (its kernels skip +0,
    /// the fill of its blocks).
    Blocks(Vec<Arc<GatherPart>>),
    /// No update in place (the format reorders the values, say); the reason, for the error.
    Fixed(&'static str),
}

impl ValueLayout {
    /// See [`SpmvPlan::keep_out_of_pool`].
    pub(crate) fn keep_out_of_pool(&self) {
        let (parts, runs): (&[Arc<GatherPart>], &[ValueRun]) = match self {
            ValueLayout::Runs(runs) => (&[], runs),
            ValueLayout::Gather(parts, runs) => (parts, runs),
            ValueLayout::Blocks(parts) => (parts, &[]),
            ValueLayout::Fixed(_) => (&[], &[]),
        };
        for r in runs {
            r.buffer.keep_out_of_pool();
        }
        for p in parts {
            p.buffer.keep_out_of_pool();
            if let Some(b) = p.on_gpu.get() {
                b.keep_out_of_pool();
            }
        }
    }
}

impl Default for ValueLayout {
    fn default() -> Self {
        ValueLayout::Fixed("the format reorders the values")
    }
}

impl<T: Scalar> SpmvPlan<T> {
    /// The runs a value update writes, once the format (and the plan of Aᵀ, if any) is known to
    /// take the update: an error before anything is written.
    fn updatable_runs(&self) -> Result<&[ValueRun]> {
        if let Some(t) = &self.transposed {
            t.plan.value_runs()?;
        }
        self.value_runs()
    }

    pub(super) fn value_runs(&self) -> Result<&[ValueRun]> {
        match &self.values {
            ValueLayout::Runs(runs) | ValueLayout::Gather(_, runs) => Ok(runs),
            ValueLayout::Blocks(_) => Ok(&[]),
            ValueLayout::Fixed(why) => Err(Error::Unsupported {
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
        let _turn = self.gpu.gl_turn();
        self.check_own_update()?;
        if values.len() != self.nnz {
            return Err(Error::DimensionMismatch {
                what: "values",
                expected: self.nnz,
                actual: values.len(),
            });
        }
        let runs = self.updatable_runs()?;
        let s = std::mem::size_of::<T>() as u64;
        let parts = self.gather_parts();
        if parts.is_some() || self.transposed.is_some() {
            // Gathered on the GPU from the new values, uploaded once.
            let staged = self.gpu.storage_buffer(
                "new values",
                bytemuck::cast_slice(values),
                wgpu::BufferUsages::empty(),
            )?;
            let mut encoder = self
                .gpu
                .device()
                .create_command_encoder(&Default::default());
            if let Some(parts) = parts {
                self.record_gathers(&mut encoder, parts, &staged)?;
            }
            self.record_transposed_update(&mut encoder, &staged)?;
            self.gpu.scoped("submitting a value update", || {
                self.gpu.submit([encoder.finish()]);
            })?;
        }
        self.gpu.scoped("updating values", || {
            for r in runs {
                let src = &values[r.src as usize..(r.src + r.len) as usize];
                if !src.is_empty() {
                    self.gpu
                        .write_buffer(&r.buffer, r.dst * s, bytemuck::cast_slice(src));
                }
            }
        })
    }

    /// The buffers a gather refills, if the format has any.
    fn gather_parts(&self) -> Option<&[Arc<GatherPart>]> {
        match &self.values {
            ValueLayout::Gather(parts, _) | ValueLayout::Blocks(parts) => Some(parts),
            _ => None,
        }
    }

    /// Records the gathers of `parts` from `values` (every new value in CSR order, a storage
    /// buffer of this plan's device), as words; BCCOO's blocks keep a zero as -0.
    fn record_gathers(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        parts: &[Arc<GatherPart>],
        values: &wgpu::Buffer,
    ) -> Result<()> {
        let marks_zeros = matches!(self.values, ValueLayout::Blocks(_));
        for part in parts {
            let Sources { host, count, range } = part.sources()?;
            let (count, range) = (*count as u32, range.clone());
            if count == 0 {
                continue;
            }
            let sources = match part.on_gpu.get() {
                Some(b) => b.clone(),
                None => {
                    let b = match &part.make_on_gpu {
                        Some(make) => make()?,
                        None => self.gpu.storage_buffer(
                            "gather sources",
                            bytemuck::cast_slice(host),
                            wgpu::BufferUsages::empty(),
                        )?,
                    };
                    // Made after the plan's buffers were kept out of the pool, and recorded
                    // into the caller's encoder as they were.
                    b.keep_out_of_pool();
                    part.on_gpu.get_or_init(|| Arc::new(b)).clone()
                }
            };
            self.record_gather(
                encoder,
                &sources,
                values,
                &part.buffer,
                (count, range),
                marks_zeros,
            )?;
        }
        Ok(())
    }

    /// Records `dst[i] = values[sources[i]]` for `count` elements whose sources lie in CSR
    /// entries `range` (the range is bound from an aligned offset), zeros as -0 with
    /// `marks_zeros`.
    pub(super) fn record_gather(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        sources: &wgpu::Buffer,
        values: &wgpu::Buffer,
        dst: &wgpu::Buffer,
        (count, range): (u32, std::ops::Range<u64>),
        marks_zeros: bool,
    ) -> Result<()> {
        let s = std::mem::size_of::<T>() as u64;
        let wg = 256u32;
        let pipeline = crate::gpu::recorder::pipeline_of(
            &self.gpu,
            crate::kernel::GATHER,
            vec![
                ("WG_SIZE", wg),
                ("VAL_WORDS", (s / 4) as u32),
                ("MARK_ZEROS", marks_zeros as u32),
            ],
        )?;
        let align = self.gpu.info().limits.min_storage_buffer_offset_alignment as u64;
        let offset = (range.start * s) / align * align;
        let size = (range.end * s - offset).max(s).next_multiple_of(4);
        let params: [u32; 2] = [count, (offset / s) as u32];
        let uniform = self
            .gpu
            .uniform_buffer("gather params", bytemuck::cast_slice(&params));
        self.gpu.scoped("recording a gather", || {
            let values = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: values,
                offset,
                size: std::num::NonZeroU64::new(size.min(values.size() - offset)),
            });
            let resources = vec![
                sources.as_entire_binding(),
                values,
                dst.as_entire_binding(),
                uniform.as_entire_binding(),
            ];
            Recorder::new(&self.gpu, encoder, "gather").dispatch_pipeline(
                &pipeline,
                "gather",
                resources,
                count.div_ceil(wg),
            );
        })
    }

    /// Records into `encoder` the copies that replace the matrix's values with those in
    /// `values` (CSR order, starting `offset` bytes in; the buffer needs `COPY_SRC`), for an
    /// application whose values are computed on the GPU. The update itself is not submitted; a
    /// format whose value map is made at the first update (`suraa`, `bccoo` from a host CSR)
    /// submits that work here, ahead of the caller's encoder.
    pub fn record_update_values(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        values: &wgpu::Buffer,
        offset: u64,
    ) -> Result<()> {
        let _turn = self.gpu.gl_turn();
        self.check_own_update()?;
        self.keep_out_of_pool();
        self.record_update(encoder, values, offset)
    }

    /// [`record_update_values`](Self::record_update_values), without keeping the plan's buffers
    /// out of the pool (the update is submitted here).
    pub(super) fn record_update(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        values: &wgpu::Buffer,
        offset: u64,
    ) -> Result<()> {
        let runs = self.updatable_runs()?;
        let s = std::mem::size_of::<T>() as u64;
        self.check_values_buffer(values, offset)?;
        let parts = self.gather_parts();
        if parts.is_some() || self.transposed.is_some() {
            let staged = self.storage_values(encoder, values, offset)?;
            let values = staged.as_deref().unwrap_or(values);
            if let Some(parts) = parts {
                self.record_gathers(encoder, parts, values)?;
            }
            self.record_transposed_update(encoder, values)?;
        }
        self.gpu
            .scoped("recording a value update", || -> Result<()> {
                for r in runs.iter() {
                    self.gpu.record_copy(
                        encoder,
                        values,
                        offset + r.src * s,
                        &r.buffer,
                        r.dst * s,
                        r.len * s,
                    )?;
                }
                Ok(())
            })?
    }

    /// The new values as a storage buffer a kernel can read from its start: `None` for the
    /// caller's own (STORAGE usage, offset 0: nothing to allocate), else a copy recorded into
    /// `encoder`.
    fn storage_values(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        values: &wgpu::Buffer,
        offset: u64,
    ) -> Result<Option<DeviceBuffer>> {
        if offset == 0 && values.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Ok(None);
        }
        let bytes = self.nnz as u64 * std::mem::size_of::<T>() as u64;
        let staged =
            self.gpu
                .storage_overwritten("new values", bytes, wgpu::BufferUsages::empty())?;
        // Dropped before the encoder is submitted.
        staged.keep_out_of_pool();
        self.gpu.scoped("recording a value copy", || {
            self.gpu
                .record_copy(encoder, values, offset, &staged, 0, bytes)
        })??;
        Ok(Some(staged))
    }

    /// Checks that `values` holds the new values from `offset` and can be copied from.
    fn check_values_buffer(&self, values: &wgpu::Buffer, offset: u64) -> Result<()> {
        let s = std::mem::size_of::<T>() as u64;
        let needed = offset.checked_add(self.nnz as u64 * s);
        if needed.is_none_or(|n| n > values.size()) {
            // Whole elements after the offset; the message counts elements, not bytes.
            return Err(Error::DimensionMismatch {
                what: "values buffer (after the offset)",
                expected: self.nnz,
                actual: (values.size().saturating_sub(offset) / s) as usize,
            });
        }
        if !values.usage().contains(wgpu::BufferUsages::COPY_SRC) || !offset.is_multiple_of(4) {
            return Err(Error::InvalidParameter {
                name: "values",
                value: format!("{:?} at offset {offset}", values.usage()),
                reason: "a buffer with COPY_SRC usage, read from a multiple of 4 bytes".into(),
            });
        }
        self.gpu.check_device("values", values)
    }

    /// [`record_update_values`](Self::record_update_values), submitted.
    pub fn update_values_from_buffer(&self, values: &wgpu::Buffer, offset: u64) -> Result<()> {
        let _turn = self.gpu.gl_turn();
        self.check_own_update()?;
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        self.record_update(&mut encoder, values, offset)?;
        self.gpu.scoped("submitting a value update", || {
            self.gpu.submit([encoder.finish()]);
        })
    }

    /// Tells the plan where its format keeps the values (methods call this from `prepare`).
    pub(crate) fn with_values(mut self, values: ValueLayout) -> Self {
        self.values = values;
        self
    }
}
