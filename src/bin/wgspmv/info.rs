//! `wgspmv info`: every adapter wgpu finds, what SpMV cares about on each, and the one `Gpu::new`
//! opens (with the same environment: `WGSPMV_ADAPTER`, `WGPU_BACKEND`, `WGPU_POWER_PREF`).

use wgspmv::{wgpu, Gpu};

/// `wgspmv info` takes no flags of its own.
#[derive(clap::Args)]
pub struct Args {}

/// Lists the adapters, then opens the default one and prints its line.
pub fn main(_args: Args) -> wgspmv::Result<()> {
    let desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    let instance = wgpu::Instance::new(desc);
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    println!("adapters found: {}", adapters.len());
    for a in &adapters {
        let info = a.get_info();
        let features = a.features();
        let has = |f| if features.contains(f) { "yes" } else { "no" };
        println!(
            "  {} ({}, {:?}): compute shaders {}, subgroups {}, f64 {}, timestamps {}, storage binding {} MiB",
            info.name,
            info.backend.to_str(),
            info.device_type,
            if wgspmv::gpu::adapter_has_compute(a) {
                "yes"
            } else {
                "no"
            },
            has(wgpu::Features::SUBGROUP),
            has(wgpu::Features::SHADER_F64),
            has(wgpu::Features::TIMESTAMP_QUERY),
            a.limits().max_storage_buffer_binding_size >> 20
        );
    }
    let gpu = Gpu::new()?;
    println!("wgspmv opens:\n{}", gpu.info());
    Ok(())
}
