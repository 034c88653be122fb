//! `cmrs` from a CSR matrix in the caller's GPU buffers, built on the GPU
//! (shaders/cmrs/build.wgsl; [`CmrsMatrix::from_csr`](super::CmrsMatrix::from_csr) is its CPU
//! twin): strip pointers and the longest strip first (four bytes read back, to keep every strip
//! within the kernel's loop budget), then every entry placed in its strip, sorted by column.
//! `cmrs-padded`'s strips are arranged per lane group on the GPU too (shaders/cmrs/build_padded.wgsl:
//! its plan per strip, eight bytes read back to size the format, then the placing). The separate
//! row-in-strip layout and strips that need the long-row passes are built on the host.

use super::{Choice, RowLayout};
use crate::gpu::recorder::submit_pass;
use crate::gpu::Bind;
use crate::gpu::Gpu;
use crate::matrix::{Checked, GpuCsr};
use crate::methods::common::chunk_limit;
use crate::methods::{Method, PlanOptions};
use crate::plan::values::{GatherPart, ValueLayout};
use crate::plan::{Binding, Phases, SpmvPlan};
use crate::{CsrMatrix, Result, Scalar};
use rayon::prelude::*;
use std::sync::Arc;

/// Mirrors `BuildParams` in shaders/cmrs/build.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BuildParams {
    nrows: u32,
    height: u32,
    strips: u32,
    sort: u32,
}

/// Invocations of a placing workgroup (`WG` in the shader).
const BUILD_WG: u64 = 64;

/// Loop iterations one invocation of the placing pass may take: below llvmpipe's 65 535 back
/// edges, like the SpMV kernels' budget.
const BUILD_ITERATIONS: u64 = 32_768;

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
    pad: [u32; 2],
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

/// Whether every strip of `longest` entries fits the SpMV kernel's and the placing pass's loop
/// budgets (else the host build hands long rows to the long-row passes).
fn strips_fit(choice: &Choice, longest: u64) -> bool {
    // The placing pass loops over a strip's entries / BUILD_WG, each with a search per row
    // (`cmrs`, sorting by column) or a scan of the strip's row pointers (`cmrs-padded`).
    let searches = if choice.padded {
        choice.height as u64 + 1
    } else {
        (choice.height as u64) * (64 - longest.leading_zeros() as u64 + 1)
    };
    longest <= choice.strip_budget() && longest.div_ceil(BUILD_WG) * searches <= BUILD_ITERATIONS
}

/// Whether a host CSR `a` is better uploaded as it is and built on the GPU: the GPU build can
/// make this plan (decided from the host's row pointers, so no upload is wasted; height 1 is the
/// CSR vector kernel's copies).
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
    let h = choice.height as usize;
    let rp = a.row_ptr();
    let longest = (0..nrows.div_ceil(h))
        .into_par_iter()
        .map(|s| (rp[((s + 1) * h).min(nrows)] - rp[s * h]) as u64)
        .max()
        .unwrap_or(0);
    Ok(strips_fit(&choice, longest))
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
        return Ok(Some(g.plan(gpu, a, method, details)));
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
    let strip_ptr = Arc::new(gpu.storage_zeroed("strip_ptr", (strips as u64 + 1) * 4, none)?);
    let col_words = Arc::new(gpu.storage_zeroed("col_words", nnz as u64 * 4, none)?);
    let values = Arc::new(gpu.storage_zeroed("values", nnz as u64 * s, none)?);
    let sources = Arc::new(gpu.storage_zeroed("gather sources", nnz as u64 * 4, none)?);
    let longest = gpu.storage_zeroed("cmrs longest strip", 4, none)?;
    let params = BuildParams {
        nrows: nrows as u32,
        height: choice.height,
        strips: strips as u32,
        sort: choice.layout.sort_by_column as u32,
    };
    let params = gpu.uniform_buffer("cmrs build", bytemuck::bytes_of(&params));
    let buffers: [&dyn Bind; 9] = [
        a.row_ptr,
        a.col_idx,
        a.values,
        &*strip_ptr,
        &*col_words,
        &*values,
        &*sources,
        &longest,
        &params,
    ];
    let val_words = ("VAL_WORDS", (s / 4) as u32);
    let pass = |pass: u32, groups: u64| {
        submit_pass(gpu, "cmrs build", "building cmrs on the GPU", |r| {
            let overrides = vec![("PASS", pass), val_words];
            r.dispatch(
                super::kernels::CMRS_BUILD,
                overrides,
                &buffers,
                groups as u32,
            )
        })
    };
    pass(0, (strips as u64 + 1).div_ceil(BUILD_WG))?;
    let longest: u64 = gpu.read_buffer::<u32>(&longest, 1)?[0] as u64;
    if !strips_fit(&choice, longest) {
        return Ok(None);
    }
    phases.analysis();
    pass(1, strips as u64)?;
    gpu.wait()?;
    phases.build();
    let pipeline = choice.pipeline::<T>(gpu, RowLayout::Packed)?;
    let gather = GatherPart::on_gpu(values.clone(), sources, nnz, 0..nnz as u64);
    let arrays = [
        Binding::Owned(strip_ptr),
        Binding::Owned(col_words),
        Binding::Owned(values),
        // The kernel reads no row-in-strip words when they are packed.
        Binding::Owned(Arc::new(gpu.storage_zeroed("row_in_strip", 4, none)?)),
    ];
    let stages = if strips == 0 {
        Vec::new()
    } else {
        vec![choice.stage(gpu, &pipeline, &(0..strips), nrows, arrays)]
    };
    let details = choice.details(
        method,
        RowLayout::Packed,
        0,
        strips as i64 * 4 - (nrows as i64) * 4,
        1,
        0,
    );
    let mut plan = SpmvPlan::new(gpu, (nrows, ncols, nnz), stages, method.name(), details)
        .with_values(ValueLayout::Gather(vec![gather], Vec::new()));
    plan.report_mut().split = phases.split;
    Ok(Some(plan))
}

/// `cmrs-padded` from GPU buffers: each strip's rows dealt to the team's lane groups, the strip
/// lengths scanned into pointers, the padded total and the longest strip read back (8 bytes,
/// to size the format and keep strips within the loop budgets), then every entry placed.
fn prepare_padded<T: Scalar>(
    gpu: &Gpu,
    a: &GpuCsr,
    choice: &Choice,
    method: Method,
    opts: &PlanOptions,
) -> Result<Option<SpmvPlan<T>>> {
    let (nrows, ncols, nnz) = (a.nrows, a.ncols, a.nnz);
    let s = std::mem::size_of::<T>() as u64;
    let h = choice.height as usize;
    let strips = nrows.div_ceil(h);
    let mut phases = Phases::start(gpu);
    let none = wgpu::BufferUsages::empty();
    let words = |label, n: u64| gpu.storage_zeroed(label, n * 4, none);
    let strip_ptr = Arc::new(words("strip_ptr", strips as u64 + 1)?);
    // The longest strip, the padded total, then each row's group and start in it.
    let plan = words("cmrs-padded plan", 2 + 2 * nrows as u64)?;
    let block_sums = words(
        "cmrs-padded scan blocks",
        (strips as u64 + 1).div_ceil(crate::gpu::recorder::SCAN_BLOCK as u64),
    )?;
    let params = |items: u32| {
        let p = PaddedParams {
            nrows: nrows as u32,
            height: choice.height,
            strips: strips as u32,
            team: choice.team,
            buf_cols: choice.buf_cols,
            items,
            pad: [0; 2],
        };
        gpu.uniform_buffer("cmrs-padded build", bytemuck::bytes_of(&p))
    };
    let val_words = ("VAL_WORDS", (s / 4) as u32);
    let record = |buffers: &[&dyn Bind], passes: &[(u32, u64)], scan: bool| {
        submit_pass(
            gpu,
            "cmrs-padded build",
            "building cmrs-padded on the GPU",
            |r| {
                for (i, &(pass, groups)) in passes.iter().enumerate() {
                    if scan && i == 1 {
                        r.scan(&strip_ptr, &block_sums, strips as u32 + 1)?;
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
    let first = params(0);
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
    )?;
    let [longest, items] =
        <[u32; 2]>::try_from(gpu.read_buffer::<u32>(&plan, 2)?).expect("two words read back");
    let items = items as u64;
    if !strips_fit(choice, longest as u64) || items * s.max(4) > chunk_limit(gpu, opts) {
        return Ok(None);
    }
    phases.analysis();
    let col_words = Arc::new(words("col_words", items)?);
    let values = Arc::new(gpu.storage_zeroed("values", items * s, none)?);
    let sources = Arc::new(words("gather sources", items)?);
    let second = params(items as u32);
    record(
        &[
            a.row_ptr, a.col_idx, a.values, &strip_ptr, &plan, &col_words, &values, &sources,
            &second,
        ],
        &[(2, items.div_ceil(BUILD_WG)), (3, strips as u64)],
        false,
    )?;
    gpu.wait()?;
    phases.build();
    let pipeline = choice.pipeline::<T>(gpu, RowLayout::Packed)?;
    let gather = GatherPart::on_gpu(values.clone(), sources, items as usize, 0..nnz as u64);
    let arrays = [
        Binding::Owned(strip_ptr),
        Binding::Owned(col_words),
        Binding::Owned(values),
        // The kernel reads no row-in-strip words when they are packed.
        Binding::Owned(Arc::new(words("row_in_strip", 1)?)),
    ];
    let stages = if strips == 0 {
        Vec::new()
    } else {
        vec![choice.stage(gpu, &pipeline, &(0..strips), nrows, arrays)]
    };
    let padding = items as usize - nnz;
    let overhead = padding as i64 * (4 + s as i64) + (strips as i64 - nrows as i64) * 4;
    let details = choice.details(method, RowLayout::Packed, padding, overhead, 1, 0);
    let mut plan = SpmvPlan::new(gpu, (nrows, ncols, nnz), stages, method.name(), details)
        .with_values(ValueLayout::Gather(vec![gather], Vec::new()));
    plan.report_mut().split = phases.split;
    Ok(Some(plan))
}
