//! `cmrs` from a CSR matrix in the caller's GPU buffers, built on the GPU
//! (shaders/cmrs/build.wgsl; [`CmrsMatrix::from_csr`](super::CmrsMatrix::from_csr) is its CPU
//! twin): strip pointers, the longest strip and what strips longer than the kernel's loop budget
//! leave to the long-row passes first (sixteen bytes read back with the placing chunks, to size
//! the format), then every entry placed in its strip, sorted by column. `cmrs-padded`'s strips
//! are arranged per lane group on the GPU too (shaders/cmrs/build_padded.wgsl: its plan per
//! strip, twenty bytes read back, then the placing). The rows left to the long-row passes are
//! gathered on the GPU (shaders/cmrs/build_long.wgsl) and described there
//! (`long_rows::gpu_stages`). The separate row-in-strip layout and row chunks are built on the
//! host.

use super::{Choice, RowLayout};
use crate::gpu::recorder::submit_pass;
use crate::gpu::Bind;
use crate::gpu::Gpu;
use crate::matrix::{Checked, GpuCsr};
use crate::methods::common::chunk_limit;
use crate::methods::passes::long_rows;
use crate::methods::{Method, PlanOptions};
use crate::plan::values::{GatherPart, ValueLayout};
use crate::plan::{Binding, Phases, SpmvPlan, Stage};
use crate::{CsrMatrix, Result, Scalar};
use std::sync::Arc;

/// Mirrors `BuildParams` in shaders/cmrs/build.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BuildParams {
    nrows: u32,
    height: u32,
    strips: u32,
    sort: u32,
    budget: u32,
    chunks: u32,
    pad: [u32; 2],
}

/// Mirrors `LongParams` in shaders/cmrs/build_long.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LongParams {
    nrows: u32,
    height: u32,
    strips: u32,
    budget: u32,
    entries: u32,
    strips_too: u32,
    pad: [u32; 2],
}

/// Invocations of a placing workgroup (`WG` in the shader).
const BUILD_WG: u64 = 64;

/// Mirrors `PaddedParams` in shaders/cmrs/build_padded.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PaddedParams {
    nrows: u32,
    height: u32,
    strips: u32,
    team: u32,
    buf_cols: u32,
    items: u32,
    budget: u32,
    chunks: u32,
}

/// `n` words of `buffer` from word `at`, read back.
fn read_words(gpu: &Gpu, buffer: &wgpu::Buffer, at: u64, n: u64) -> Result<Vec<u32>> {
    let got = gpu.read_ranges(&[crate::gpu::RangeRead {
        buffer,
        ranges: std::iter::once(at * 4..(at + n) * 4).collect(),
        in_place: false,
    }])?;
    Ok(bytemuck::pod_collect_to_vec(&got[0][0]))
}

/// The entries one strip may keep, as the build shaders take it.
fn budget(choice: &Choice) -> u32 {
    u32::try_from(choice.strip_budget()).unwrap_or(u32::MAX)
}

/// The rows strips leave to the long-row passes, gathered on the GPU as the host build copies
/// them out (shaders/cmrs/build_long.wgsl).
struct LongRows {
    /// Row pointers over the gathered entries (`nrows + 1`; rows the strips keep are empty).
    ptr: crate::gpu::DeviceBuffer,
    cols: Arc<crate::gpu::DeviceBuffer>,
    values: Arc<crate::gpu::DeviceBuffer>,
    /// Each gathered entry's CSR index, for value updates.
    sources: Arc<crate::gpu::DeviceBuffer>,
    block_sums: crate::gpu::DeviceBuffer,
    params: crate::gpu::DeviceBuffer,
    entries: u64,
    rows: u64,
}

impl LongRows {
    /// Buffers for `entries` entries of `rows` rows (read back from the strips' first pass);
    /// `None` where there are none. With `strips_too` the gathering also writes the strips'
    /// kept entries into the strip pointers (scanned with the rest).
    fn new(
        gpu: &Gpu,
        choice: &Choice,
        (nrows, strips, value_bytes): (usize, usize, u64),
        (entries, rows): (u64, u64),
        strips_too: bool,
    ) -> Result<Option<Self>> {
        if entries == 0 {
            return Ok(None);
        }
        let none = wgpu::BufferUsages::empty();
        let words = |label, n: u64| gpu.storage_zeroed(label, n * 4, none);
        let params = LongParams {
            nrows: nrows as u32,
            height: choice.height,
            strips: strips as u32,
            budget: budget(choice),
            entries: entries as u32,
            strips_too: strips_too as u32,
            pad: [0; 2],
        };
        Ok(Some(Self {
            ptr: words("long-row pointers", nrows as u64 + 1)?,
            cols: Arc::new(words("long-row columns", entries)?),
            values: Arc::new(gpu.storage_zeroed("long-row values", entries * value_bytes, none)?),
            sources: Arc::new(words("long-row sources", entries)?),
            block_sums: words(
                "long-row scan blocks",
                (nrows.max(strips) as u64 + 1).div_ceil(crate::gpu::recorder::SCAN_BLOCK as u64),
            )?,
            params: gpu.uniform_buffer("cmrs long rows", bytemuck::bytes_of(&params)),
            entries,
            rows,
        }))
    }

    /// Records the gathering: each row's gathered entries (and with `strips_too` each strip's
    /// kept entries) counted and scanned into pointers, then every entry copied.
    fn record(
        &self,
        r: &mut crate::gpu::recorder::Recorder,
        a: &GpuCsr,
        strip_ptr: &crate::gpu::DeviceBuffer,
        (strips, strips_too): (usize, bool),
        val_words: (&'static str, u32),
    ) -> Result<()> {
        let buffers: [&dyn Bind; 9] = [
            a.row_ptr,
            a.col_idx,
            a.values,
            strip_ptr,
            &*self.cols,
            &*self.values,
            &*self.sources,
            &self.ptr,
            &self.params,
        ];
        let kernel = super::kernels::CMRS_BUILD_LONG;
        let per_strip = (strips as u64 + 1).div_ceil(BUILD_WG) as u32;
        r.dispatch(kernel, vec![("PASS", 0), val_words], &buffers, per_strip)?;
        r.scan(&self.ptr, &self.block_sums, a.nrows as u32 + 1)?;
        if strips_too {
            r.scan(strip_ptr, &self.block_sums, strips as u32 + 1)?;
        }
        let per_entry = self.entries.div_ceil(BUILD_WG) as u32;
        r.dispatch(kernel, vec![("PASS", 1), val_words], &buffers, per_entry)
    }

    /// The long-row passes over the gathered rows (described on the GPU), and where value
    /// updates gather their values from.
    fn stages<T: Scalar>(
        self,
        gpu: &Gpu,
        nrows: usize,
        nnz: usize,
    ) -> Result<(Vec<Stage>, Arc<GatherPart>)> {
        let stages = long_rows::gpu_stages::<T>(
            gpu,
            (nrows, self.entries as usize),
            &self.ptr,
            [self.cols, self.values.clone()],
            0,
            self.rows,
        )?;
        let gather = GatherPart::on_gpu(
            self.values,
            self.sources,
            self.entries as usize,
            0..nnz as u64,
        );
        Ok((stages, gather))
    }
}

/// Whether the GPU build can make the plan `choice` describes (before knowing the longest strip):
/// packed rows and arrays within one binding (`cmrs-padded`'s padding is checked once known).
fn buildable<T: Scalar>(
    gpu: &Gpu,
    choice: &Choice,
    opts: &PlanOptions,
    ncols: usize,
    nnz: usize,
) -> bool {
    let s = std::mem::size_of::<T>() as u64;
    let packed = ncols < super::format::MAX_PACKED_COLS && !choice.layout.force_separate;
    packed && nnz as u64 * s.max(4) <= chunk_limit(gpu, opts)
}

/// Whether every strip of `longest` entries (without the rows it leaves to the long-row passes)
/// fits the SpMV kernel's loop budget: so it does by construction, checked all the same, as a
/// strip beyond it would be summed wrong. (The placing passes take a strip in chunks of `CHUNK`
/// entries, shaders/cmrs/build_place.wgsl, so no strip is too long for them.)
fn strips_fit(choice: &Choice, longest: u64) -> bool {
    longest <= choice.strip_budget()
}

/// Whether a host CSR `a` is better uploaded as it is and built on the GPU: the GPU build can
/// make this plan (decided before any upload; height 1 is the CSR vector kernel's copies).
pub(crate) fn builds_from_host<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
) -> Result<bool> {
    let (nrows, nnz) = (a.nrows(), a.nnz());
    let choice = Choice::new::<T>(gpu, method, opts, nnz as f64 / nrows.max(1) as f64)?;
    if choice.as_csr_vector() {
        return crate::methods::csr::builds_from_host(gpu, a, Method::CsrVector, opts);
    }
    if !buildable::<T>(gpu, &choice, opts, a.ncols(), nnz) {
        return Ok(false);
    }
    // (Strips leave rows to the long-row passes until they fit, so every strip does.)
    Ok(true)
}

pub(crate) fn prepare<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    checked: Checked,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<SpmvPlan<T>>> {
    let (nrows, ncols, nnz) = (a.nrows, a.ncols, a.nnz);
    let choice = Choice::new::<T>(gpu, method, opts, nnz as f64 / nrows.max(1) as f64)?;
    if choice.as_csr_vector() {
        let Some(g) =
            crate::methods::csr::gpu_stages::<T>(gpu, a, checked, Method::CsrVector, opts)?
        else {
            return Ok(None);
        };
        let details = format!(
            "cmrs: height 1, run as the CSR vector kernel ({})",
            g.details
        );
        return Ok(Some(g.plan(gpu, a, method, details, None)));
    }
    let s = std::mem::size_of::<T>() as u64;
    if !buildable::<T>(gpu, &choice, opts, ncols, nnz) {
        return Ok(None);
    }
    if choice.padded {
        return prepare_padded(gpu, a, &choice, method, opts);
    }
    let h = choice.height as usize;
    let strips = nrows.div_ceil(h);
    let mut phases = Phases::start(gpu);
    let none = wgpu::BufferUsages::empty();
    let words = |label, n: u64| gpu.storage_zeroed(label, n * 4, none);
    let strip_ptr = Arc::new(words("strip_ptr", strips as u64 + 1)?);
    // Each strip's placing chunks beyond its first (scanned: where its further placing
    // workgroups start), then the three counts.
    let counts = words("cmrs strip counts", strips as u64 + 4)?;
    let block_sums = words(
        "cmrs scan blocks",
        (strips as u64 + 1).div_ceil(crate::gpu::recorder::SCAN_BLOCK as u64),
    )?;
    let params = |chunks: u32| {
        let p = BuildParams {
            nrows: nrows as u32,
            height: choice.height,
            strips: strips as u32,
            sort: choice.layout.sort_by_column as u32,
            budget: budget(&choice),
            chunks,
            pad: [0; 2],
        };
        gpu.uniform_buffer("cmrs build", bytemuck::bytes_of(&p))
    };
    let first = params(0);
    let val_words = ("VAL_WORDS", (s / 4) as u32);
    // The format's arrays are not sized yet: small stand-ins for the first pass.
    let stand_ins = [
        words("stand-in", 4)?,
        words("stand-in", 4)?,
        words("stand-in", 4)?,
    ];
    submit_pass(gpu, "cmrs build", "building cmrs on the GPU", |r| {
        let buffers: [&dyn Bind; 9] = [
            a.row_ptr,
            a.col_idx,
            a.values,
            &*strip_ptr,
            &stand_ins[0],
            &stand_ins[1],
            &stand_ins[2],
            &counts,
            &first,
        ];
        let groups = (strips as u64 + 1).div_ceil(BUILD_WG) as u32;
        r.dispatch(
            super::kernels::CMRS_BUILD,
            vec![("PASS", 0), val_words],
            &buffers,
            groups,
        )?;
        r.scan(&counts, &block_sums, strips as u32 + 1)
    })?;
    let [more_chunks, longest, long_entries, long_rows] =
        <[u32; 4]>::try_from(read_words(gpu, &counts, strips as u64, 4)?)
            .expect("four words read back");
    let chunks = strips as u32 + more_chunks;
    if !strips_fit(&choice, longest as u64) {
        return Ok(None);
    }
    phases.analysis();
    let items = nnz as u64 - long_entries as u64;
    let col_words = Arc::new(words("col_words", items.max(1))?);
    let values = Arc::new(gpu.storage_zeroed("values", items.max(1) * s, none)?);
    let sources = Arc::new(words("gather sources", items.max(1))?);
    let long = LongRows::new(
        gpu,
        &choice,
        (nrows, strips, s),
        (long_entries as u64, long_rows as u64),
        true,
    )?;
    let second = params(chunks);
    submit_pass(gpu, "cmrs build", "building cmrs on the GPU", |r| {
        if let Some(l) = &long {
            l.record(r, a, &strip_ptr, (strips, true), val_words)?;
        }
        let buffers: [&dyn Bind; 9] = [
            a.row_ptr,
            a.col_idx,
            a.values,
            &*strip_ptr,
            &*col_words,
            &*values,
            &*sources,
            &counts,
            &second,
        ];
        r.dispatch(
            super::kernels::CMRS_BUILD,
            vec![("PASS", 1), val_words],
            &buffers,
            chunks,
        )
    })?;
    let built = Built {
        strip_ptr,
        col_words,
        values,
        sources,
        items,
        long,
    };
    let overhead = strips as i64 * 4 - (nrows as i64) * 4;
    plan_of(gpu, &choice, method, a, built, (0, overhead), phases).map(Some)
}

/// `cmrs-padded` from GPU buffers: each strip's rows dealt to the team's lane groups, the strip
/// lengths scanned into pointers, the padded total, the longest strip, the placing chunks and
/// what strips leave to the long-row passes read back (20 bytes, to size the format), then every
/// entry placed and the long rows gathered.
fn prepare_padded<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    choice: &Choice,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<SpmvPlan<T>>> {
    let (nrows, nnz) = (a.nrows, a.nnz);
    let s = std::mem::size_of::<T>() as u64;
    let h = choice.height as usize;
    let strips = nrows.div_ceil(h);
    let mut phases = Phases::start(gpu);
    let none = wgpu::BufferUsages::empty();
    let words = |label, n: u64| gpu.storage_zeroed(label, n * 4, none);
    let strip_ptr = Arc::new(words("strip_ptr", strips as u64 + 1)?);
    // Each strip's placing chunks beyond its first (scanned), the longest strip, the
    // padded total, the entries and rows left to the long-row passes, then each row's group and
    // start in it.
    let plan = words("cmrs-padded plan", strips as u64 + 5 + 2 * nrows as u64)?;
    let block_sums = words(
        "cmrs-padded scan blocks",
        (strips as u64 + 1).div_ceil(crate::gpu::recorder::SCAN_BLOCK as u64),
    )?;
    let params = |items: u32, chunks: u32| {
        let p = PaddedParams {
            nrows: nrows as u32,
            height: choice.height,
            strips: strips as u32,
            team: choice.team,
            buf_cols: choice.buf_cols,
            items,
            budget: budget(choice),
            chunks,
        };
        gpu.uniform_buffer("cmrs-padded build", bytemuck::bytes_of(&p))
    };
    let val_words = ("VAL_WORDS", (s / 4) as u32);
    let record =
        |buffers: &[&dyn Bind], passes: &[(u32, u64)], scan: bool, long: Option<&LongRows>| {
            submit_pass(
                gpu,
                "cmrs-padded build",
                "building cmrs-padded on the GPU",
                |r| {
                    if let Some(l) = long {
                        l.record(r, a, &strip_ptr, (strips, false), val_words)?;
                    }
                    for (i, &(pass, groups)) in passes.iter().enumerate() {
                        if scan && i == 1 {
                            r.scan(&strip_ptr, &block_sums, strips as u32 + 1)?;
                            r.scan(&plan, &block_sums, strips as u32 + 1)?;
                        }
                        let overrides = vec![("PASS", pass), val_words];
                        let kernel = super::kernels::CMRS_BUILD_PADDED;
                        r.dispatch(kernel, overrides, buffers, groups as u32)?;
                    }
                    Ok(())
                },
            )
        };
    // The format's arrays are not sized yet: small stand-ins for the first passes.
    let stand_ins = [
        words("stand-in", 4)?,
        words("stand-in", 4)?,
        words("stand-in", 4)?,
    ];
    let first = params(0, 0);
    record(
        &[
            a.row_ptr,
            a.col_idx,
            a.values,
            &strip_ptr,
            &plan,
            &stand_ins[0],
            &stand_ins[1],
            &stand_ins[2],
            &first,
        ],
        &[(0, (strips as u64 + 1).div_ceil(BUILD_WG)), (1, 1)],
        true,
        None,
    )?;
    let [more_chunks, longest, items, long_entries, long_rows] =
        <[u32; 5]>::try_from(read_words(gpu, &plan, strips as u64, 5)?)
            .expect("five words read back");
    let chunks = strips as u32 + more_chunks;
    let items = items as u64;
    if !strips_fit(choice, longest as u64) || items * s.max(4) > chunk_limit(gpu, opts) {
        return Ok(None);
    }
    phases.analysis();
    let col_words = Arc::new(words("col_words", items)?);
    let values = Arc::new(gpu.storage_zeroed("values", items * s, none)?);
    let sources = Arc::new(words("gather sources", items)?);
    let second = params(items as u32, chunks);
    let long = LongRows::new(
        gpu,
        choice,
        (nrows, strips, s),
        (long_entries as u64, long_rows as u64),
        false,
    )?;
    record(
        &[
            a.row_ptr, a.col_idx, a.values, &strip_ptr, &plan, &col_words, &values, &sources,
            &second,
        ],
        &[(2, items.div_ceil(BUILD_WG)), (3, chunks as u64)],
        false,
        long.as_ref(),
    )?;
    let padding = items as usize - (nnz - long_entries as usize);
    let overhead = padding as i64 * (4 + s as i64) + (strips as i64 - nrows as i64) * 4;
    let built = Built {
        strip_ptr,
        col_words,
        values,
        sources,
        items,
        long,
    };
    plan_of(gpu, choice, method, a, built, (padding, overhead), phases).map(Some)
}

/// A strip format built on the GPU (submitted, not yet waited for): its arrays, the number of
/// items (values and padding), and the rows its strips leave to the long-row passes.
struct Built {
    strip_ptr: Arc<crate::gpu::DeviceBuffer>,
    col_words: Arc<crate::gpu::DeviceBuffer>,
    values: Arc<crate::gpu::DeviceBuffer>,
    sources: Arc<crate::gpu::DeviceBuffer>,
    items: u64,
    long: Option<LongRows>,
}

/// The plan of a strip format built on the GPU: the strips' stage, then the long-row passes,
/// value updates gathered into both; `padding` and `overhead` (bytes against CSR) for its
/// description.
fn plan_of<T: Scalar>(
    gpu: &Gpu,
    choice: &Choice,
    method: Method,
    a: &GpuCsr,
    built: Built,
    (padding, overhead): (usize, i64),
    mut phases: Phases,
) -> Result<SpmvPlan<T>> {
    let (nrows, ncols, nnz) = (a.nrows, a.ncols, a.nnz);
    let strips = nrows.div_ceil(choice.height as usize);
    let Built {
        strip_ptr,
        col_words,
        values,
        sources,
        items,
        long,
    } = built;
    let mut gathers = vec![GatherPart::on_gpu(
        values.clone(),
        sources,
        items as usize,
        0..nnz as u64,
    )];
    let long_rows = long.as_ref().map_or(0, |l| l.rows as usize);
    let long_stages = match long {
        Some(l) => {
            let (stages, gather) = l.stages::<T>(gpu, nrows, nnz)?;
            gathers.push(gather);
            stages
        }
        None => Vec::new(),
    };
    gpu.wait()?;
    phases.build();
    let pipeline = choice.pipeline::<T>(gpu, RowLayout::Packed)?;
    let arrays = [
        Binding::Owned(strip_ptr),
        Binding::Owned(col_words),
        Binding::Owned(values),
        // The kernel reads no row-in-strip words when they are packed.
        Binding::Owned(Arc::new(gpu.storage_zeroed(
            "row_in_strip",
            4,
            wgpu::BufferUsages::empty(),
        )?)),
    ];
    let mut stages = if strips == 0 {
        Vec::new()
    } else {
        vec![choice.stage(gpu, &pipeline, &(0..strips), nrows, arrays)]
    };
    stages.extend(long_stages);
    let details = choice.details(method, RowLayout::Packed, padding, overhead, 1, long_rows);
    let mut plan = SpmvPlan::new(gpu, (nrows, ncols, nnz), stages, method.name(), details)
        .with_values(ValueLayout::Gather(gathers, Vec::new()));
    plan.report_mut().split = phases.split;
    Ok(plan)
}
