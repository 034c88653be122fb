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

/// Entries beyond which a row is long: a tile of its own, in CSR order. The kernels repeat the
/// rule (a test checks they agree): a row between two different thresholds would be summed twice.
pub(crate) fn long_row(tile: u32) -> u32 {
    tile / 4
}

/// Entries per invocation of a long row the product kernel sums in its own tile
/// (`IN_TILE_PER_LANE` in shaders/csr_stream/stream.wgsl): a few times a tile's share (8 in f32,
/// 4 in f64), so that no workgroup of the product's dispatch runs far longer than the rest; the
/// passes' pieces of longer rows run beside it (docs/csr-stream.md).
pub(crate) const IN_TILE_PER_LANE: u32 = 16;

/// Entries beyond which a long row is left to the long-row passes: up to this, the workgroup of
/// its tile (`wg` invocations) sums it in the product's own dispatch, so a matrix whose rows all
/// fit needs no other dispatch.
pub(crate) fn summed_in_tile(wg: u32) -> u64 {
    (wg * IN_TILE_PER_LANE) as u64
}

/// Entries of a chunk: a sorted tile's entries go in chunks, each with its first column.
pub(crate) const CHUNK: usize = 64;
/// Bits of a packed entry's column offset; its place in the tile goes above them.
pub(crate) const PLACE_SHIFT: u32 = 21;
/// A chunk whose columns span `1 << PLACE_SHIFT` or more holds plain columns.
pub(crate) const RAW_CHUNK: u32 = u32::MAX;

/// Chunk words for `nnz` entries in `tiles` tiles: tile `t` starting at entry `first` has its
/// chunks from `first / CHUNK + t` (shaders/csr_stream/tiles.wgsl, `first_chunk`).
pub(crate) fn chunk_words(nnz: u64, tiles: u64) -> u64 {
    nnz / CHUNK as u64 + tiles + 1
}

/// The format: `tile_rows[t]..tile_rows[t + 1]` are tile `t`'s rows; `col_idx` and `values`
/// hold the CSR entries, each tile's in column order (a long row's left in CSR order, with plain
/// columns, for the long-row passes); `places` the entries' places in their tile's CSR order,
/// two 16-bit places per word; `sources[i]` the CSR entry at `i`. A sorted tile's entries go in
/// chunks of [`CHUNK`]: where a chunk's columns span less than `1 << PLACE_SHIFT`, its
/// `chunk_bases` word is its first column and each `col_idx` word holds the entry's place above
/// its column's offset from that (one read per entry instead of a column and a place); else
/// the chunk's word is [`RAW_CHUNK`] and its `col_idx` words are plain columns.
pub(crate) struct StreamFormat<T> {
    pub tile_rows: Vec<u32>,
    pub col_idx: Vec<u32>,
    pub values: Vec<T>,
    pub places: Vec<u32>,
    pub chunk_bases: Vec<u32>,
    pub sources: Vec<u32>,
}

impl<T> StreamFormat<T> {
    /// What the product reads of `places`: all of it where some chunk holds plain columns (only
    /// those chunks' entries read their places), else one word, since packed entries carry
    /// their places in their column words. (All of it where it fits the smallest buffer, 16
    /// bytes, anyway.)
    pub(crate) fn places_read(&self) -> &[u32] {
        if self.places.len() <= 4 || self.chunk_bases.contains(&RAW_CHUNK) {
            &self.places
        } else {
            &self.places[..self.places.len().min(1)]
        }
    }
}

/// Packs one sorted tile's columns (`cols`, its places beside) in place and writes its chunk
/// words.
fn pack_tile(cols: &mut [u32], places: &[u16], bases: &mut [u32]) {
    for ((chunk, chunk_places), base_word) in cols
        .chunks_mut(CHUNK)
        .zip(places.chunks(CHUNK))
        .zip(bases.iter_mut())
    {
        let base = chunk[0];
        if chunk[chunk.len() - 1] - base >= 1 << PLACE_SHIFT {
            *base_word = RAW_CHUNK;
            continue;
        }
        *base_word = base;
        for (c, &p) in chunk.iter_mut().zip(chunk_places) {
            *c = (p as u32) << PLACE_SHIFT | (*c - base);
        }
    }
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
        // Each tile's entries sorted by column (ties in CSR order), as CSR entry numbers, with
        // their places and columns, the columns packed by chunk (chunk words at `first_chunk`;
        // words no sorted tile's chunk takes stay 0, as in the GPU build's zeroed buffer).
        let mut sources: Vec<u32> = (0..nnz as u32).collect();
        let mut places = vec![0u16; nnz.next_multiple_of(2)];
        let mut col_idx = vec![0u32; nnz];
        let mut chunk_bases = vec![0; chunk_words(nnz as u64, tile_rows.len() as u64 - 1) as usize];
        let mut pieces = Vec::with_capacity(tile_rows.len());
        let (mut rest, mut rest_places) = (&mut sources[..], &mut places[..]);
        let (mut rest_cols, mut rest_bases, mut base_at) =
            (&mut col_idx[..], &mut chunk_bases[..], 0);
        for (t, w) in tile_rows.windows(2).enumerate() {
            let first = row_ptr[w[0] as usize] as usize;
            let len = row_ptr[w[1] as usize] as usize - first;
            let (piece, tail) = rest.split_at_mut(len);
            let (piece_places, tail_places) = rest_places.split_at_mut(len);
            let (piece_cols, tail_cols) = rest_cols.split_at_mut(len);
            let start = first / CHUNK + t;
            let (_, from) = rest_bases.split_at_mut(start - base_at);
            let (piece_bases, tail_bases) = from.split_at_mut(len.div_ceil(CHUNK));
            // A long row is a tile of its own, left in CSR order.
            let long = w[1] - w[0] == 1 && len > long_row(tile) as usize;
            pieces.push((piece, piece_places, piece_cols, piece_bases, long));
            (rest, rest_places, rest_cols) = (tail, tail_places, tail_cols);
            (rest_bases, base_at) = (tail_bases, start + len.div_ceil(CHUNK));
        }
        pieces.into_par_iter().with_min_len(64).for_each(
            |(piece, piece_places, piece_cols, piece_bases, long)| {
                let Some(&first) = piece.first() else {
                    return;
                };
                if !long {
                    piece.sort_by_key(|&e| (cols[e as usize], e));
                }
                for (c, &e) in piece_cols.iter_mut().zip(piece.iter()) {
                    *c = cols[e as usize];
                }
                if long {
                    return;
                }
                for (p, &e) in piece_places.iter_mut().zip(piece.iter()) {
                    *p = (e - first) as u16;
                }
                pack_tile(piece_cols, piece_places, piece_bases);
            },
        );
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
            chunk_bases,
            sources,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CsrMatrix;

    #[test]
    fn the_kernels_cut_long_rows_where_the_host_does() {
        // Each kernel's rule, written with the host's divisor, is in its text.
        let divisor = 2048 / long_row(2048);
        let kernels = [
            (
                include_str!("../../../shaders/csr_stream/tiles.wgsl"),
                "count <= TILE / {}u",
            ),
            (
                include_str!("../../../shaders/csr_stream/build_tiles.wgsl"),
                "let long = p.tile / {}u;",
            ),
        ];
        for (source, rule) in kernels {
            let rule = rule.replace("{}", &divisor.to_string());
            assert!(source.contains(&rule), "a kernel does not say `{rule}`");
        }
        // And where the passes take over from the tile's own workgroup.
        let rule = format!("const IN_TILE_PER_LANE: u32 = {IN_TILE_PER_LANE}u;");
        let stream = include_str!("../../../shaders/csr_stream/stream.wgsl");
        assert!(
            stream.contains(&rule),
            "the product kernel does not say `{rule}`"
        );
    }

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
        // One chunk, from column 0: each word is the place above the column.
        assert_eq!(f.chunk_bases, vec![0, 0]);
        let packed = |col: u32, place: u32| place << PLACE_SHIFT | col;
        assert_eq!(
            f.col_idx,
            vec![
                packed(0, 3),
                packed(1, 0),
                packed(2, 4),
                packed(3, 5),
                packed(4, 1),
                packed(5, 2)
            ]
        );
        assert_eq!(f.sources, vec![3, 0, 4, 5, 1, 2]);
        assert_eq!(f.values, vec![4.0, 1.0, 5.0, 6.0, 2.0, 3.0]);
        let place = |i: usize| (f.places[i / 2] >> (16 * (i % 2))) & 0xffff;
        assert_eq!(
            (0..6).map(place).collect::<Vec<_>>(),
            vec![3, 0, 4, 5, 1, 2]
        );
        // Places that fit the smallest buffer are uploaded whole.
        assert_eq!(f.places_read(), &f.places[..]);
        // Every chunk packed: the product reads no place, one word is uploaded.
        let cols: Vec<u32> = (0..100).collect();
        let f = StreamFormat::build(&[0, 100], &cols, &[1.0f32; 100]);
        assert!(!f.chunk_bases.contains(&RAW_CHUNK));
        assert_eq!(f.places_read(), &f.places[..1]);
    }

    #[test]
    fn chunks_pack_where_their_columns_span_little_and_stay_plain_elsewhere() {
        // One row of 100 entries (a tile of 2048 holds it): the first chunk of 64 spans columns
        // 0..=63 × 3, the second reaches 1 << PLACE_SHIFT and stays plain.
        let mut cols: Vec<u32> = (0..64).map(|c| c * 3).collect();
        cols.extend((0..36).map(|c| 1000 + c + if c == 35 { 1 << PLACE_SHIFT } else { 0 }));
        let n = cols.len();
        let f = StreamFormat::build(&[0, n as u32], &cols, &vec![1.0f32; n]);
        assert_eq!(f.tile_rows, vec![0, 1]);
        assert_eq!(f.chunk_bases[..2], [0, RAW_CHUNK]);
        for (i, &w) in f.col_idx.iter().enumerate() {
            if i < CHUNK {
                assert_eq!(
                    (w & ((1 << PLACE_SHIFT) - 1), w >> PLACE_SHIFT),
                    (cols[i], i as u32)
                );
            } else {
                assert_eq!(w, cols[i]);
            }
        }
        // The plain chunk reads its places: all of them are uploaded.
        assert_eq!(f.places_read().len(), n.div_ceil(2));
    }
}
