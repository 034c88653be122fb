//! Cheap features of a matrix, its adapter and its workload: what the cost model reads.
//!
//! One parallel pass over the row pointers (O(nrows)) and a pass over the columns of a fixed sample of
//! rows (O(sample)), so computing them costs far less than any method's setup.

use crate::gpu::recorder::submit_pass;
use crate::gpu::{Gpu, GpuInfo};
pub(crate) use crate::profile::NREG;
use crate::{CsrMatrix, GpuCsr, Method, Scalar};
use rayon::prelude::*;

/// Rows longer than this many times the mean count as "long" for [`Features::long_share`].
pub const LONG_ROW_FACTOR: f64 = 32.0;

/// At most this many rows (spread evenly) are read for the column-locality measure.
pub const SAMPLE_ROWS: usize = 2048;

/// At most this many leading entries of each sampled row are read.
pub const SAMPLE_PER_ROW: usize = 256;

/// Bytes of one memory line for the locality measure (a cache line / memory segment).
pub const LINE_BYTES: u64 = 128;

/// Rows longer than this many entries are long: [`LONG_ROW_FACTOR`] × mean, at least 1, as
/// an integer (a length is above a real bound exactly when it is above its floor).
pub(crate) fn long_cut(nrows: usize, nnz: usize) -> u64 {
    let mean = if nrows == 0 {
        0.0
    } else {
        nnz as f64 / nrows as f64
    };
    (LONG_ROW_FACTOR * mean).max(1.0).floor() as u64
}

/// Every this many rows one is sampled for the column-locality measure.
pub(crate) fn sample_step(nrows: usize) -> usize {
    nrows.div_ceil(SAMPLE_ROWS).max(1)
}

/// The row sample `i` reads: one in the `i`-th run of `step` rows, at an offset that spreads
/// the samples over every residue of a line (a step that is a multiple of the columns per line
/// would otherwise put every sample of a band or stencil at a line's first column, where the
/// row before ends a line). Mirrored in shaders/shared/csr_features.wgsl.
pub(crate) fn sampled_row(i: usize, step: usize, nrows: usize) -> usize {
    let jitter = (i as u32).wrapping_mul(0x9E37_79B1) % step as u32;
    (i * step + jitter as usize).min(nrows - 1)
}

/// What the features are computed from: integers, so the host and the GPU agree exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Σ row length².
    pub sum_sq: u128,
    /// The longest row.
    pub max_len: usize,
    /// Empty rows.
    pub empty: usize,
    /// Entries in rows longer than [`long_cut`].
    pub long_nnz: usize,
    /// Lines of x the sampled rows' leading columns touch that the row before's leading
    /// columns do not.
    pub lines: u64,
    /// Columns the sample read.
    pub seen: u64,
}

/// The raw features of one matrix on one adapter for one workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Features {
    /// Rows of the matrix.
    pub nrows: usize,
    /// Columns of the matrix.
    pub ncols: usize,
    /// Stored entries of the matrix.
    pub nnz: usize,
    /// Mean stored entries per row.
    pub mean: f64,
    /// Coefficient of variation of the row lengths (std / mean; 0 for an empty matrix).
    pub cv: f64,
    /// Stored entries of the longest row.
    pub max_len: usize,
    /// Fraction of rows with no entry.
    pub empty_frac: f64,
    /// Share of the stored entries in rows longer than 32 × mean.
    pub long_share: f64,
    /// Column locality: the 128-byte lines of `x` a sampled row touches that the row before
    /// it did not, per stored entry (near 1/(128/scalar bytes) for dense runs of columns and
    /// for bands and stencils, whose rows share their lines with the row before; 1 for
    /// scattered columns).
    pub scatter: f64,
    /// Bytes of one value (4 or 8).
    pub scalar_bytes: usize,
    /// Bytes of `x`.
    pub x_bytes: u64,
    /// PCI vendor of the adapter (0 when unknown).
    pub vendor: u32,
    /// Discrete, integrated, virtual or CPU adapter.
    pub device_type: wgpu::DeviceType,
    /// Largest subgroup size (0 without subgroups).
    pub subgroup_size: u32,
    /// Whether CPU and GPU share memory (see [`GpuInfo::shares_memory_with_host`]).
    pub shares_memory_with_host: bool,
}

impl Features {
    /// Computes the features of `a` on an adapter described by `info`.
    pub fn of<T: Scalar>(a: &CsrMatrix<T>, info: &GpuInfo) -> Self {
        let (nrows, nnz) = (a.nrows(), a.nnz());
        let rp = a.row_ptr();
        let sb = std::mem::size_of::<T>();
        let long_cut = long_cut(nrows, nnz);
        // One parallel pass over the rows, in integers so that the result does not depend on how
        // the pass was split: sum of squared lengths, longest, empty rows, entries in long rows.
        let (sum_sq, max_len, empty, long_nnz) = rp
            .par_windows(2)
            .map(|w| {
                let l = (w[1] - w[0]) as usize;
                let long = if l as u64 > long_cut { l } else { 0 };
                ((l as u128).pow(2), l, (l == 0) as usize, long)
            })
            .reduce(
                || (0u128, 0usize, 0usize, 0usize),
                |a, b| (a.0 + b.0, a.1.max(b.1), a.2 + b.2, a.3 + b.3),
            );
        // Column locality from a fixed sample of rows.
        let per_line = (LINE_BYTES / sb as u64).max(1);
        let (mut lines, mut seen) = (0u64, 0u64);
        let cols = a.col_idx();
        let leading = |r: usize| {
            let b = rp[r] as usize;
            b..(rp[r + 1] as usize).min(b + SAMPLE_PER_ROW)
        };
        let step = sample_step(nrows);
        for i in 0..nrows.div_ceil(step) {
            let r = sampled_row(i, step, nrows);
            let row = leading(r);
            // The row before's leading columns: a line it touched is in cache for this one.
            let before = if r > 0 { leading(r - 1) } else { 0..0 };
            let mut q = before.start;
            let mut last = u64::MAX;
            for &c in &cols[row.clone()] {
                let line = c as u64 / per_line;
                if line != last {
                    last = line;
                    while q < before.end && (cols[q] as u64 / per_line) < line {
                        q += 1;
                    }
                    if !(q < before.end && cols[q] as u64 / per_line == line) {
                        lines += 1;
                    }
                }
            }
            seen += row.len() as u64;
        }
        let counts = Counts {
            sum_sq,
            max_len,
            empty,
            long_nnz,
            lines,
            seen,
        };
        Self::from_counts(a.shape(), sb, &counts, info)
    }

    /// The features from what one pass over the rows and the sampled rows counted (on the host
    /// or, for a matrix in GPU buffers, on the GPU).
    pub(crate) fn from_counts(
        (nrows, ncols, nnz): (usize, usize, usize),
        sb: usize,
        c: &Counts,
        info: &GpuInfo,
    ) -> Self {
        let mean = if nrows == 0 {
            0.0
        } else {
            nnz as f64 / nrows as f64
        };
        // Σ(l − mean)² = Σl² − nnz·mean (since Σl = nnz).
        let var = (c.sum_sq as f64 - nnz as f64 * mean).max(0.0);
        let cv = if nrows == 0 || mean == 0.0 {
            0.0
        } else {
            (var / nrows as f64).sqrt() / mean
        };
        // At least one line per line's worth of entries: contiguous columns still read every
        // line once, shared with the row before or not.
        let scatter = if c.seen == 0 {
            1.0
        } else {
            (c.lines as f64 / c.seen as f64).max(sb as f64 / LINE_BYTES as f64)
        };
        Self {
            nrows,
            ncols,
            nnz,
            mean,
            cv,
            max_len: c.max_len,
            empty_frac: if nrows == 0 {
                0.0
            } else {
                c.empty as f64 / nrows as f64
            },
            long_share: if nnz == 0 {
                0.0
            } else {
                c.long_nnz as f64 / nnz as f64
            },
            scatter,
            scalar_bytes: sb,
            x_bytes: (ncols * sb) as u64,
            vendor: info.vendor,
            device_type: info.device_type,
            subgroup_size: if info.has(wgpu::Features::SUBGROUP) {
                info.subgroup_max_size
            } else {
                0
            },
            shares_memory_with_host: info.shares_memory_with_host(),
        }
    }

    /// Bytes one product must move at least: values, column indices, row pointers, x and y,
    /// each once (the same figure as `SpmvPlan::minimal_traffic_bytes`).
    pub fn minimal_bytes(&self) -> f64 {
        let s = self.scalar_bytes as f64;
        self.nnz as f64 * (s + 4.0)
            + (self.nrows as f64 + 1.0) * 4.0
            + self.ncols as f64 * s
            + self.nrows as f64 * s
    }

    /// Bytes one product of `method` moves at its defaults: [`Features::minimal_bytes`] plus
    /// what its format adds for certain (`bccoo-plus`: each slice's partial results, written and
    /// read back once more), which the per-byte fit could not tell from the structure.
    pub fn traffic_bytes(&self, method: Method, cache_bytes: f64) -> f64 {
        let slices = match method {
            Method::BccooPlus => crate::methods::bccoo::slices_for_cache(
                self.ncols,
                self.scalar_bytes as u64,
                cache_bytes,
            ) as f64,
            _ => 1.0,
        };
        self.minimal_bytes() + self.slice_partial_bytes(slices)
    }

    /// Partial results of `slices` vertical slices: one per row and slice that holds an entry of
    /// the row, written by the first pass and read by the combine. A row's entries fall in
    /// `len · scatter` groups of neighbouring columns (its distinct lines of `x`), each in a
    /// slice of its own at random: `S · (1 − (1 − 1/S)^groups)` slices of the `S`.
    fn slice_partial_bytes(&self, slices: f64) -> f64 {
        let rows = self.nrows as f64 * (1.0 - self.empty_frac);
        if rows < 1.0 || slices <= 1.0 {
            return 0.0;
        }
        let groups = (self.nnz as f64 / rows * self.scatter).max(1.0);
        let occupied = slices * (1.0 - (1.0 - 1.0 / slices).powf(groups));
        2.0 * rows * occupied * self.scalar_bytes as f64
    }

    /// The model's regressors, in the order of
    /// [`REGRESSORS`](crate::select::profile::REGRESSORS): dimensionless transforms of the
    /// features, each of order one, so that one ridge penalty suits them all.
    /// `x_cache_bytes`: the part of the cache that holds `x` (the profile's fitted share).
    pub fn regressors(&self, cache_bytes: f64, x_cache_bytes: f64) -> [f64; NREG] {
        let aspect = if self.nrows == 0 || self.ncols == 0 {
            0.0
        } else {
            ((self.nrows as f64 / self.ncols as f64).ln()).clamp(-4.0, 4.0) / 4.0
        };
        [
            1.0,
            (1.0 + self.mean).ln(),
            (1.0 + self.cv).ln(),
            self.long_share,
            self.empty_frac,
            self.scatter,
            (1.0 + self.x_bytes as f64 / cache_bytes.max(1.0)).ln(),
            aspect,
            (self.nnz.max(1) as f64 / 1e6).ln().clamp(-10.0, 5.0),
            (1.0 + self.max_len as f64 / (1.0 + self.mean)).ln(),
            if self.scalar_bytes >= 8 { 1.0 } else { 0.0 },
            self.scatter * self.x_miss(x_cache_bytes),
        ]
    }

    /// The chance that a gather at a uniformly random column misses the `x_cache_bytes` of
    /// cache that hold `x` while the matrix streams through: 0 while `x` fits in them.
    pub fn x_miss(&self, x_cache_bytes: f64) -> f64 {
        let (x, held) = (self.x_bytes as f64, x_cache_bytes.max(1.0));
        if x > held {
            1.0 - held / x
        } else {
            0.0
        }
    }
}

/// Mirrors `FeatureParams` in shaders/shared/csr_features.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct FeatureParams {
    nrows: u32,
    long_cut: u32,
    step: u32,
    samples: u32,
    per_line: u32,
    sample_per_row: u32,
    groups: u32,
    pad: u32,
}

impl Features {
    /// The features of a CSR matrix in GPU buffers (validated), counted on the GPU
    /// (shaders/shared/csr_features.wgsl): the same integers as [`Features::of`] over the same
    /// arrays, read back as five words per 256 rows and two per sampled row instead of the
    /// matrix.
    pub(crate) fn of_gpu_csr<T: Scalar>(gpu: &Gpu, a: &GpuCsr) -> crate::Result<Self> {
        let (nrows, ncols, nnz) = (a.nrows, a.ncols, a.nnz);
        let sb = std::mem::size_of::<T>();
        let step = sample_step(nrows);
        let samples = nrows.div_ceil(step);
        let groups = nrows.div_ceil(256);
        let params = FeatureParams {
            nrows: nrows as u32,
            long_cut: long_cut(nrows, nnz).min(u32::MAX as u64) as u32,
            step: step as u32,
            samples: samples as u32,
            per_line: (LINE_BYTES / sb as u64).max(1) as u32,
            sample_per_row: SAMPLE_PER_ROW as u32,
            groups: groups as u32,
            pad: 0,
        };
        let params = gpu.uniform_buffer("csr features", bytemuck::bytes_of(&params));
        let words = 5 * groups + 2 * samples;
        let none = wgpu::BufferUsages::empty();
        let out = gpu.storage_zeroed("csr features", words as u64 * 4, none)?;
        let mut stand_in = None;
        let col_idx = a.bindable_col_idx(gpu, &mut stand_in)?;
        submit_pass(
            gpu,
            "csr features",
            "computing Auto's features on the GPU",
            |r| {
                let buffers: [&dyn crate::gpu::Bind; 4] = [a.row_ptr, col_idx, &out, &params];
                let kernel = crate::kernel::CSR_FEATURES;
                r.passes(
                    kernel,
                    &buffers,
                    &[(0, groups as u32), (1, samples.div_ceil(256) as u32)],
                )
            },
        )?;
        let w: Vec<u32> = gpu.read_buffer(&out, words)?;
        let mut c = Counts::default();
        for g in w[..5 * groups].chunks_exact(5) {
            c.sum_sq += (g[1] as u128) << 32 | g[0] as u128;
            c.empty += g[2] as usize;
            c.long_nnz += g[3] as usize;
            c.max_len = c.max_len.max(g[4] as usize);
        }
        for s in w[5 * groups..].chunks_exact(2) {
            c.lines += s[0] as u64;
            c.seen += s[1] as u64;
        }
        Ok(Self::from_counts((nrows, ncols, nnz), sb, &c, gpu.info()))
    }
}
