//! The fixed synthetic set that calibration times the methods on: structures given by
//! parameters (row-length law, column placement, shape), each at a few sizes. Deterministic on
//! every machine (a xorshift generator, no dependency), built straight as sorted CSR.

use crate::{CsrMatrix, Result};

/// xorshift64* — small, fast, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A value in [-1, -0.25] ∪ [0.25, 1]: never zero, never all the same.
    fn value(&mut self) -> f64 {
        let v = 0.25 + 0.75 * self.unit();
        if self.next() & 1 == 0 {
            v
        } else {
            -v
        }
    }
}

/// How the columns of a row are placed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Columns {
    /// A contiguous run around the diagonal (banded, FEM-like), in blocks of `block` columns.
    Band {
        /// Columns per block of the band (at least 1).
        block: u32,
    },
    /// Uniformly random over all columns.
    Random,
    /// Random within a window of this many columns around the diagonal.
    Local {
        /// Width of the window, in columns.
        window: u32,
    },
    /// A finite-difference stencil on a grid of `dims` dimensions (square, side
    /// nrows^(1/dims)): each row its point and its neighbours along every dimension (fewer on
    /// the grid's faces), so its columns come in 2·dims + 1 runs far apart, each streaming
    /// through `x` in order. The row lengths are the stencil's.
    Stencil {
        /// Dimensions of the grid (2: 5 points, 3: 7 points).
        dims: u32,
    },
}

/// How many entries each row holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lengths {
    /// Uniform in `lo..=hi` (`lo == u32::MAX` makes a dense square matrix).
    Uniform {
        /// Shortest row length.
        lo: u32,
        /// Longest row length.
        hi: u32,
    },
    /// Power law with exponent `alpha` (P(len ≥ k) ~ k^(1-alpha)) from `lo`, capped at `cap`.
    PowerLaw {
        /// The exponent (above 1; the smaller, the heavier the tail of long rows).
        alpha: f64,
        /// Shortest row length.
        lo: u32,
        /// Longest row length.
        cap: u32,
    },
    /// Like `Uniform`, with a fraction of the rows empty.
    WithEmpty {
        /// Shortest length of a non-empty row.
        lo: u32,
        /// Longest length of a non-empty row.
        hi: u32,
        /// The probability that a row is empty (0 to 1).
        empty: f64,
    },
    /// [`PowerLaw`](Self::PowerLaw), plus `hubs` rows (picked at random) that each hold
    /// `hub_share` of the columns: a scale-free graph with a few vertices linked to a large
    /// part of it.
    PowerLawHubs {
        /// The exponent of the ordinary rows.
        alpha: f64,
        /// Shortest ordinary row.
        lo: u32,
        /// Longest ordinary row.
        cap: u32,
        /// How many hub rows.
        hubs: u32,
        /// The share of the columns each hub row holds (0 to 1).
        hub_share: f64,
    },
    /// Uniform in `lo..=hi`, plus `dense` rows that hold every column.
    WithDenseRows {
        /// Shortest length of an ordinary row.
        lo: u32,
        /// Longest length of an ordinary row.
        hi: u32,
        /// How many rows, picked at random (repeats possible), hold every column.
        dense: u32,
    },
}

/// One structure of the set, at a size given when generating.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Structure {
    /// A short name for reports and calibration files; it also seeds the generator.
    pub name: &'static str,
    /// How many entries each row holds.
    pub lengths: Lengths,
    /// How the columns of a row are placed.
    pub columns: Columns,
    /// ncols / nrows.
    pub aspect: f64,
}

/// The structures of the calibration set. They span the features the model reads (mean row
/// length from 1 to hundreds, spread, long-row share, empty rows, locality, shape) rather than
/// copying any test matrix.
pub const STRUCTURES: &[Structure] = &[
    Structure {
        name: "band-blocks",
        lengths: Lengths::Uniform { lo: 27, hi: 27 },
        columns: Columns::Band { block: 3 },
        aspect: 1.0,
    },
    Structure {
        name: "band-thin",
        lengths: Lengths::Uniform { lo: 5, hi: 7 },
        columns: Columns::Band { block: 1 },
        aspect: 1.0,
    },
    // A 3-D Laplacian's pattern: short uniform rows like band-thin, but three streams of `x`
    // (±1, ±side, ±side²) where the thin band has one.
    Structure {
        name: "stencil-3d",
        lengths: Lengths::Uniform { lo: 7, hi: 7 },
        columns: Columns::Stencil { dims: 3 },
        aspect: 1.0,
    },
    Structure {
        name: "powerlaw",
        lengths: Lengths::PowerLaw {
            alpha: 2.1,
            lo: 1,
            cap: 1 << 20,
        },
        columns: Columns::Random,
        aspect: 1.0,
    },
    Structure {
        name: "powerlaw-local",
        lengths: Lengths::PowerLaw {
            alpha: 2.5,
            lo: 2,
            cap: 4096,
        },
        columns: Columns::Local { window: 4096 },
        aspect: 1.0,
    },
    // A moderate tail over scattered columns (graphs), between the heavy random tail above and
    // the local one.
    Structure {
        name: "powerlaw-mid",
        lengths: Lengths::PowerLaw {
            alpha: 2.5,
            lo: 2,
            cap: 1 << 16,
        },
        columns: Columns::Random,
        aspect: 1.0,
    },
    // A heavy tail over scattered columns plus two hubs that each link a quarter of the
    // vertices: a few rows of hundreds of thousands of entries beside the short ones.
    Structure {
        name: "powerlaw-hubs",
        lengths: Lengths::PowerLawHubs {
            alpha: 2.4,
            lo: 2,
            cap: 1 << 16,
            hubs: 2,
            hub_share: 0.25,
        },
        columns: Columns::Random,
        aspect: 1.0,
    },
    Structure {
        name: "random-short",
        lengths: Lengths::Uniform { lo: 3, hi: 5 },
        columns: Columns::Random,
        aspect: 1.0,
    },
    Structure {
        name: "random-long",
        lengths: Lengths::Uniform { lo: 40, hi: 80 },
        columns: Columns::Random,
        aspect: 1.0,
    },
    Structure {
        name: "local-mid",
        lengths: Lengths::Uniform { lo: 8, hi: 24 },
        columns: Columns::Local { window: 2048 },
        aspect: 1.0,
    },
    Structure {
        name: "perm",
        lengths: Lengths::Uniform { lo: 1, hi: 1 },
        columns: Columns::Random,
        aspect: 1.0,
    },
    Structure {
        name: "empty30",
        lengths: Lengths::WithEmpty {
            lo: 1,
            hi: 12,
            empty: 0.3,
        },
        columns: Columns::Random,
        aspect: 1.0,
    },
    Structure {
        name: "empty70",
        lengths: Lengths::WithEmpty {
            lo: 2,
            hi: 30,
            empty: 0.7,
        },
        columns: Columns::Local { window: 65536 },
        aspect: 1.0,
    },
    Structure {
        name: "dense-row",
        lengths: Lengths::WithDenseRows {
            lo: 1,
            hi: 3,
            dense: 1,
        },
        columns: Columns::Random,
        aspect: 1.0,
    },
    Structure {
        name: "tall",
        lengths: Lengths::Uniform { lo: 2, hi: 4 },
        columns: Columns::Random,
        aspect: 0.125,
    },
    Structure {
        name: "wide",
        lengths: Lengths::Uniform { lo: 16, hi: 32 },
        columns: Columns::Random,
        aspect: 8.0,
    },
    // More columns than rows with long rows: `x` far beyond the caches, read by many entries
    // per row (the short-row `wide` above is read by few).
    Structure {
        name: "wide-long",
        lengths: Lengths::Uniform { lo: 32, hi: 64 },
        columns: Columns::Random,
        aspect: 8.0,
    },
    Structure {
        name: "dense",
        lengths: Lengths::Uniform {
            lo: u32::MAX,
            hi: u32::MAX,
        },
        columns: Columns::Band { block: 1 },
        aspect: 1.0,
    },
];

fn mean_len(l: Lengths) -> f64 {
    match l {
        Lengths::Uniform { lo, hi } => (lo as f64 + hi as f64) / 2.0,
        Lengths::PowerLaw { alpha, lo, .. } => lo as f64 * (alpha - 1.0) / (alpha - 2.0).max(0.3),
        Lengths::PowerLawHubs {
            alpha,
            lo,
            cap,
            hubs,
            hub_share,
        } => {
            // Per row, the hubs add hubs · share · ncols / nrows (ncols = nrows here).
            mean_len(Lengths::PowerLaw { alpha, lo, cap }) + hubs as f64 * hub_share
        }
        Lengths::WithEmpty { lo, hi, empty } => (1.0 - empty) * (lo as f64 + hi as f64) / 2.0,
        Lengths::WithDenseRows { lo, hi, .. } => (lo as f64 + hi as f64) / 2.0 + 1.0,
    }
}

impl Structure {
    /// Generates this structure with about `target_nnz` stored entries.
    pub fn generate(&self, target_nnz: usize, seed: u64) -> Result<CsrMatrix<f64>> {
        let target = target_nnz.max(512) as f64;
        let mut rng = Rng::new(
            seed ^ self
                .name
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31) ^ b as u64),
        );
        let dense = matches!(self.lengths, Lengths::Uniform { lo: u32::MAX, .. });
        let (nrows, ncols) = if dense {
            let n = target.sqrt().ceil() as usize;
            (n, n)
        } else if let Lengths::WithDenseRows { .. } = self.lengths {
            // A dense row of n entries plus ~2 per row: n·(2+1) ≈ target.
            let n = (target / (mean_len(self.lengths) + 1.0)).ceil() as usize;
            (n, n)
        } else if let Columns::Stencil { dims } = self.columns {
            let side = (target / (2 * dims + 1) as f64)
                .powf(1.0 / dims as f64)
                .round();
            let n = (side.max(2.0) as usize).pow(dims);
            (n, n)
        } else {
            let m = mean_len(self.lengths).max(1.0);
            let nrows = (target / m).ceil().max(16.0) as usize;
            (
                nrows,
                ((nrows as f64 * self.aspect).ceil() as usize).max(16),
            )
        };
        let mut row_ptr = Vec::with_capacity(nrows + 1);
        row_ptr.push(0u32);
        let mut cols: Vec<u32> = Vec::with_capacity(target as usize * 11 / 10);
        let dense_rows: Vec<usize> = match self.lengths {
            Lengths::WithDenseRows { dense, .. } => (0..dense)
                .map(|_| rng.below(nrows as u64) as usize)
                .collect(),
            _ => Vec::new(),
        };
        let hub_rows: Vec<usize> = match self.lengths {
            Lengths::PowerLawHubs { hubs, .. } => (0..hubs)
                .map(|_| rng.below(nrows as u64) as usize)
                .collect(),
            _ => Vec::new(),
        };
        // A stencil's grid side (nrows is side^dims).
        let side = match self.columns {
            Columns::Stencil { dims } => (nrows as f64).powf(1.0 / dims as f64).round() as usize,
            _ => 0,
        };
        let mut row: Vec<u32> = Vec::new();
        for r in 0..nrows {
            let len = match self.lengths {
                _ if dense => ncols,
                _ if dense_rows.contains(&r) => ncols,
                Lengths::Uniform { lo, hi } | Lengths::WithDenseRows { lo, hi, .. } => {
                    (lo + rng.below((hi - lo + 1) as u64) as u32) as usize
                }
                Lengths::WithEmpty { lo, hi, empty } => {
                    if rng.unit() < empty {
                        0
                    } else {
                        (lo + rng.below((hi - lo + 1) as u64) as u32) as usize
                    }
                }
                Lengths::PowerLawHubs { hub_share, .. } if hub_rows.contains(&r) => {
                    (hub_share * ncols as f64).ceil() as usize
                }
                Lengths::PowerLaw { alpha, lo, cap }
                | Lengths::PowerLawHubs { alpha, lo, cap, .. } => {
                    let u = 1.0 - rng.unit();
                    ((lo as f64 * u.powf(-1.0 / (alpha - 1.0))) as u64).min(cap as u64) as usize
                }
            }
            .min(ncols);
            row.clear();
            // Diagonal position scaled to the shape.
            let diag = ((r as f64 + 0.5) * ncols as f64 / nrows as f64) as i64;
            if len == ncols {
                row.extend(0..ncols as u32);
            } else {
                match self.columns {
                    Columns::Band { block } => {
                        let b = block.max(1) as i64;
                        let start =
                            ((diag - len as i64 / 2) / b * b).clamp(0, (ncols - len) as i64);
                        row.extend((start..start + len as i64).map(|c| c as u32));
                    }
                    Columns::Stencil { dims } => {
                        row.push(r as u32);
                        for stride in (0..dims).map(|d| side.pow(d)) {
                            let coord = (r / stride) % side;
                            if coord > 0 {
                                row.push((r - stride) as u32);
                            }
                            if coord + 1 < side {
                                row.push((r + stride) as u32);
                            }
                        }
                        row.sort_unstable();
                    }
                    Columns::Random | Columns::Local { .. } => {
                        let (lo, span) = match self.columns {
                            Columns::Local { window } => {
                                let w = (window as usize).max(len).min(ncols) as i64;
                                ((diag - w / 2).clamp(0, ncols as i64 - w) as u64, w as u64)
                            }
                            _ => (0, ncols as u64),
                        };
                        if len * 3 > span as usize {
                            // Dense-ish: pick by a Bernoulli sweep then trim/extend.
                            for c in lo..lo + span {
                                if rng.below(span) < len as u64 {
                                    row.push(c as u32);
                                }
                            }
                            row.truncate(len);
                        } else {
                            while row.len() < len {
                                row.push((lo + rng.below(span)) as u32);
                                if row.len() == len {
                                    row.sort_unstable();
                                    row.dedup();
                                }
                            }
                        }
                        row.sort_unstable();
                        row.dedup();
                    }
                }
            }
            cols.extend_from_slice(&row);
            row_ptr.push(cols.len() as u32);
        }
        let values = (0..cols.len()).map(|_| rng.value()).collect();
        CsrMatrix::try_new(nrows, ncols, row_ptr, cols, values)
    }
}

/// The calibration set: every structure at each of `sizes` (target stored entries).
pub fn calibration_set(sizes: &[usize], seed: u64) -> Result<Vec<(String, CsrMatrix<f64>)>> {
    let mut out = Vec::new();
    for &n in sizes {
        for s in STRUCTURES {
            out.push((format!("{}-{}k", s.name, n / 1000), s.generate(n, seed)?));
        }
    }
    Ok(out)
}

/// A vector of `n` values in ±[0.25, 1], deterministic by seed (for timing and tests).
pub fn test_vector(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.value()).collect()
}
