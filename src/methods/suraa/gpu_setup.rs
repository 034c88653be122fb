//! SURAA's setup on the GPU, so that preparing a matrix costs a few SpMVs rather than a host
//! sort and an upload (the paper sorts on the GPU too, with a radix sort by key). All in one
//! submission, nothing read back:
//!
//! 1. `suraa_keys`: each row's 64-bit key (length descending, then first column) and its index;
//! 2. an LSD radix sort of the keys by 8-bit digits, as many passes as the key has bytes
//!    (`radix_count`, a u32 scan, `radix_scatter`: stable, no workgroup waits for another);
//! 3. `suraa_lengths` and the scan: exclusive prefix sums of the sorted rows' lengths;
//! 4. `suraa_plan` (one workgroup): segments, groups, classes, the dynamic kernel's planning pass
//!    and the indirect dispatch sizes; the schedule is then copied into the uniform buffer the
//!    kernels read.
//!
//! `setup.rs` is the CPU twin; `tests/integration/suraa.rs` checks that both give the same permutation and
//! schedule.

use super::setup::Schedule;
use super::{Built, ScalarWrites, SetupParams, INDIRECT_BYTES};
use crate::gpu::recorder::{pipeline_of, Recorder, SortSide};
use crate::gpu::DeviceBuffer;
use crate::gpu::Gpu;
use crate::plan::SpmvPlan;
use crate::{Error, Result, Scalar};
use std::sync::Arc;

/// Entries one workgroup of `suraa_rearrange` copies.
pub(crate) const REARRANGE_BLOCK: u32 = 256 * 8;

/// Mirrors `struct KeyParams` in shaders/suraa/keys.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct KeyParams {
    nrows: u32,
    npr_bits: u32,
    col_bits: u32,
    pad: u32,
}

/// Mirrors `struct PlanParams` in shaders/suraa/plan.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PlanParams {
    nrows: u32,
    max_child: u32,
    dynamic_min_mean: u32,
    vector_min_mean: u32,
    lanes: u32,
    workgroup_size: u32,
    dynamic_chunk: u32,
    max_dim: u32,
}

/// Bits needed to hold `v`.
fn bits(v: u64) -> u32 {
    64 - v.leading_zeros()
}

fn val_words<T: Scalar>() -> Vec<(&'static str, u32)> {
    vec![("VAL_WORDS", (std::mem::size_of::<T>() / 4) as u32)]
}

fn radix_items() -> Vec<(&'static str, u32)> {
    vec![("ITEMS", crate::kernel::RADIX_ITEMS[0])]
}

/// Compiles the setup's kernels (once per device), so that timing a setup does not time that.
pub(crate) fn compile<T: Scalar>(gpu: &Gpu) -> Result<()> {
    for (k, o) in [
        (super::kernels::SURAA_KEYS, vec![]),
        (crate::kernel::RADIX_COUNT, radix_items()),
        (crate::kernel::RADIX_SCATTER, radix_items()),
        (crate::kernel::SCAN_U32_REDUCE, vec![]),
        (crate::kernel::SCAN_U32_SUMS, vec![]),
        (crate::kernel::SCAN_U32_DOWN, vec![]),
        (super::kernels::SURAA_LENGTHS, vec![]),
        (super::kernels::SURAA_PLAN, vec![]),
        (super::kernels::SURAA_REARRANGE, val_words::<T>()),
    ] {
        pipeline_of(gpu, k, o)?;
    }
    Ok(())
}

/// Runs the setup on the GPU (submitted, not waited for) from the CSR arrays `[row_ptr,
/// col_idx, values]`, which it leaves as they were. Also returns the time spent allocating its
/// buffers (the rearranged matrix among them) before recording.
pub(crate) fn run<T: Scalar>(
    gpu: &Gpu,
    (nrows, ncols, nnz): (usize, usize, usize),
    longest_row: usize,
    p: &SetupParams,
    writes: ScalarWrites,
    [row_ptr, col_idx, vals]: [&wgpu::Buffer; 3],
) -> Result<(Built, std::time::Duration)> {
    let start = std::time::Instant::now();
    let m = u32::try_from(nrows).map_err(|_| Error::InvalidParameter {
        name: "nrows",
        value: nrows.to_string(),
        reason: "suraa needs fewer than 2^32 rows".into(),
    })?;
    let none = wgpu::BufferUsages::empty();
    let u32s = |label: &str, n: u64| gpu.storage_zeroed(label, n * 4, none);
    let (lo_a, hi_a, rows_a) = (
        u32s("suraa keys lo", m as u64)?,
        u32s("suraa keys hi", m as u64)?,
        u32s("suraa rows", m as u64)?,
    );
    let (lo_b, hi_b, rows_b) = (
        u32s("suraa keys lo'", m as u64)?,
        u32s("suraa keys hi'", m as u64)?,
        u32s("suraa rows'", m as u64)?,
    );
    let (counts_len, sums_len) = crate::gpu::recorder::radix_scratch_len(m);
    let counts = u32s("suraa digit counts", counts_len)?;
    let block_sums = u32s(
        "suraa block sums",
        sums_len.max((m as u64 + 1).div_ceil(crate::gpu::recorder::SCAN_BLOCK as u64)),
    )?;
    // The sorted lengths, scanned in place: the sorted matrix's row pointers.
    let lengths = Arc::new(u32s("suraa row_ptr", m as u64 + 1)?);
    let nnz_u32 = nnz as u32;
    let cols_out = Arc::new(u32s("suraa col_idx", nnz as u64)?);
    let vals_out = Arc::new(gpu.storage_zeroed(
        "suraa values",
        nnz as u64 * std::mem::size_of::<T>() as u64,
        none,
    )?);
    // `EntryParams` in shaders/suraa/sorted_row.wgsl.
    let rearrange_params = gpu.uniform_buffer(
        "suraa rearrange params",
        bytemuck::cast_slice(&[nnz_u32, m]),
    );
    let g1_max = p.max_child.min(m) as u64;
    let dynamic_ptr = Arc::new(u32s("suraa dynamic_ptr", g1_max + 1)?);
    let partials_len = g1_max + nnz as u64 / p.dynamic_chunk as u64;
    let partials = Arc::new(gpu.storage_zeroed(
        "suraa partials",
        partials_len * std::mem::size_of::<T>() as u64,
        none,
    )?);
    let schedule_out = Arc::new(gpu.storage_zeroed(
        "suraa schedule (setup)",
        std::mem::size_of::<Schedule>() as u64,
        none,
    )?);
    let indirect = Arc::new(gpu.storage_zeroed(
        "suraa indirect",
        INDIRECT_BYTES,
        wgpu::BufferUsages::INDIRECT,
    )?);
    let schedule = Arc::new(gpu.scoped("allocating the suraa schedule", || {
        DeviceBuffer::plain(gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("suraa schedule"),
            size: std::mem::size_of::<Schedule>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        }))
    })?);

    // Key width: lengths never exceed the longest row, columns need bits(ncols - 1). Each byte
    // of key is a pass of the sort.
    let npr_bits = bits(longest_row.min(ncols).min(nnz) as u64);
    let col_bits = bits(ncols.saturating_sub(1) as u64);
    let key_bits = if m > 1 { npr_bits + col_bits } else { 0 };
    let passes = key_bits.div_ceil(8);
    let key_params = gpu.uniform_buffer(
        "suraa key params",
        bytemuck::bytes_of(&KeyParams {
            nrows: m,
            npr_bits,
            col_bits,
            pad: 0,
        }),
    );
    let length_params = gpu.uniform_buffer("suraa length params", bytemuck::cast_slice(&[m, 0u32]));
    let plan_params = gpu.uniform_buffer(
        "suraa plan params",
        bytemuck::bytes_of(&PlanParams {
            nrows: m,
            max_child: p.max_child,
            dynamic_min_mean: p.dynamic_min_mean,
            vector_min_mean: p.vector_min_mean,
            lanes: p.lanes,
            workgroup_size: p.workgroup_size,
            dynamic_chunk: p.dynamic_chunk,
            max_dim: gpu
                .info()
                .limits
                .max_compute_workgroups_per_dimension
                .max(1),
        }),
    );

    // The sort's other row buffer is free once it is done: it takes the inverse permutation.
    let (perm, inv) = if passes % 2 == 0 {
        (&rows_a, &rows_b)
    } else {
        (&rows_b, &rows_a)
    };
    let sorted_sums = Arc::new(gpu.storage_zeroed(
        "suraa sorted sums",
        writes.sorted_sums_len(m) * std::mem::size_of::<T>() as u64,
        none,
    )?);
    let allocating = start.elapsed();
    gpu.scoped("running the suraa setup", || -> Result<()> {
        let mut enc = gpu
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("suraa setup"),
            });
        {
            let mut r = Recorder::new(gpu, &mut enc, "suraa setup");
            r.dispatch(
                super::kernels::SURAA_KEYS,
                vec![],
                &[row_ptr, col_idx, &lo_a, &hi_a, &rows_a, &key_params],
                m.div_ceil(256),
            )?;
            let side_a = SortSide {
                lo: &lo_a,
                hi: &hi_a,
                payload: &rows_a,
            };
            let side_b = SortSide {
                lo: &lo_b,
                hi: &hi_b,
                payload: &rows_b,
            };
            r.radix_sort([&side_a, &side_b], [&counts, &block_sums], m, key_bits)?;
            r.dispatch(
                super::kernels::SURAA_LENGTHS,
                vec![],
                &[row_ptr, perm, &lengths, &length_params, inv],
                (m + 1).div_ceil(256),
            )?;
            r.scan(&lengths, &block_sums, m + 1)?;
            r.dispatch(
                super::kernels::SURAA_PLAN,
                vec![],
                &[
                    &lengths,
                    &plan_params,
                    &schedule_out,
                    &dynamic_ptr,
                    &indirect,
                ],
                1,
            )?;
            let blocks = nnz_u32.div_ceil(REARRANGE_BLOCK);
            r.dispatch(
                super::kernels::SURAA_REARRANGE,
                val_words::<T>(),
                &[
                    row_ptr,
                    col_idx,
                    vals,
                    perm,
                    &lengths,
                    &cols_out,
                    &vals_out,
                    &rearrange_params,
                ],
                blocks,
            )?;
        }
        gpu.record_copy(
            &mut enc,
            &schedule_out,
            0,
            &schedule,
            0,
            std::mem::size_of::<Schedule>() as u64,
        )?;
        gpu.submit([enc.finish()]);
        Ok(())
    })??;
    let (perm, inv) = if passes % 2 == 0 {
        (rows_a, rows_b)
    } else {
        (rows_b, rows_a)
    };
    let (perm, inv) = (Arc::new(perm), Arc::new(inv));
    Ok((
        Built {
            row_ptr: lengths,
            col_idx: cols_out,
            vals: vals_out,
            perm,
            inv,
            sorted_sums,
            dynamic_ptr,
            partials,
            schedule,
            schedule_storage: Some(schedule_out),
            indirect,
            schedule_value: Schedule::default(),
        },
        allocating,
    ))
}

/// What a `suraa` plan holds on the GPU, read back (for tests and reports; a plan never needs
/// it on the host).
#[derive(Debug)]
pub struct PlanData<T> {
    /// Sorted position → original row.
    pub perm: Vec<u32>,
    /// Exclusive prefix of the dynamic kernel's workgroups per G1 row.
    pub dynamic_ptr: Vec<u32>,
    /// Which sorted rows each dispatch covers.
    pub schedule: Schedule,
    /// The matrix in sorted row order: its row pointers.
    pub row_ptr: Vec<u32>,
    /// Column indices of the matrix in sorted row order.
    pub col_idx: Vec<u32>,
    /// Values of the matrix in sorted row order.
    pub vals: Vec<T>,
}

/// Reads a `suraa` plan's data back from the GPU.
pub fn read_back<T: Scalar>(plan: &SpmvPlan<T>) -> Result<PlanData<T>> {
    let r = plan.suraa().ok_or(Error::InvalidParameter {
        name: "plan",
        value: plan.method().to_string(),
        reason: "not a suraa plan".into(),
    })?;
    let gpu = plan.gpu();
    let b = &r.buffers;
    let schedule = read_schedule(gpu, b)?;
    let n = plan.nnz();
    Ok(PlanData {
        perm: gpu.read_buffer(&b.perm, schedule.nrows as usize)?,
        dynamic_ptr: gpu.read_buffer(&b.dynamic_ptr, schedule.dynamic_rows as usize + 1)?,
        schedule,
        row_ptr: gpu.read_buffer(&b.row_ptr, plan.nrows() + 1)?,
        col_idx: gpu.read_buffer(&b.col_idx, n)?,
        vals: gpu.read_buffer(&b.vals, n)?,
    })
}

/// A `suraa` plan's value-update map as its first update makes it on the GPU (for each
/// rearranged entry, the CSR entry it holds), read back.
pub fn value_sources_of<T: Scalar>(plan: &SpmvPlan<T>) -> Result<Vec<u32>> {
    let b = &plan
        .suraa()
        .ok_or(Error::InvalidParameter {
            name: "plan",
            value: plan.method().to_string(),
            reason: "not a suraa plan".into(),
        })?
        .buffers;
    let gpu = plan.gpu();
    let sources = super::value_sources(gpu, &b.perm, &b.row_ptr, (plan.nrows(), plan.nnz()))?;
    gpu.read_buffer(&sources, plan.nnz())
}

pub(crate) fn read_schedule(gpu: &Gpu, b: &Built) -> Result<Schedule> {
    match &b.schedule_storage {
        Some(s) => Ok(gpu.read_buffer::<Schedule>(s, 1)?[0]),
        None => Ok(b.schedule_value),
    }
}
