//! The structure's fingerprint: a hash of a CSR matrix's dimensions, row pointers and column
//! indices (not its values), the key under which timed choices and tunings are remembered.

use crate::gpu::Gpu;
use crate::{CsrMatrix, Result, Scalar};

/// A hash of the matrix structure (dimensions, row pointers, column indices; not the values),
/// the same in every process, on any number of threads and from GPU buffers
/// (`fingerprint_gpu`): the row pointers and then the columns are cut into chunks of
/// `FINGERPRINT_CHUNK` words, each hashed on its own (in parallel: a serial pass over a large
/// matrix's columns is a noticeable part of a tuning of short products, docs/bccoo.md), and the
/// chunks' hashes folded in order.
pub fn fingerprint<T: Scalar>(a: &CsrMatrix<T>) -> u64 {
    use rayon::prelude::*;
    let chunks = |words: &[u32]| -> Vec<u64> {
        words
            .par_chunks(FINGERPRINT_CHUNK)
            .map(chunk_hash)
            .collect()
    };
    let (ptr, cols) = (chunks(a.row_ptr()), chunks(a.col_idx()));
    fold_chunks(a.shape(), ptr.into_iter().chain(cols))
}

/// Words per chunk of the fingerprint (`CHUNK` in shaders/shared/fingerprint.wgsl).
pub(crate) const FINGERPRINT_CHUNK: usize = 4096;

/// One chunk's hash: two 32-bit multiplicative lanes (32-bit operations only, so that a GPU
/// without 64-bit integers computes the same, shaders/shared/fingerprint.wgsl).
pub(crate) fn chunk_hash(words: &[u32]) -> u64 {
    let (mut a, mut b) = (0x811C_9DC5u32, 0x9E37_79B9u32);
    for &w in words {
        a = (a ^ w).wrapping_mul(0x0100_0193);
        b = (b ^ w).wrapping_mul(0x85EB_CA6B).rotate_left(13);
    }
    (a as u64) << 32 | b as u64
}

/// The fingerprint from the matrix's shape and its chunks' hashes in order.
pub(crate) fn fold_chunks(
    (nrows, ncols, nnz): (usize, usize, usize),
    chunks: impl Iterator<Item = u64>,
) -> u64 {
    let mix = |h: u64, w: u32| {
        (h ^ w as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
    };
    let h = fnv(
        [nrows as u64, ncols as u64, nnz as u64]
            .iter()
            .flat_map(|v| v.to_le_bytes()),
        FNV0,
    );
    chunks.fold(h, |h, c| mix(mix(h, c as u32), (c >> 32) as u32))
}

/// [`fingerprint`] of a CSR matrix in GPU buffers: the chunks hashed on the GPU, one invocation
/// each, their hashes read back (8 bytes per 4096 words) and folded here.
pub(crate) fn fingerprint_gpu(gpu: &Gpu, a: &crate::matrix::GpuCsr) -> Result<u64> {
    let words = [a.nrows as u64 + 1, a.nnz as u64];
    let chunks = words.map(|w| w.div_ceil(FINGERPRINT_CHUNK as u64));
    let total = chunks[0] + chunks[1];
    let out = gpu.storage_zeroed("fingerprint chunks", total * 8, wgpu::BufferUsages::empty())?;
    let params: [u32; 4] = [
        words[0] as u32,
        words[1] as u32,
        chunks[0] as u32,
        total as u32,
    ];
    let params = gpu.uniform_buffer("fingerprint", bytemuck::cast_slice(&params));
    let mut stand_in = None;
    let col_idx = a.bindable_col_idx(gpu, &mut stand_in)?;
    crate::gpu::recorder::submit_pass(gpu, "fingerprint", "fingerprinting a GPU matrix", |r| {
        let buffers: [&dyn crate::gpu::Bind; 4] = [a.row_ptr, col_idx, &out, &params];
        r.dispatch(
            crate::kernel::FINGERPRINT,
            vec![],
            &buffers,
            total.div_ceil(64) as u32,
        )
    })?;
    let hashes: Vec<[u32; 2]> = gpu.read_buffer(&out, total as usize)?;
    Ok(fold_chunks(
        (a.nrows, a.ncols, a.nnz),
        hashes
            .into_iter()
            .map(|[lo, hi]| (hi as u64) << 32 | lo as u64),
    ))
}

/// FNV-1a, 64-bit.
pub(crate) fn fnv(bytes: impl IntoIterator<Item = u8>, mut h: u64) -> u64 {
    for b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

pub(crate) const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::UploadedCsr;
    use crate::testing::SuiteClass;
    use crate::CsrMatrix;

    /// The fingerprint hashed on the GPU is the host's, word for word of its definition: arrays
    /// of less than one chunk, of whole chunks and a ragged last one, no entries, empty rows;
    /// and it tells structures apart that differ in one column or one row pointer.
    #[test]
    fn fingerprint_on_the_gpu_equals_the_hosts() {
        let Some(gpu) = crate::gpu::test_gpu() else {
            return;
        };
        let mut matrices: Vec<CsrMatrix<f32>> = vec![
            CsrMatrix::try_new(3, 4, vec![0, 0, 0, 0], vec![], vec![]).unwrap(),
            CsrMatrix::try_new(2, 3, vec![0, 1, 3], vec![2, 0, 1], vec![1.0; 3]).unwrap(),
        ];
        for (class, rows) in [
            (SuiteClass::Banded, 4095),
            (SuiteClass::PowerLaw, 9000),
            (SuiteClass::EmptyRows, 4096 * 3 - 1),
        ] {
            matrices.push(class.generate(rows, 5).cast::<f32>());
        }
        let moved = {
            let a = &matrices[3];
            let mut cols = a.col_idx().to_vec();
            // The last entry of row 0 one column further right (still sorted, still in range).
            let end = a.row_ptr()[1] as usize - 1;
            cols[end] += 1;
            assert!(
                cols[end] < a.ncols() as u32
                    && (end + 1 == cols.len() || a.row_ptr()[1] as usize == end + 1)
            );
            CsrMatrix::try_new(
                a.nrows(),
                a.ncols(),
                a.row_ptr().to_vec(),
                cols,
                a.values().to_vec(),
            )
            .unwrap()
        };
        let mut seen = std::collections::HashSet::new();
        for a in matrices.iter().chain([&moved]) {
            let up = UploadedCsr::new(&gpu, a).unwrap().unwrap();
            let (host, on_gpu) = (fingerprint(a), fingerprint_gpu(&gpu, &up.view()).unwrap());
            assert_eq!(host, on_gpu, "{:?}", a.shape());
            assert!(
                seen.insert(host),
                "{:?}: a fingerprint seen before",
                a.shape()
            );
        }
    }
}
