//! Shared test helpers: the adapter (a failure, not a skip, when `CI` is set), and the check of a
//! GPU product against the f64 CPU reference with poisoned outputs.
#![allow(dead_code)]

use std::sync::OnceLock;
use wgspmv::{reference, CsrMatrix, Gpu, GpuOptions, GpuVector, Method, PlanOptions, Scalar};

fn open(disabled: wgpu::Features) -> Option<Gpu> {
    let opts = GpuOptions {
        disabled_features: disabled,
        ..Default::default()
    };
    match pollster::block_on(Gpu::with_options(opts)) {
        Ok(g) => Some(g),
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but no GPU adapter could be opened: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: no GPU adapter ({e})");
            None
        }
    }
}

/// The default test adapter opened again as an app might: every feature wgspmv wants and the
/// limits `limits` makes from the adapter's own (`None` where the adapter cannot be found again
/// or refuses those limits).
pub fn reopened(gpu: &Gpu, limits: impl FnOnce(&wgpu::Adapter) -> wgpu::Limits) -> Option<Gpu> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
        .into_iter()
        .find(|a| a.get_info().name == gpu.info().name)?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: Gpu::wanted_features(&adapter),
        required_limits: limits(&adapter),
        ..Default::default()
    }))
    .ok()?;
    Some(Gpu::from_device(device, queue))
}

/// The default adapter with every feature it has.
pub fn gpu() -> Option<Gpu> {
    static G: OnceLock<Option<Gpu>> = OnceLock::new();
    G.get_or_init(|| open(wgpu::Features::empty())).clone()
}

/// The same adapter opened without subgroup operations or immediate data, so the paths every
/// WebGPU adapter takes run: workgroup-memory reductions, α and β read from a bound buffer.
pub fn gpu_without_subgroups() -> Option<Gpu> {
    static G: OnceLock<Option<Gpu>> = OnceLock::new();
    G.get_or_init(|| open(wgpu::Features::SUBGROUP | wgpu::Features::IMMEDIATES))
        .clone()
}

/// The label of [`gpu_without_subgroups`] in [`gpus`].
pub const PORTABLE: &str = "subgroups and immediates off";

/// Both devices, labelled.
pub fn gpus() -> Vec<(&'static str, Gpu)> {
    let mut v = Vec::new();
    if let Some(g) = gpu() {
        let label = match (
            g.info().has(wgpu::Features::SUBGROUP),
            g.info().has_immediate_coeffs(),
        ) {
            (true, true) => "subgroups, immediates",
            (true, false) => "subgroups",
            (false, true) => "immediates, no subgroups (adapter lacks them)",
            (false, false) => "no subgroups or immediates (adapter lacks them)",
        };
        v.push((label, g));
    }
    if let Some(g) = gpu_without_subgroups() {
        v.push((PORTABLE, g));
    }
    v
}

pub fn has_f64(gpu: &Gpu) -> bool {
    gpu.info().has(wgpu::Features::SHADER_F64)
}

/// Runs `y = A·x` and `y = α·A·x + β·y` with `method` and compares both with the f64 reference.
/// Outputs are poisoned with NaN first, so an element the kernel never writes fails the check.
pub fn check_method<T: Scalar>(
    gpu: &Gpu,
    a: &CsrMatrix<T>,
    method: Method,
    opts: &PlanOptions,
    label: &str,
) {
    let plan = gpu
        .prepare_with(a, method, opts)
        .unwrap_or_else(|e| panic!("{label}: prepare failed: {e}"));
    let x: Vec<T> = wgspmv::testing::suite::random_vector(a.ncols(), 11)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let gx = GpuVector::from_slice(gpu, &x).unwrap();

    let mut gy = GpuVector::filled(gpu, a.nrows(), T::NAN).unwrap();
    plan.run(&gx, &mut gy)
        .unwrap_or_else(|e| panic!("{label}: run failed: {e}"));
    let y = gy.read().unwrap();
    let y_ref = reference::spmv_par(a, &x).unwrap();
    let c = reference::check(1.0, a, &x, 0.0, None, &y, &y_ref);
    assert!(
        c.ok,
        "{label} [{}]: y = A·x wrong: worst row {:?}, rel_err {:e}",
        plan.details(),
        c.worst_row,
        c.rel_err
    );

    let y0: Vec<T> = wgspmv::testing::suite::random_vector(a.nrows(), 13)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let (alpha, beta) = (T::from_f64(-1.5), T::from_f64(0.75));
    gy.write(&y0).unwrap();
    plan.run_axpby(alpha, &gx, beta, &mut gy).unwrap();
    let y = gy.read().unwrap();
    let y_ref = reference::spmv_axpby(-1.5, a, &x, 0.75, &y0).unwrap();
    let c = reference::check(-1.5, a, &x, 0.75, Some(&y0), &y, &y_ref);
    assert!(
        c.ok,
        "{label} [{}]: y = αAx + βy wrong: worst row {:?}, rel_err {:e}",
        plan.details(),
        c.worst_row,
        c.rel_err
    );
}

/// Checks every concrete method on `a`, in f32 and (where the adapter has it) f64, on both
/// devices (with and without subgroups).
pub fn check_all_methods(a: &CsrMatrix<f64>, label: &str) {
    for (dev, gpu) in gpus() {
        for &m in Method::ALL {
            let l = format!("{label} / {m} / f32 / {dev}");
            check_method(&gpu, &a.cast::<f32>(), m, &PlanOptions::default(), &l);
            if has_f64(&gpu) {
                let l = format!("{label} / {m} / f64 / {dev}");
                check_method(&gpu, a, m, &PlanOptions::default(), &l);
            }
        }
    }
}

/// A matrix with the given row lengths and irregular columns and values (`ncols` columns; a row
/// longer than that wraps onto repeated columns, which `from_triplets` sums).
pub fn rows_of_lengths(lens: &[usize], ncols: usize) -> CsrMatrix<f64> {
    let mut t = Vec::new();
    for (r, &len) in lens.iter().enumerate() {
        for c in 0..len {
            t.push((
                r,
                (c * 13 + r * 7) % ncols,
                0.5 + ((r * 31 + c * 17) % 11) as f64 / 3.0,
            ));
        }
    }
    CsrMatrix::from_triplets(lens.len(), ncols, t).unwrap()
}

/// Matrices that break careless kernels.
pub fn edge_cases() -> Vec<(&'static str, CsrMatrix<f64>)> {
    let tri = |m, n, t: Vec<(usize, usize, f64)>| CsrMatrix::from_triplets(m, n, t).unwrap();
    let long_row: Vec<_> = (0..5000)
        .map(|c| (3, c, 1.0 + (c % 7) as f64 * 0.25))
        .collect();
    let mut ragged: Vec<_> = (0..1001)
        .map(|r| (r, (r * 7) % 50, 0.5 + (r % 3) as f64))
        .collect();
    ragged.push((1000, 49, -2.0));
    vec![
        ("0x0", CsrMatrix::zeros(0, 0).unwrap()),
        ("0 rows", CsrMatrix::zeros(0, 7).unwrap()),
        ("0 columns", CsrMatrix::zeros(9, 0).unwrap()),
        ("all rows empty", CsrMatrix::zeros(300, 300).unwrap()),
        ("single entry", tri(1, 1, vec![(0, 0, -3.5)])),
        ("one long row among empty ones", tri(7, 5000, long_row)),
        ("ragged tail of 1001 rows", tri(1001, 50, ragged)),
        (
            "rows of length 1, last row only",
            tri(513, 513, vec![(512, 0, 2.5)]),
        ),
        (
            "first row only",
            tri(257, 3, vec![(0, 0, 1.5), (0, 2, -0.5)]),
        ),
    ]
}

/// An irregular matrix of small integers (rows of 0 to ~600 entries, some empty, columns
/// scattered): every product is exact in f32, so a result is right or wrong, with no tolerance.
pub fn integer_matrix(nrows: usize, ncols: usize, seed: u64) -> CsrMatrix<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as usize
    };
    let mut t = Vec::new();
    for r in 0..nrows {
        let len = match next() % 10 {
            0 => 0,
            1 => 100 + next() % 500,
            _ => next() % 12,
        };
        for _ in 0..len {
            let v = (next() % 9) as f32 - 4.0;
            t.push((r, next() % ncols, if v == 0.0 { 3.0 } else { v }));
        }
    }
    // Repeated (row, column) pairs add up, still small integers.
    CsrMatrix::from_triplets(nrows, ncols, t).unwrap()
}

pub fn integer_vector(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as u64 * 2654435761 + seed * 97) % 17) as f32 - 8.0)
        .collect()
}

/// `α·A·x + β·y0` in f64 (exact here: small integers).
pub fn exact(a: &CsrMatrix<f32>, x: &[f32], alpha: f64, beta: f64, y0: &[f32]) -> Vec<f32> {
    (0..a.nrows())
        .map(|r| {
            let (cols, vals) = a.row(r);
            let ax: f64 = cols
                .iter()
                .zip(vals)
                .map(|(&c, &v)| v as f64 * x[c as usize] as f64)
                .sum();
            let by = if beta == 0.0 {
                0.0
            } else {
                beta * y0[r] as f64
            };
            (alpha * ax + by) as f32
        })
        .collect()
}
