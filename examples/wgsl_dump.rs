//! Writes the WGSL of every kernel variant a WebGPU device can be given (f32, both lane modes,
//! every block height) to a folder, one file each, for a second compiler to check
//! (`tools/tint/check.mjs`).
//!
//!     cargo run --example wgsl_dump -- DIR

fn main() -> std::io::Result<()> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: wgsl_dump DIR");
        std::process::exit(2)
    }));
    std::fs::create_dir_all(&dir)?;
    let mut n = 0;
    for k in wgspmv::internals::all_kernels() {
        // WebGPU has no f64.
        for (scalar, lanes) in k.variants().into_iter().filter(|&(s, _)| s != "f64") {
            let name = format!("{}-{}-{}", k.name, scalar, lanes.name());
            if k.block_heights().is_empty() {
                std::fs::write(dir.join(format!("{name}.wgsl")), k.source(scalar, lanes))?;
                n += 1;
            }
            for &h in k.block_heights() {
                let source = k.source_for_height(scalar, lanes, h);
                std::fs::write(dir.join(format!("{name}-h{h}.wgsl")), source)?;
                n += 1;
            }
        }
    }
    println!("{n} kernel variants written to {}", dir.display());
    Ok(())
}
