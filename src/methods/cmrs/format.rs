//! The CMRS format (Koza et al., "Compressed multirow storage format for sparse matrices on
//! graphics processing units"): CSR rows grouped into strips of `height` rows, `strip_ptr`
//! instead of `row_ptr`, and each entry's row-in-strip number (0..16) packed into the low 4 bits
//! of its column word. Host side only: no wgpu here.

use crate::{CsrMatrix, Error, Result, Scalar};
use rayon::prelude::*;

/// Rows per strip are at most 16: the row-in-strip number takes 4 bits.
pub const MAX_HEIGHT: u32 = 16;
/// Bits of the column word holding the row-in-strip number.
pub const ROW_BITS: u32 = 4;
/// Column words are packed when every column index fits the remaining 28 bits.
pub const MAX_PACKED_COLS: usize = 1 << (32 - ROW_BITS);
/// Marks a padding item of the smaller-buffer layout: no row, no column, never multiplied.
pub const PADDING: u32 = u32::MAX;

/// Where the row-in-strip numbers live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowLayout {
    /// In the low 4 bits of each column word (`word = col << 4 | row`), when `ncols < 2^28`.
    Packed,
    /// In a separate array, eight 4-bit numbers per u32 word; column words are plain indices.
    Separate,
}

/// How to build a CMRS matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct CmrsLayout {
    /// Rows per strip, 1..=16.
    pub height: u32,
    /// Sort each strip's items by column (paper, section 4): neighbouring lanes then read
    /// neighbouring elements of x. Never changes the result beyond rounding.
    pub sort_by_column: bool,
    /// Use the separate row-in-strip array even when the packed layout would fit (for tests).
    pub force_separate: bool,
    /// The smaller-buffer variant (paper, section 6.7): `Some((w, m))` arranges each strip for a
    /// team of `w` lanes whose buffer has `m` columns, padding strips to a multiple of `w`.
    pub small_buffer: Option<(u32, u32)>,
}

impl Default for CmrsLayout {
    fn default() -> Self {
        Self {
            height: 8,
            sort_by_column: true,
            force_separate: false,
            small_buffer: None,
        }
    }
}

/// A matrix in CMRS form.
#[derive(Clone, Debug, PartialEq)]
pub struct CmrsMatrix<T> {
    /// Rows of the matrix.
    pub nrows: usize,
    /// Columns of the matrix.
    pub ncols: usize,
    /// The layout it was built with.
    pub layout: CmrsLayout,
    /// Where the row-in-strip numbers live (packed into column words or separate).
    pub rows: RowLayout,
    /// `strip_ptr[s]` is the index of strip `s`'s first item; `strip_ptr[strips] = items`.
    pub strip_ptr: Vec<u32>,
    /// Column words (packed or plain, see [`RowLayout`]); [`PADDING`] for padding items.
    pub col_words: Vec<u32>,
    /// Row-in-strip numbers, eight per word, when `rows == Separate`.
    pub row_in_strip: Vec<u32>,
    /// The values, in item order (padding items hold zeros).
    pub values: Vec<T>,
    /// The CSR entry of each value, `u32::MAX` for padding (for `SpmvPlan::update_values`).
    pub sources: Vec<u32>,
    /// Explicit zeros added by the smaller-buffer layout.
    pub padding: usize,
}

fn invalid(name: &'static str, value: impl ToString, reason: impl Into<String>) -> Error {
    Error::InvalidParameter {
        name,
        value: value.to_string(),
        reason: reason.into(),
    }
}

impl CmrsLayout {
    /// Checks the strip height and the smaller-buffer parameters.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_HEIGHT).contains(&self.height) {
            return Err(invalid(
                "height",
                self.height,
                "strip height must be 1..=16 (4 bits of row-in-strip)",
            ));
        }
        if let Some((w, m)) = self.small_buffer {
            if !w.is_power_of_two() || !(4..=128).contains(&w) {
                return Err(invalid(
                    "team width",
                    w,
                    "must be a power of two in 4..=128",
                ));
            }
            if !m.is_power_of_two() || m == 0 || m > w {
                return Err(invalid(
                    "buffer columns (M)",
                    m,
                    format!("must be a power of two no larger than the team width {w}"),
                ));
            }
        }
        Ok(())
    }
}

/// One strip's items in kernel order: (row in strip, column, value) or padding.
type Item<T> = Option<(u32, u32, T)>;

impl<T: Scalar> CmrsMatrix<T> {
    /// Converts from CSR, strips in parallel.
    pub fn from_csr(a: &CsrMatrix<T>, layout: &CmrsLayout) -> Result<Self> {
        Self::from_csr_without(a, layout, &[])
    }

    /// Converts from CSR with the rows in `left_out` (ascending) stored as empty rows: the plan
    /// adds those rows by other passes.
    pub fn from_csr_without(
        a: &CsrMatrix<T>,
        layout: &CmrsLayout,
        left_out: &[u32],
    ) -> Result<Self> {
        layout.validate()?;
        let h = layout.height as usize;
        let strips = a.nrows().div_ceil(h);
        let rows = if a.ncols() < MAX_PACKED_COLS && !layout.force_separate {
            RowLayout::Packed
        } else {
            RowLayout::Separate
        };
        // Items carry the CSR index of their entry; values are looked up at the end.
        let per_strip: Vec<Vec<Item<u32>>> = (0..strips)
            .into_par_iter()
            .map(|s| {
                let (r0, r1) = (s * h, ((s + 1) * h).min(a.nrows()));
                let mut items: Vec<(u32, u32, u32)> = (r0..r1)
                    .filter(|&r| left_out.binary_search(&(r as u32)).is_err())
                    .flat_map(|r| {
                        let first = a.row_ptr()[r];
                        a.row(r)
                            .0
                            .iter()
                            .enumerate()
                            .map(move |(j, &c)| ((r - r0) as u32, c, first + j as u32))
                    })
                    .collect();
                if layout.sort_by_column {
                    // Stable: within a column, rows stay in order.
                    items.sort_by_key(|&(_, c, _)| c);
                }
                match layout.small_buffer {
                    None => items.into_iter().map(Some).collect(),
                    Some((w, m)) => arrange_for_small_buffer(items, h, w as usize, m as usize),
                }
            })
            .collect();
        let mut strip_ptr = Vec::with_capacity(strips + 1);
        strip_ptr.push(0u32);
        for s in &per_strip {
            let next = *strip_ptr.last().unwrap() as u64 + s.len() as u64;
            crate::matrix::check_u32("CMRS items (entries plus padding)", next as usize)?;
            strip_ptr.push(next as u32);
        }
        let items: Vec<Item<u32>> = per_strip.into_iter().flatten().collect();
        let padding = items.iter().filter(|i| i.is_none()).count();
        let col_words = items
            .par_iter()
            .map(|it| match (it, rows) {
                (None, _) => PADDING,
                (Some((r, c, _)), RowLayout::Packed) => c << ROW_BITS | r,
                (Some((_, c, _)), RowLayout::Separate) => *c,
            })
            .collect();
        let row_in_strip = match rows {
            RowLayout::Packed => Vec::new(),
            RowLayout::Separate => pack_nibbles(
                &items
                    .iter()
                    .map(|it| it.map_or(0, |(r, _, _)| r))
                    .collect::<Vec<_>>(),
            ),
        };
        let sources: Vec<u32> = items
            .par_iter()
            .map(|it| it.map_or(u32::MAX, |(_, _, i)| i))
            .collect();
        let values = sources
            .par_iter()
            .map(|&i| a.values().get(i as usize).copied().unwrap_or_default())
            .collect();
        Ok(Self {
            nrows: a.nrows(),
            ncols: a.ncols(),
            layout: layout.clone(),
            rows,
            strip_ptr,
            col_words,
            row_in_strip,
            values,
            sources,
            padding,
        })
    }

    /// The number of strips.
    pub fn strips(&self) -> usize {
        self.strip_ptr.len() - 1
    }

    /// Row in strip and column of item `j` (None for padding).
    pub fn item(&self, j: usize) -> Option<(u32, u32)> {
        let w = self.col_words[j];
        if w == PADDING {
            return None;
        }
        Some(match self.rows {
            RowLayout::Packed => (w & ((1 << ROW_BITS) - 1), w >> ROW_BITS),
            RowLayout::Separate => ((self.row_in_strip[j / 8] >> ((j % 8) * 4)) & 15, w),
        })
    }

    /// Converts back to CSR (padding dropped, columns sorted), strips in parallel.
    pub fn to_csr(&self) -> Result<CsrMatrix<T>> {
        let h = self.layout.height as usize;
        let strips: Vec<Vec<(usize, u32, T)>> = (0..self.strips())
            .into_par_iter()
            .map(|s| {
                let mut items: Vec<(usize, u32, T)> = (self.strip_ptr[s] as usize
                    ..self.strip_ptr[s + 1] as usize)
                    .filter_map(|j| {
                        self.item(j)
                            .map(|(r, c)| (s * h + r as usize, c, self.values[j]))
                    })
                    .collect();
                items.sort_by_key(|&(r, c, _)| (r, c));
                items
            })
            .collect();
        let mut row_ptr = vec![0u32; self.nrows + 1];
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        for (r, c, v) in strips.into_iter().flatten() {
            row_ptr[r + 1] += 1;
            col_idx.push(c);
            values.push(v);
        }
        for r in 0..self.nrows {
            row_ptr[r + 1] += row_ptr[r];
        }
        CsrMatrix::try_new(self.nrows, self.ncols, row_ptr, col_idx, values)
    }

    /// Bytes the format occupies beyond plain CSR's (negative when smaller: `strip_ptr` is
    /// shorter than `row_ptr`).
    pub fn overhead_bytes_vs_csr(&self) -> i64 {
        let s = std::mem::size_of::<T>() as i64;
        let cmrs = self.col_words.len() as i64 * (4 + s)
            + self.strip_ptr.len() as i64 * 4
            + self.row_in_strip.len() as i64 * 4;
        let csr =
            (self.col_words.len() - self.padding) as i64 * (4 + s) + (self.nrows as i64 + 1) * 4;
        cmrs - csr
    }
}

/// Arranges one strip for the smaller-buffer kernel: a team of `w` lanes, buffer `m` columns.
///
/// Lane `l` adds into buffer cell `(row, l mod m)`. The paper only requires that no two lanes of
/// one pass share a cell, which relies on the lanes of a warp running in lockstep; WGSL (and
/// NVIDIA since Volta) promise no such thing. So here every cell has one owner: the team's lanes
/// form `w / m` groups of `m` consecutive lanes, each row is given to one group (longest rows
/// first, to the least loaded group), and a group's rows are laid out contiguously over its lanes,
/// pass after pass. Groups that run out of items are padded, as is the strip to whole passes.
fn arrange_for_small_buffer<T: Copy>(
    items: Vec<(u32, u32, T)>,
    h: usize,
    w: usize,
    m: usize,
) -> Vec<Item<T>> {
    if items.is_empty() {
        return Vec::new();
    }
    let groups = w / m;
    let mut per_row: Vec<Vec<(u32, u32, T)>> = vec![Vec::new(); h];
    for it in items {
        per_row[it.0 as usize].push(it);
    }
    let mut order: Vec<usize> = (0..h).filter(|&r| !per_row[r].is_empty()).collect();
    order.sort_by_key(|&r| std::cmp::Reverse(per_row[r].len()));
    let mut load = vec![0usize; groups];
    let mut queue: Vec<Vec<(u32, u32, T)>> = vec![Vec::new(); groups];
    for r in order {
        let g = (0..groups).min_by_key(|&g| load[g]).unwrap();
        load[g] += per_row[r].len();
        queue[g].append(&mut per_row[r]);
    }
    let passes = load.iter().map(|l| l.div_ceil(m)).max().unwrap_or(0);
    let mut out = vec![None; passes * w];
    for (g, q) in queue.into_iter().enumerate() {
        for (k, it) in q.into_iter().enumerate() {
            let (pass, lane_in_group) = (k / m, k % m);
            out[pass * w + g * m + lane_in_group] = Some(it);
        }
    }
    out
}

/// Packs 4-bit numbers eight to a word, little end first.
fn pack_nibbles(v: &[u32]) -> Vec<u32> {
    v.chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u32, |w, (i, &r)| w | (r & 15) << (4 * i))
        })
        .collect()
}

/// The paper's traffic model (eq. 5.1): bytes moved per byte requested when a team reads `h·μ`
/// consecutive items of `b` bytes through memory segments of `lambda` bytes.
pub fn traffic_ratio(h: f64, mu: f64, b: f64, lambda: f64) -> f64 {
    1.0 + (lambda - b) / (h * mu * b).max(f64::MIN_POSITIVE)
}

/// The paper's expected speedup of CMRS with strip height `h` over the one-row-per-team
/// `csr-vector` kernel (eq. 5.2): `f(1, μ) / f(h, μ)`.
pub fn predicted_speedup(h: f64, mu: f64, b: f64, lambda: f64) -> f64 {
    traffic_ratio(1.0, mu, b, lambda) / traffic_ratio(h, mu, b, lambda)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper_example() -> CsrMatrix<f64> {
        // The 5x5 matrix of the paper, eq. (2.1).
        CsrMatrix::try_new(
            5,
            5,
            vec![0, 2, 4, 6, 9, 10],
            vec![0, 3, 1, 4, 2, 4, 2, 3, 4, 4],
            (1..=10).map(f64::from).collect(),
        )
        .unwrap()
    }

    #[test]
    fn paper_example_height_2() {
        let layout = CmrsLayout {
            height: 2,
            sort_by_column: false,
            ..Default::default()
        };
        let m = CmrsMatrix::from_csr(&paper_example(), &layout).unwrap();
        assert_eq!(m.strip_ptr, vec![0, 4, 9, 10]);
        let ris: Vec<u32> = (0..10).map(|j| m.item(j).unwrap().0).collect();
        assert_eq!(ris, vec![0, 0, 1, 1, 0, 0, 1, 1, 1, 0]);
        assert_eq!(m.to_csr().unwrap(), paper_example());
    }

    #[test]
    fn paper_example_sorted_by_column() {
        let m = CmrsMatrix::from_csr(
            &paper_example(),
            &CmrsLayout {
                height: 2,
                ..Default::default()
            },
        )
        .unwrap();
        // Section 4: Val = [1 3 2 4 5 7 8 6 9 10], ColInd = [0 1 3 4 2 2 3 4 4 4].
        assert_eq!(
            m.values,
            vec![1.0, 3.0, 2.0, 4.0, 5.0, 7.0, 8.0, 6.0, 9.0, 10.0]
        );
        let cols: Vec<u32> = (0..10).map(|j| m.item(j).unwrap().1).collect();
        assert_eq!(cols, vec![0, 1, 3, 4, 2, 2, 3, 4, 4, 4]);
        assert_eq!(m.to_csr().unwrap(), paper_example());
    }

    #[test]
    fn small_buffer_cells_have_one_owner_and_passes_are_whole() {
        let a = crate::testing::SuiteClass::PowerLaw.generate(4000, 3);
        for (w, mm) in [(32, 8), (8, 2), (16, 16), (8, 1)] {
            let layout = CmrsLayout {
                height: 16,
                small_buffer: Some((w, mm)),
                ..Default::default()
            };
            let m = CmrsMatrix::from_csr(&a, &layout).unwrap();
            assert_eq!(m.to_csr().unwrap(), a);
            for s in 0..m.strips() {
                let (b, e) = (m.strip_ptr[s] as usize, m.strip_ptr[s + 1] as usize);
                assert_eq!((e - b) % w as usize, 0);
                let mut owner = std::collections::HashMap::new();
                for j in b..e {
                    if let Some((r, _)) = m.item(j) {
                        let lane = (j - b) % w as usize;
                        let prev = owner.insert((r, lane % mm as usize), lane);
                        assert!(
                            prev.is_none() || prev == Some(lane),
                            "cell ({r}, {}) shared by lanes {prev:?} and {lane}",
                            lane % mm as usize
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn separate_layout_round_trips() {
        let a = crate::testing::SuiteClass::EmptyRows.generate(3000, 1);
        for h in 1..=16 {
            let layout = CmrsLayout {
                height: h,
                force_separate: true,
                ..Default::default()
            };
            let m = CmrsMatrix::from_csr(&a, &layout).unwrap();
            assert_eq!(m.rows, RowLayout::Separate);
            assert_eq!(m.to_csr().unwrap(), a, "height {h}");
        }
    }

    #[test]
    fn bad_heights_are_errors() {
        for h in [0, 17] {
            let l = CmrsLayout {
                height: h,
                ..Default::default()
            };
            assert!(matches!(
                CmrsMatrix::from_csr(&paper_example(), &l),
                Err(Error::InvalidParameter { name: "height", .. })
            ));
        }
    }

    #[test]
    fn model_matches_the_paper() {
        // Section 5: h = 1, λ = 128, b = 4, μ = 2 gives f = 16.5; h = 16 brings it to about 2.
        assert!((traffic_ratio(1.0, 2.0, 4.0, 128.0) - 16.5).abs() < 1e-12);
        assert!((traffic_ratio(16.0, 2.0, 4.0, 128.0) - 1.97).abs() < 0.01);
        assert!((predicted_speedup(1.0, 7.0, 4.0, 128.0) - 1.0).abs() < 1e-12);
    }
}
