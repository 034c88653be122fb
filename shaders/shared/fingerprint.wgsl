#import shared/grid
// fingerprint: the chunk hashes of a CSR matrix's structure in GPU buffers, one invocation per
// chunk of CHUNK words (the row pointers' chunks, then the columns'); `chunk_hash` in
// src/select/mod.rs is its CPU twin, which folds the chunks' hashes into the fingerprint.
@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
// Per chunk: the low word (lane b) then the high word (lane a) of its hash.
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> params: FingerprintParams;

struct FingerprintParams {
    ptr_words: u32,
    col_words: u32,
    ptr_chunks: u32,
    chunks: u32,
}

const CHUNK: u32 = 4096u;

fn rotl13(x: u32) -> u32 {
    return (x << 13u) | (x >> 19u);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let c = linear_group(wid, nwg) * 64u + lid;
    if (c >= params.chunks) {
        return;
    }
    var a = 0x811C9DC5u;
    var b = 0x9E3779B9u;
    if (c < params.ptr_chunks) {
        let end = min((c + 1u) * CHUNK, params.ptr_words);
        for (var i = c * CHUNK; i < end; i += 1u) {
            a = (a ^ row_ptr[i]) * 0x01000193u;
            b = rotl13((b ^ row_ptr[i]) * 0x85EBCA6Bu);
        }
    } else {
        let k = c - params.ptr_chunks;
        let end = min((k + 1u) * CHUNK, params.col_words);
        for (var i = k * CHUNK; i < end; i += 1u) {
            a = (a ^ col_idx[i]) * 0x01000193u;
            b = rotl13((b ^ col_idx[i]) * 0x85EBCA6Bu);
        }
    }
    out[2u * c] = b;
    out[2u * c + 1u] = a;
}
