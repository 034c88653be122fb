//! The cost model's data, below the methods so that their options ([`AutoOptions`] in
//! `PlanOptions`) can hold a profile: adapter profiles, their text format (documented where
//! users read it, the `profile` page of the cost model's public module), the built-in ones, and which one applies. What
//! the model predicts from a profile is in `select`.

use crate::gpu::Gpu;
use crate::{Error, Method, Result};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// Number of regressors of the per-product model.
pub const NREG: usize = 12;

/// Regressors of profiles written before `x_miss` (their first ones; the rest read as 0).
pub(crate) const NREG_BEFORE_X_MISS: usize = 11;

/// Names of the regressors, as written in profile files.
pub const REGRESSORS: [&str; NREG] = [
    "bias",
    "ln_mean",
    "ln_cv",
    "long_share",
    "empty_frac",
    "scatter",
    "ln_x_cache",
    "aspect",
    "ln_mnnz",
    "ln_max_rel",
    "f64",
    "x_miss",
];

/// The environment variable naming a profile file.
pub(crate) const PROFILE_ENV: &str = "WGSPMV_PROFILE";

/// How `Method::Auto` chooses.
#[derive(Clone, Debug, Default)]
pub struct AutoOptions {
    /// The cost-model profile; `None`: `WGSPMV_PROFILE`, else the built-in one for the adapter.
    pub profile: Option<Arc<Profile>>,
    /// Build the model's best few candidates and time them on the device, spending about this
    /// many products' time on the timing in all (at least 5 products per candidate); `None`:
    /// the model decides, except on a matrix smaller than every one the profile was fitted on
    /// (for at least `select::BELOW_DATA_MIN_PRODUCTS` products), where `csr-scalar`,
    /// `csr-vector` and the model's best other method are timed for a few products each.
    pub timed_budget_products: Option<f64>,
    /// Never time, not even below the profile's data: the model alone decides.
    pub model_only: bool,
    /// How many candidates a timed choice builds, at most: the model's best of each family of
    /// methods, best first (default `DEFAULT_TIMED_CANDIDATES`, 4).
    pub timed_candidates: Option<usize>,
    /// A file that remembers timed choices across processes (read before timing, appended to
    /// after). Timed choices are always remembered in the process.
    pub remember_file: Option<PathBuf>,
}

/// The profile Auto uses on `gpu` with `opts` (see the module docs for the order).
pub fn profile_for(gpu: &Gpu, opts: &AutoOptions) -> Result<Arc<Profile>> {
    if let Some(p) = &opts.profile {
        return Ok(p.clone());
    }
    if let Some(path) = std::env::var_os(PROFILE_ENV).filter(|p| !p.is_empty()) {
        static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<Profile>>>> = OnceLock::new();
        let path = PathBuf::from(path);
        let cache = LOADED.get_or_init(Default::default);
        if let Some(p) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&path) {
            return Ok(p.clone());
        }
        let p = Arc::new(Profile::load(&path)?);
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path, p.clone());
        return Ok(p);
    }
    let info = gpu.info();
    Ok(builtin_for(info.vendor, info.device_type))
}

/// The model of one method.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodModel {
    /// The method modelled.
    pub method: Method,
    /// Fixed time of one product (dispatches, host stage round trip), ms.
    pub launch_ms: f64,
    /// Setup coefficients: constant ms, ms per MB of matrix entries, ms per million rows.
    pub setup: [f64; 3],
    /// Setup coefficients when the format is built on the host, where they differ from the
    /// GPU builds' (`setup`); `None`: `setup` covers both.
    pub host_setup: Option<[f64; 3]>,
    /// Weights of the regressors (see [`REGRESSORS`]) in ln(ns per byte).
    pub weights: [f64; NREG],
    /// Calibration residuals of the global fit, for the profile's [`Kernel`] correction.
    pub residuals: Vec<Residual>,
}

/// One calibration measurement's residual: where it was (regressors) and
/// ln(measured / global model) product time there.
#[derive(Clone, Debug, PartialEq)]
pub struct Residual {
    /// The regressors of the calibration matrix (inside the profile's range).
    pub at: [f64; NREG],
    /// ln(measured product time / the global fit's prediction).
    pub ln_ratio: f64,
}

/// The local correction: a Gaussian kernel over the methods' [`Residual`]s.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// Bandwidth in scaled regressor units.
    pub width: f64,
    /// Weight of the global fit (a residual of 0) in the kernel mean, so that far from every
    /// calibration matrix the correction fades to nothing.
    pub prior: f64,
    /// Scale of each regressor in the distance (0: not part of the distance).
    pub scale: [f64; NREG],
}

impl Kernel {
    /// The correction, in ln(time), at regressors `r` from `residuals`.
    pub fn correction(&self, r: &[f64; NREG], residuals: &[Residual]) -> f64 {
        let (mut num, mut den) = (0.0, self.prior);
        for e in residuals {
            let d2: f64 = r
                .iter()
                .zip(&e.at)
                .zip(&self.scale)
                .filter(|(_, &s)| s > 0.0)
                .map(|((a, b), s)| ((a - b) / s).powi(2))
                .sum();
            let k = (-0.5 * d2 / (self.width * self.width)).exp();
            num += k * e.ln_ratio;
            den += k;
        }
        if den > 0.0 {
            num / den
        } else {
            0.0
        }
    }
}

impl MethodModel {
    /// The global fit for a product moving `bytes` at regressors `r`, ms.
    pub fn product_ms_at(&self, bytes: f64, r: &[f64; NREG]) -> f64 {
        let z: f64 = self.weights.iter().zip(r).map(|(w, x)| w * x).sum();
        self.launch_ms + bytes * 1e-6 * z.clamp(-30.0, 30.0).exp()
    }
}

/// Which adapters a profile is meant for.
#[derive(Clone, Debug, PartialEq)]
pub enum Match {
    /// PCI vendor id.
    Vendor(u32),
    /// wgpu device type.
    DeviceType(wgpu::DeviceType),
}

/// A cost-model profile for one kind of adapter.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The profile's name (its `name` line), shown in reports of the choice.
    pub name: String,
    /// Free text: where and when it was fitted.
    pub notes: Vec<String>,
    /// Adapters this profile is for (any of them); empty: every adapter.
    pub matches: Vec<Match>,
    /// Size of the cache `x` should fit in (the `ln_x_cache` regressor), bytes.
    pub cache_bytes: f64,
    /// Share of `cache_bytes` that holds `x` for its gathers while the matrix streams through
    /// (the `x_miss` regressor; fitted; 1 in files without the line).
    pub x_cache_share: f64,
    /// The calibration data's range of each regressor, `(min, max)`: the regressors are clamped
    /// to it before the model reads them. `None`: not clamped.
    pub range: Option<([f64; NREG], [f64; NREG])>,
    /// The local residual correction. `None`: the global fit alone.
    pub kernel: Option<Kernel>,
    /// One model per method the profile can choose; methods without one are never chosen.
    pub methods: Vec<MethodModel>,
    /// What the weights are per byte of: set by the file's version.
    pub traffic: Traffic,
}

/// [`Profile::x_cache_share`] of profiles without the line (their `x_miss` weight is 0, so it
/// changes nothing there).
pub(crate) const X_CACHE_SHARE_BEFORE: f64 = 1.0;

/// The bytes a profile's per-product model is per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// `Features::minimal_bytes` for every method (profile versions 1 to 3).
    Minimal,
    /// `Features::traffic_bytes`: what each method's format adds for certain counted too
    /// (version 4, what `calibrate` fits).
    Method,
}

fn device_type_name(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::Other => "other",
        wgpu::DeviceType::IntegratedGpu => "integrated",
        wgpu::DeviceType::DiscreteGpu => "discrete",
        wgpu::DeviceType::VirtualGpu => "virtual",
        wgpu::DeviceType::Cpu => "cpu",
    }
}

fn bad(line: usize, text: &str, reason: impl Into<String>) -> Error {
    let mut t: String = text.chars().take(80).collect();
    if t.len() < text.len() {
        t.push('…');
    }
    Error::InvalidParameter {
        name: "profile",
        value: format!("line {line}: {t}"),
        reason: reason.into(),
    }
}

impl Profile {
    /// The bytes of cache that hold `x` for its gathers.
    pub fn x_cache_bytes(&self) -> f64 {
        self.x_cache_share * self.cache_bytes
    }

    /// The model of `method`, if this profile has one.
    pub fn model(&self, method: Method) -> Option<&MethodModel> {
        self.methods.iter().find(|m| m.method == method)
    }

    /// Whether this profile is meant for the adapter.
    pub fn matches(&self, vendor: u32, device_type: wgpu::DeviceType) -> bool {
        self.matches.is_empty()
            || self.matches.iter().any(|m| match m {
                Match::Vendor(v) => *v == vendor,
                Match::DeviceType(t) => *t == device_type,
            })
    }

    /// Parses the text form (see the module docs). Every malformed line is an
    /// [`Error::InvalidParameter`] named `profile` that quotes the line and says what is wrong.
    pub fn parse(text: &str) -> Result<Self> {
        let mut version = 0u32;
        let mut p = Profile {
            name: String::new(),
            notes: Vec::new(),
            matches: Vec::new(),
            cache_bytes: f64::NAN,
            x_cache_share: X_CACHE_SHARE_BEFORE,
            range: None,
            kernel: None,
            methods: Vec::new(),
            traffic: Traffic::Minimal,
        };
        let mut regressors_seen = false;
        let mut file_nreg = NREG;
        let (mut range_min, mut range_max) = (None, None);
        let mut residual_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (key, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let rest = rest.trim();
            if version == 0 {
                if key != "wgspmv-profile" {
                    return Err(bad(n, raw, "a profile starts with `wgspmv-profile 4`"));
                }
                version = match rest {
                    "1" => 1,
                    "2" => 2,
                    "3" => 3,
                    "4" => 4,
                    _ => {
                        return Err(bad(
                            n,
                            raw,
                            "unsupported profile version (this library reads 1 to 4)",
                        ))
                    }
                };
                if version >= 4 {
                    p.traffic = Traffic::Method;
                }
                continue;
            }
            let num = |s: &str| -> Result<f64> {
                s.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| bad(n, raw, format!("`{s}` is not a finite number")))
            };
            // Profiles written before the last regressors give fewer numbers; those read as 0.
            let nreg = file_nreg;
            let nums = |t: &[&str]| -> Result<[f64; NREG]> {
                if t.len() != nreg {
                    return Err(bad(n, raw, format!("expected {nreg} numbers")));
                }
                let mut v = [0.0; NREG];
                for (x, s) in v.iter_mut().zip(t) {
                    *x = num(s)?;
                }
                Ok(v)
            };
            if matches!(key, "range_min" | "range_max" | "kernel" | "residual") {
                if version < 2 {
                    return Err(bad(n, raw, format!("`{key}` needs `wgspmv-profile 2`")));
                }
                if !regressors_seen {
                    return Err(bad(
                        n,
                        raw,
                        format!("`{key}` comes after the `regressors` line"),
                    ));
                }
            }
            match key {
                "name" => {
                    if rest.is_empty() || rest.contains(char::is_whitespace) {
                        return Err(bad(n, raw, "the name is one word"));
                    }
                    p.name = rest.to_owned();
                }
                "note" => {
                    // Comments were stripped above; notes keep their text up to a '#'.
                    p.notes.push(rest.to_owned())
                }
                "match" => {
                    let (what, val) = rest.split_once(char::is_whitespace).ok_or_else(|| {
                        bad(
                            n,
                            raw,
                            "expected `match vendor 0xID` or `match device_type TYPE`",
                        )
                    })?;
                    let val = val.trim();
                    p.matches.push(match what {
                        "vendor" => {
                            let v = val
                                .strip_prefix("0x")
                                .map(|h| u32::from_str_radix(h, 16))
                                .unwrap_or_else(|| val.parse())
                                .map_err(|_| bad(n, raw, "vendor is a number such as 0x10de"))?;
                            Match::Vendor(v)
                        }
                        "device_type" => Match::DeviceType(match val {
                            "other" => wgpu::DeviceType::Other,
                            "integrated" => wgpu::DeviceType::IntegratedGpu,
                            "discrete" => wgpu::DeviceType::DiscreteGpu,
                            "virtual" => wgpu::DeviceType::VirtualGpu,
                            "cpu" => wgpu::DeviceType::Cpu,
                            _ => return Err(bad(
                                n,
                                raw,
                                "device_type is one of other, integrated, discrete, virtual, cpu",
                            )),
                        }),
                        _ => return Err(bad(n, raw, "match takes `vendor` or `device_type`")),
                    });
                }
                "cache_bytes" => {
                    let v = num(rest)?;
                    if v <= 0.0 {
                        return Err(bad(n, raw, "cache_bytes must be positive"));
                    }
                    p.cache_bytes = v;
                }
                "x_cache_share" => {
                    let v = num(rest)?;
                    if v <= 0.0 {
                        return Err(bad(n, raw, "x_cache_share must be positive"));
                    }
                    p.x_cache_share = v;
                }
                "regressors" => {
                    let names: Vec<&str> = rest.split_whitespace().collect();
                    if names == REGRESSORS[..NREG_BEFORE_X_MISS] {
                        file_nreg = NREG_BEFORE_X_MISS;
                    } else if names != REGRESSORS {
                        return Err(bad(
                            n,
                            raw,
                            format!("this library's regressors are: {}", REGRESSORS.join(" ")),
                        ));
                    }
                    regressors_seen = true;
                }
                "method" => {
                    if !regressors_seen {
                        return Err(bad(
                            n,
                            raw,
                            "a `regressors` line must come before the methods",
                        ));
                    }
                    let mut t: Vec<&str> = rest.split_whitespace().collect();
                    let with_host = t.get(7) == Some(&"host_setup");
                    if with_host && version < 3 {
                        return Err(bad(n, raw, "`host_setup` needs `wgspmv-profile 3`"));
                    }
                    let host: Vec<&str> = if with_host && t.len() >= 11 {
                        t.drain(7..11).skip(1).collect()
                    } else {
                        Vec::new()
                    };
                    let expected = 1 + 2 + 4 + 1 + nreg;
                    if t.len() != expected
                        || t[1] != "launch_ms"
                        || t[3] != "setup"
                        || t[7] != "weights"
                        || (with_host && host.len() != 3)
                    {
                        return Err(bad(
                            n,
                            raw,
                            format!(
                                "expected `method NAME launch_ms L setup S0 S1 S2 [host_setup H0 H1 H2] weights W1..W{nreg}`"
                            ),
                        ));
                    }
                    let method = Method::from_name(t[0]).map_err(|e| bad(n, raw, e.to_string()))?;
                    if method == Method::Auto {
                        return Err(bad(n, raw, "`auto` has no model of its own"));
                    }
                    if p.model(method).is_some() {
                        return Err(bad(n, raw, format!("{method} appears twice")));
                    }
                    let launch_ms = num(t[2])?;
                    let setup = [num(t[4])?, num(t[5])?, num(t[6])?];
                    let host_setup = if with_host {
                        Some([num(host[0])?, num(host[1])?, num(host[2])?])
                    } else {
                        None
                    };
                    if launch_ms < 0.0
                        || setup
                            .iter()
                            .chain(host_setup.iter().flatten())
                            .any(|&s| s < 0.0)
                    {
                        return Err(bad(n, raw, "times cannot be negative"));
                    }
                    let mut weights = [0.0; NREG];
                    for (w, s) in weights.iter_mut().zip(&t[8..]) {
                        *w = num(s)?;
                    }
                    p.methods.push(MethodModel {
                        method,
                        launch_ms,
                        setup,
                        host_setup,
                        weights,
                        residuals: Vec::new(),
                    });
                }
                "range_min" | "range_max" => {
                    let t: Vec<&str> = rest.split_whitespace().collect();
                    let v = nums(&t)?;
                    let slot = if key == "range_min" {
                        &mut range_min
                    } else {
                        &mut range_max
                    };
                    if slot.replace(v).is_some() {
                        return Err(bad(n, raw, format!("`{key}` appears twice")));
                    }
                }
                "kernel" => {
                    let t: Vec<&str> = rest.split_whitespace().collect();
                    if t.len() != 5 + nreg || t[0] != "width" || t[2] != "prior" || t[4] != "scale"
                    {
                        return Err(bad(
                            n,
                            raw,
                            format!("expected `kernel width W prior P scale S1..S{nreg}`"),
                        ));
                    }
                    let (width, prior, scale) = (num(t[1])?, num(t[3])?, nums(&t[5..])?);
                    if width <= 0.0 || prior < 0.0 || scale.iter().any(|&s| s < 0.0) {
                        return Err(bad(
                            n,
                            raw,
                            "the width must be positive, the prior and scales not negative",
                        ));
                    }
                    if p.kernel.is_some() {
                        return Err(bad(n, raw, "`kernel` appears twice"));
                    }
                    p.kernel = Some(Kernel {
                        width,
                        prior,
                        scale,
                    });
                }
                "residual" => {
                    let t: Vec<&str> = rest.split_whitespace().collect();
                    if t.len() != 4 + nreg || t[1] != "ln_ratio" || t[3] != "at" {
                        return Err(bad(
                            n,
                            raw,
                            format!("expected `residual METHOD ln_ratio E at R1..R{nreg}`"),
                        ));
                    }
                    let method = Method::from_name(t[0]).map_err(|e| bad(n, raw, e.to_string()))?;
                    let (ln_ratio, at) = (num(t[2])?, nums(&t[4..])?);
                    let m = p
                        .methods
                        .iter_mut()
                        .find(|m| m.method == method)
                        .ok_or_else(|| bad(n, raw, format!("no `method {method}` line before")))?;
                    m.residuals.push(Residual { at, ln_ratio });
                    residual_line = n;
                }
                _ => return Err(bad(n, raw, format!("unknown key `{key}`"))),
            }
        }
        let end = text.lines().count();
        if version == 0 {
            return Err(bad(
                end,
                "",
                "empty profile: it starts with `wgspmv-profile 4`",
            ));
        }
        match (range_min, range_max) {
            (None, None) => {}
            (Some(lo), Some(hi)) => {
                if lo.iter().zip(&hi).any(|(a, b)| a > b) {
                    return Err(bad(end, "", "`range_min` exceeds `range_max`"));
                }
                p.range = Some((lo, hi));
            }
            _ => return Err(bad(end, "", "`range_min` and `range_max` come together")),
        }
        if residual_line > 0 && p.kernel.is_none() {
            return Err(bad(
                residual_line,
                "",
                "`residual` lines need a `kernel` line",
            ));
        }
        if p.name.is_empty() {
            return Err(bad(end, "", "the profile has no `name` line"));
        }
        if p.cache_bytes.is_nan() {
            return Err(bad(end, "", "the profile has no `cache_bytes` line"));
        }
        if p.methods.is_empty() {
            return Err(bad(end, "", "the profile has no `method` line"));
        }
        Ok(p)
    }

    /// Reads and parses a profile file.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|e| match e {
            Error::InvalidParameter {
                name,
                value,
                reason,
            } => Error::InvalidParameter {
                name,
                value: format!("{}: {value}", path.display()),
                reason,
            },
            e => e,
        })
    }
}

impl std::fmt::Display for Profile {
    /// The text form; [`Profile::parse`] reads it back to an equal profile (floats are written
    /// in Rust's shortest round-trip form).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Version 4 only where it changes the meaning (older files keep theirs when rewritten).
        let version = match self.traffic {
            Traffic::Minimal => 3,
            Traffic::Method => 4,
        };
        writeln!(f, "wgspmv-profile {version}")?;
        writeln!(f, "name {}", self.name)?;
        for n in &self.notes {
            writeln!(f, "note {}", n.replace('#', "no."))?;
        }
        for m in &self.matches {
            match m {
                Match::Vendor(v) => writeln!(f, "match vendor {v:#06x}")?,
                Match::DeviceType(t) => writeln!(f, "match device_type {}", device_type_name(*t))?,
            }
        }
        writeln!(f, "cache_bytes {:?}", self.cache_bytes)?;
        writeln!(f, "x_cache_share {:?}", self.x_cache_share)?;
        writeln!(f, "regressors {}", REGRESSORS.join(" "))?;
        let list = |v: &[f64; NREG]| {
            v.iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        if let Some((lo, hi)) = &self.range {
            writeln!(f, "range_min {}", list(lo))?;
            writeln!(f, "range_max {}", list(hi))?;
        }
        if let Some(k) = &self.kernel {
            writeln!(
                f,
                "kernel width {:?} prior {:?} scale {}",
                k.width,
                k.prior,
                list(&k.scale)
            )?;
        }
        for m in &self.methods {
            write!(
                f,
                "method {} launch_ms {:?} setup {:?} {:?} {:?}",
                m.method.name(),
                m.launch_ms,
                m.setup[0],
                m.setup[1],
                m.setup[2]
            )?;
            if let Some(h) = m.host_setup {
                write!(f, " host_setup {:?} {:?} {:?}", h[0], h[1], h[2])?;
            }
            write!(f, " weights")?;
            for w in m.weights {
                write!(f, " {w:?}")?;
            }
            writeln!(f)?;
        }
        for m in &self.methods {
            for e in &m.residuals {
                writeln!(
                    f,
                    "residual {} ln_ratio {:?} at {}",
                    m.method.name(),
                    e.ln_ratio,
                    list(&e.at)
                )?;
            }
        }
        Ok(())
    }
}

/// The profiles shipped with the library (src/profile/profiles/), most specific first; the last
/// one, `generic`, matches every adapter.
pub const BUILTIN: &[(&str, &str)] = &[
    ("nvidia", include_str!("profiles/nvidia.txt")),
    ("cpu", include_str!("profiles/cpu.txt")),
    ("generic", include_str!("profiles/generic.txt")),
];

/// The built-in profile for an adapter.
pub fn builtin_for(vendor: u32, device_type: wgpu::DeviceType) -> std::sync::Arc<Profile> {
    use std::sync::{Arc, OnceLock};
    static PARSED: OnceLock<Vec<Arc<Profile>>> = OnceLock::new();
    let all = PARSED.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|(name, text)| {
                Arc::new(Profile::parse(text).unwrap_or_else(|e| {
                    panic!("built-in profile {name} does not parse (a bug): {e}")
                }))
            })
            .collect()
    });
    all.iter()
        .find(|p| p.matches(vendor, device_type))
        .unwrap_or_else(|| all.last().expect("generic profile"))
        .clone()
}
