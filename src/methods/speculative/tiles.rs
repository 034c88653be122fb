//! The host side of the speculative segmented sum, with no GPU: the tile geometry, the CPU twin
//! of the GPU stage (same tiles, same transmitter, same synchronizer, same dirty tiles), and the
//! check-and-rearrange stage that both the twin and the real host stage run.
//!
//! How the GPU stage places each segment sum (one segment = the part of a row inside a tile):
//! - segment 0 belongs to the tile's first row `start` (the rightmost row whose start is at or
//!   before the tile's first nonzero); the last segment, when it runs past the tile's end,
//!   belongs to `stop` (the rightmost row starting at or before the tile's end);
//! - any other segment `k` belongs to row `start + k` *if the tile holds no empty row*: that is
//!   the speculation. A tile holding an empty row is **dirty**: its middle segments go to the
//!   shadow array at `start + k` instead, and the rows `start + 1 .. stop` are recorded in the
//!   speculator, for the check stage to re-arrange (empty rows get `β·y`);
//! - the last segment of a tile that runs on into the next tile of the same team is carried
//!   there (the *transmitter*) instead of being written;
//! - a row that begins before its team's first nonzero has its in-team part written to the
//!   team's **synchronizer** entry; the check stage adds `α·Σ entries` to the row, which the team
//!   holding the row's start wrote as `α·partial + β·y`.
//!
//! With dirty tiles *resolved* (the library's default when the check stage runs on the GPU), a
//! dirty tile's middle segment goes to the row whose last nonzero it ends on (the lanes building
//! the descriptor note where each row inside the tile ends), and the empty rows strictly between
//! `start` and `stop` get `β·y` from the lanes that meet them; nothing is recorded.
//!
//! Rows before the first nonzero are empty and recorded by the first team (a speculator record
//! with no sums). Every row is thus written exactly once by the GPU stage or the check stage, and
//! `y` is never read except for `β·y`: no zeroing pass, and `β = 0` never reads `y`.

use crate::Scalar;
use rayon::prelude::*;
use std::ops::Range;

/// Marks a synchronizer entry with nothing to add (mirrors `NONE` in shaders/speculative/common.wgsl).
pub const NONE: u32 = u32::MAX;

/// How the nonzeros are cut: tiles of `lanes × work` nonzeros, `tiles_per_team` consecutive
/// tiles per team (SIMD group), `teams_per_group` teams per workgroup. The paper's T, W, S, B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileGeometry {
    /// T: lanes of one team.
    pub lanes: u32,
    /// W: nonzeros per lane and tile (at most 32: a lane's head flags are one u32).
    pub work: u32,
    /// S: tiles one team runs through, carrying the transmitter.
    pub tiles_per_team: u32,
    /// B: teams per workgroup.
    pub teams_per_group: u32,
}

impl TileGeometry {
    /// Nonzeros of one tile.
    pub fn tile_len(&self) -> u64 {
        self.lanes as u64 * self.work as u64
    }
    /// Nonzeros of one team.
    pub fn team_len(&self) -> u64 {
        self.tile_len() * self.tiles_per_team as u64
    }
    /// Tiles that hold nonzeros (at least one, so that an empty matrix still has a team that
    /// records its empty rows).
    pub fn tiles(&self, nnz: u64) -> u64 {
        nnz.div_ceil(self.tile_len()).max(1)
    }
    /// Workgroups of the GPU stage.
    pub fn groups(&self, nnz: u64) -> u64 {
        nnz.div_ceil(self.team_len())
            .max(1)
            .div_ceil(self.teams_per_group as u64)
    }
    /// Teams launched (the synchronizer has one entry per team).
    pub fn teams(&self, nnz: u64) -> u64 {
        self.groups(nnz) * self.teams_per_group as u64
    }
    /// Speculator records a run can write at most: one per tile, plus the leading empty rows.
    pub fn max_records(&self, nnz: u64) -> u64 {
        self.tiles(nnz) + 1
    }
}

/// The rightmost row whose first nonzero is at or before `b` (the paper's binary search with
/// the rightmost match; `nrows` when `b` is the number of nonzeros).
pub fn rightmost_row(row_ptr: &[u32], b: u32) -> u32 {
    (row_ptr.partition_point(|&p| p <= b) - 1) as u32
}

/// The first row of every tile of the teams launched, and the row at their end ([`rightmost_row`]
/// of each tile's first nonzero, clamped to the number of nonzeros): what the GPU stage's
/// binary search finds at the start of every team, computed once. In tile order, so one sweep
/// over the row pointers.
pub fn tile_rows(row_ptr: &[u32], g: &TileGeometry) -> Vec<u32> {
    let nnz = *row_ptr.last().unwrap() as u64;
    let tiles = g.teams(nnz) * g.tiles_per_team as u64;
    let mut row = 0usize;
    (0..=tiles)
        .map(|t| {
            let b = (t * g.tile_len()).min(nnz) as u32;
            while row + 1 < row_ptr.len() && row_ptr[row + 1] <= b {
                row += 1;
            }
            row as u32
        })
        .collect()
}

/// What the structure of a matrix makes the GPU stage do, whatever the values: known on the
/// host before any run (the GPU stage discovers the same on the fly).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Speculation {
    /// Tiles holding nonzeros.
    pub tiles: u64,
    /// Tiles holding an empty row: the speculation failed there.
    pub dirty_tiles: u64,
    /// Rows before the first nonzero (recorded separately, not a tile).
    pub leading_empty_rows: u32,
    /// Synchronizer entries that carry a sum (rows crossing a team boundary).
    pub synchronized: u64,
}

impl Speculation {
    /// Clean tiles over tiles: the paper's speculation hit rate.
    pub fn hit_rate(&self) -> f64 {
        1.0 - self.dirty_tiles as f64 / self.tiles as f64
    }
    /// Whether the check stage has anything to do (with dirty tiles resolved in the GPU stage,
    /// only the leading empty rows and the synchronizer are left to it).
    pub fn needs_check(&self, dirty_tiles_resolved: bool) -> bool {
        (self.dirty_tiles > 0 && !dirty_tiles_resolved)
            || self.leading_empty_rows > 0
            || self.synchronized > 0
    }
}

/// One tile's bounds as the GPU stage sees them.
struct Tile {
    begin: u32,
    end: u32,
    start: u32,
    stop: u32,
    /// The first segment continues a row begun before the tile.
    cont: bool,
    /// The last segment runs past the tile's end.
    carries_on: bool,
    dirty: bool,
}

fn tile(row_ptr: &[u32], g: &TileGeometry, t: u64) -> Tile {
    let nnz = *row_ptr.last().unwrap() as u64;
    let begin = (t * g.tile_len()).min(nnz) as u32;
    let end = ((t + 1) * g.tile_len()).min(nnz) as u32;
    let (start, stop) = (rightmost_row(row_ptr, begin), rightmost_row(row_ptr, end));
    let live = (begin as u64) < nnz;
    let cont = live && row_ptr[start as usize] < begin;
    let carries_on = live && (end as u64) < nnz && row_ptr[stop as usize] < end;
    // Distinct head positions inside the tile; an empty row shares its position with the next.
    let mut heads: Vec<u32> = (start..=stop)
        .map(|j| row_ptr[j as usize])
        .filter(|&p| p >= begin && p < end)
        .collect();
    heads.dedup();
    let dirty =
        live && heads.len() as u64 + cont as u64 != (stop - start) as u64 + carries_on as u64;
    Tile {
        begin,
        end,
        start,
        stop,
        cont,
        carries_on,
        dirty,
    }
}

/// The structure analysis of [`Speculation`].
pub fn analyse(row_ptr: &[u32], g: &TileGeometry) -> Speculation {
    let nnz = *row_ptr.last().unwrap() as u64;
    let tiles = g.tiles(nnz);
    let dirty_tiles = (0..tiles)
        .into_par_iter()
        .filter(|&t| tile(row_ptr, g, t).dirty)
        .count() as u64;
    let synchronized = (0..g.teams(nnz))
        .into_par_iter()
        .filter(|&b| {
            let begin = b * g.team_len();
            begin < nnz && row_ptr[rightmost_row(row_ptr, begin as u32) as usize] < begin as u32
        })
        .count() as u64;
    Speculation {
        tiles,
        dirty_tiles,
        leading_empty_rows: rightmost_row(row_ptr, 0),
        synchronized,
    }
}

/// The runs of synchronizer entries that add to one row, as `(first team, teams)`, in team
/// order: a row crossing k team boundaries has a run of k entries. Known from the structure
/// alone, so the GPU finishing pass can give long runs a whole workgroup.
pub fn sync_run_bounds(row_ptr: &[u32], g: &TileGeometry) -> Vec<(u32, u32)> {
    let nnz = *row_ptr.last().unwrap() as u64;
    let mut runs: Vec<(u32, u32, u32)> = Vec::new();
    for team in 0..g.teams(nnz) {
        let begin = team * g.team_len();
        if begin >= nnz {
            break;
        }
        let row = rightmost_row(row_ptr, begin as u32);
        if row_ptr[row as usize] as u64 == begin {
            continue;
        }
        match runs.last_mut() {
            Some(last) if last.2 == row && last.0 + last.1 == team as u32 => last.1 += 1,
            _ => runs.push((team as u32, 1, row)),
        }
    }
    runs.into_iter().map(|r| (r.0, r.1)).collect()
}

/// What the GPU stage leaves for the check stage.
#[derive(Clone, Debug, Default)]
pub struct StageOutput<T> {
    /// One `(row, sum)` per team; `row` is [`NONE`] when the team has nothing to add.
    pub sync: Vec<(u32, T)>,
    /// Row ranges to re-arrange, in the order dirty tiles were found.
    pub records: Vec<Range<u32>>,
    /// Middle segment sums of dirty tiles, at `start + k`.
    pub shadow: Vec<T>,
}

/// The CPU twin of the GPU stage: writes `y` where the GPU stage would, in the same order of
/// tiles and with the same transmitter, and returns what it leaves for the check stage.
/// `resolve`: dirty tiles resolved in the GPU stage ([`super::SpeculativeOptions::resolve_dirty_tiles`]).
#[allow(clippy::too_many_arguments)]
pub fn gpu_stage_twin<T: Scalar>(
    row_ptr: &[u32],
    col_idx: &[u32],
    values: &[T],
    x: &[T],
    alpha: T,
    beta: T,
    y: &mut [T],
    g: &TileGeometry,
    resolve: bool,
) -> StageOutput<T> {
    let nnz = *row_ptr.last().unwrap() as u64;
    let nrows = row_ptr.len() - 1;
    let mut out = StageOutput {
        sync: Vec::new(),
        records: Vec::new(),
        shadow: vec![T::from_f64(0.0); nrows],
    };
    let write_y = |y: &mut [T], r: u32, v: f64| {
        let old = if beta.to_f64() == 0.0 {
            0.0
        } else {
            beta.to_f64() * y[r as usize].to_f64()
        };
        y[r as usize] = T::from_f64(alpha.to_f64() * v + old);
    };
    let first_row = rightmost_row(row_ptr, 0);
    if first_row > 0 {
        out.records.push(0..first_row);
    }
    for team in 0..g.teams(nnz) {
        let team_begin = team * g.team_len();
        let team_first = rightmost_row(row_ptr, team_begin.min(nnz) as u32);
        let team_cont = team_begin < nnz && (row_ptr[team_first as usize] as u64) < team_begin;
        let mut sync = (NONE, T::from_f64(0.0));
        let mut transmitter = 0.0;
        for i in 0..g.tiles_per_team as u64 {
            let t = tile(row_ptr, g, team * g.tiles_per_team as u64 + i);
            if t.begin as u64 >= nnz {
                continue;
            }
            // Segment sums in order, each with the nonzero it ends before; a head is a row start
            // inside the tile.
            let mut sums = Vec::new();
            let mut acc = if t.cont && i > 0 { transmitter } else { 0.0 };
            for e in t.begin..t.end {
                let is_head = row_ptr[rightmost_row(row_ptr, e) as usize] == e;
                if is_head && e > t.begin {
                    sums.push((acc, e));
                    acc = 0.0;
                }
                acc += values[e as usize].to_f64() * x[col_idx[e as usize] as usize].to_f64();
            }
            sums.push((acc, t.end));
            let last = sums.len() - 1;
            for (k, &(v, end)) in sums.iter().enumerate() {
                let r = if k == last && t.carries_on {
                    if i + 1 < g.tiles_per_team as u64 {
                        transmitter = v;
                        continue;
                    }
                    t.stop
                } else if k == 0 {
                    t.start
                } else if t.dirty && resolve {
                    rightmost_row(&row_ptr[..=t.stop as usize], end - 1)
                } else if t.dirty {
                    out.shadow[t.start as usize + k] = T::from_f64(v);
                    continue;
                } else {
                    t.start + k as u32
                };
                if r == team_first && team_cont {
                    sync = (r, T::from_f64(v));
                } else {
                    write_y(y, r, v);
                }
            }
            if t.dirty && resolve {
                for r in t.start + 1..t.stop {
                    if row_ptr[r as usize + 1] == row_ptr[r as usize] {
                        write_y(y, r, 0.0);
                    }
                }
            } else if t.dirty {
                out.records.push(t.start + 1..t.stop);
            }
        }
        out.sync.push(sync);
    }
    out
}

/// Sums of each run of synchronizer entries with the same row, in row order (runs are
/// contiguous: teams are in nonzero order). Rayon splits the entries; a run is never split.
pub fn sync_runs<T: Scalar>(sync: &[(u32, T)]) -> Vec<(u32, f64)> {
    sync.par_chunk_by(|a, b| a.0 == b.0)
        .filter(|run| run[0].0 != NONE)
        .map(|run| (run[0].0, run.iter().map(|e| e.1.to_f64()).sum()))
        .collect()
}

/// Re-arranges one speculator record: the rows `rows` of `y` (given as `y_rows`) receive, in
/// order, the sums `shadow_rows[0..]` if non-empty and nothing if empty, so `y = α·sum + β·y`.
pub fn rearrange<T: Scalar>(
    row_ptr: &[u32],
    rows: Range<u32>,
    shadow_rows: &[T],
    alpha: T,
    beta: T,
    y_rows: &mut [T],
) {
    let (alpha, beta) = (alpha.to_f64(), beta.to_f64());
    let mut next = 0;
    for (i, r) in rows.enumerate() {
        let sum = if row_ptr[r as usize + 1] > row_ptr[r as usize] {
            next += 1;
            shadow_rows[next - 1].to_f64()
        } else {
            0.0
        };
        let old = if beta == 0.0 {
            0.0
        } else {
            beta * y_rows[i].to_f64()
        };
        y_rows[i] = T::from_f64(alpha * sum + old);
    }
}

/// The check stage on whole host arrays (what the host stage does over mapped buffers): adds
/// the synchronizer into `y` and re-arranges every dirty record, in parallel.
pub fn check_stage<T: Scalar>(
    row_ptr: &[u32],
    out: &StageOutput<T>,
    alpha: T,
    beta: T,
    y: &mut [T],
) {
    for (r, s) in sync_runs(&out.sync) {
        y[r as usize] = T::from_f64(y[r as usize].to_f64() + alpha.to_f64() * s);
    }
    for_each_record(&out.records, y, |rows, y_rows| {
        let shadow = &out.shadow[rows.start as usize..rows.end as usize];
        rearrange(row_ptr, rows, shadow, alpha, beta, y_rows)
    });
}

/// Runs `f` on each record's rows of `y` in parallel (records never overlap).
pub fn for_each_record<T: Send>(
    records: &[Range<u32>],
    y: &mut [T],
    f: impl Fn(Range<u32>, &mut [T]) + Sync,
) {
    let mut sorted: Vec<Range<u32>> = records.iter().filter(|r| !r.is_empty()).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut parts = Vec::with_capacity(sorted.len());
    let mut rest = y;
    let mut at = 0u32;
    for r in sorted {
        let (_, tail) = rest.split_at_mut((r.start - at) as usize);
        let (mine, tail) = tail.split_at_mut(r.len());
        parts.push((r.clone(), mine));
        rest = tail;
        at = r.end;
    }
    parts.into_par_iter().for_each(|(r, ys)| f(r, ys));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference;
    use crate::testing::suite;
    use crate::CsrMatrix;

    fn twin_spmv(
        a: &CsrMatrix<f64>,
        g: &TileGeometry,
        alpha: f64,
        beta: f64,
        y0: &[f64],
        resolve: bool,
    ) -> Vec<f64> {
        let x = suite::random_vector(a.ncols(), 3);
        let mut y = y0.to_vec();
        let out = gpu_stage_twin(
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            &x,
            alpha,
            beta,
            &mut y,
            g,
            resolve,
        );
        if resolve {
            assert!(
                out.records.len() <= 1,
                "resolving, only leading empty rows are recorded"
            );
        }
        check_stage(a.row_ptr(), &out, alpha, beta, &mut y);
        y
    }

    fn geometries() -> Vec<TileGeometry> {
        let mut v = Vec::new();
        for (lanes, work, tiles_per_team) in
            [(4, 2, 1), (4, 2, 3), (8, 4, 2), (2, 1, 5), (32, 8, 7)]
        {
            v.push(TileGeometry {
                lanes,
                work,
                tiles_per_team,
                teams_per_group: 2,
            });
        }
        v
    }

    fn check(a: &CsrMatrix<f64>, label: &str) {
        let x = suite::random_vector(a.ncols(), 3);
        let y0 = suite::random_vector(a.nrows(), 5);
        for g in geometries() {
            for (alpha, beta) in [(1.0, 0.0), (-1.5, 0.75)] {
                for resolve in [false, true] {
                    let y = twin_spmv(a, &g, alpha, beta, &y0, resolve);
                    let want = reference::spmv_axpby(alpha, a, &x, beta, &y0).unwrap();
                    let c = reference::check(alpha, a, &x, beta, Some(&y0), &y, &want);
                    assert!(
                        c.ok,
                        "{label} {g:?} α={alpha} β={beta} resolve={resolve}: worst row {:?}",
                        c.worst_row
                    );
                }
            }
        }
    }

    fn csr(nrows: usize, lens: &[usize]) -> CsrMatrix<f64> {
        let mut t = Vec::new();
        for (r, &len) in lens.iter().enumerate() {
            for c in 0..len {
                t.push((r, c * 7 % 1000, 1.0 + ((r * 31 + c) % 5) as f64));
            }
        }
        CsrMatrix::from_triplets(nrows, 1000, t).unwrap()
    }

    #[test]
    fn twin_matches_reference_on_irregular_rows() {
        check(&csr(12, &[3, 3, 2, 0, 1, 3, 0, 0, 7, 4, 0, 25]), "mixed");
        check(&csr(5, &[0, 0, 0, 0, 0]), "all empty");
        check(&csr(0, &[]), "no rows");
        check(
            &csr(6, &[0, 0, 40, 0, 0, 0]),
            "one long row among empty ones",
        );
        check(&csr(40, &[1; 40]), "rows of one");
        check(&csr(3, &[200, 0, 1]), "a row across many teams");
        for class in suite::SuiteClass::ALL {
            check(&class.generate(3000, 9), class.name());
        }
    }

    #[test]
    fn analysis_matches_the_twin() {
        let a = csr(12, &[3, 3, 2, 0, 1, 3, 0, 0, 7, 4, 0, 25]);
        for g in geometries() {
            let s = analyse(a.row_ptr(), &g);
            let x = vec![1.0; a.ncols()];
            let mut y = vec![0.0; a.nrows()];
            let out = gpu_stage_twin(
                a.row_ptr(),
                a.col_idx(),
                a.values(),
                &x,
                1.0,
                0.0,
                &mut y,
                &g,
                false,
            );
            let dirty = out.records.len() as u64 - (s.leading_empty_rows > 0) as u64;
            assert_eq!(dirty, s.dirty_tiles, "{g:?}");
            assert_eq!(
                out.sync.iter().filter(|e| e.0 != NONE).count() as u64,
                s.synchronized,
                "{g:?}"
            );
            let runs = sync_run_bounds(a.row_ptr(), &g);
            assert_eq!(runs.iter().map(|r| r.1 as u64).sum::<u64>(), s.synchronized);
            for (first, len) in runs {
                let row = out.sync[first as usize].0;
                assert!((first..first + len).all(|t| out.sync[t as usize].0 == row));
                assert_ne!(out.sync.get((first + len) as usize).map(|e| e.0), Some(row));
            }
            assert!(s.dirty_tiles > 0 && s.hit_rate() < 1.0);
        }
        let clean = csr(30, &[2; 30]);
        let s = analyse(clean.row_ptr(), &geometries()[0]);
        assert_eq!((s.dirty_tiles, s.leading_empty_rows), (0, 0));
        assert_eq!(s.hit_rate(), 1.0);
    }

    #[test]
    fn tile_rows_are_the_binary_search_results() {
        for a in [
            csr(12, &[3, 3, 2, 0, 1, 3, 0, 0, 7, 4, 0, 25]),
            csr(5, &[0; 5]),
            csr(0, &[]),
            csr(4, &[0, 9, 0, 0]),
        ] {
            for g in geometries() {
                let tiles = g.teams(a.nnz() as u64) * g.tiles_per_team as u64;
                let want: Vec<u32> = (0..=tiles)
                    .map(|t| {
                        rightmost_row(a.row_ptr(), (t * g.tile_len()).min(a.nnz() as u64) as u32)
                    })
                    .collect();
                assert_eq!(tile_rows(a.row_ptr(), &g), want, "{g:?}");
            }
        }
    }

    #[test]
    fn rightmost_match() {
        let row_ptr = [0u32, 0, 3, 3, 3, 5, 5];
        assert_eq!(rightmost_row(&row_ptr, 0), 1);
        assert_eq!(rightmost_row(&row_ptr, 2), 1);
        assert_eq!(rightmost_row(&row_ptr, 3), 4);
        assert_eq!(rightmost_row(&row_ptr, 5), 6);
    }

    proptest::proptest! {
        #[test]
        fn twin_is_exact_for_random_structures(lens in proptest::collection::vec(proptest::prop_oneof![3 => 0usize..4, 1 => 0usize..40], 0..60)) {
            check(&csr(lens.len(), &lens), "random");
        }
    }
}
