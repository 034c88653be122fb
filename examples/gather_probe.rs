//! Measures what a random gather of `x` costs on the adapter, apart from any SpMV: `y[i] =
//! x[idx[i]]` for 16M indices in patterns that keep the number of distinct 32-byte sectors per
//! 32 neighbouring invocations the same but change how far apart they lie (inside one 4 KiB,
//! 64 KiB or 2 MiB window per group of 32, or anywhere in `x`). The same patterns in CUDA:
//! `tools/gather_probe.py`; the two together say whether a gap comes from the caches or from
//! address translation (docs/measurements.md, "The gather limit").
//!
//!     cargo run --release --example gather_probe -- [X_MIB,...]
//!
//! Prints CSV: x_mib,pattern,ms,gathers_per_ns. Wall clock of 50 dispatches in one submission,
//! the best of 5, after the GPU has run the pattern for 0.4 s (its clocks settle).

use std::time::Instant;
use wgpu::util::DeviceExt;
use wgspmv::Gpu;

const N: u32 = 1 << 24;
const GROUP: u32 = 32;
const REPS: u32 = 50;

const SHADER: &str = r#"
@group(0) @binding(0) var<storage, read> idx: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = g.y * nwg.x * 256u + g.x;
    if (i < arrayLength(&idx)) {
        y[i] = x[idx[i]];
    }
}

// `tiled`: each workgroup gathers its 2048 entries in column order and puts each value back at
// its place in the tile through workgroup memory (what a format sorted by column within tiles
// would do), then writes the tile in order.
@group(0) @binding(3) var<storage, read> pos: array<u32>;
var<workgroup> stage: array<f32, 2048>;

@compute @workgroup_size(256)
fn tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let base = (wid.y * nwg.x + wid.x) * 2048u;
    for (var r = 0u; r < 8u; r++) {
        let e = base + r * 256u + lid;
        stage[pos[e]] = x[idx[e]];
    }
    workgroupBarrier();
    for (var r = 0u; r < 8u; r++) {
        let j = r * 256u + lid;
        y[base + j] = stage[j];
    }
}
"#;

/// The integer hash shared with tools/gather_probe.py (both wrap at 32 bits).
fn hash(mut v: u32) -> u32 {
    v ^= v >> 16;
    v = v.wrapping_mul(0x7feb_352d);
    v ^= v >> 15;
    v = v.wrapping_mul(0x846c_a68b);
    v ^ (v >> 16)
}

/// Index `i` of a pattern over `len` entries of `x`; `window` entries per group of 32 (0: all).
fn index(pattern: &str, i: u32, len: u32) -> u32 {
    let window = match pattern {
        "stream" => return i % len,
        "random" | "sorted32" | "sorted256" | "sorted2048" | "tiled2048" => len,
        "window4k" => 1024,
        "window64k" => 16 * 1024,
        "window2m" => 512 * 1024,
        other => panic!("unknown pattern {other}"),
    }
    .min(len);
    let windows = len / window;
    let base = hash((i / GROUP) ^ 0x9e37_79b9) % windows * window;
    base + hash(i) % window
}

const PATTERNS: [&str; 9] = [
    "stream",
    "random",
    "sorted32",
    "sorted256",
    "sorted2048",
    "tiled2048",
    "window2m",
    "window64k",
    "window4k",
];

/// Entries per workgroup of the `tiled` kernel (256 invocations, 8 entries each).
const TILE: usize = 2048;

fn main() -> wgspmv::Result<()> {
    let sizes: Vec<u32> = std::env::args()
        .nth(1)
        .map_or("8,32,128", |s| s.leak())
        .split(',')
        .map(|s| s.parse().expect("sizes in MiB"))
        .collect();
    let gpu = Gpu::new()?;
    let device = gpu.device();
    eprintln!("{}", gpu.info().name);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("gather probe"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let pipeline = |entry| {
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        })
    };
    let (plain, tiled) = (pipeline("main"), pipeline("tiled"));
    let y = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("y"),
        size: N as u64 * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let read_back = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("y read back"),
        size: N as u64 * 4,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let storage = |label, data: &[u32]| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytemuck::cast_slice(data),
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let run = |(pipeline, group): &(&wgpu::ComputePipeline, wgpu::BindGroup),
               reps: u32|
     -> wgspmv::Result<f64> {
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, group, &[]);
            let per_group = if std::ptr::eq(*pipeline, &tiled) {
                TILE as u32
            } else {
                256
            };
            for _ in 0..reps {
                pass.dispatch_workgroups(N / per_group / 64, 64, 1);
            }
        }
        let t = Instant::now();
        gpu.queue().submit([enc.finish()]);
        gpu.wait()?;
        Ok(t.elapsed().as_secs_f64() * 1e3 / reps as f64)
    };
    println!("x_mib,pattern,ms,gathers_per_ns");
    let mut settled = false;
    for &mib in &sizes {
        let len = mib * 1024 * 1024 / 4;
        let x = storage(
            "x",
            &(0..len).map(|v| (v as f32).to_bits()).collect::<Vec<_>>(),
        );
        for pattern in PATTERNS {
            let mut idx: Vec<u32> = (0..N).map(|i| index(pattern, i, len)).collect();
            let expected: Vec<f32> = if pattern == "tiled2048" {
                idx.iter().map(|&v| v as f32).collect()
            } else {
                Vec::new()
            };
            let mut pos = Vec::new();
            let sorted = match pattern {
                "sorted32" => 32,
                "sorted256" => 256,
                "sorted2048" => 2048,
                _ => 0,
            };
            if sorted > 0 {
                idx.chunks_mut(sorted).for_each(|c| c.sort_unstable());
            }
            if pattern == "tiled2048" {
                let mut sorted_idx = Vec::with_capacity(idx.len());
                for chunk in idx.chunks(TILE) {
                    let mut order: Vec<u32> = (0..chunk.len() as u32).collect();
                    order.sort_by_key(|&j| chunk[j as usize]);
                    sorted_idx.extend(order.iter().map(|&j| chunk[j as usize]));
                    pos.extend(order);
                }
                idx = sorted_idx;
            }
            let idx = storage("idx", &idx);
            let pos = (!pos.is_empty()).then(|| storage("pos", &pos));
            let pipeline = if pos.is_some() { &tiled } else { &plain };
            let mut entries = vec![
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: idx.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: x.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: y.as_entire_binding(),
                },
            ];
            if let Some(pos) = &pos {
                entries.push(wgpu::BindGroupEntry {
                    binding: 3,
                    resource: pos.as_entire_binding(),
                });
            }
            let group = (
                pipeline,
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &entries,
                }),
            );
            // Building the indices left the GPU idle: its clocks fall, so settle them again.
            let start = Instant::now();
            let settle = if settled { 0.4 } else { 1.0 };
            while start.elapsed().as_secs_f64() < settle {
                run(&group, REPS)?;
            }
            settled = true;
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                best = best.min(run(&group, REPS)?);
            }
            if !expected.is_empty() {
                let mut enc = device.create_command_encoder(&Default::default());
                enc.copy_buffer_to_buffer(&y, 0, &read_back, 0, N as u64 * 4);
                gpu.queue().submit([enc.finish()]);
                read_back
                    .slice(..)
                    .map_async(wgpu::MapMode::Read, |r| r.unwrap());
                gpu.wait()?;
                let view = read_back.slice(..).get_mapped_range().expect("mapped");
                let got: Vec<f32> = bytemuck::cast_slice(&view).to_vec();
                drop(view);
                read_back.unmap();
                assert!(got == expected, "{pattern} at {mib} MiB: wrong gather");
            }
            println!("{mib},{pattern},{best:.4},{:.1}", N as f64 / (best * 1e6));
        }
    }
    Ok(())
}
