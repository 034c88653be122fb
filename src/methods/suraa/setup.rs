//! SURAA's setup phase (the paper's Algorithm 2), pure CPU: rows sorted by length, cut into
//! equal segments by the Freedman–Diaconis rule, segments assigned to the three groups, and the
//! work of the "dynamic" group planned. The GPU setup (`gpu_setup.rs`) computes exactly the same
//! permutation and [`Schedule`]; this file is its CPU twin and the host fallback.
//!
//! Positions below are *sorted* positions: sorted row `i` is original row `perm[i]`.

use rayon::prelude::*;

/// Most lane-width classes of the vector kernel: widths `T·2^c`, c < `MAX_CLASSES` (T ≥ 4 and
/// a workgroup of at most 512 give at most 8).
pub const MAX_CLASSES: usize = 8;

/// Mirrors `struct Schedule` in shaders/suraa/common.wgsl: which sorted rows each dispatch
/// covers. The main grid is laid out as `[dynamic workgroups | vector classes, widest first]`;
/// the scalar rows have a dispatch of their own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Schedule {
    /// Rows of the matrix.
    pub nrows: u32,
    /// G1: sorted rows `[0, dynamic_rows)`, run by the dynamic kernel.
    pub dynamic_rows: u32,
    /// Workgroups of the dynamic kernel (entries of `partials`).
    pub dynamic_groups: u32,
    /// G3: sorted rows `[scalar_begin, nrows)`, one invocation each, run by their own dispatch.
    pub scalar_begin: u32,
    /// Workgroups of the main dispatch (G1 and G2).
    pub main_groups: u32,
    /// Rows per Freedman–Diaconis segment (for reports).
    pub segment_rows: u32,
    /// Number of segments (for reports).
    pub segments: u32,
    /// Workgroups of the scalar dispatch (G3).
    pub scalar_groups: u32,
    /// Vector class `c` (lane width `T << c`): sorted rows `[class_begin[c], class_begin[c] +
    /// class_rows[c])`, main-grid workgroups from `class_group[c]`.
    pub class_begin: [u32; MAX_CLASSES],
    /// Per vector class, the number of sorted rows it runs.
    pub class_rows: [u32; MAX_CLASSES],
    /// Per vector class, its first workgroup in the main grid.
    pub class_group: [u32; MAX_CLASSES],
}

impl Schedule {
    /// G2: the rows the vector kernel runs.
    pub fn vector_rows(&self) -> u32 {
        self.scalar_begin - self.dynamic_rows
    }
    /// G3: the rows the scalar kernel runs.
    pub fn scalar_rows(&self) -> u32 {
        self.nrows - self.scalar_begin
    }
}

/// The knobs of the setup, resolved for one adapter (see `SuraaOptions` for their meaning).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetupParams {
    /// Most rows the dynamic group G1 may take (0: no G1).
    pub max_child: u32,
    /// Segments whose mean row length is above this may enter G1.
    pub dynamic_min_mean: u32,
    /// Segments whose mean row length reaches this go to G2, the rest to G3.
    pub vector_min_mean: u32,
    /// Base lane width T of the vector classes (the SIMD width).
    pub lanes: u32,
    /// Invocations per workgroup of the product's kernels.
    pub workgroup_size: u32,
    /// Nonzeros one workgroup of the dynamic kernel sums.
    pub dynamic_chunk: u32,
}

impl SetupParams {
    /// Number of vector classes: widths T, 2T, ..., up to the workgroup.
    pub fn classes(&self) -> usize {
        (self.workgroup_size / self.lanes).trailing_zeros() as usize + 1
    }
}

/// Everything the setup produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Sorted position → original row.
    pub perm: Vec<u32>,
    /// Row pointers of the matrix in sorted row order (the exclusive prefix sums of the sorted
    /// lengths; the plan reads segment means from them too).
    pub row_ptr: Vec<u32>,
    /// Exclusive prefix of the dynamic kernel's workgroups per G1 row (`dynamic_rows + 1`).
    pub dynamic_ptr: Vec<u32>,
    /// Which sorted rows each dispatch covers.
    pub schedule: Schedule,
}

/// Rows sorted by length, longest first, ties by first column, then by row (so the order is
/// exactly that of a stable sort, whatever the thread count). Empty rows have no first column and
/// sort as column 0.
pub fn sort_rows(row_ptr: &[u32], col_idx: &[u32]) -> Vec<u32> {
    let m = row_ptr.len() - 1;
    let mut keys: Vec<(u32, u32, u32)> = (0..m)
        .into_par_iter()
        .map(|r| {
            let (s, e) = (row_ptr[r], row_ptr[r + 1]);
            let first = if e > s { col_idx[s as usize] } else { 0 };
            (!(e - s), first, r as u32)
        })
        .collect();
    keys.par_sort_unstable();
    keys.into_par_iter().map(|k| k.2).collect()
}

/// The inverse of a permutation: original row -> sorted position.
pub fn inverse(perm: &[u32]) -> Vec<u32> {
    let mut inv = vec![0u32; perm.len()];
    for (i, &r) in perm.iter().enumerate() {
        inv[r as usize] = i as u32;
    }
    inv
}

/// For each value of the rearranged matrix, the CSR entry it holds, from the permutation and the
/// sorted rows' pointers alone (the original pointers follow from the sorted lengths), so a plan
/// keeps no copy of the CSR pointers for its value updates. The CPU twin of the map plans make
/// on the GPU (`super::value_sources`).
pub fn sources_from_sorted(perm: &[u32], sorted_ptr: &[u32]) -> crate::Result<Vec<u32>> {
    let n = perm.len();
    let corrupt = || crate::Error::Map(format!("suraa's permutation of {n} rows is not one"));
    let mut len = vec![u32::MAX; n];
    for (i, &r) in perm.iter().enumerate() {
        let slot = len.get_mut(r as usize).ok_or_else(corrupt)?;
        *slot = sorted_ptr[i + 1] - sorted_ptr[i];
    }
    let mut start = Vec::with_capacity(n);
    let mut at = 0u32;
    for &l in &len {
        if l == u32::MAX {
            return Err(corrupt());
        }
        start.push(at);
        at += l;
    }
    let mut sources = crate::matrix::try_with_capacity(at as usize, "suraa value sources")?;
    for &r in perm {
        let b = start[r as usize];
        sources.extend(b..b + len[r as usize]);
    }
    Ok(sources)
}

/// Integer cube root (largest c with c³ ≤ m).
pub fn icbrt(m: u32) -> u32 {
    let mut c = (m as f64).cbrt() as u32;
    while (c as u64 + 1).pow(3) <= m as u64 {
        c += 1;
    }
    while c > 0 && (c as u64).pow(3) > m as u64 {
        c -= 1;
    }
    c
}

/// Rows per segment by the Freedman–Diaconis rule. FD gives a bin *width* `h = 2·IQR/m^(1/3)`
/// over the row lengths; the number of bins it implies, `k = ⌈range/h⌉`, is the number of
/// segments, and segments hold `⌈m/k⌉` rows each (the paper's "optimal size of the segments as
/// well as the number of segments", read so that the result is a row count). Integer arithmetic
/// throughout, with `m^(1/3)` rounded down, so the GPU setup gets the same value.
///
/// Guards: a matrix of fewer than 8 rows or rows all of one length is one segment; IQR = 0 with
/// unequal lengths (most rows alike, a few outliers) falls back to Sturges' `⌈log2 m⌉ + 1` bins.
/// With a G1 budget, segments are at most `max_child` rows, so that one long row can always
/// enter G1 even when FD asks for huge segments.
pub fn segment_rows(sorted_len: &[u32], max_child: u32) -> u32 {
    let m = sorted_len.len() as u32;
    if m == 0 {
        return 1;
    }
    // Sorted descending: the upper quartile sits at m/4, the lower at 3m/4.
    let (q3, q1) = (
        sorted_len[(m / 4) as usize],
        sorted_len[(3 * m / 4) as usize],
    );
    let range = sorted_len[0] - sorted_len[m as usize - 1];
    let iqr = q3 - q1;
    let bins: u64 = if m < 8 || range == 0 {
        1
    } else if iqr == 0 {
        (32 - (m - 1).leading_zeros()) as u64 + 1
    } else {
        (range as u64 * icbrt(m) as u64).div_ceil(2 * iqr as u64)
    };
    let bins = bins.clamp(1, m as u64) as u32;
    let seg = m.div_ceil(bins);
    if max_child > 0 {
        seg.min(max_child)
    } else {
        seg
    }
}

/// Whether the mean of `len` rows holding `sum` nonzeros is above `t` (exact in integers).
fn mean_above(sum: u32, len: u32, t: u32) -> bool {
    let (q, r) = (sum / len, sum % len);
    q > t || (q == t && r > 0)
}

/// The vector class of rows whose mean length is `mean` (floor): the paper gives each row about
/// two nonzeros per lane (`Y = ⌈(npr/2)/32⌉·32`); here the width is the smallest `T·2^c` that
/// covers `npr/2`, so that a workgroup holds a whole number of rows.
fn class_of(mean: u32, p: &SetupParams) -> usize {
    let half = mean / 2;
    let mut c = 0;
    while c + 1 < p.classes() && (p.lanes << c) < half {
        c += 1;
    }
    c
}

/// Number of leading items of `0..n` for which the non-increasing predicate `pred` holds.
fn count_while(n: u32, pred: impl Fn(u32) -> bool) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Groups, classes and the dynamic kernel's work, from the sorted lengths' exclusive prefix sums
/// `prefix` (`m + 1` entries). The GPU's `shaders/suraa/plan.wgsl` computes the same things the same way.
pub fn schedule(prefix: &[u32], p: &SetupParams) -> (Schedule, Vec<u32>) {
    let m = (prefix.len() - 1) as u32;
    let len = |i: u32| prefix[i as usize + 1] - prefix[i as usize];
    let sorted_len: Vec<u32> = (0..m).map(len).collect();
    let seg = segment_rows(&sorted_len, p.max_child);
    let nseg = m.div_ceil(seg);
    let seg_sum = |s: u32| {
        let (b, e) = (s * seg, ((s + 1) * seg).min(m));
        (prefix[e as usize] - prefix[b as usize], e - b)
    };
    let seg_mean = |s: u32| {
        let (sum, n) = seg_sum(s);
        sum / n
    };
    let rows_of = |segs: u32| (segs * seg).min(m);

    // G1: leading segments whose mean is above the threshold, as many as the budget allows.
    let above = count_while(nseg, |s| {
        let (sum, n) = seg_sum(s);
        mean_above(sum, n, p.dynamic_min_mean)
    });
    let g1_segs = count_while(above, |s| rows_of(s + 1) <= p.max_child);
    let dynamic_rows = rows_of(g1_segs);
    // G2: the following segments whose mean reaches the vector threshold; G3: the rest.
    let vector_segs = count_while(nseg, |s| seg_mean(s) >= p.vector_min_mean).max(g1_segs);
    let scalar_begin = rows_of(vector_segs);

    // Planning pass of the dynamic kernel: workgroups per G1 row (at least one, so every row is
    // written even when it is empty).
    let mut dynamic_ptr = Vec::with_capacity(dynamic_rows as usize + 1);
    let mut acc = 0u32;
    dynamic_ptr.push(0);
    for i in 0..dynamic_rows {
        acc += len(i).div_ceil(p.dynamic_chunk).max(1);
        dynamic_ptr.push(acc);
    }

    let mut s = Schedule {
        nrows: m,
        dynamic_rows,
        dynamic_groups: acc,
        scalar_begin,
        segment_rows: seg,
        segments: nseg,
        ..Default::default()
    };
    // Classes are contiguous (segment means do not increase): class c holds the G2 segments
    // whose class is c, widest first in the grid.
    let mut group = acc;
    for c in (0..p.classes()).rev() {
        // Segments of G2 whose class is at least c, then at least c + 1.
        let at_least = |c: usize| {
            if c == 0 {
                vector_segs
            } else {
                count_while(vector_segs, |s| class_of(seg_mean(s), p) >= c)
            }
        };
        let b = rows_of(at_least(c + 1).max(g1_segs));
        let e = rows_of(at_least(c).max(g1_segs));
        let rows_per_group = p.workgroup_size / (p.lanes << c);
        s.class_begin[c] = b;
        s.class_rows[c] = e - b;
        s.class_group[c] = group;
        group += (e - b).div_ceil(rows_per_group);
    }
    s.main_groups = group;
    s.scalar_groups = (m - scalar_begin).div_ceil(p.workgroup_size);
    (s, dynamic_ptr)
}

/// The whole setup on the host.
pub fn setup(row_ptr: &[u32], col_idx: &[u32], p: &SetupParams) -> Setup {
    let perm = sort_rows(row_ptr, col_idx);
    let mut prefix = Vec::with_capacity(perm.len() + 1);
    let mut acc = 0u32;
    prefix.push(0);
    for &r in &perm {
        acc += row_ptr[r as usize + 1] - row_ptr[r as usize];
        prefix.push(acc);
    }
    let (schedule, dynamic_ptr) = schedule(&prefix, p);
    Setup {
        perm,
        row_ptr: prefix,
        dynamic_ptr,
        schedule,
    }
}

/// The matrix's column indices and values in sorted row order (Algorithm 2, line 5), so that
/// consecutive sorted rows sit in consecutive memory; `s.row_ptr` indexes them.
pub fn rearrange<T: Copy + Send + Sync>(
    row_ptr: &[u32],
    col_idx: &[u32],
    vals: &[T],
    s: &Setup,
) -> (Vec<u32>, Vec<T>) {
    let rows: Vec<(u32, u32)> = s
        .perm
        .iter()
        .map(|&r| (row_ptr[r as usize], row_ptr[r as usize + 1]))
        .collect();
    let cols = rows
        .par_iter()
        .flat_map_iter(|&(b, e)| col_idx[b as usize..e as usize].iter().copied())
        .collect();
    let vals = rows
        .par_iter()
        .flat_map_iter(|&(b, e)| vals[b as usize..e as usize].iter().copied())
        .collect();
    (cols, vals)
}

/// CPU twin of the main and combine kernels: `y = A·x` through the schedule, in f64, each row by
/// the role the schedule gives it (dynamic rows as per-workgroup partial sums combined in order).
pub fn twin_spmv(
    row_ptr: &[u32],
    col_idx: &[u32],
    vals: &[f64],
    x: &[f64],
    s: &Setup,
    p: &SetupParams,
) -> Vec<f64> {
    let m = s.schedule.nrows as usize;
    let mut y = vec![f64::NAN; m];
    let row_sum = |r: usize, range: std::ops::Range<usize>| -> f64 {
        let base = row_ptr[r] as usize;
        range
            .map(|k| vals[base + k] * x[col_idx[base + k] as usize])
            .sum()
    };
    for i in 0..s.schedule.dynamic_rows as usize {
        let r = s.perm[i] as usize;
        let len = (row_ptr[r + 1] - row_ptr[r]) as usize;
        let chunk = p.dynamic_chunk as usize;
        let parts: Vec<f64> = (s.dynamic_ptr[i]..s.dynamic_ptr[i + 1])
            .map(|g| {
                let k = (g - s.dynamic_ptr[i]) as usize * chunk;
                row_sum(r, k.min(len)..(k + chunk).min(len))
            })
            .collect();
        y[r] = parts.iter().sum();
    }
    for i in s.schedule.dynamic_rows as usize..m {
        let r = s.perm[i] as usize;
        y[r] = row_sum(r, 0..(row_ptr[r + 1] - row_ptr[r]) as usize);
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params() -> SetupParams {
        SetupParams {
            max_child: 2048,
            dynamic_min_mean: 32,
            vector_min_mean: 32,
            lanes: 32,
            workgroup_size: 256,
            dynamic_chunk: 4096,
        }
    }

    fn csr_of(lens: &[u32], ncols: u32) -> (Vec<u32>, Vec<u32>) {
        let mut row_ptr = vec![0u32];
        let mut col_idx = Vec::new();
        for (r, &l) in lens.iter().enumerate() {
            for k in 0..l {
                col_idx.push((r as u32 * 7 + k * 13) % ncols);
            }
            let row = &mut col_idx[row_ptr[r] as usize..];
            row.sort_unstable();
            row_ptr.push(row_ptr[r] + l);
        }
        (row_ptr, col_idx)
    }

    #[test]
    fn sorts_by_length_then_first_column_then_row() {
        let row_ptr = [0, 2, 2, 4, 5, 7];
        let col_idx = [5, 6, 1, 9, 0, 3, 4];
        // lengths 2,0,2,1,2; first columns 5,-,1,0,3
        assert_eq!(sort_rows(&row_ptr, &col_idx), vec![2, 4, 0, 3, 1]);
    }

    #[test]
    fn integer_cube_root() {
        for m in [0u32, 1, 7, 8, 26, 27, 28, 999, 1000, 1001, u32::MAX] {
            let c = icbrt(m) as u64;
            assert!(c.pow(3) <= m as u64 && (c + 1).pow(3) > m as u64, "{m}");
        }
    }

    #[test]
    fn freedman_diaconis_and_its_guards() {
        // Equal lengths (IQR = 0, range 0): one segment.
        assert_eq!(segment_rows(&[5; 1000], 0), 1000);
        // Tiny m: one segment.
        assert_eq!(segment_rows(&[9, 5, 1], 0), 3);
        // IQR = 0 but one outlier: Sturges, ceil(log2 1000) + 1 = 11 bins.
        let mut v = vec![3u32; 1000];
        v[0] = 100_000;
        assert_eq!(segment_rows(&v, 0), 1000u32.div_ceil(11));
        // ... capped by the G1 budget.
        assert_eq!(segment_rows(&v, 16), 16);
        // The rule: lengths 1000..1 (m = 1000, c = 10): IQR = 500 (750 − 250), range 999,
        // bins = ceil(999·10 / 1000) = 10, so 100 rows per segment.
        let v: Vec<u32> = (1..=1000).rev().collect();
        assert_eq!(v[250] - v[750], 500);
        assert_eq!(segment_rows(&v, 0), 100);
    }

    #[test]
    #[allow(clippy::manual_is_multiple_of)] // the assertion reads as the paper states it
    fn groups_classes_and_dynamic_plan() {
        // 2 huge rows, 300 rows of 100, 400 rows of 40, 3000 rows of 3, 500 empty rows.
        let mut lens = vec![3u32; 3000];
        lens.extend([0; 500]);
        lens.extend([100; 300]);
        lens.extend([40; 400]);
        lens.extend([10_000, 9_000]);
        let (rp, ci) = csr_of(&lens, 50_000);
        let p = SetupParams {
            max_child: 64,
            ..params()
        };
        let s = setup(&rp, &ci, &p);
        let sc = s.schedule;
        assert_eq!(sc.nrows, lens.len() as u32);
        // The permutation sorts lengths descending.
        let sorted: Vec<u32> = s.perm.iter().map(|&r| lens[r as usize]).collect();
        assert!(sorted.windows(2).all(|w| w[0] >= w[1]));
        // Budget respected, whole segments, the huge rows inside G1.
        assert!(sc.dynamic_rows <= 64 && sc.dynamic_rows >= 2);
        assert!(sc.dynamic_rows % sc.segment_rows == 0 || sc.dynamic_rows == sc.nrows);
        assert_eq!(s.dynamic_ptr.len(), sc.dynamic_rows as usize + 1);
        assert_eq!(s.dynamic_ptr[1], 3); // 10 000 nonzeros in chunks of 4096
        assert_eq!(s.dynamic_ptr[2], 6);
        // G2 ends where segment means fall below 32: every scalar row is short.
        assert!(sorted[sc.scalar_begin as usize..].iter().all(|&l| l < 40));
        assert!(sorted[sc.dynamic_rows as usize..sc.scalar_begin as usize]
            .iter()
            .all(|&l| l >= 3));
        // Classes tile G2 exactly, widest first in the grid, and the grid adds up.
        let mut covered: Vec<(u32, u32)> = (0..p.classes())
            .filter(|&c| sc.class_rows[c] > 0)
            .map(|c| (sc.class_begin[c], sc.class_rows[c]))
            .collect();
        covered.sort();
        let mut at = sc.dynamic_rows;
        for (b, n) in covered {
            assert_eq!(b, at);
            at += n;
        }
        assert_eq!(at, sc.scalar_begin);
        // Rows of 100 get 64 lanes (class 1), rows of 40 get 32 (class 0).
        assert!(sc.class_rows[1] > 0 && sc.class_rows[0] > 0);
        let last = sc.class_group[0] + sc.class_rows[0].div_ceil(8);
        assert_eq!(sc.main_groups, last);
        assert_eq!(sc.scalar_groups, sc.scalar_rows().div_ceil(256));
    }

    #[test]
    fn empty_groups_and_tiny_matrices() {
        let p = params();
        // All short: no G1, no G2.
        let (rp, ci) = csr_of(&[3, 1, 0, 2, 5], 10);
        let s = setup(&rp, &ci, &p).schedule;
        assert_eq!(
            (
                s.dynamic_rows,
                s.scalar_begin,
                s.main_groups,
                s.scalar_groups
            ),
            (0, 0, 0, 1)
        );
        // No rows at all.
        let s = setup(&[0], &[], &p).schedule;
        assert_eq!(
            (s.nrows, s.main_groups, s.scalar_groups, s.dynamic_groups),
            (0, 0, 0, 0)
        );
        // G1 disabled: long rows go to the vector kernel.
        let (rp, ci) = csr_of(&[5000, 4000, 2], 8000);
        let s = setup(&rp, &ci, &SetupParams { max_child: 0, ..p }).schedule;
        assert_eq!(s.dynamic_rows, 0);
        assert!(s.scalar_begin >= 2);
    }

    proptest! {
        #[test]
        fn twin_matches_reference(lens in prop::collection::vec(prop_oneof![0u32..5, 0u32..80, 0u32..3000], 1..300),
                                  max_child in 0u32..40, chunk in 1u32..600, lanes_shift in 0u32..3) {
            let (rp, ci) = csr_of(&lens, 3000);
            let vals: Vec<f64> = (0..ci.len()).map(|k| (k % 17) as f64 - 8.0).collect();
            let x: Vec<f64> = (0..3000).map(|c| (c % 11) as f64 * 0.5 - 2.0).collect();
            let p = SetupParams { max_child, lanes: 8 << lanes_shift, workgroup_size: 128, dynamic_chunk: chunk, ..params() };
            let s = setup(&rp, &ci, &p);
            let mut seen = vec![false; lens.len()];
            for &r in &s.perm { seen[r as usize] = true; }
            prop_assert!(seen.iter().all(|&b| b));
            let y = twin_spmv(&rp, &ci, &vals, &x, &s, &p);
            for r in 0..lens.len() {
                let want: f64 = (rp[r]..rp[r + 1]).map(|k| vals[k as usize] * x[ci[k as usize] as usize]).sum();
                prop_assert!((y[r] - want).abs() <= 1e-9 * (1.0 + want.abs()), "row {}: {} vs {}", r, y[r], want);
            }
        }
    }
}
