//! The BCCOO / BCCOO+ format (yaSpMV, sections 2.2–2.4), built on the host: pure CPU, no wgpu.
//!
//! - **Blocks** of `h × w` (h ∈ 1..=4, w ∈ {1, 2, 4}) in block-row order; the values of block row
//!   `r` of every block live in value plane `r` (the paper's one value array per block row), so a
//!   block's column index addresses each plane directly.
//! - **Bit flags** replace the row index: bit `n` (block `n` in natural order, 32 per u32 word) is 0
//!   when block `n` is the last of its block row (a *row stop*), 1 otherwise. The array is padded
//!   with 1s (and zero blocks) to a whole number of workgroup tiles.
//! - **Empty block rows** (the paper leaves them open):
//!   - BCCOO (one slice): each gets one explicit zero block whose flag is a stop, so the `k`-th stop
//!     always closes block row `k` and every output row is written (with `β·y` when α·A·x + β·y is
//!     asked). The cost is one block (h·w values, a column, a bit) per empty block row, counted in
//!     [`Footprint::empty_row_blocks`]. The alternative, a compact list of non-empty rows, costs 4
//!     bytes per *non-empty* row and a separate pass to zero the rest.
//!   - BCCOO+ (several slices) has that separate pass already, the one that adds up the slices, and
//!     slicing empties many block rows (a short row is empty in most slices). So where empty block
//!     rows are more than 1 in [`COMPACT_EMPTY_ROWS`] stored blocks, they are left out: the `k`-th
//!     stop closes the `k`-th *stored* block row, and the combining pass finds each stacked block
//!     row's result through a presence bitmap (one bit per stacked block row) and a running count
//!     per bitmap word ([`BccooMatrix::row_map`]: 8 bytes per 32 stacked block rows). A row absent
//!     from every slice gets `β·y` there. Fewer empty block rows keep their zero blocks.
//! - **Columns** as u32, as 16-bit halves of u32 words (block columns < 65536), or as the paper's
//!   per-thread-tile differences in 16 bits ([`ColumnCoding::Delta16`]); a difference outside ±32767
//!   is the escape `-32768` and the full column is read from a compact escape list in thread order.
//! - **Offline transpose**: within one workgroup tile, block `k` of thread `t` is stored at
//!   `k · threads + t`, so the threads of a SIMD group read consecutive words (coalesced). Flags stay
//!   in natural order (a thread reads its own bits from one or two words).
//! - **Auxiliary data** (section 2.4): each thread's first result row (a scan of the row stops) and,
//!   per workgroup, whether every thread holds a stop (the workgroup can skip its scan), whether
//!   it holds any, whether its first row started in an earlier workgroup (it needs a carry), and
//!   how far back that row started (the *chain* of workgroups whose published sums make the carry).
//! - **BCCOO+** (section 2.3): the columns are cut into `slices` vertical slices that are stacked
//!   top-down (stacked row `s·nrows + i` is row `i`'s part in slice `s`), keeping original column
//!   indices; the product gives one partial result per slice, which a second pass adds up.
//!
//! [`BccooMatrix::spmv_twin`] is the CPU twin of the GPU kernel: the same tiles, per-thread
//! sequential segmented sums, workgroup scan and chained carries.

use crate::matrix::check_u32;
use crate::methods::common::bad;
use crate::{CsrMatrix, Result, Scalar};
use rayon::prelude::*;

/// Block heights the format accepts.
pub const BLOCK_HEIGHTS: &[u32] = &[1, 2, 3, 4];
/// Block widths the format accepts.
pub const BLOCK_WIDTHS: &[u32] = &[1, 2, 4];
/// Vertical slice counts of BCCOO+ (1 is plain BCCOO).
pub const SLICE_COUNTS: &[u32] = &[1, 2, 4, 8, 16, 32];
/// BCCOO+ leaves empty block rows out once they are more than 1 in this many stored blocks; below
/// that, their zero blocks cost less than the combining pass's lookups (docs/bccoo.md).
pub const COMPACT_EMPTY_ROWS: u64 = 64;
/// Largest blocks per thread tile.
pub const MAX_TILE: u32 = 128;

/// The escape of [`ColumnCoding::Delta16`]: "read the full column from the escape list".
pub const DELTA_ESCAPE: u16 = 0x8000;

/// Per-workgroup flag bits of [`BccooMatrix::group_info`]; the chain length sits above them.
/// Every thread of the workgroup holds a row stop, so the workgroup can skip its scan.
pub const GROUP_ALL_STOP: u32 = 1;
/// Some thread of the workgroup holds a row stop.
pub const GROUP_HAS_STOP: u32 = 2;
/// The workgroup's first row started in an earlier workgroup, so it needs a carry.
pub const GROUP_NEEDS_CARRY: u32 = 4;
/// Shift of the chain length (how many workgroups back the first row started) in the info word.
pub const GROUP_CHAIN_SHIFT: u32 = 3;

/// How block column indices are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ColumnCoding {
    /// 16-bit when every block column is below 65536 (the paper's choice), else 16-bit differences
    /// when they take fewer bytes than u32, else u32.
    #[default]
    Auto,
    /// One u32 per block.
    U32,
    /// Two 16-bit block columns per u32 word; needs block columns below 65536.
    U16,
    /// 16-bit differences within each thread tile, with escapes to the full index.
    Delta16,
}

impl ColumnCoding {
    /// The value of the kernel's `COLS` override.
    pub fn shader_code(self) -> u32 {
        match self {
            ColumnCoding::Auto | ColumnCoding::U32 => 0,
            ColumnCoding::U16 => 1,
            ColumnCoding::Delta16 => 2,
        }
    }
    /// The coding's name in reports and tuning files (`auto`, `u32`, `u16`, `delta16`).
    pub fn name(self) -> &'static str {
        match self {
            ColumnCoding::Auto => "auto",
            ColumnCoding::U32 => "u32",
            ColumnCoding::U16 => "u16",
            ColumnCoding::Delta16 => "delta16",
        }
    }
}

/// The shape of a BCCOO matrix: block size, tiles, slices and column coding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BccooLayout {
    /// Rows per block (1 to 4).
    pub block_height: u32,
    /// Columns per block (1, 2 or 4).
    pub block_width: u32,
    /// Blocks per thread (the thread-level tile).
    pub tile: u32,
    /// Threads per workgroup (a workgroup tile is `tile · workgroup` blocks).
    pub workgroup: u32,
    /// Vertical slices: 1 is BCCOO, more is BCCOO+.
    pub slices: u32,
    /// How block column indices are stored (`Auto` until a matrix resolves it).
    pub columns: ColumnCoding,
}

impl Default for BccooLayout {
    fn default() -> Self {
        Self {
            block_height: 1,
            block_width: 1,
            tile: 16,
            workgroup: 256,
            slices: 1,
            columns: ColumnCoding::Auto,
        }
    }
}

impl BccooLayout {
    /// Blocks one workgroup covers.
    pub fn group_blocks(&self) -> u64 {
        self.tile as u64 * self.workgroup as u64
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if !BLOCK_HEIGHTS.contains(&self.block_height) {
            return Err(bad(
                "block_height",
                self.block_height,
                format!("must be one of {BLOCK_HEIGHTS:?}"),
            ));
        }
        if !BLOCK_WIDTHS.contains(&self.block_width) {
            return Err(bad(
                "block_width",
                self.block_width,
                format!("must be one of {BLOCK_WIDTHS:?}"),
            ));
        }
        if self.tile == 0 || self.tile > MAX_TILE {
            return Err(bad(
                "tile",
                self.tile,
                format!("must be 1 to {MAX_TILE} blocks per thread"),
            ));
        }
        if !self.workgroup.is_power_of_two() || self.workgroup < 4 {
            return Err(bad(
                "workgroup",
                self.workgroup,
                "must be a power of two of at least 4",
            ));
        }
        if !SLICE_COUNTS.contains(&self.slices) {
            return Err(bad(
                "slices",
                self.slices,
                format!("must be one of {SLICE_COUNTS:?}"),
            ));
        }
        Ok(())
    }
}

/// Bytes of each part of a format, for the paper's Table 3 comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Footprint {
    /// The row-stop bit flags.
    pub flags: u64,
    /// Block column words, escape list included.
    pub columns: u64,
    /// The value planes, padding and zero blocks included.
    pub values: u64,
    /// Per-thread first rows (and escape offsets), per-workgroup flags and the carry list.
    pub auxiliary: u64,
    /// Blocks added for empty block rows (included in the byte counts above); a count, not bytes.
    pub empty_row_blocks: u64,
    /// Explicit zeros stored inside blocks, padding and empty-row blocks included; a count of
    /// values, not bytes.
    pub stored_zeros: u64,
    /// The same matrix as CSR (u32 indices), for comparison.
    pub csr: u64,
    /// The same matrix as COO (u32 row and column), for comparison.
    pub coo: u64,
}

impl Footprint {
    /// Bytes of the whole format: flags, columns, values and auxiliary data.
    pub fn total(&self) -> u64 {
        self.flags + self.columns + self.values + self.auxiliary
    }
}

/// A matrix in BCCOO (or BCCOO+) form, ready to upload. Arrays are in the layout the kernel reads.
#[derive(Clone, Debug)]
pub struct BccooMatrix<T> {
    /// The layout, with the column coding resolved.
    pub layout: BccooLayout,
    /// Rows of the original matrix.
    pub nrows: usize,
    /// Columns of the original matrix.
    pub ncols: usize,
    /// Rows of the (stacked) matrix the kernel multiplies: `nrows · slices`.
    pub stacked_rows: usize,
    /// Block rows of the stacked matrix, empty ones included.
    pub block_rows: usize,
    /// Result rows the kernel writes: `stacked_rows`, or for BCCOO+ leaving empty block rows out,
    /// `h` per stored block row, in stacked order.
    pub result_rows: usize,
    /// BCCOO+ leaving empty block rows out: per 32 stacked block rows, a pair of words: one bit per
    /// block row (set = stored), then the number of stored block rows before them; the combining
    /// pass reads results through it. Empty for BCCOO, and for BCCOO+ that stores every block row
    /// (there stacked row `q`'s result is at `q`).
    pub row_map: Vec<u32>,
    /// Blocks in natural order before padding (empty-row blocks included).
    pub blocks: usize,
    /// Zero blocks added so that empty block rows still hold a row stop.
    pub empty_row_blocks: usize,
    /// Blocks after padding to whole workgroup tiles (the stride between value planes).
    pub padded_blocks: usize,
    /// Workgroup tiles: `padded_blocks / layout.group_blocks()`.
    pub groups: usize,
    /// Natural-order bit flags (0 = row stop), padded with 1s.
    pub flags: Vec<u32>,
    /// Column words in layout order (one u32 per block, or two 16-bit entries per word).
    pub columns: Vec<u32>,
    /// [`ColumnCoding::Delta16`]: escaped block columns, thread after thread.
    pub escapes: Vec<u32>,
    /// `block_height` planes of `padded_blocks · block_width` values, in layout order.
    pub values: Vec<T>,
    /// Per thread (and one past the last): the block row of its first result.
    pub thread_row: Vec<u32>,
    /// [`ColumnCoding::Delta16`]: per thread, its first entry in `escapes`.
    pub thread_escape: Vec<u32>,
    /// Per workgroup: `GROUP_*` bits and the chain length above `GROUP_CHAIN_SHIFT`.
    pub group_info: Vec<u32>,
    /// Workgroups whose first row continues from an earlier one (the two-pass carry list).
    pub carry_groups: Vec<u32>,
    /// Explicit zeros stored in non-padding blocks.
    pub block_zeros: u64,
}

/// Where the entries of one block row come from: `(stacked row, original row, column range)`.
struct Geometry {
    h: usize,
    w: usize,
    nrows: usize,
    stacked_rows: usize,
    slice_width: usize,
}

impl Geometry {
    /// Collects block row `br`'s entries as `(column, row in block, value)`, ordered by block
    /// column, then row in block, then column (one row's columns are already sorted).
    fn entries<T: Scalar>(&self, a: &CsrMatrix<T>, br: usize, out: &mut Vec<(u32, u32, T)>) {
        out.clear();
        for r in 0..self.h {
            let stacked = br * self.h + r;
            if stacked >= self.stacked_rows {
                break;
            }
            let (slice, row) = (stacked / self.nrows, stacked % self.nrows);
            let (cols, vals) = a.row(row);
            let (lo_c, hi_c) = (slice * self.slice_width, (slice + 1) * self.slice_width);
            let lo = if slice == 0 {
                0
            } else {
                cols.partition_point(|&c| (c as usize) < lo_c)
            };
            let hi = cols.partition_point(|&c| (c as usize) < hi_c);
            out.extend(
                cols[lo..hi]
                    .iter()
                    .zip(&vals[lo..hi])
                    .map(|(&c, &v)| (c, r as u32, v)),
            );
        }
        if self.h > 1 {
            let w = self.w as u32;
            out.sort_unstable_by_key(|e| (e.0 / w, e.1, e.0));
        }
    }
}

/// A CSR value as the blocks keep it: a zero (either sign) as -0, since the kernels skip +0
/// (fill and padding) and must multiply a stored zero (0 · NaN and 0 · Inf are NaN).
pub(crate) fn stored_value<T: Scalar>(v: T) -> T {
    if v.to_f64() == 0.0 {
        T::from_f64(-0.0)
    } else {
        v
    }
}

/// Splits `data` into consecutive pieces of the given lengths (for parallel fills of variable
/// ranges).
fn split_by<X>(mut data: &mut [X], lens: impl Iterator<Item = usize>) -> Vec<&mut [X]> {
    let mut out = Vec::new();
    for len in lens {
        let (head, tail) = data.split_at_mut(len);
        out.push(head);
        data = tail;
    }
    out
}

/// How stored blocks sit in workgroup tiles: `tile` blocks per thread, `wg` threads per group.
#[derive(Clone, Copy)]
struct Tiling {
    tile: usize,
    wg: usize,
    /// Blocks per workgroup (`tile · wg`).
    group_blocks: usize,
    /// Stored blocks rounded up to whole workgroups.
    padded_blocks: usize,
}

impl Tiling {
    /// Natural block of layout position `within` of a workgroup tile (the offline transpose:
    /// block k of thread t sits at k·wg + t).
    fn natural(&self, within: usize) -> usize {
        (within % self.wg) * self.tile + within / self.wg
    }

    fn groups(&self) -> usize {
        self.padded_blocks / self.group_blocks
    }
}

/// Blocks in natural order (block row by block row): their columns, row stops and values.
struct NaturalBlocks<T> {
    cols: Vec<u32>,
    stop: Vec<bool>,
    vals: Vec<T>,
}

/// Block rows go in runs of this many, each run into its own contiguous range (one range per
/// block row would take 3 slice descriptors per block row: with many slices most block rows are
/// empty, and the descriptors cost more than the blocks).
const ROWS_PER_TASK: usize = 4096;

impl Geometry {
    /// Pass 1: distinct block columns of every block row.
    fn block_counts<T: Scalar>(&self, a: &CsrMatrix<T>, block_rows: usize) -> Vec<u32> {
        let wu = self.w as u32;
        (0..block_rows)
            .into_par_iter()
            .map_init(Vec::new, |scratch, br| {
                self.entries(a, br, scratch);
                let mut n = 0u32;
                let mut last = u32::MAX;
                for e in scratch.iter() {
                    if e.0 / wu != last {
                        n += 1;
                        last = e.0 / wu;
                    }
                }
                n
            })
            .collect()
    }

    /// Pass 2: natural-order columns, stops and values, each block row into its own range.
    /// Empty-row and padding blocks repeat a neighbour's column (no escape, x stays cached).
    /// `stored(n)` is how many blocks a block row of `n` distinct block columns stores.
    fn natural_blocks<T: Scalar>(
        &self,
        a: &CsrMatrix<T>,
        counts: &[u32],
        stored: impl Fn(u32) -> usize + Sync,
        blocks: usize,
        padded_blocks: usize,
    ) -> NaturalBlocks<T> {
        let (w, hw, wu) = (self.w, self.h * self.w, self.w as u32);
        let mut cols = vec![0u32; padded_blocks];
        let mut stop = vec![false; padded_blocks];
        let mut vals = vec![T::default(); padded_blocks * hw];
        let run_blocks: Vec<usize> = counts
            .par_chunks(ROWS_PER_TASK)
            .map(|run| run.iter().map(|&n| stored(n)).sum())
            .collect();
        let c = split_by(&mut cols[..blocks], run_blocks.iter().copied());
        let st = split_by(&mut stop[..blocks], run_blocks.iter().copied());
        let v = split_by(&mut vals[..blocks * hw], run_blocks.iter().map(|&n| n * hw));
        c.into_par_iter().zip(st).zip(v).enumerate().for_each_init(
            Vec::new,
            |scratch, (run, ((c, st), v))| {
                let mut at = 0usize;
                for (i, &n) in counts[run * ROWS_PER_TASK..]
                    .iter()
                    .take(ROWS_PER_TASK)
                    .enumerate()
                {
                    let n = stored(n);
                    if n == 0 {
                        // An empty block row BCCOO+ leaves out.
                        continue;
                    }
                    self.entries(a, run * ROWS_PER_TASK + i, scratch);
                    let (c, v) = (&mut c[at..at + n], &mut v[at * hw..(at + n) * hw]);
                    let mut k = usize::MAX;
                    let mut last = u32::MAX;
                    for &(col, r, val) in scratch.iter() {
                        if col / wu != last {
                            k = k.wrapping_add(1);
                            last = col / wu;
                            c[k] = last;
                        }
                        v[k * hw + r as usize * w + (col % wu) as usize] = stored_value(val);
                    }
                    if scratch.is_empty() {
                        // An empty block row: one zero block, its column filled in below.
                        c[0] = u32::MAX;
                    }
                    at += n;
                    st[at - 1] = true;
                }
            },
        );
        // Empty-row blocks take the previous block's column; padding the last one's.
        let mut prev = 0;
        for c in cols[..blocks].iter_mut() {
            if *c == u32::MAX {
                *c = prev;
            }
            prev = *c;
        }
        cols[blocks..].fill(prev);
        NaturalBlocks { cols, stop, vals }
    }
}

/// Flags: bit set = "not a row stop" (padding is all 1s).
fn stop_flags(stop: &[bool], blocks: usize) -> Vec<u32> {
    stop.par_chunks(32)
        .enumerate()
        .map(|(i, s)| {
            let mut word = 0u32;
            for (b, &st) in s.iter().enumerate() {
                if !st || i * 32 + b >= blocks {
                    word |= 1 << b;
                }
            }
            word
        })
        .collect()
}

/// Values in layout order, one plane per row of the block: each plane holds every block's row,
/// workgroup tile by workgroup tile, transposed.
fn layout_values<T: Scalar>(vals_nat: &[T], t: Tiling, h: usize, w: usize) -> Vec<T> {
    let hw = h * w;
    let mut values = vec![T::default(); t.padded_blocks * hw];
    for (r, plane) in values.chunks_mut(t.padded_blocks * w).enumerate() {
        plane
            .par_chunks_mut(t.group_blocks * w)
            .enumerate()
            .for_each(|(g, out)| {
                for within in 0..t.group_blocks {
                    let n = g * t.group_blocks + t.natural(within);
                    out[within * w..(within + 1) * w]
                        .copy_from_slice(&vals_nat[n * hw + r * w..n * hw + r * w + w]);
                }
            });
    }
    values
}

/// Per-thread row stops, and each thread's first row (the number of stops before its tile).
fn thread_rows(stop: &[bool], tile: usize) -> (Vec<u32>, Vec<u32>) {
    let thread_stops: Vec<u32> = stop
        .par_chunks(tile)
        .map(|s| s.iter().filter(|&&s| s).count() as u32)
        .collect();
    let mut thread_row = Vec::with_capacity(thread_stops.len() + 1);
    let mut seen = 0u32;
    for &s in &thread_stops {
        thread_row.push(seen);
        seen += s;
    }
    thread_row.push(seen);
    (thread_stops, thread_row)
}

/// BCCOO+'s row map where empty block rows are left out: per 32 block rows, a bitmap of the
/// stored ones and how many stored ones come before.
fn compact_row_map(counts: &[u32]) -> Vec<u32> {
    let mut row_map = vec![0u32; 2 * counts.len().div_ceil(32)];
    for (br, _) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
        row_map[2 * (br / 32)] |= 1 << (br % 32);
    }
    let mut before = 0u32;
    for pair in row_map.chunks_mut(2) {
        pair[1] = before;
        before += pair[0].count_ones();
    }
    row_map
}

/// Per-workgroup info (stop flags and carry chain length) and the workgroups that carry a row
/// from an earlier one.
fn group_chains(thread_stops: &[u32], stop: &[bool], t: Tiling) -> (Vec<u32>, Vec<u32>) {
    let mut group_info = Vec::with_capacity(t.groups());
    let mut carry_groups = Vec::new();
    let mut last_with_stop = 0usize;
    for g in 0..t.groups() {
        let ts = &thread_stops[g * t.wg..(g + 1) * t.wg];
        let has = ts.iter().any(|&s| s > 0);
        let all = ts.iter().all(|&s| s > 0);
        let continues = g > 0 && !stop[g * t.group_blocks - 1];
        let needs = has && continues;
        let chain = if needs {
            (g - last_with_stop) as u32
        } else {
            0
        };
        let bit = |on: bool, flag: u32| if on { flag } else { 0 };
        let info = bit(has, GROUP_HAS_STOP)
            | bit(all, GROUP_ALL_STOP)
            | bit(needs, GROUP_NEEDS_CARRY)
            | (chain << GROUP_CHAIN_SHIFT);
        group_info.push(info);
        if needs {
            carry_groups.push(g as u32);
        }
        if has {
            last_with_stop = g;
        }
    }
    (group_info, carry_groups)
}

/// Column arrays in layout order under a coding.
struct Columns {
    coding: ColumnCoding,
    words: Vec<u32>,
    escapes: Vec<u32>,
    thread_escape: Vec<u32>,
}

/// Resolves `ColumnCoding::Auto` (16 bits when every block column fits, else delta16 where it is
/// smaller than u32) and encodes each workgroup tile's columns in layout order.
fn encode_columns(cols_nat: &[u32], requested: ColumnCoding, t: Tiling) -> Result<Columns> {
    let threads = t.groups() * t.wg;
    let max_col = cols_nat.par_iter().copied().max().unwrap_or(0);
    let escapes_per_thread = || -> Vec<u32> {
        cols_nat
            .par_chunks(t.tile)
            .map(|c| delta_codes(c).filter(|c| c.is_none()).count() as u32)
            .collect()
    };
    let coding = match requested {
        ColumnCoding::Auto if max_col < 65536 => ColumnCoding::U16,
        ColumnCoding::Auto => {
            let esc: u64 = escapes_per_thread().iter().map(|&e| e as u64).sum();
            if (t.padded_blocks * 2 + threads * 4) as u64 + esc * 4 < t.padded_blocks as u64 * 4 {
                ColumnCoding::Delta16
            } else {
                ColumnCoding::U32
            }
        }
        ColumnCoding::U16 if max_col >= 65536 => {
            return Err(bad(
                "columns",
                "u16",
                format!("block column {max_col} does not fit 16 bits; use u32 or delta16"),
            ));
        }
        c => c,
    };
    // 16-bit codes pack two to a word (a tile holds an even number of blocks: the workgroup is a
    // power of two of at least 4).
    let pack16 = |code: &(dyn Fn(usize) -> u16 + Sync)| -> Vec<u32> {
        let mut c = vec![0u32; t.padded_blocks / 2];
        c.par_chunks_mut(t.group_blocks / 2)
            .enumerate()
            .for_each(|(g, out)| {
                for (i, word) in out.iter_mut().enumerate() {
                    let n0 = g * t.group_blocks + t.natural(2 * i);
                    let n1 = g * t.group_blocks + t.natural(2 * i + 1);
                    *word = code(n0) as u32 | (code(n1) as u32) << 16;
                }
            });
        c
    };
    let mut escapes = Vec::new();
    let mut thread_escape = Vec::new();
    let words = match coding {
        ColumnCoding::U32 | ColumnCoding::Auto => {
            let mut c = vec![0u32; t.padded_blocks];
            c.par_chunks_mut(t.group_blocks)
                .enumerate()
                .for_each(|(g, out)| {
                    for (within, col) in out.iter_mut().enumerate() {
                        *col = cols_nat[g * t.group_blocks + t.natural(within)];
                    }
                });
            c
        }
        ColumnCoding::U16 => pack16(&|n| cols_nat[n] as u16),
        ColumnCoding::Delta16 => {
            let per_thread = escapes_per_thread();
            let mut total = 0u32;
            thread_escape = per_thread
                .iter()
                .map(|&e| {
                    total += e;
                    total - e
                })
                .collect();
            escapes = vec![0u32; total as usize];
            split_by(&mut escapes, per_thread.iter().map(|&e| e as usize))
                .into_par_iter()
                .zip(cols_nat.par_chunks(t.tile))
                .for_each(|(out, tile)| {
                    for (slot, col) in out.iter_mut().zip(
                        tile.iter()
                            .zip(delta_codes(tile))
                            .filter(|(_, c)| c.is_none())
                            .map(|(&col, _)| col),
                    ) {
                        *slot = col;
                    }
                });
            let codes: Vec<u16> = cols_nat
                .par_chunks(t.tile)
                .flat_map_iter(|tile| delta_codes(tile).map(|c| c.unwrap_or(DELTA_ESCAPE)))
                .collect();
            pack16(&|n| codes[n])
        }
    };
    Ok(Columns {
        coding,
        words,
        escapes,
        thread_escape,
    })
}

impl<T: Scalar> BccooMatrix<T> {
    /// Builds the format from CSR, in parallel passes: blocks per block row, their natural-order
    /// columns, stops and values, then the transposed layout, flags and auxiliary data per
    /// workgroup tile.
    pub fn from_csr(a: &CsrMatrix<T>, layout: &BccooLayout) -> Result<Self> {
        layout.validate()?;
        let (h, w) = (layout.block_height as usize, layout.block_width as usize);
        let slices = layout.slices as usize;
        let nrows = a.nrows();
        let stacked_rows = nrows * slices;
        check_u32("rows times slices", stacked_rows)?;
        // Slice width: a whole number of blocks.
        let slice_width = a.ncols().div_ceil(slices).div_ceil(w).max(1) * w;
        let geo = Geometry {
            h,
            w,
            nrows: nrows.max(1),
            stacked_rows,
            slice_width,
        };
        let block_rows = stacked_rows.div_ceil(h);

        // An empty block row counts as one zero block, unless BCCOO+ leaves it out (see the
        // module's notes).
        let counts = geo.block_counts(a, block_rows);
        let empty_block_rows = counts.par_iter().filter(|&&n| n == 0).count();
        let nonempty_blocks: usize = counts.par_iter().map(|&n| n as usize).sum();
        let compact =
            slices > 1 && empty_block_rows as u64 * COMPACT_EMPTY_ROWS > nonempty_blocks as u64;
        let stored = move |n: u32| {
            if compact {
                n as usize
            } else {
                n.max(1) as usize
            }
        };
        let empty_row_blocks = if compact { 0 } else { empty_block_rows };
        let blocks: usize = counts.par_iter().map(|&n| stored(n)).sum();
        let group_blocks = layout.group_blocks() as usize;
        let tiling = Tiling {
            tile: layout.tile as usize,
            wg: layout.workgroup as usize,
            group_blocks,
            padded_blocks: blocks.div_ceil(group_blocks).max(1) * group_blocks,
        };
        let padded_blocks = tiling.padded_blocks;
        check_u32("BCCOO blocks", padded_blocks * w * h)?;

        let natural = geo.natural_blocks(a, &counts, stored, blocks, padded_blocks);
        let block_zeros = natural.vals[..blocks * h * w]
            .par_iter()
            .filter(|v| **v == T::default())
            .count() as u64;
        let flags = stop_flags(&natural.stop, blocks);
        let values = layout_values(&natural.vals, tiling, h, w);
        let (thread_stops, thread_row) = thread_rows(&natural.stop, tiling.tile);
        let result_block_rows = if compact {
            block_rows - empty_block_rows
        } else {
            block_rows
        };
        debug_assert_eq!(*thread_row.last().unwrap() as usize, result_block_rows);
        let (result_rows, row_map) = if compact {
            (result_block_rows * h, compact_row_map(&counts))
        } else {
            (stacked_rows, Vec::new())
        };
        let (group_info, carry_groups) = group_chains(&thread_stops, &natural.stop, tiling);
        let columns = encode_columns(&natural.cols, layout.columns, tiling)?;
        Ok(Self {
            layout: BccooLayout {
                columns: columns.coding,
                ..*layout
            },
            nrows,
            ncols: a.ncols(),
            stacked_rows,
            block_rows,
            result_rows,
            row_map,
            blocks,
            empty_row_blocks,
            padded_blocks,
            groups: tiling.groups(),
            flags,
            columns: columns.words,
            escapes: columns.escapes,
            values,
            thread_row,
            thread_escape: columns.thread_escape,
            group_info,
            carry_groups,
            block_zeros,
        })
    }

    /// Bytes of each array, and the same matrix as CSR and COO.
    pub fn footprint(&self, nnz: usize) -> Footprint {
        let s = std::mem::size_of::<T>() as u64;
        let w4 = |v: &Vec<u32>| v.len() as u64 * 4;
        let hw = (self.layout.block_height * self.layout.block_width) as u64;
        Footprint {
            flags: w4(&self.flags),
            columns: w4(&self.columns) + w4(&self.escapes),
            values: self.values.len() as u64 * s,
            auxiliary: w4(&self.thread_row)
                + w4(&self.thread_escape)
                + w4(&self.group_info)
                + w4(&self.carry_groups)
                + w4(&self.row_map),
            empty_row_blocks: self.empty_row_blocks as u64,
            stored_zeros: self.block_zeros + (self.padded_blocks - self.blocks) as u64 * hw,
            csr: nnz as u64 * (s + 4) + (self.nrows as u64 + 1) * 4,
            coo: nnz as u64 * (s + 8),
        }
    }

    /// Where the kernel writes stacked row `q`'s result: `q` itself, or where BCCOO+ leaves empty
    /// block rows out, its place among the stored block rows (through [`Self::row_map`]), `None`
    /// when its block row is empty. The combining pass (shaders/bccoo/combine.wgsl) does the same.
    pub fn result_index(&self, q: usize) -> Option<usize> {
        if self.row_map.is_empty() {
            return Some(q);
        }
        let h = self.layout.block_height as usize;
        let (br, r) = (q / h, q % h);
        let (word, before) = (self.row_map[2 * (br / 32)], self.row_map[2 * (br / 32) + 1]);
        let bit = br % 32;
        (word >> bit & 1 == 1)
            .then(|| (before + (word & ((1u32 << bit) - 1)).count_ones()) as usize * h + r)
    }

    /// The block column of natural block `n` (decoding the stored coding; for tests and the twin).
    pub fn block_col(&self, n: usize) -> u32 {
        let (tile, wg) = (self.layout.tile as usize, self.layout.workgroup as usize);
        let gb = self.layout.group_blocks() as usize;
        let p = (n / gb) * gb + (n % gb % tile) * wg + n % gb / tile;
        match self.layout.columns {
            ColumnCoding::U32 | ColumnCoding::Auto => self.columns[p],
            ColumnCoding::U16 => (self.columns[p / 2] >> (16 * (p % 2))) & 0xFFFF,
            ColumnCoding::Delta16 => {
                // Walk the thread's tile from its start.
                let t = n / tile;
                let (mut col, mut esc) = (0i64, self.thread_escape[t] as usize);
                for m in t * tile..=n {
                    let q = (m / gb) * gb + (m % gb % tile) * wg + m % gb / tile;
                    let code = ((self.columns[q / 2] >> (16 * (q % 2))) & 0xFFFF) as u16;
                    if code == DELTA_ESCAPE {
                        col = self.escapes[esc] as i64;
                        esc += 1;
                    } else {
                        col += code as i16 as i64;
                    }
                }
                col as u32
            }
        }
    }

    /// The CPU twin of the GPU kernel: `A·x` computed tile by tile exactly as the kernel does
    /// (per-thread sequential segmented sums, a workgroup segmented scan of the threads' last
    /// partial sums, carries summed over each workgroup's chain), in f64, slices combined.
    pub fn spmv_twin(&self, x: &[T]) -> Vec<f64> {
        let (h, w) = (
            self.layout.block_height as usize,
            self.layout.block_width as usize,
        );
        let (tile, wg) = (self.layout.tile as usize, self.layout.workgroup as usize);
        let gb = tile * wg;
        let pb = self.padded_blocks;
        let stop = |n: usize| self.flags[n / 32] >> (n % 32) & 1 == 0;
        let mut out = vec![0.0f64; self.result_rows.div_ceil(h) * h];
        let mut slots: Vec<[f64; 4]> = Vec::with_capacity(self.groups);
        for g in 0..self.groups {
            let mut lasts = Vec::with_capacity(wg);
            let mut firsts = Vec::with_capacity(wg);
            for t in 0..wg {
                let gt = g * wg + t;
                let (mut sum, mut first, mut stops) = ([0.0f64; 4], None, 0u32);
                for k in 0..tile {
                    let n = gt * tile + k;
                    let p = g * gb + k * wg + t;
                    let col = self.block_col(n) as usize;
                    for (r, acc) in sum.iter_mut().enumerate().take(h) {
                        for j in 0..w {
                            let c = col * w + j;
                            if c < self.ncols {
                                *acc += self.values[(r * pb + p) * w + j].to_f64() * x[c].to_f64();
                            }
                        }
                    }
                    if stop(n) {
                        if stops == 0 {
                            first = Some(sum);
                        } else {
                            let br = (self.thread_row[gt] + stops) as usize;
                            out[br * h..br * h + h].copy_from_slice(&sum[..h]);
                        }
                        stops += 1;
                        sum = [0.0; 4];
                    }
                }
                lasts.push(sum);
                firsts.push(first);
            }
            // Inclusive segmented scan over the threads' last sums (a thread with a stop starts a
            // segment).
            let info = self.group_info[g];
            let chain = (info >> GROUP_CHAIN_SHIFT) as usize;
            let carry = if info & GROUP_NEEDS_CARRY != 0 {
                let mut c = [0.0; 4];
                for s in &slots[g - chain..g] {
                    (0..4).for_each(|r| c[r] += s[r]);
                }
                c
            } else {
                [0.0; 4]
            };
            let mut run = [0.0f64; 4];
            let mut open = true;
            for t in 0..wg {
                if let Some(f) = firsts[t] {
                    let br = self.thread_row[g * wg + t] as usize;
                    for r in 0..h {
                        out[br * h + r] = f[r] + run[r] + if open { carry[r] } else { 0.0 };
                    }
                    open = false;
                    run = lasts[t];
                } else {
                    (0..4).for_each(|r| run[r] += lasts[t][r]);
                }
            }
            slots.push(run);
        }
        let nrows = self.nrows;
        (0..nrows)
            .map(|i| {
                (0..self.layout.slices as usize)
                    .filter_map(|s| self.result_index(s * nrows + i))
                    .map(|k| out[k])
                    .sum()
            })
            .collect()
    }
}

/// The 16-bit difference codes of one thread tile's block columns: `Some(difference)` from the
/// previous column (from 0 for the first), `None` where it needs the escape.
fn delta_codes(tile: &[u32]) -> impl Iterator<Item = Option<u16>> + '_ {
    let mut prev = 0i64;
    tile.iter().map(move |&c| {
        let d = c as i64 - prev;
        prev = c as i64;
        (d.abs() <= 32767).then_some(d as i16 as u16)
    })
}

/// Stored blocks (empty block rows excluded) for every block size, in one pass per height: the
/// paper's pruning keeps the sizes with the smallest footprints.
pub fn block_counts<T: Scalar>(a: &CsrMatrix<T>, height: u32) -> [u64; 3] {
    let h = height as usize;
    let block_rows = a.nrows().div_ceil(h);
    (0..block_rows)
        .into_par_iter()
        .map_init(Vec::new, |cols: &mut Vec<u32>, br| {
            let rows = br * h..((br + 1) * h).min(a.nrows());
            // One row's columns are sorted already; several rows are merged.
            let sorted: &[u32] = if rows.len() == 1 {
                a.row(rows.start).0
            } else {
                cols.clear();
                rows.for_each(|r| cols.extend_from_slice(a.row(r).0));
                cols.sort_unstable();
                cols
            };
            let mut out = [0u64; 3];
            for (i, &w) in BLOCK_WIDTHS.iter().enumerate() {
                let mut last = u32::MAX;
                for &c in sorted {
                    if c / w != last {
                        out[i] += 1;
                        last = c / w;
                    }
                }
            }
            out
        })
        .reduce(|| [0; 3], |a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2]])
}

/// Bytes a block size streams per product (values, 16-bit columns, flags; empty rows and
/// padding ignored), from [`block_counts`]: the quantity the paper ranks block sizes by.
pub fn block_footprint(blocks: u64, h: u32, w: u32, scalar_bytes: u64) -> u64 {
    blocks * (h as u64 * w as u64 * scalar_bytes + 2) + blocks / 8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's matrix A (Eq. 1), with a = 1, b = 2, ...
    fn matrix_a() -> CsrMatrix<f64> {
        let pattern = [
            [0, 0, 1, 0, 0, 0, 1, 1],
            [0, 0, 1, 1, 0, 0, 1, 0],
            [0, 0, 0, 0, 1, 1, 1, 1],
            [1, 1, 0, 0, 1, 1, 1, 1],
        ];
        let mut t = Vec::new();
        let mut v = 1.0;
        for (r, row) in pattern.iter().enumerate() {
            for (c, &p) in row.iter().enumerate() {
                if p == 1 {
                    t.push((r, c, v));
                    v += 1.0;
                }
            }
        }
        CsrMatrix::from_triplets(4, 8, t).unwrap()
    }

    fn natural_cols<T: Scalar>(m: &BccooMatrix<T>) -> Vec<u32> {
        (0..m.blocks).map(|n| m.block_col(n)).collect()
    }

    fn natural_flags<T: Scalar>(m: &BccooMatrix<T>) -> Vec<u32> {
        (0..m.blocks)
            .map(|n| m.flags[n / 32] >> (n % 32) & 1)
            .collect()
    }

    #[test]
    fn paper_figure_3_bccoo_2x2() {
        let layout = BccooLayout {
            block_height: 2,
            block_width: 2,
            tile: 2,
            workgroup: 4,
            columns: ColumnCoding::U32,
            ..Default::default()
        };
        let m = BccooMatrix::from_csr(&matrix_a(), &layout).unwrap();
        assert_eq!(natural_flags(&m), vec![1, 0, 1, 1, 0]);
        assert_eq!(natural_cols(&m), vec![1, 3, 0, 2, 3]);
        // Plane 0 holds the blocks' upper rows: [a 0 | b c | 0 0 | g h | i j] (natural order).
        assert_eq!(m.padded_blocks, 8);
        assert!(m.flags[0] >> 5 == 0b111, "padding flags are 1s");
    }

    #[test]
    fn paper_figure_4_bccoo_plus() {
        let layout = BccooLayout {
            block_height: 2,
            block_width: 2,
            tile: 2,
            workgroup: 4,
            slices: 2,
            columns: ColumnCoding::U32,
        };
        let m = BccooMatrix::from_csr(&matrix_a(), &layout).unwrap();
        assert_eq!(natural_flags(&m), vec![0, 0, 0, 1, 0]);
        assert_eq!(natural_cols(&m), vec![1, 0, 3, 2, 3]);
        // No block row is empty in either slice: results sit at their stacked rows, no map.
        assert!(m.row_map.is_empty());
        assert_eq!(m.result_rows, m.stacked_rows);
    }

    #[test]
    fn paper_figure_6_first_result_rows() {
        // Matrix C (Eq. 2), blocks n x 1: 16 blocks, 4 threads of 4 blocks.
        let rows: [&[usize]; 4] = [&[0, 2, 4, 6, 7], &[3, 6], &[1, 3, 5], &[1, 2, 3, 5, 6, 7]];
        let t: Vec<_> = rows
            .iter()
            .enumerate()
            .flat_map(|(r, cs)| cs.iter().map(move |&c| (r, c, 1.0 + c as f64)))
            .collect();
        let c = CsrMatrix::from_triplets(4, 8, t).unwrap();
        let layout = BccooLayout {
            tile: 4,
            workgroup: 4,
            columns: ColumnCoding::U32,
            ..Default::default()
        };
        let m = BccooMatrix::from_csr(&c, &layout).unwrap();
        assert_eq!(
            natural_flags(&m),
            vec![1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0]
        );
        assert_eq!(&m.thread_row[..4], &[0, 0, 2, 3]);
        // Every thread but the first holds a stop: not all, so the scan runs.
        assert_eq!(
            m.group_info[0] & (GROUP_ALL_STOP | GROUP_HAS_STOP),
            GROUP_HAS_STOP
        );
    }

    #[test]
    fn twin_matches_reference_every_layout() {
        let mut t = Vec::new();
        // Empty rows (leading, inner, trailing), rows of one, a long row across many tiles.
        let lens = [0usize, 3, 0, 0, 1, 700, 1, 0, 5, 2, 0, 40, 1, 1, 0];
        for (r, &len) in lens.iter().enumerate() {
            for c in 0..len {
                t.push((r, (c * 7 + r * 3) % 90_000, 0.25 + ((r + c) % 7) as f64));
            }
        }
        let a = CsrMatrix::from_triplets(lens.len(), 90_000, t).unwrap();
        let x: Vec<f64> = (0..a.ncols())
            .map(|i| 1.0 + (i % 13) as f64 * 0.1)
            .collect();
        let y_ref = crate::reference::spmv_seq(&a, &x).unwrap();
        let mut modes = std::collections::HashSet::new();
        for &h in BLOCK_HEIGHTS {
            for &w in BLOCK_WIDTHS {
                for columns in [ColumnCoding::U32, ColumnCoding::Delta16, ColumnCoding::Auto] {
                    for slices in [1, 4] {
                        let layout = BccooLayout {
                            block_height: h,
                            block_width: w,
                            tile: 3,
                            workgroup: 4,
                            slices,
                            columns,
                        };
                        let m = BccooMatrix::from_csr(&a, &layout).unwrap();
                        if slices > 1 {
                            // BCCOO+ either keeps zero blocks (few empty block rows) or stores no
                            // empty block row, and the row map finds every stored one.
                            assert!(
                                m.row_map.is_empty() == (m.empty_row_blocks > 0),
                                "{layout:?}"
                            );
                            modes.insert(m.row_map.is_empty());
                            let stored: Vec<usize> = (0..m.stacked_rows)
                                .filter_map(|q| m.result_index(q))
                                .collect();
                            assert_eq!(
                                stored.len().div_ceil(h as usize),
                                m.result_rows / h as usize,
                                "{layout:?}"
                            );
                            assert!(
                                stored.windows(2).all(|p| p[0] < p[1])
                                    && stored.iter().all(|&k| k < m.result_rows)
                            );
                        }
                        let y = m.spmv_twin(&x);
                        for (r, (a, b)) in y.iter().zip(&y_ref).enumerate() {
                            assert!(
                                (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                                "{layout:?} row {r}: {a} vs {b}"
                            );
                        }
                    }
                }
            }
        }
        // Both ways of handling BCCOO+'s empty block rows ran.
        assert_eq!(modes.len(), 2);
    }

    #[test]
    fn twin_matches_reference_across_many_runs_of_block_rows() {
        // Tens of thousands of stacked block rows: pass 2 fills them in runs of 4096.
        let a = crate::testing::SuiteClass::EmptyRows.generate(120_000, 5);
        let x: Vec<f64> = (0..a.ncols())
            .map(|i| 0.5 + (i % 7) as f64 * 0.25)
            .collect();
        let y_ref = crate::reference::spmv_seq(&a, &x).unwrap();
        for (h, slices) in [(1, 1), (2, 1), (1, 4), (3, 8)] {
            let layout = BccooLayout {
                block_height: h,
                tile: 8,
                workgroup: 64,
                slices,
                ..Default::default()
            };
            let m = BccooMatrix::from_csr(&a, &layout).unwrap();
            assert!(m.block_rows > 2 * 4096, "{layout:?}");
            for (r, (a, b)) in m.spmv_twin(&x).iter().zip(&y_ref).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{layout:?} row {r}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn bccoo_plus_keeps_zero_blocks_for_few_empty_rows() {
        // One empty row among 200 of 4 entries, 2 each side of the slice boundary: 2 empty block
        // rows (one per slice) against 800 blocks, under 1 in COMPACT_EMPTY_ROWS.
        let mut t = Vec::new();
        for r in (0..201).filter(|&r| r != 77) {
            t.extend([
                (r, r % 7, 1.0),
                (r, 10 + r % 5, 2.0),
                (r, 100 + r % 9, 0.5),
                (r, 150 + r % 3, 1.5),
            ]);
        }
        let a = CsrMatrix::from_triplets(201, 200, t).unwrap();
        let m = BccooMatrix::from_csr(
            &a,
            &BccooLayout {
                slices: 2,
                tile: 4,
                workgroup: 4,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(m.empty_row_blocks, 2);
        assert!(m.row_map.is_empty());
        assert_eq!(m.result_rows, m.stacked_rows);
        let x: Vec<f64> = (0..200).map(|i| 1.0 + i as f64 * 0.01).collect();
        let y_ref = crate::reference::spmv_seq(&a, &x).unwrap();
        for (a, b) in m.spmv_twin(&x).iter().zip(&y_ref) {
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0));
        }
    }

    #[test]
    fn delta_coding_escapes_and_footprint() {
        let a =
            CsrMatrix::from_triplets(2, 100_000, vec![(0, 5, 1.0), (0, 99_000, 2.0), (1, 7, 3.0)])
                .unwrap();
        let m = BccooMatrix::from_csr(
            &a,
            &BccooLayout {
                tile: 4,
                workgroup: 4,
                columns: ColumnCoding::Delta16,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            (0..3).map(|n| m.block_col(n)).collect::<Vec<_>>(),
            vec![5, 99_000, 7]
        );
        // Both jumps beyond ±32767 escape (up to 99 000, and back down to 7); 5 is a difference.
        assert_eq!(m.escapes, vec![99_000, 7]);
        assert!(matches!(
            BccooMatrix::from_csr(
                &a,
                &BccooLayout {
                    columns: ColumnCoding::U16,
                    ..Default::default()
                }
            ),
            Err(crate::Error::InvalidParameter { .. })
        ));
        let f = m.footprint(a.nnz());
        assert_eq!(f.empty_row_blocks, 0);
        assert_eq!(f.total(), f.flags + f.columns + f.values + f.auxiliary);
    }

    #[test]
    fn all_rows_empty_and_bad_layouts() {
        let a = CsrMatrix::<f32>::zeros(5, 3).unwrap();
        let m = BccooMatrix::from_csr(
            &a,
            &BccooLayout {
                block_height: 2,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!((m.blocks, m.empty_row_blocks, m.block_rows), (3, 3, 3));
        assert_eq!(m.spmv_twin(&[1.0, 2.0, 3.0]), vec![0.0; 5]);
        // BCCOO+ stores nothing at all: no block, no result row.
        let m = BccooMatrix::from_csr(
            &a,
            &BccooLayout {
                block_height: 2,
                slices: 2,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!((m.blocks, m.empty_row_blocks, m.result_rows), (0, 0, 0));
        assert_eq!(m.spmv_twin(&[1.0, 2.0, 3.0]), vec![0.0; 5]);
        for bad in [
            BccooLayout {
                block_height: 5,
                ..Default::default()
            },
            BccooLayout {
                block_width: 3,
                ..Default::default()
            },
            BccooLayout {
                tile: 0,
                ..Default::default()
            },
            BccooLayout {
                workgroup: 96,
                ..Default::default()
            },
            BccooLayout {
                slices: 3,
                ..Default::default()
            },
        ] {
            assert!(
                matches!(
                    BccooMatrix::from_csr(&a, &bad),
                    Err(crate::Error::InvalidParameter { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn block_counts_match_the_built_format() {
        let a = crate::testing::SuiteClass::Banded.generate(3000, 3);
        for &h in BLOCK_HEIGHTS {
            let counts = block_counts(&a, h);
            for (i, &w) in BLOCK_WIDTHS.iter().enumerate() {
                let m = BccooMatrix::from_csr(
                    &a,
                    &BccooLayout {
                        block_height: h,
                        block_width: w,
                        ..Default::default()
                    },
                )
                .unwrap();
                assert_eq!(counts[i], (m.blocks - m.empty_row_blocks) as u64, "{h}x{w}");
            }
        }
    }
}
