// The speculative kernel's columns and values in f64, bound one at a time: f64 stages its
// products by default, and reading the staged columns as a quad component picked at run time
// was measurably slower (docs/speculative.md).
@group(0) @binding(1) var<storage, read> col_idx: array<u32>;
@group(0) @binding(2) var<storage, read> vals: array<f64>;

fn column(g: u32) -> u32 {
    return col_idx[g];
}

fn column_quad(q: u32) -> vec4<u32> {
    return vec4<u32>(col_idx[4u * q], col_idx[4u * q + 1u], col_idx[4u * q + 2u], col_idx[4u * q + 3u]);
}

fn value(g: u32) -> f64 {
    return vals[g];
}

fn value_quad(q: u32) -> vec4<f64> {
    return vec4<f64>(vals[4u * q], vals[4u * q + 1u], vals[4u * q + 2u], vals[4u * q + 3u]);
}
