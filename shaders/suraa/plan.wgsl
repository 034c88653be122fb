#import shared/grid
#import suraa/common
#import shared/workgroup_scan_u32
// SURAA setup, last step (one workgroup): Freedman–Diaconis segments, groups G1/G2/G3, vector
// classes, the dynamic kernel's planning pass (workgroups per G1 row) and the indirect dispatch
// sizes. Mirrors `segment_rows` and `schedule` in src/methods/suraa/setup.rs, integer for integer.

struct PlanParams {
    nrows: u32,
    max_child: u32,
    dynamic_min_mean: u32,
    vector_min_mean: u32,
    lanes: u32,
    workgroup_size: u32,
    dynamic_chunk: u32,
    max_dim: u32,
}

// prefix[i] = nonzeros of sorted rows 0..i (nrows + 1 entries).
@group(0) @binding(0) var<storage, read> prefix: array<u32>;
@group(0) @binding(1) var<uniform> p: PlanParams;
@group(0) @binding(2) var<storage, read_write> out: Schedule;
@group(0) @binding(3) var<storage, read_write> dynamic_ptr: array<u32>;
// Indirect dispatch sizes: main (x, y, 1), combine (x, y, 1), then scalar (x, y, 1).
@group(0) @binding(4) var<storage, read_write> indirect: array<u32>;

var<private> seg: u32;
var<private> nseg: u32;
var<workgroup> shared_rows: u32;

fn row_len(i: u32) -> u32 {
    return prefix[i + 1u] - prefix[i];
}

fn rows_of(segs: u32) -> u32 {
    return min(segs * seg, p.nrows);
}

// (sum, rows) of segment s.
fn seg_sum(s: u32) -> vec2<u32> {
    let b = s * seg;
    let e = rows_of(s + 1u);
    return vec2<u32>(prefix[e] - prefix[b], e - b);
}

fn seg_mean(s: u32) -> u32 {
    let v = seg_sum(s);
    return v.x / v.y;
}

fn classes() -> u32 {
    return countTrailingZeros(p.workgroup_size / p.lanes) + 1u;
}

fn class_of(mean: u32) -> u32 {
    let half = mean / 2u;
    var c = 0u;
    while (c + 1u < classes() && (p.lanes << c) < half) {
        c++;
    }
    return c;
}

const ABOVE_DYNAMIC: u32 = 0u;
const WITHIN_BUDGET: u32 = 1u;
const REACHES_VECTOR: u32 = 2u;
const CLASS_AT_LEAST: u32 = 3u;

fn pred(kind: u32, arg: u32, s: u32) -> bool {
    switch kind {
        case 0u: {
            let v = seg_sum(s);
            let q = v.x / v.y;
            return q > p.dynamic_min_mean || (q == p.dynamic_min_mean && v.x % v.y > 0u);
        }
        case 1u: {
            return rows_of(s + 1u) <= p.max_child;
        }
        case 2u: {
            return seg_mean(s) >= p.vector_min_mean;
        }
        default: {
            return class_of(seg_mean(s)) >= arg;
        }
    }
}

// Leading segments of 0..n for which the (non-increasing) predicate holds.
fn count_while(n: u32, kind: u32, arg: u32) -> u32 {
    var lo = 0u;
    var hi = n;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        if (pred(kind, arg, mid)) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

fn icbrt(m: u32) -> u32 {
    var c = u32(pow(f32(m), 1.0 / 3.0));
    c = min(c, 1625u);
    while (c + 1u <= 1625u && (c + 1u) * (c + 1u) * (c + 1u) <= m) {
        c++;
    }
    while (c > 0u && c * c * c > m) {
        c--;
    }
    return c;
}

// 32 x 32 -> 64-bit product, as (lo, hi).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// ceil(n / d) for a 64-bit n = (lo, hi), as (lo, hi): long division, one bit at a time.
fn ceil_div_wide(n: vec2<u32>, d: u32) -> vec2<u32> {
    var rem = 0u;
    var q = vec2<u32>(0u, 0u);
    for (var i = 0u; i < 64u; i++) {
        let word = select(n.x, n.y, i < 32u);
        let bit = (word >> (31u - i % 32u)) & 1u;
        let carry = rem >> 31u;
        rem = (rem << 1u) | bit;
        let take = carry == 1u || rem >= d;
        if (take) {
            rem -= d;
        }
        if (i < 32u) {
            q.y = (q.y << 1u) | u32(take);
        } else {
            q.x = (q.x << 1u) | u32(take);
        }
    }
    if (rem != 0u) {
        q.x += 1u;
        if (q.x == 0u) {
            q.y += 1u;
        }
    }
    return q;
}

fn segment_rows(m: u32) -> u32 {
    if (m == 0u) {
        return 1u;
    }
    let q3 = row_len(m / 4u);
    let q1 = row_len(3u * m / 4u);
    let range = row_len(0u) - row_len(m - 1u);
    let iqr = q3 - q1;
    var bins = 1u;
    if (m >= 8u && range != 0u) {
        if (iqr == 0u) {
            bins = 32u - countLeadingZeros(m - 1u) + 1u;
        } else {
            // ceil(range * c / (2 * iqr)) = ceil(ceil(range * c / iqr) / 2)
            let q = ceil_div_wide(mul_wide(range, icbrt(m)), iqr);
            if (q.y != 0u || q.x / 2u + (q.x % 2u) > m) {
                bins = m;
            } else {
                bins = max(q.x / 2u + (q.x % 2u), 1u);
            }
        }
    }
    let s = (m + bins - 1u) / bins;
    if (p.max_child > 0u) {
        return min(s, p.max_child);
    }
    return s;
}

// indirect[at..at + 3]: the grid of `groups` workgroups.
fn set_grid(at: u32, groups: u32) {
    let g = indirect_grid(groups, p.max_dim);
    indirect[at] = g.x;
    indirect[at + 1u] = g.y;
    indirect[at + 2u] = g.z;
}

@compute @workgroup_size(SCAN_WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    let m = p.nrows;
    seg = segment_rows(m);
    nseg = (m + seg - 1u) / seg;
    let above = count_while(nseg, ABOVE_DYNAMIC, 0u);
    let g1_segs = count_while(above, WITHIN_BUDGET, 0u);
    let dynamic_rows = rows_of(g1_segs);
    let vector_segs = max(count_while(nseg, REACHES_VECTOR, 0u), g1_segs);
    // Every invocation computed the same G1 size; say so to the uniformity analysis.
    if (lid == 0u) {
        shared_rows = dynamic_rows;
    }
    let g1_rows = workgroupUniformLoad(&shared_rows);

    // Planning pass of the dynamic kernel: workgroups per G1 row (at least one), scanned.
    var carry = 0u;
    if (lid == 0u) {
        dynamic_ptr[0] = 0u;
    }
    for (var base = 0u; base < g1_rows; base += SCAN_WG) {
        let i = base + lid;
        var w = 0u;
        if (i < g1_rows) {
            let len = row_len(i);
            w = max(len / p.dynamic_chunk + select(0u, 1u, len % p.dynamic_chunk != 0u), 1u);
        }
        let scanned = workgroup_inclusive_scan(w, lid);
        if (i < g1_rows) {
            dynamic_ptr[i + 1u] = carry + scanned.x;
        }
        carry += scanned.y;
    }
    if (lid != 0u) {
        return;
    }

    out.nrows = m;
    out.dynamic_rows = dynamic_rows;
    out.dynamic_groups = carry;
    out.scalar_begin = rows_of(vector_segs);
    out.segment_rows = seg;
    out.segments = nseg;
    var group = carry;
    for (var c = 0u; c < 8u; c++) {
        out.class_begin[c / 4u][c % 4u] = 0u;
        out.class_rows[c / 4u][c % 4u] = 0u;
        out.class_group[c / 4u][c % 4u] = 0u;
    }
    for (var k = 0u; k < classes(); k++) {
        let c = classes() - 1u - k;
        var at_least_next = 0u;
        if (c + 1u < classes()) {
            at_least_next = count_while(vector_segs, CLASS_AT_LEAST, c + 1u);
        }
        var at_least = vector_segs;
        if (c > 0u) {
            at_least = count_while(vector_segs, CLASS_AT_LEAST, c);
        }
        let b = rows_of(max(at_least_next, g1_segs));
        let e = rows_of(max(at_least, g1_segs));
        let per_group = p.workgroup_size / (p.lanes << c);
        out.class_begin[c / 4u][c % 4u] = b;
        out.class_rows[c / 4u][c % 4u] = e - b;
        out.class_group[c / 4u][c % 4u] = group;
        group += (e - b + per_group - 1u) / per_group;
    }
    let scalar_groups = (m - rows_of(vector_segs) + p.workgroup_size - 1u) / p.workgroup_size;
    out.main_groups = group;
    out.scalar_groups = scalar_groups;
    set_grid(0u, group);
    set_grid(3u, dynamic_rows);
    set_grid(6u, scalar_groups);
}
