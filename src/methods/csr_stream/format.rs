//! `csr-stream`'s format, built on the host: rows packed into tiles of at most [`tile_entries`]
//! entries (and as many rows), each tile's entries reordered by column, with each entry's place
//! in the tile's CSR order beside it.

use crate::Scalar;
use rayon::prelude::*;

/// Entries (and rows) one tile holds: its products fill a workgroup array of 8 KiB, so two
/// thousand f32 or one thousand f64 (`TILE` in shaders/csr_stream/tile_*.wgsl).
pub(crate) fn tile_entries<T: Scalar>() -> u32 {
    super::kernels::tile_for_words(std::mem::size_of::<T>() as u32 / 4)
}

/// Entries beyond which a row is long: a tile of its own, summed by the long-row passes.
pub(crate) fn long_row(tile: u32) -> u32 {
    tile / 4
}

/// The format: `tile_rows[t]..tile_rows[t + 1]` are tile `t`'s rows; `col_idx` and `values`
/// hold the CSR entries, each tile's in column order (a long row's left in CSR order, for the
/// long-row passes); `places` the entries' places in their tile's CSR order, two 16-bit places
/// per word; `sources[i]` the CSR entry at `i`.
pub(crate) struct StreamFormat<T> {
    pub tile_rows: Vec<u32>,
    pub col_idx: Vec<u32>,
    pub values: Vec<T>,
    pub places: Vec<u32>,
    pub sources: Vec<u32>,
}

/// Whether row `r` starts a tile. Rows are cut where the window of `tile - long_row` entries
/// their first entry falls in, or the window of `tile` rows they fall in, changes, and around
/// long rows: each test reads only the row and the one before, so the GPU build
/// (shaders/csr_stream/build_tiles.wgsl) makes the same tiles in parallel. A tile's rows start
/// within one window of entries and are at most `long_row` long, so it holds fewer than `tile`
/// entries; it holds at most `tile` rows.
pub(crate) fn starts_tile(row_ptr: &[u32], r: usize, tile: u32) -> bool {
    let long = long_row(tile);
    let window = tile - long;
    let len = |r: usize| row_ptr[r + 1] - row_ptr[r];
    let key = |r: usize| row_ptr[r] / window + r as u32 / tile;
    r == 0 || len(r) > long || len(r - 1) > long || key(r) != key(r - 1)
}

/// The first row of each tile, and `nrows` after the last.
pub(crate) fn tile_rows(row_ptr: &[u32], tile: u32) -> Vec<u32> {
    let nrows = row_ptr.len() - 1;
    let mut starts: Vec<u32> = (0..nrows)
        .into_par_iter()
        .with_min_len(1 << 14)
        .filter(|&r| starts_tile(row_ptr, r, tile))
        .map(|r| r as u32)
        .collect();
    starts.push(nrows as u32);
    starts
}

impl<T: Scalar> StreamFormat<T> {
    /// The format of a CSR given by its arrays (`row_ptr` starting at 0).
    pub(crate) fn build(row_ptr: &[u32], cols: &[u32], values: &[T]) -> Self {
        let tile = tile_entries::<T>();
        let tile_rows = tile_rows(row_ptr, tile);
        let nnz = cols.len();
        // Each tile's entries sorted by column (ties in CSR order), as CSR entry numbers.
        let mut sources: Vec<u32> = (0..nnz as u32).collect();
        let mut places = vec![0u16; nnz.next_multiple_of(2)];
        let mut pieces = Vec::with_capacity(tile_rows.len());
        let (mut rest, mut rest_places) = (&mut sources[..], &mut places[..]);
        for w in tile_rows.windows(2) {
            let len = (row_ptr[w[1] as usize] - row_ptr[w[0] as usize]) as usize;
            let (piece, tail) = rest.split_at_mut(len);
            let (piece_places, tail_places) = rest_places.split_at_mut(len);
            // A long row is a tile of its own, left in CSR order.
            let long = w[1] - w[0] == 1 && len > long_row(tile) as usize;
            pieces.push((piece, piece_places, long));
            (rest, rest_places) = (tail, tail_places);
        }
        pieces
            .into_par_iter()
            .with_min_len(64)
            .for_each(|(piece, piece_places, long)| {
                let Some(&first) = piece.first() else {
                    return;
                };
                if long {
                    return;
                }
                piece.sort_by_key(|&e| (cols[e as usize], e));
                for (p, &e) in piece_places.iter_mut().zip(piece.iter()) {
                    *p = (e - first) as u16;
                }
            });
        let col_idx = sources.par_iter().map(|&e| cols[e as usize]).collect();
        let values = sources.par_iter().map(|&e| values[e as usize]).collect();
        let places = places
            .chunks_exact(2)
            .map(|p| p[0] as u32 | (p[1] as u32) << 16)
            .collect();
        Self {
            tile_rows,
            col_idx,
            values,
            places,
            sources,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CsrMatrix;

    #[test]
    fn tiles_hold_less_than_a_tile_and_long_rows_stand_alone() {
        // A tile of 8: rows over 2 entries are long, windows of 6 entries and 8 rows. Rows of 1,
        // 0, 2, 3 (long), 1, 2, 2, 1 entries.
        let row_ptr = [0, 1, 1, 3, 6, 7, 9, 11, 12];
        assert_eq!(tile_rows(&row_ptr, 8), vec![0, 3, 4, 8]);
        // The row window: ten empty rows with a tile of 4.
        assert_eq!(tile_rows(&[0; 11], 4), vec![0, 4, 8, 10]);
        // Every tile of a random-length matrix holds less than a tile, or is one long row.
        let mut ptr = vec![0u32];
        for r in 0..5000u32 {
            let len = (r.wrapping_mul(2654435761) >> 7) % 700;
            ptr.push(ptr.last().unwrap() + if r % 97 == 0 { len } else { len % 9 });
        }
        let tiles = tile_rows(&ptr, 64);
        for w in tiles.windows(2) {
            let entries = ptr[w[1] as usize] - ptr[w[0] as usize];
            assert!(w[1] - w[0] <= 64);
            assert!(
                entries < 64 || w[1] - w[0] == 1 && entries > long_row(64),
                "{w:?}"
            );
        }
    }

    #[test]
    fn each_tile_is_sorted_by_column_and_places_invert_the_order() {
        let a = CsrMatrix::<f32>::try_new(
            3,
            6,
            vec![0, 3, 5, 6],
            vec![1, 4, 5, 0, 2, 3],
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        )
        .unwrap();
        let f = StreamFormat::build(a.row_ptr(), a.col_idx(), a.values());
        assert_eq!(f.tile_rows, vec![0, 3]);
        assert_eq!(f.col_idx, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(f.sources, vec![3, 0, 4, 5, 1, 2]);
        assert_eq!(f.values, vec![4.0, 1.0, 5.0, 6.0, 2.0, 3.0]);
        let place = |i: usize| (f.places[i / 2] >> (16 * (i % 2))) & 0xffff;
        assert_eq!(
            (0..6).map(place).collect::<Vec<_>>(),
            vec![3, 0, 4, 5, 1, 2]
        );
    }
}
