//! Fitting a profile from measurements (`wgspmv calibrate`'s CSV, or any source of
//! [`Sample`]s).
//!
//! Per method, product time: `t = launch + bytes · 1e-6 · exp(w · r)`; for each candidate launch
//! time (fractions of the fastest measurement) the weights are a ridge least-squares fit of
//! `ln((t - launch) / bytes)` on the regressors `r`, and the launch time kept is the one whose
//! model has the smallest squared error in `ln t`. Setup: `s0 + s1 · MB + s2 · Mrows`, a
//! least-squares fit weighted by 1/setup (relative error), with negative coefficients dropped;
//! where a method's samples hold at least [`MIN_REGIME_SAMPLES`] setups built on the GPU and as
//! many built on the host, each regime gets its own fit (`setup` and `host_setup`).
//!
//! The profile also keeps the samples' range of each regressor (predictions clamp to it) and,
//! per method, every sample's residual ln(measured / fitted) with its regressors, which the
//! profile's [`Kernel`] averages near a query (see [`super::profile`]).

use super::features::{Features, NREG};
use super::profile::{Kernel, Match, MethodModel, Profile, Residual, Traffic};
use crate::{Error, Method, Result};

/// One measurement: a method on a matrix.
#[derive(Clone, Debug)]
pub struct Sample {
    /// A label for the matrix (kept in the CSV for people; the fit does not read it).
    pub matrix: String,
    /// The method measured.
    pub method: Method,
    /// The features of the matrix, adapter and workload, the model's inputs.
    pub features: Features,
    /// Wall-clock time of `prepare_with` (format build, upload, pipelines warm), ms.
    pub setup_ms: f64,
    /// Whether that setup built the format on the GPU (`Report::built_on_gpu`); `None` in
    /// samples from before the CSV had the column.
    pub built_on_gpu: Option<bool>,
    /// Time of one product (`SpmvPlan::time`), ms.
    pub product_ms: f64,
}

/// Setups of each regime (built on the GPU, on the host) a method needs for a fit per regime.
pub const MIN_REGIME_SAMPLES: usize = 4;

/// Ridge penalty on the non-bias weights, per sample: the value that predicted a held-out set
/// best (docs/auto.md).
pub const RIDGE: f64 = 0.002;

/// Bandwidth of the residual kernel, in standard deviations of each regressor over the
/// samples: narrow enough that the corrected model reproduces its calibration choices, so a
/// matrix must resemble a calibration matrix closely to inherit its correction (docs/auto.md).
pub const KERNEL_WIDTH: f64 = 0.5;

/// Weight of the global fit in the kernel mean (see [`Kernel::prior`]).
pub const KERNEL_PRIOR: f64 = 0.1;

/// Rounds to 6 significant digits, so the profile's residual lines stay short.
fn short(x: f64) -> f64 {
    format!("{x:.5e}").parse().unwrap_or(x)
}

/// Solves the symmetric system `a · x = b` (Gaussian elimination with partial pivoting).
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..n {
            let f = a[r][c] / a[c][c];
            let (upper, lower) = a.split_at_mut(r);
            for (x, &p) in lower[0][c..n].iter_mut().zip(&upper[c][c..n]) {
                *x -= f * p;
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

/// Weighted ridge least squares: minimises Σ wᵢ (xᵢ·β − yᵢ)² + λ Σ_{j ∈ penalised} β_j².
fn ridge(
    xs: &[Vec<f64>],
    ys: &[f64],
    ws: &[f64],
    penalise: &[bool],
    lambda: f64,
) -> Option<Vec<f64>> {
    let k = penalise.len();
    let mut a = vec![vec![0.0; k]; k];
    let mut b = vec![0.0; k];
    for ((x, y), w) in xs.iter().zip(ys).zip(ws) {
        for i in 0..k {
            b[i] += w * x[i] * y;
            for j in 0..k {
                a[i][j] += w * x[i] * x[j];
            }
        }
    }
    for j in 0..k {
        a[j][j] += if penalise[j] { lambda } else { 1e-9 };
    }
    solve(a, b)
}

fn fit_product(
    samples: &[&Sample],
    cache_bytes: f64,
    x_cache_bytes: f64,
) -> (f64, [f64; NREG], f64) {
    let tmin = samples
        .iter()
        .map(|s| s.product_ms)
        .fold(f64::INFINITY, f64::min);
    let xs: Vec<Vec<f64>> = samples
        .iter()
        .map(|s| s.features.regressors(cache_bytes, x_cache_bytes).to_vec())
        .collect();
    let mut penalise = [true; NREG];
    penalise[0] = false;
    let lambda = RIDGE * samples.len() as f64;
    let mut best: Option<(f64, [f64; NREG], f64)> = None;
    for frac in [0.0, 0.1, 0.25, 0.4, 0.55, 0.7, 0.8, 0.9] {
        let launch = frac * tmin;
        let ys: Vec<f64> = samples
            .iter()
            .map(|s| {
                let bytes = s.features.traffic_bytes(s.method, cache_bytes);
                ((s.product_ms - launch).max(1e-9) / (bytes * 1e-6)).ln()
            })
            .collect();
        let ws = vec![1.0; samples.len()];
        let Some(beta) = ridge(&xs, &ys, &ws, &penalise, lambda) else {
            continue;
        };
        let mut w = [0.0; NREG];
        w.copy_from_slice(&beta);
        let model = MethodModel {
            method: samples[0].method,
            launch_ms: launch,
            setup: [0.0; 3],
            host_setup: None,
            weights: w,
            residuals: Vec::new(),
        };
        let err: f64 = samples
            .iter()
            .map(|s| {
                (model.product_ms(&s.features, cache_bytes, x_cache_bytes) / s.product_ms)
                    .ln()
                    .powi(2)
            })
            .sum();
        if best.as_ref().is_none_or(|b| err < b.2) {
            best = Some((launch, w, err));
        }
    }
    best.unwrap_or((0.0, [0.0; NREG], f64::INFINITY))
}

fn fit_setup(samples: &[&Sample]) -> [f64; 3] {
    let rows: Vec<[f64; 3]> = samples
        .iter()
        .map(|s| {
            let f = &s.features;
            [
                1.0,
                f.nnz as f64 * (4.0 + f.scalar_bytes as f64) / 1e6,
                f.nrows as f64 / 1e6,
            ]
        })
        .collect();
    let ys: Vec<f64> = samples.iter().map(|s| s.setup_ms).collect();
    // Relative error: weight 1/t² on squared residuals, floored at 0.05 ms.
    let ws: Vec<f64> = ys.iter().map(|t| 1.0 / t.max(0.05).powi(2)).collect();
    let mut active = [true; 3];
    for _ in 0..3 {
        let idx: Vec<usize> = (0..3).filter(|&j| active[j]).collect();
        let xs: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| idx.iter().map(|&j| r[j]).collect())
            .collect();
        let pen = vec![false; idx.len()];
        let Some(beta) = ridge(&xs, &ys, &ws, &pen, 0.0) else {
            break;
        };
        let mut out = [0.0; 3];
        for (&j, b) in idx.iter().zip(&beta) {
            out[j] = *b;
        }
        if out.iter().all(|&c| c >= 0.0) {
            return out;
        }
        // Drop the most negative coefficient and refit.
        let worst = (0..3)
            .filter(|&j| active[j])
            .min_by(|&i, &j| out[i].total_cmp(&out[j]))
            .unwrap();
        active[worst] = false;
    }
    let mean = ys.iter().sum::<f64>() / ys.len().max(1) as f64;
    [mean.max(0.0), 0.0, 0.0]
}

/// How well a fitted model reproduces its own samples.
#[derive(Clone, Debug)]
pub struct FitQuality {
    /// The method whose model this is.
    pub method: Method,
    /// How many samples the method's model was fitted to.
    pub samples: usize,
    /// Root mean square of ln(predicted / measured) product time.
    pub product_rms_log: f64,
    /// Root mean square of ln(predicted / measured) setup time (floored at 0.05 ms).
    pub setup_rms_log: f64,
}

/// Shares of the cache tried for the part that holds `x` ([`Profile::x_cache_share`]).
pub const X_CACHE_SHARES: [f64; 10] = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0];

/// Σ over the methods of their samples' squared ln(predicted / measured) product time.
fn squared_error(quality: &[FitQuality]) -> f64 {
    quality
        .iter()
        .map(|q| q.product_rms_log.powi(2) * q.samples as f64)
        .sum()
}

/// Fits a profile to `samples`. Methods with fewer than 4 samples are left out of the profile.
/// The share of the cache that holds `x` is the one of [`X_CACHE_SHARES`] whose global fits
/// reproduce the samples' product times best.
pub fn fit(
    samples: &[Sample],
    name: &str,
    notes: Vec<String>,
    matches: Vec<Match>,
    cache_bytes: f64,
) -> Result<(Profile, Vec<FitQuality>)> {
    let (x_cache_share, methods, quality) = X_CACHE_SHARES
        .iter()
        .map(|&share| {
            let (methods, quality) = fit_methods(samples, cache_bytes, share * cache_bytes);
            (share, methods, quality)
        })
        .min_by(|a, b| squared_error(&a.2).total_cmp(&squared_error(&b.2)))
        .expect("shares to try");
    if methods.is_empty() {
        return Err(Error::InvalidParameter {
            name: "calibration samples",
            value: samples.len().to_string(),
            reason: "no method has the 4 measurements a fit needs".into(),
        });
    }
    // The range and scale of each regressor over every sample the fit read.
    let all: Vec<[f64; NREG]> = methods
        .iter()
        .flat_map(|m| m.residuals.iter().map(|e| e.at))
        .collect();
    let (mut lo, mut hi) = ([f64::INFINITY; NREG], [f64::NEG_INFINITY; NREG]);
    let mut scale = [0.0; NREG];
    for j in 0..NREG {
        let n = all.len() as f64;
        let mean = all.iter().map(|r| r[j]).sum::<f64>() / n;
        let var = all.iter().map(|r| (r[j] - mean).powi(2)).sum::<f64>() / n;
        scale[j] = if var > 1e-12 { short(var.sqrt()) } else { 0.0 };
        for r in &all {
            lo[j] = lo[j].min(r[j]);
            hi[j] = hi[j].max(r[j]);
        }
    }
    Ok((
        Profile {
            name: name.to_owned(),
            notes,
            matches,
            cache_bytes,
            x_cache_share,
            range: Some((lo, hi)),
            kernel: Some(Kernel {
                width: KERNEL_WIDTH,
                prior: KERNEL_PRIOR,
                scale,
            }),
            methods,
            traffic: Traffic::Method,
        },
        quality,
    ))
}

/// Every method's model fitted to its samples, with `x_cache_bytes` of the cache holding `x`.
fn fit_methods(
    samples: &[Sample],
    cache_bytes: f64,
    x_cache_bytes: f64,
) -> (Vec<MethodModel>, Vec<FitQuality>) {
    let mut methods = Vec::new();
    let mut quality = Vec::new();
    for &m in Method::ALL {
        let mine: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.method == m && s.product_ms > 0.0 && s.product_ms.is_finite())
            .collect();
        if mine.len() < 4 {
            continue;
        }
        let (launch_ms, weights, _) = fit_product(&mine, cache_bytes, x_cache_bytes);
        // Samples without a setup time (from runs whose setups no longer apply) inform only the
        // product model, and those without a product time (setups re-measured alone) only the
        // setup model.
        let timed: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.method == m && s.setup_ms.is_finite())
            .collect();
        let regime = |gpu: bool| -> Vec<&Sample> {
            timed
                .iter()
                .copied()
                .filter(|s| s.built_on_gpu == Some(gpu))
                .collect()
        };
        let (on_gpu, on_host) = (regime(true), regime(false));
        let (setup, host_setup) =
            if on_gpu.len() >= MIN_REGIME_SAMPLES && on_host.len() >= MIN_REGIME_SAMPLES {
                (fit_setup(&on_gpu), Some(fit_setup(&on_host)))
            } else {
                (fit_setup(&timed), None)
            };
        let mut model = MethodModel {
            method: m,
            launch_ms,
            setup,
            host_setup,
            weights,
            residuals: Vec::new(),
        };
        model.residuals = mine
            .iter()
            .map(|s| {
                let at = s.features.regressors(cache_bytes, x_cache_bytes).map(short);
                let bytes = s.features.traffic_bytes(m, cache_bytes);
                Residual {
                    at,
                    ln_ratio: short((s.product_ms / model.product_ms_at(bytes, &at)).ln()),
                }
            })
            .collect();
        let rms = |f: &dyn Fn(&Sample) -> f64| {
            (mine.iter().map(|s| f(s).powi(2)).sum::<f64>() / mine.len() as f64).sqrt()
        };
        quality.push(FitQuality {
            method: m,
            samples: mine.len(),
            product_rms_log: rms(&|s| {
                (model.product_ms(&s.features, cache_bytes, x_cache_bytes) / s.product_ms).ln()
            }),
            setup_rms_log: (timed
                .iter()
                .map(|s| {
                    let on_gpu = s.built_on_gpu.unwrap_or(true);
                    (model.setup_ms(&s.features, on_gpu).max(0.05) / s.setup_ms.max(0.05))
                        .ln()
                        .powi(2)
                })
                .sum::<f64>()
                / timed.len().max(1) as f64)
                .sqrt(),
        });
        methods.push(model);
    }
    (methods, quality)
}

/// Header of the samples CSV whose lines [`sample_to_csv`] writes and [`samples_from_csv`] reads.
pub const CSV_HEADER: &str = "matrix,method,nrows,ncols,nnz,mean,cv,max_len,empty_frac,long_share,scatter,scalar_bytes,vendor,device_type,subgroup_size,shares_memory,setup_ms,product_ms,built_on_gpu";

/// One CSV line (no newline) per sample.
pub fn sample_to_csv(s: &Sample) -> String {
    let f = &s.features;
    format!(
        "{},{},{},{},{},{:?},{:?},{},{:?},{:?},{:?},{},{:#06x},{:?},{},{},{:?},{:?},{}",
        s.matrix,
        s.method.name(),
        f.nrows,
        f.ncols,
        f.nnz,
        f.mean,
        f.cv,
        f.max_len,
        f.empty_frac,
        f.long_share,
        f.scatter,
        f.scalar_bytes,
        f.vendor,
        f.device_type,
        f.subgroup_size,
        f.shares_memory_with_host as u8,
        s.setup_ms,
        s.product_ms,
        match s.built_on_gpu {
            Some(true) => "1",
            Some(false) => "0",
            None => "",
        }
    )
}

/// Parses the samples CSV (`#` lines and the header are skipped).
pub fn samples_from_csv(text: &str) -> Result<Vec<Sample>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("matrix,") {
            continue;
        }
        let err = |why: &str| Error::InvalidParameter {
            name: "calibration csv",
            value: format!("line {}", i + 1),
            reason: why.to_owned(),
        };
        let t: Vec<&str> = line.split(',').collect();
        // (The last column, built_on_gpu, is absent or empty in earlier samples.)
        if !(18..=19).contains(&t.len()) {
            return Err(err("expected 18 or 19 columns (see CSV_HEADER)"));
        }
        let u = |s: &str| s.parse::<usize>().map_err(|_| err("bad integer"));
        let x = |s: &str| s.parse::<f64>().map_err(|_| err("bad number"));
        let device_type = match t[13] {
            "Cpu" => wgpu::DeviceType::Cpu,
            "IntegratedGpu" => wgpu::DeviceType::IntegratedGpu,
            "DiscreteGpu" => wgpu::DeviceType::DiscreteGpu,
            "VirtualGpu" => wgpu::DeviceType::VirtualGpu,
            _ => wgpu::DeviceType::Other,
        };
        let ncols = u(t[3])?;
        let scalar_bytes = u(t[11])?;
        out.push(Sample {
            matrix: t[0].to_owned(),
            method: Method::from_name(t[1])?,
            features: Features {
                nrows: u(t[2])?,
                ncols,
                nnz: u(t[4])?,
                mean: x(t[5])?,
                cv: x(t[6])?,
                max_len: u(t[7])?,
                empty_frac: x(t[8])?,
                long_share: x(t[9])?,
                scatter: x(t[10])?,
                scalar_bytes,
                x_bytes: (ncols * scalar_bytes) as u64,
                vendor: u32::from_str_radix(t[12].trim_start_matches("0x"), 16)
                    .map_err(|_| err("bad vendor"))?,
                device_type,
                subgroup_size: u(t[14])? as u32,
                shares_memory_with_host: t[15] == "1",
            },
            setup_ms: x(t[16])?,
            product_ms: x(t[17])?,
            built_on_gpu: match t.get(18).copied().unwrap_or("") {
                "" => None,
                "1" => Some(true),
                "0" => Some(false),
                _ => return Err(err("built_on_gpu is 0, 1 or empty")),
            },
        });
    }
    Ok(out)
}
