#import shared/grid
// csr_features: Auto's features of a CSR matrix in GPU buffers (src/select/features.rs;
// `Features::of` is the CPU twin, and both count the same integers).
// PASS 0, one workgroup per 256 rows: the sum of squared row lengths (64 bits, two words), empty
//   rows, entries in rows longer than LONG_CUT, and the longest row: five words per workgroup.
// PASS 1, one invocation per sampled row (one in every STEP rows): the lines of x its first
//   SAMPLE_PER_ROW columns touch that the row before's first SAMPLE_PER_ROW columns do not, and
//   how many columns it read: two words per sample, after the workgroups' words. No loop runs
//   longer than 2 × SAMPLE_PER_ROW or the tree reduction.

struct FeatureParams {
    nrows: u32,
    // Rows longer than this count as long (the floor of Features::LONG_ROW_FACTOR × mean).
    long_cut: u32,
    step: u32,
    samples: u32,
    // Columns per line of x.
    per_line: u32,
    sample_per_row: u32,
    groups: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: FeatureParams;

override PASS: u32 = 0u;
const WG: u32 = 256u;

// (Σ len² low word, high word, empty rows, entries in long rows) and the longest row.
var<workgroup> sums: array<vec4<u32>, WG>;
var<workgroup> most: array<u32, WG>;

// a + b as 64-bit numbers in (low, high) words.
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// l² as a 64-bit number: l = h·2¹⁶ + k, l² = h²·2³² + hk·2¹⁷ + k².
fn square64(l: u32) -> vec2<u32> {
    let h = l >> 16u;
    let k = l & 0xFFFFu;
    let cross = h * k;
    return add64(vec2<u32>(k * k, h * h), vec2<u32>(cross << 17u, cross >> 15u));
}

fn add4(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(add64(a.xy, b.xy), a.z + b.z, a.w + b.w);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (PASS == 0u) {
        let r = g * WG + lid;
        var l = 0u;
        if (r < p.nrows) {
            l = row_ptr[r + 1u] - row_ptr[r];
        }
        let empty = select(0u, 1u, r < p.nrows && l == 0u);
        sums[lid] = vec4<u32>(square64(l), empty, select(0u, l, l > p.long_cut));
        most[lid] = l;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s = s / 2u) {
            if (lid < s) {
                sums[lid] = add4(sums[lid], sums[lid + s]);
                most[lid] = max(most[lid], most[lid + s]);
            }
            workgroupBarrier();
        }
        if (lid == 0u && g < p.groups) {
            let v = sums[0];
            out[5u * g] = v.x;
            out[5u * g + 1u] = v.y;
            out[5u * g + 2u] = v.z;
            out[5u * g + 3u] = v.w;
            out[5u * g + 4u] = most[0];
        }
        return;
    }
    let i = g * WG + lid;
    if (i >= p.samples) {
        return;
    }
    // Features::sampled_row: an offset within the run of STEP rows that spreads the samples
    // over every residue of a line.
    let r = min(i * p.step + (i * 0x9E3779B1u) % p.step, p.nrows - 1u);
    let b = row_ptr[r];
    let e = min(row_ptr[r + 1u], b + p.sample_per_row);
    // The row before's leading columns (none before row 0): lines it touched are not new.
    var q = 0u;
    var before_end = 0u;
    if (r > 0u) {
        q = row_ptr[r - 1u];
        before_end = min(b, q + p.sample_per_row);
    }
    var lines = 0u;
    var last = 0xFFFFFFFFu;
    for (var j = b; j < e; j += 1u) {
        let line = col_idx[j] / p.per_line;
        if (line != last) {
            last = line;
            // (Loops with breaks rather than a `&&` guard before an index: see
            // cmrs/build_padded.wgsl.)
            loop {
                if (q >= before_end) {
                    break;
                }
                if (col_idx[q] / p.per_line >= line) {
                    break;
                }
                q += 1u;
            }
            var shared_line = false;
            if (q < before_end) {
                shared_line = col_idx[q] / p.per_line == line;
            }
            if (!shared_line) {
                lines += 1u;
            }
        }
    }
    out[5u * p.groups + 2u * i] = lines;
    out[5u * p.groups + 2u * i + 1u] = e - b;
}
