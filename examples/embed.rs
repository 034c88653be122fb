//! An application that owns its GPU device: it creates the device itself (with
//! `Gpu::device_descriptor`: the features and limits wgspmv can use), shares it with wgspmv, and
//! records SpMV into its own command encoder between its own passes, so y never leaves the GPU
//! until the app wants it.
//!
//!     cargo run --release --example embed [-- A.mtx]

use wgspmv::{matrix::io, testing::SuiteClass, wgpu, CsrMatrix, Gpu, GpuVector, Method};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The app's own instance, adapter and device.
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference:
            wgpu::PowerPreference::from_env().unwrap_or(wgpu::PowerPreference::HighPerformance),
        ..Default::default()
    }))?;
    let (device, queue) =
        pollster::block_on(adapter.request_device(&Gpu::device_descriptor(&adapter)))?;
    let gpu = Gpu::from_device(device.clone(), queue.clone());
    println!("{}", gpu.info());

    let a: CsrMatrix<f32> = match std::env::args().nth(1) {
        Some(path) => io::read_matrix_market(path)?,
        None => SuiteClass::PowerLaw.generate(200_000, 1).cast(),
    };
    let plan = gpu.prepare(&a, Method::Auto)?;
    println!("{}", plan.report());

    // The app's buffers: x it filled itself, and where it wants y.
    let n = a.nrows();
    let x = GpuVector::from_slice(&gpu, &vec![1.0f32; a.ncols()])?;
    let app_y = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("app's y"),
        size: (n * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut y = GpuVector::<f32>::from_buffer(&gpu, app_y, n)?;

    // Ten products in one encoder, e.g. the inner steps of a solver; the app submits.
    let mut encoder = device.create_command_encoder(&Default::default());
    for _ in 0..10 {
        plan.record(&mut encoder, &x, &mut y)?;
    }
    queue.submit([encoder.finish()]);

    let host = y.read()?;
    let row_sums: Vec<f32> = (0..n).map(|r| a.row(r).1.iter().sum()).collect();
    let worst = host
        .iter()
        .zip(&row_sums)
        .map(|(g, c)| (g - c).abs() / c.abs().max(1.0))
        .fold(0.0f32, f32::max);
    println!(
        "y = A·1 for {n} rows, worst relative difference from the host's row sums {worst:.1e}"
    );
    Ok(())
}
