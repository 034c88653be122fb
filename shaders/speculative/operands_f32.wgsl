// The speculative kernel's columns and values in f32: bound four at a time (the host pads them
// to whole quads), read one at a time (staged) or a quad at a time (each lane its own).
@group(0) @binding(1) var<storage, read> col_quads: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> val_quads: array<vec4<f32>>;

fn column(g: u32) -> u32 {
    return col_quads[g / 4u][g % 4u];
}

fn column_quad(q: u32) -> vec4<u32> {
    return col_quads[q];
}

fn value(g: u32) -> f32 {
    return val_quads[g / 4u][g % 4u];
}

fn value_quad(q: u32) -> vec4<f32> {
    return val_quads[q];
}
