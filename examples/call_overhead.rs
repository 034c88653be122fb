//! Host cost of one product on a small matrix: what `run` and `record` spend besides the GPU's
//! work (bind groups, uniforms, submission). Solvers call SpMV thousands of times.
//!
//!     cargo run --release --example call_overhead

use wgspmv::{testing::SuiteClass, Gpu, GpuVector, Method};
fn main() -> wgspmv::Result<()> {
    let gpu = Gpu::new()?;
    let a = SuiteClass::ShortRows.generate(2_000, 1).cast::<f32>();
    let x = GpuVector::filled(&gpu, a.ncols(), 1.0f32)?;
    let mut y = GpuVector::filled(&gpu, a.nrows(), 0.0f32)?;
    for m in [Method::CsrScalar, Method::Bccoo] {
        let plan = gpu.prepare(&a, m)?;
        for _ in 0..50 {
            plan.run(&x, &mut y)?;
        }
        gpu.wait()?;
        let n = 2000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            plan.run(&x, &mut y)?;
        }
        let submit = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        gpu.wait()?;
        let total = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        // Recording only (no submission): the host cost of one call.
        let t = std::time::Instant::now();
        for _ in 0..n {
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            plan.record(&mut enc, &x, &mut y)?;
            drop(enc);
        }
        let record = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("{m}: run returns in {submit:.1} us, run incl. GPU {total:.1} us, record {record:.1} us");
    }
    Ok(())
}
