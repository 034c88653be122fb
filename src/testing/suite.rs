//! The synthetic matrix suite: deterministic by seed, scalable, covering the structures that
//! decide SpMV performance and correctness (regular bands, skewed rows, empty rows, rectangles).
//! Tests, examples and benchmarks all draw from here.

use crate::{CsrMatrix, Error, Result};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// One structural class of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SuiteClass {
    /// FEM-like: 3×3 blocks on a band, about 27 entries per row.
    Banded,
    /// Row lengths from a power law, plus one row holding a large share of the entries.
    PowerLaw,
    /// Exactly 4 entries per row at random columns.
    ShortRows,
    /// A random permutation matrix: one entry per row.
    Permutation,
    /// A dense matrix stored as sparse.
    Dense,
    /// 30% of the rows empty, the rest of mixed short lengths.
    EmptyRows,
    /// Rows of 1–3 entries and a single fully dense row.
    SingleDenseRow,
    /// Eight times more rows than columns.
    Tall,
    /// Eight times more columns than rows.
    Wide,
}

impl SuiteClass {
    /// Every class, in report order.
    pub const ALL: [SuiteClass; 9] = [
        SuiteClass::Banded,
        SuiteClass::PowerLaw,
        SuiteClass::ShortRows,
        SuiteClass::Permutation,
        SuiteClass::Dense,
        SuiteClass::EmptyRows,
        SuiteClass::SingleDenseRow,
        SuiteClass::Tall,
        SuiteClass::Wide,
    ];

    /// The name used in reports and file names.
    pub fn name(self) -> &'static str {
        match self {
            SuiteClass::Banded => "banded",
            SuiteClass::PowerLaw => "power_law",
            SuiteClass::ShortRows => "short_rows",
            SuiteClass::Permutation => "permutation",
            SuiteClass::Dense => "dense",
            SuiteClass::EmptyRows => "empty_rows",
            SuiteClass::SingleDenseRow => "single_dense_row",
            SuiteClass::Tall => "tall",
            SuiteClass::Wide => "wide",
        }
    }

    /// Looks a class up by [`name`](Self::name).
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| Error::UnknownName {
                what: "suite class",
                name: name.to_owned(),
                expected: Self::ALL.map(|c| c.name()).join(", "),
            })
    }

    /// Generates this class with about `target_nnz` stored entries (at least a few hundred),
    /// the same matrix for the same `(target_nnz, seed)` on every machine and thread count.
    pub fn generate(self, target_nnz: usize, seed: u64) -> CsrMatrix<f64> {
        let t = target_nnz.max(256);
        let seed = seed ^ (self as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        match self {
            SuiteClass::Banded => {
                let n = (t / 27).max(3) / 3 * 3;
                let nb = n / 3;
                let band = 24usize.min(nb);
                build(n, n, seed, move |r, rng, cols| {
                    // Each 3-row block row couples to its diagonal block and 8 others on the band,
                    // the same set for the 3 rows of a block (decided by a per-block generator).
                    let br = r / 3;
                    let mut brng = ChaCha8Rng::seed_from_u64(seed ^ (br as u64) << 1);
                    let lo = br.saturating_sub(band / 2);
                    let hi = (lo + band).min(nb);
                    let mut blocks = vec![br];
                    for _ in 0..8 {
                        blocks.push(brng.random_range(lo..hi));
                    }
                    let _ = rng;
                    for b in blocks {
                        cols.extend((0..3).map(|k| (b * 3 + k) as u32));
                    }
                })
            }
            SuiteClass::PowerLaw => {
                let n = (t / 8).max(64);
                let heavy = n / 2;
                // About 5% of the entries in one row (capped by the column count).
                let heavy_len = (t / 20).min(n);
                build(n, n, seed, move |r, rng, cols| {
                    let len = if r == heavy {
                        heavy_len
                    } else {
                        // Pareto tail: P(len > k) ~ k^-1.5, mean about 7.
                        let u: f64 = rng.random_range(1e-6..1.0);
                        ((2.5 * u.powf(-1.0 / 1.5)) as usize).min(n / 4).max(1)
                    };
                    random_cols(rng, n, len, cols);
                })
            }
            SuiteClass::ShortRows => {
                let n = (t / 4).max(8);
                build(n, n, seed, move |_, rng, cols| random_cols(rng, n, 4, cols))
            }
            SuiteClass::Permutation => {
                let n = t;
                let mut perm: Vec<u32> = (0..n as u32).collect();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                for i in (1..n).rev() {
                    perm.swap(i, rng.random_range(0..=i));
                }
                build(n, n, seed, move |r, _, cols| cols.push(perm[r]))
            }
            SuiteClass::Dense => {
                let n = (t as f64).sqrt().ceil() as usize;
                build(n, n, seed, move |_, _, cols| cols.extend(0..n as u32))
            }
            SuiteClass::EmptyRows => {
                let n = (t / 6).max(16);
                build(n, n, seed, move |_, rng, cols| {
                    if rng.random_range(0.0..1.0) >= 0.3 {
                        let len = rng.random_range(1..=16);
                        random_cols(rng, n, len, cols);
                    }
                })
            }
            SuiteClass::SingleDenseRow => {
                let n = (t / 3).max(16);
                let dense = n / 3;
                build(n, n, seed, move |r, rng, cols| {
                    if r == dense {
                        cols.extend(0..n as u32);
                    } else {
                        let len = rng.random_range(1..=3);
                        random_cols(rng, n, len, cols);
                    }
                })
            }
            SuiteClass::Tall => {
                let m = (t / 6).max(64);
                let n = (m / 8).max(8);
                build(m, n, seed, move |_, rng, cols| {
                    let len = rng.random_range(2..=10).min(n);
                    random_cols(rng, n, len, cols);
                })
            }
            SuiteClass::Wide => {
                let m = (t / 48).max(8);
                let n = m * 8;
                build(m, n, seed, move |_, rng, cols| {
                    let len = rng.random_range(16..=80);
                    random_cols(rng, n, len, cols);
                })
            }
        }
    }
}

/// `len` distinct random columns below `n` (any order; `build` sorts).
fn random_cols(rng: &mut ChaCha8Rng, n: usize, len: usize, cols: &mut Vec<u32>) {
    let len = len.min(n);
    if len * 2 > n {
        // Dense enough: take every column with probability len/n would be uneven; shuffle instead.
        let mut all: Vec<u32> = (0..n as u32).collect();
        for i in 0..len {
            let j = rng.random_range(i..n);
            all.swap(i, j);
        }
        cols.extend_from_slice(&all[..len]);
        return;
    }
    let start = cols.len();
    while cols.len() - start < len {
        let c = rng.random_range(0..n as u32);
        if !cols[start..].contains(&c) || len > 64 {
            cols.push(c);
        }
    }
}

/// Rows per independently seeded generator: the result does not depend on the thread count.
const ROWS_PER_CHUNK: usize = 4096;

/// Builds an `m × n` matrix whose row `r` gets the columns `row_cols` pushes (duplicates removed,
/// sorted) and values uniform in ±[0.5, 1.5): never all zero, never all one.
fn build<F>(m: usize, n: usize, seed: u64, row_cols: F) -> CsrMatrix<f64>
where
    F: Fn(usize, &mut ChaCha8Rng, &mut Vec<u32>) + Sync,
{
    let chunks: Vec<(Vec<u32>, Vec<u32>, Vec<f64>)> = (0..m.div_ceil(ROWS_PER_CHUNK))
        .into_par_iter()
        .map(|ch| {
            let mut rng = ChaCha8Rng::seed_from_u64(
                seed.wrapping_add((ch as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F)),
            );
            let (mut lens, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
            for r in ch * ROWS_PER_CHUNK..((ch + 1) * ROWS_PER_CHUNK).min(m) {
                let start = cols.len();
                row_cols(r, &mut rng, &mut cols);
                cols[start..].sort_unstable();
                let mut w = start;
                for i in start..cols.len() {
                    if i == start || cols[i] != cols[w - 1] {
                        cols[w] = cols[i];
                        w += 1;
                    }
                }
                cols.truncate(w);
                for _ in start..w {
                    let mag: f64 = rng.random_range(0.5..1.5);
                    vals.push(if rng.random_range(0..2) == 0 {
                        mag
                    } else {
                        -mag
                    });
                }
                lens.push((w - start) as u32);
            }
            (lens, cols, vals)
        })
        .collect();
    let mut row_ptr = Vec::with_capacity(m + 1);
    row_ptr.push(0u32);
    let (mut col_idx, mut values) = (Vec::new(), Vec::new());
    for (lens, cols, vals) in chunks {
        for l in lens {
            row_ptr.push(row_ptr.last().unwrap() + l);
        }
        col_idx.extend(cols);
        values.extend(vals);
    }
    CsrMatrix::try_new(m, n, row_ptr, col_idx, values).expect("suite generator builds valid CSR")
}

/// A deterministic vector of `n` values uniform in ±[0.5, 1.5).
pub fn random_vector(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mag: f64 = rng.random_range(0.5..1.5);
            if rng.random_range(0..2) == 0 {
                mag
            } else {
                -mag
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_shaped() {
        for class in SuiteClass::ALL {
            let a = class.generate(5000, 7);
            assert_eq!(a, class.generate(5000, 7), "{class:?} not deterministic");
            let s = a.row_stats();
            assert!(s.nnz > 100, "{class:?}: {s}");
            match class {
                SuiteClass::ShortRows => assert_eq!((s.min_len, s.max_len), (4, 4)),
                SuiteClass::Permutation => assert_eq!((s.min_len, s.max_len), (1, 1)),
                SuiteClass::Dense => assert_eq!(s.nnz, s.nrows * s.ncols),
                SuiteClass::EmptyRows => {
                    assert!((s.empty_rows as f64 / s.nrows as f64 - 0.3).abs() < 0.05)
                }
                SuiteClass::SingleDenseRow => assert_eq!(s.max_len, s.ncols),
                SuiteClass::PowerLaw => assert!(s.max_len * 40 > s.nnz, "{s}"),
                SuiteClass::Tall => assert!(s.nrows >= 8 * s.ncols),
                SuiteClass::Wide => assert!(s.ncols >= 8 * s.nrows),
                SuiteClass::Banded => assert!(s.mean > 15.0 && s.mean <= 27.0, "{s}"),
            }
        }
    }
}
