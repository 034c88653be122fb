//! What the first plan of a process costs over a warm one (pipelines compiled), with or without a
//! pipeline cache kept between processes: run it twice with the same cache directory, and the
//! second process's first plan loads what the first compiled.
//!
//!     cargo run --release --example first_plan -- CLASS SCALE [CACHE_DIR|none] [METHOD]
//!
//! CLASS: a suite class (`banded`, `power_law`, ...); SCALE: million stored entries; METHOD: a
//! method name (default `auto`). Prints one
//! CSV line: class, cache (none / the directory), first setup ms, its compile ms, the warm setup
//! ms (the same matrix again, pipelines compiled), and the difference.

use wgspmv::{testing::SuiteClass, Gpu, GpuOptions, Method};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let class = args.next().unwrap_or_else(|| "banded".into());
    let scale: f64 = args.next().map_or(Ok(0.25), |s| s.parse())?;
    let cache = args.next().filter(|c| c != "none");
    let method = Method::from_name(&args.next().unwrap_or_else(|| "auto".into()))?;
    let class = SuiteClass::ALL
        .into_iter()
        .find(|c| c.name() == class)
        .ok_or_else(|| format!("unknown class {class}"))?;
    let a = class.generate((scale * 1e6) as usize, 1).cast::<f32>();
    let gpu = pollster::block_on(Gpu::with_options(GpuOptions {
        pipeline_cache_dir: cache.clone().map(Into::into),
        ..Default::default()
    }))?;
    let first = gpu.prepare(&a, method)?;
    let warm = gpu.prepare(&a, method)?;
    let (f, w) = (first.report(), warm.report());
    println!(
        "{},{},{},{:.2},{:.2},{:.2},{:.2}",
        class.name(),
        cache.as_deref().unwrap_or("none"),
        f.method,
        f.setup_ms,
        f.compile_ms,
        w.setup_ms,
        f.setup_ms - w.setup_ms
    );
    Ok(())
}
