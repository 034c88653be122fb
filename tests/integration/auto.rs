//! `Method::Auto`: the choice is explained (every candidate with its predictions) and is the
//! argmin of the model; profiles round-trip through their text and a broken one is a typed
//! error; a timed choice is remembered and reused; one product prefers a method without setup;
//! Auto's plans compute the right product. Small matrices only: runs on lavapipe in seconds.

use crate::common;

use std::sync::Arc;
use wgspmv::internals::select::{builtin_for, calibration, fit, remember, BUILTIN};
use wgspmv::select::profile::{
    Kernel, Match, MethodModel, Profile, Residual, Traffic, NREG, REGRESSORS,
};
use wgspmv::select::{self, Basis, Features};
use wgspmv::{CsrMatrix, Error, Method, PlanOptions};

fn structure(name: &str) -> calibration::Structure {
    *calibration::STRUCTURES
        .iter()
        .find(|s| s.name == name)
        .unwrap()
}

fn matrices() -> Vec<(&'static str, CsrMatrix<f64>)> {
    [
        "band-blocks",
        "powerlaw",
        "perm",
        "empty30",
        "dense-row",
        "wide",
    ]
    .into_iter()
    .map(|n| (n, structure(n).generate(6000, 3).unwrap()))
    .collect()
}

#[test]
fn choice_is_stable_explained_and_the_argmin() {
    let Some(gpu) = common::gpu() else { return };
    for (name, a) in matrices() {
        let a = a.cast::<f32>();
        for e in [1u64, 1000, 1_000_000] {
            let mut opts = PlanOptions {
                expected_products: Some(e),
                ..Default::default()
            };
            // (The model's own choice: below its data a choice for many products is timed.)
            opts.auto.model_only = true;
            let c1 = select::choose(&gpu, &a, &opts).unwrap();
            let c2 = select::choose(&gpu, &a, &opts).unwrap();
            assert_eq!(c1.method, c2.method, "{name}: choice not stable");
            assert_eq!(c1.basis, Basis::Model);
            assert_eq!(c1.expected_products, e);
            // Every concrete method is a candidate, each with finite predictions.
            assert_eq!(c1.candidates.len(), Method::ALL.len(), "{name}\n{c1}");
            for c in &c1.candidates {
                assert!(c.setup_ms.is_finite() && c.setup_ms >= 0.0, "{name}\n{c1}");
                assert!(
                    c.product_ms.is_finite() && c.product_ms > 0.0,
                    "{name}\n{c1}"
                );
                let total = c.setup_ms + e as f64 * c.product_ms;
                assert!((c.total_ms - total).abs() <= 1e-9 * total, "{name}\n{c1}");
            }
            // The chosen method is the least predicted total, listed first.
            let best = c1
                .candidates
                .iter()
                .min_by(|a, b| a.total_ms.total_cmp(&b.total_ms))
                .unwrap();
            assert_eq!(c1.method, best.method, "{name}\n{c1}");
            assert_eq!(c1.candidates[0].method, c1.method);
            assert_eq!(c1.chosen().method, c1.method);
            // The explanation names the chosen method and every candidate.
            let text = c1.to_string();
            for &m in Method::ALL {
                assert!(text.contains(m.name()), "{name}: {m} missing from\n{text}");
            }
        }
    }
}

#[test]
fn builtin_profiles_parse_and_round_trip() {
    for (name, text) in BUILTIN {
        let p = Profile::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&p.name, name);
        assert_eq!(
            p.methods.len(),
            Method::ALL.len(),
            "{name} models every method"
        );
        let again = Profile::parse(&p.to_string()).unwrap();
        assert_eq!(p, again, "{name} does not round-trip");
    }
    // The generic profile is the fallback and assumes no vendor.
    let generic = builtin_for(0x1234, wgpu::DeviceType::DiscreteGpu);
    assert_eq!(generic.name, "generic");
    assert!(generic.matches.is_empty());
    assert_eq!(
        builtin_for(0x10de, wgpu::DeviceType::DiscreteGpu).name,
        "nvidia"
    );
    assert_eq!(builtin_for(0x10005, wgpu::DeviceType::Cpu).name, "cpu");
}

/// A profile with odd floats and every kind of line survives text and back exactly.
#[test]
fn profile_round_trips_through_text() {
    let mut w = [0.0; NREG];
    for (i, v) in w.iter_mut().enumerate() {
        *v = (i as f64 * 0.37 - 1.1) / 3.0;
    }
    let p = Profile {
        name: "test-profile".into(),
        notes: vec!["made in a test".into(), "second note".into()],
        matches: vec![
            Match::Vendor(0x1002),
            Match::DeviceType(wgpu::DeviceType::IntegratedGpu),
        ],
        cache_bytes: 1.0 / 3.0 * 1e7,
        x_cache_share: 0.1 + 0.2,
        traffic: Traffic::Method,
        methods: vec![
            MethodModel {
                method: Method::CsrScalar,
                launch_ms: 0.1 + 0.2,
                setup: [1e-300, 0.0, 7.5e3],
                host_setup: None,
                weights: w,
                residuals: vec![
                    Residual {
                        at: w.map(|x| x * 0.1 + 1e-17),
                        ln_ratio: -0.3,
                    },
                    Residual {
                        at: [2.0 / 3.0; NREG],
                        ln_ratio: 0.0,
                    },
                ],
            },
            MethodModel {
                method: Method::BccooPlus,
                launch_ms: 0.0,
                setup: [0.0; 3],
                host_setup: None,
                weights: [-0.0; NREG],
                residuals: vec![],
            },
        ],
        range: Some((w.map(|x| x - 1.0), w.map(|x| x + 0.1 / 3.0))),
        kernel: Some(Kernel {
            width: 0.5,
            prior: 0.1,
            scale: w.map(f64::abs),
        }),
    };
    let text = p.to_string();
    let back = Profile::parse(&text).unwrap();
    assert_eq!(p, back, "{text}");
    // So does one of the minimal traffic (versions 1 to 3).
    let minimal = Profile {
        traffic: Traffic::Minimal,
        ..p.clone()
    };
    assert!(minimal.to_string().starts_with("wgspmv-profile 3\n"));
    assert_eq!(Profile::parse(&minimal.to_string()).unwrap(), minimal);
    // A file works the same.
    let dir = std::env::temp_dir().join(format!("wgspmv-auto-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p.txt");
    std::fs::write(&path, &text).unwrap();
    assert_eq!(Profile::load(&path).unwrap(), p);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_profiles_are_typed_errors() {
    let good = BUILTIN[0].1;
    let method_line = good.lines().find(|l| l.starts_with("method ")).unwrap();
    let residual_line = good.lines().find(|l| l.starts_with("residual ")).unwrap();
    let kernel_line = good.lines().find(|l| l.starts_with("kernel ")).unwrap();
    assert!(residual_line.starts_with(&format!(
        "residual {}",
        &method_line[7..7 + method_line[7..].find(' ').unwrap()]
    )));
    let version_line = good.lines().next().unwrap();
    assert!(version_line.starts_with("wgspmv-profile "));
    let with_host = |host: &str| {
        let line = method_line.replacen(" weights ", &format!(" host_setup {host} weights "), 1);
        good.replacen(method_line, &line, 1)
    };
    assert!(Profile::parse(&with_host("1 2 3")).is_ok());
    let cases: Vec<(&str, String)> = vec![
        ("empty", String::new()),
        ("no version", good.replacen(version_line, "", 1)),
        (
            "future version",
            good.replacen(version_line, "wgspmv-profile 5", 1),
        ),
        (
            "residual in a version 1 profile",
            good.replacen(version_line, "wgspmv-profile 1", 1),
        ),
        (
            "host_setup in a version 2 profile",
            with_host("1 2 3").replacen(version_line, "wgspmv-profile 2", 1),
        ),
        ("host_setup of two numbers", with_host("1 2")),
        ("negative host_setup", with_host("1 -2 3")),
        (
            "residual of a method without a line",
            format!(
                "{good}\n{}\n",
                residual_line.replacen("residual ", "residual suraa-", 1)
            ),
        ),
        (
            "residual before its method",
            good.replacen(method_line, "", 1).replacen(
                residual_line,
                &format!("{residual_line}\n{method_line}"),
                1,
            ),
        ),
        (
            "short residual",
            good.replacen(residual_line, residual_line.rsplit_once(' ').unwrap().0, 1),
        ),
        (
            "residuals without a kernel",
            good.replacen(kernel_line, "", 1),
        ),
        (
            "zero kernel width",
            good.replacen("kernel width 0.5 ", "kernel width 0.0 ", 1),
        ),
        (
            "range_min without range_max",
            good.lines()
                .filter(|l| !l.starts_with("range_max"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        (
            "range_min above range_max",
            good.replacen("range_min 1.0 ", "range_min 2.0 ", 1),
        ),
        ("unknown key", format!("{good}\nbogus 1\n")),
        (
            "zero x_cache_share",
            good.replacen("x_cache_share ", "x_cache_share 0.0 #", 1),
        ),
        (
            "unknown method",
            good.replacen(
                method_line,
                &method_line.replacen("method ", "method nosuch-", 1),
                1,
            ),
        ),
        ("duplicate method", format!("{good}\n{method_line}\n")),
        (
            "too few weights",
            good.replacen(method_line, method_line.rsplit_once(' ').unwrap().0, 1),
        ),
        (
            "not a number",
            good.replacen(
                method_line,
                &method_line.replacen("launch_ms ", "launch_ms x", 1),
                1,
            ),
        ),
        (
            "negative setup",
            good.replacen(
                method_line,
                &method_line.replacen("setup ", "setup -1", 1),
                1,
            ),
        ),
        (
            "NaN weight",
            good.replacen(
                method_line,
                &format!("{} NaN", method_line.rsplit_once(' ').unwrap().0),
                1,
            ),
        ),
        (
            "wrong regressors",
            good.replacen("regressors bias", "regressors intercept", 1),
        ),
        ("bad match", format!("{}\nmatch colour blue\n", good)),
        (
            "no methods",
            good.lines()
                .filter(|l| !l.starts_with("method"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        (
            "auto has no model",
            good.replacen(
                method_line,
                &format!(
                    "method auto{}",
                    &method_line[method_line[7..].find(' ').unwrap() + 7..]
                ),
                1,
            ),
        ),
    ];
    for (what, text) in cases {
        match Profile::parse(&text) {
            Err(Error::InvalidParameter {
                name: "profile",
                value,
                reason,
            }) => {
                assert!(!reason.is_empty(), "{what}: {value}");
            }
            other => panic!("{what}: expected a profile error, got {other:?}"),
        }
    }
    // A missing file is an I/O error naming the path; a bad file names it too.
    let missing = std::path::Path::new("/nonexistent/wgspmv/profile.txt");
    assert!(matches!(Profile::load(missing), Err(Error::Io { .. })));
    // Auto with a bad profile file in WGSPMV_PROFILE is covered by docs; here: an explicit
    // profile that models no method Auto can build is still a valid profile of one method.
    let one = format!(
        "wgspmv-profile 1\nname one\ncache_bytes 1e6\nregressors {}\n{}\n", // version 1 reads
        REGRESSORS.join(" "),
        method_line
    );
    assert_eq!(Profile::parse(&one).unwrap().methods.len(), 1);
}

/// The clamp to the calibration range and the kernel correction (no GPU).
#[test]
fn range_clamps_and_kernel_corrects() {
    let nreg = NREG;
    let f = |nnz: usize| Features {
        nrows: nnz / 8,
        ncols: nnz / 8,
        nnz,
        mean: 8.0,
        cv: 0.1,
        max_len: 10,
        empty_frac: 0.0,
        long_share: 0.0,
        scatter: 0.5,
        scalar_bytes: 4,
        x_bytes: (nnz / 8 * 4) as u64,
        vendor: 0,
        device_type: wgpu::DeviceType::Other,
        subgroup_size: 0,
        shares_memory_with_host: false,
    };
    let mut w = [0.0; NREG];
    w[8] = 1.0; // ln_mnnz: ns per byte grows with size
    let near = f(1_000_000);
    let model = MethodModel {
        method: Method::CsrScalar,
        launch_ms: 0.0,
        setup: [0.0; 3],
        host_setup: None,
        weights: w,
        residuals: vec![],
    };
    let mut p = Profile {
        name: "k".into(),
        notes: vec![],
        matches: vec![],
        cache_bytes: 1e6,
        x_cache_share: 1.0,
        range: None,
        kernel: None,
        methods: vec![model.clone()],
        traffic: Traffic::Minimal,
    };
    let global = |g: &Features| model.product_ms(g, 1e6, 1e6);
    let far = f(64_000_000);
    assert_eq!(p.product_ms(&p.methods[0], &far), global(&far));
    // Clamped at 1M entries: ns per byte as at 1M, bytes as at 64M.
    let (mut lo, mut hi) = ([-100.0; NREG], [100.0; NREG]);
    lo[8] = -3.0;
    hi[8] = 0.0;
    p.range = Some((lo, hi));
    let clamped = p.product_ms(&p.methods[0], &far);
    let expect = far.minimal_bytes() * 1e-6;
    assert!((clamped / expect - 1.0).abs() < 1e-12, "{clamped} {expect}");
    // A residual at `near` pulls the prediction there to e / (1 + prior) and leaves `far` alone.
    let at = p.regressors(&near);
    p.methods[0].residuals.push(Residual { at, ln_ratio: 0.5 });
    let mut scale = [1.0; NREG];
    scale[0] = 0.0;
    p.kernel = Some(Kernel {
        width: 0.5,
        prior: 0.1,
        scale,
    });
    let r = p.product_ms(&p.methods[0], &near) / global(&near);
    assert!((r.ln() - 0.5 / 1.1).abs() < 1e-12, "{r}");
    let other = Features {
        scatter: 0.5 + 3.0 * nreg as f64,
        ..near.clone()
    };
    let r = p.product_ms(&p.methods[0], &other)
        / p.methods[0].product_ms_at(other.minimal_bytes(), &p.regressors(&other));
    assert!((r - 1.0).abs() < 1e-9, "{r}");
}

/// Two methods: one with no setup and slower products, one with a long setup and fast products.
fn two_method_profile() -> Arc<Profile> {
    let mut fast = [0.0; NREG];
    fast[0] = (0.01f64).ln(); // 0.01 ns per byte
    let mut slow = [0.0; NREG];
    slow[0] = (0.1f64).ln();
    Arc::new(Profile {
        name: "two".into(),
        notes: vec![],
        matches: vec![],
        cache_bytes: 1e6,
        x_cache_share: 1.0,
        traffic: Traffic::Minimal,
        methods: vec![
            MethodModel {
                method: Method::CsrScalar,
                launch_ms: 0.0,
                setup: [0.0; 3],
                host_setup: None,
                weights: slow,
                residuals: vec![],
            },
            MethodModel {
                method: Method::Bccoo,
                launch_ms: 0.0,
                setup: [50.0, 0.0, 0.0],
                host_setup: None,
                weights: fast,
                residuals: vec![],
            },
        ],
        range: None,
        kernel: None,
    })
}

#[test]
fn one_product_does_not_pay_for_a_conversion() {
    let Some(gpu) = common::gpu() else { return };
    let a = structure("band-blocks")
        .generate(20000, 1)
        .unwrap()
        .cast::<f32>();
    let mut opts = PlanOptions::default();
    opts.auto.profile = Some(two_method_profile());
    opts.auto.model_only = true;
    opts.expected_products = Some(1_000_000);
    let many = select::choose(&gpu, &a, &opts).unwrap();
    assert_eq!(many.method, Method::Bccoo, "{many}");
    opts.expected_products = Some(1);
    let one = select::choose(&gpu, &a, &opts).unwrap();
    assert_eq!(one.method, Method::CsrScalar, "{one}");
    // With the shipped profile, one product never picks a method whose predicted setup is more
    // than the cheapest total: setup + 1 product is what is minimised.
    for (name, a) in matrices() {
        let opts = PlanOptions {
            expected_products: Some(1),
            ..Default::default()
        };
        let c = select::choose(&gpu, &a.cast::<f32>(), &opts).unwrap();
        let cheapest = c
            .candidates
            .iter()
            .map(|c| c.setup_ms + c.product_ms)
            .fold(f64::INFINITY, f64::min);
        assert!(
            c.chosen().setup_ms + c.chosen().product_ms <= cheapest * (1.0 + 1e-12),
            "{name}\n{c}"
        );
    }
}

#[test]
fn timed_choice_is_remembered_and_reused() {
    let Some(gpu) = common::gpu() else { return };
    let a = structure("powerlaw")
        .generate(8000, 11)
        .unwrap()
        .cast::<f32>();
    let dir = std::env::temp_dir().join(format!("wgspmv-auto-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("choices.txt");
    let mut opts = PlanOptions::default();
    opts.auto.timed_budget_products = Some(6.0);
    opts.auto.timed_candidates = Some(2);
    opts.auto.remember_file = Some(file.clone());
    remember::forget_all();
    let first = select::choose(&gpu, &a, &opts).unwrap();
    assert_eq!(first.basis, Basis::Timed, "{first}");
    let timed: Vec<_> = first
        .candidates
        .iter()
        .filter(|c| c.measured_product_ms.is_some())
        .collect();
    assert_eq!(timed.len(), 2, "{first}");
    // The timed winner has the least measured setup + expected products.
    let cost = |c: &select::Candidate| {
        c.measured_setup_ms.unwrap() + 1000.0 * c.measured_product_ms.unwrap()
    };
    let best = timed
        .iter()
        .min_by(|a, b| cost(a).total_cmp(&cost(b)))
        .unwrap();
    assert_eq!(first.method, best.method, "{first}");
    // Same process: remembered, nothing rebuilt.
    let second = select::choose(&gpu, &a, &opts).unwrap();
    assert_eq!(second.basis, Basis::Remembered, "{second}");
    assert_eq!(second.method, first.method);
    assert!(second
        .candidates
        .iter()
        .all(|c| c.measured_setup_ms.is_none()));
    // A new process (memory cleared) finds it in the file.
    remember::forget_all();
    let third = select::choose(&gpu, &a, &opts).unwrap();
    assert_eq!(third.basis, Basis::Remembered, "{third}");
    assert_eq!(third.method, first.method);
    // Another matrix is not confused with this one.
    let b = structure("perm").generate(8000, 11).unwrap().cast::<f32>();
    opts.auto.remember_file = None;
    assert_eq!(select::choose(&gpu, &b, &opts).unwrap().basis, Basis::Timed);
    // prepare_auto keeps the plan it timed, and Method::Auto goes through the same path.
    remember::forget_all();
    let (plan, choice) = select::prepare_auto(&gpu, &a, &opts).unwrap();
    assert_eq!(plan.method(), choice.method);
    std::fs::remove_dir_all(&dir).ok();
}

/// Below the profile's data, a choice for many products times both CSR kernels and the model's
/// best other method, without a warm-up, and keeps the least measured total; for few products,
/// or with `model_only`, the model decides; the timed choice is remembered.
#[test]
fn below_the_profiles_data_the_choice_is_timed() {
    let Some(gpu) = common::gpu() else { return };
    // (No other test prepares this matrix, so nothing is remembered for it; forgetting all
    // would race the other tests' remembered choices.)
    // About 60 entries in rows of 1-3 and one dense row: below every built-in profile's data.
    let a = structure("dense-row")
        .generate(60, 5)
        .unwrap()
        .cast::<f32>();
    let opts = PlanOptions::default();
    let c = select::choose(&gpu, &a, &opts).unwrap();
    assert!(c.below_data, "{c}");
    assert_eq!(c.basis, Basis::Timed, "{c}");
    let timed: Vec<_> = c
        .candidates
        .iter()
        .filter(|k| k.measured_product_ms.is_some())
        .collect();
    for m in [Method::CsrScalar, Method::CsrVector] {
        assert!(timed.iter().any(|k| k.method == m), "{m} not timed\n{c}");
    }
    assert_eq!(timed.len(), 3, "{c}");
    assert!(c.timing_ms > 0.0);
    let cost = |k: &select::Candidate| {
        k.measured_setup_ms.unwrap() + 1000.0 * k.measured_product_ms.unwrap()
    };
    let best = timed
        .iter()
        .min_by(|x, y| cost(x).total_cmp(&cost(y)))
        .unwrap();
    assert_eq!(c.method, best.method, "{c}");
    // Remembered in the process.
    let again = select::choose(&gpu, &a, &opts).unwrap();
    assert_eq!(again.basis, Basis::Remembered, "{again}");
    assert_eq!(again.method, c.method);
    // Few products: the setups decide, by the model.
    let few = PlanOptions {
        expected_products: Some(select::BELOW_DATA_MIN_PRODUCTS - 1),
        ..Default::default()
    };
    assert_eq!(select::choose(&gpu, &a, &few).unwrap().basis, Basis::Model);
    let mut model = PlanOptions::default();
    model.auto.model_only = true;
    let m = select::choose(&gpu, &a, &model).unwrap();
    assert!(m.below_data && m.basis == Basis::Model, "{m}");
    // `prepare` builds the remembered choice, and its product is right.
    let plan = gpu.prepare(&a, Method::Auto).unwrap();
    let choice = plan.report().choice.clone().unwrap();
    assert!(choice.below_data && choice.remembered, "{choice:?}");
    assert_eq!(plan.method(), c.method);
    common::check_method(&gpu, &a, Method::Auto, &opts, "below data / auto / f32");
    // A large enough matrix is within the data: the model alone.
    let big = structure("band-blocks")
        .generate(1_000_000, 1)
        .unwrap()
        .cast::<f32>();
    let b = select::choose(&gpu, &big, &opts).unwrap();
    assert!(!b.below_data && b.basis == Basis::Model, "{b}");
}

#[test]
fn auto_plans_are_correct() {
    let Some(gpu) = common::gpu() else { return };
    for (name, a) in matrices() {
        for e in [1u64, 1000, 1_000_000] {
            let opts = PlanOptions {
                expected_products: Some(e),
                ..Default::default()
            };
            common::check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Auto,
                &opts,
                &format!("{name} / auto / E={e} / f32"),
            );
            if common::has_f64(&gpu) {
                common::check_method(
                    &gpu,
                    &a,
                    Method::Auto,
                    &opts,
                    &format!("{name} / auto / E={e} / f64"),
                );
            }
        }
        let (plan, c) =
            select::prepare_auto(&gpu, &a.cast::<f32>(), &PlanOptions::default()).unwrap();
        assert_eq!(plan.method(), c.method);
        assert_ne!(plan.method(), Method::Auto);
        // Through `prepare`, the plan's report carries the candidates.
        let plan = gpu.prepare(&a.cast::<f32>(), Method::Auto).unwrap();
        let choice = plan
            .report()
            .choice
            .as_ref()
            .expect("Auto's report has its choice");
        assert_eq!(choice.candidates.len(), Method::ALL.len(), "{name}");
        if !choice.timed && !choice.remembered {
            assert_eq!(choice.candidates[0].method, plan.method().name(), "{name}");
        }
        assert_eq!(choice.expected_products, 1000.0);
        // By the model, unless the matrix is below the profile's data (then timed, or
        // remembered from the timed choice above).
        assert_eq!(
            choice.timed || choice.remembered,
            choice.below_data,
            "{name}: {choice:?}"
        );
    }
}

#[test]
fn features_describe_structure() {
    let Some(gpu) = common::gpu() else { return };
    let info = gpu.info();
    let perm = structure("perm").generate(5000, 1).unwrap();
    let f = Features::of(&perm, info);
    assert_eq!(f.mean, 1.0);
    assert_eq!(f.cv, 0.0);
    // (A row's line shares the row before's only by chance.)
    assert!(f.scatter > 0.95, "{f:?}");
    assert_eq!(f.empty_frac, 0.0);
    let band = structure("band-blocks").generate(20000, 1).unwrap();
    let f = Features::of(&band.cast::<f32>(), info);
    assert!(f.scatter < 0.2, "contiguous columns touch few lines: {f:?}");
    // A stencil's rows each touch a few lines far apart, but share them with the row before:
    // its gathers hit the cache as a band's do. 512² grid: 128 rows per sample, a multiple of
    // the 32 columns of a line (samples at a line's first column would see new lines only).
    let k = 512usize;
    let mut row_ptr = vec![0u32];
    let mut cols = Vec::new();
    for r in 0..k * k {
        for c in [r.wrapping_sub(k), r.wrapping_sub(1), r, r + 1, r + k] {
            if c < k * k {
                cols.push(c as u32);
            }
        }
        row_ptr.push(cols.len() as u32);
    }
    let vals = vec![1.0f32; cols.len()];
    let stencil = CsrMatrix::try_new(k * k, k * k, row_ptr, cols, vals).unwrap();
    let f = Features::of(&stencil, info);
    assert!(f.scatter < 0.1, "a stencil's rows share their lines: {f:?}");
    let e = Features::of(&structure("empty70").generate(20000, 1).unwrap(), info);
    assert!((e.empty_frac - 0.7).abs() < 0.05, "{e:?}");
    let d = Features::of(&structure("dense-row").generate(20000, 1).unwrap(), info);
    assert!(d.long_share > 0.2 && d.cv > 10.0, "{d:?}");
    assert_eq!(d.max_len, d.ncols);
}

/// The fit recovers a model from samples it generated (no GPU).
#[test]
fn fit_recovers_a_known_model() {
    // The shipped nvidia weights and setups, without launch times (the fit's launch grid is
    // fractions of the fastest sample, so a launch time is recovered only approximately).
    let mut truth = (*builtin_for(0x10de, wgpu::DeviceType::DiscreteGpu)).clone();
    for m in &mut truth.methods {
        m.launch_ms = 0.0;
    }
    // A cache small enough that part of the samples' `x` misses the share that holds it, so
    // that the share is found again.
    truth.cache_bytes = 65536.0;
    // Two setup regimes for one method: built on the GPU, or ten times slower on the host.
    let two_regimes = truth.methods[0].method;
    let gpu_setup = [0.5, 0.2, 3.0];
    truth.methods[0].setup = gpu_setup;
    truth.methods[0].host_setup = Some(gpu_setup.map(|c| 10.0 * c));
    let info_features = |a: &CsrMatrix<f64>, sb: usize| {
        // Features without an adapter: what `Features::of` reads from the matrix.
        let mut f = Features {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            mean: 0.0,
            cv: 0.0,
            max_len: 0,
            empty_frac: 0.0,
            long_share: 0.0,
            scatter: 1.0,
            scalar_bytes: sb,
            x_bytes: (a.ncols() * sb) as u64,
            vendor: 0x10de,
            device_type: wgpu::DeviceType::DiscreteGpu,
            subgroup_size: 32,
            shares_memory_with_host: false,
        };
        let lens: Vec<f64> = a
            .row_ptr()
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64)
            .collect();
        f.mean = a.nnz() as f64 / a.nrows() as f64;
        f.cv = (lens.iter().map(|l| (l - f.mean).powi(2)).sum::<f64>() / lens.len() as f64).sqrt()
            / f.mean;
        f.max_len = lens.iter().cloned().fold(0.0, f64::max) as usize;
        f.empty_frac = lens.iter().filter(|&&l| l == 0.0).count() as f64 / lens.len() as f64;
        f
    };
    let mut samples = Vec::new();
    for (i, s) in calibration::STRUCTURES.iter().enumerate() {
        for (j, n) in [3000usize, 12000, 48000].into_iter().enumerate() {
            let a = s.generate(n, 5).unwrap();
            for sb in [4usize, 8] {
                let mut f = info_features(&a, sb);
                f.scatter = 0.05 + 0.9 * ((i * 3 + j) % 7) as f64 / 6.0;
                f.long_share = ((i + 2 * j) % 5) as f64 / 10.0;
                for m in &truth.methods {
                    let on_gpu = m.method != two_regimes || (i + j) % 2 == 0;
                    samples.push(fit::Sample {
                        matrix: format!("{}-{n}", s.name),
                        method: m.method,
                        features: f.clone(),
                        setup_ms: m.setup_ms(&f, on_gpu).max(0.01),
                        product_ms: m.product_ms(&f, truth.cache_bytes, truth.x_cache_bytes()),
                        built_on_gpu: (m.method == two_regimes).then_some(on_gpu),
                    });
                }
            }
        }
    }
    let (p, quality) = fit::fit(&samples, "refit", vec![], vec![], truth.cache_bytes).unwrap();
    for q in &quality {
        assert!(q.product_rms_log < 0.1, "{q:?}");
    }
    assert_eq!(p.x_cache_share, truth.x_cache_share);
    // Each regime's setup is recovered (one fit of both would miss by up to 10x).
    let q = quality.iter().find(|q| q.method == two_regimes).unwrap();
    assert!(q.setup_rms_log < 0.05, "{q:?}");
    let fitted = p.model(two_regimes).unwrap();
    assert!(fitted.host_setup.is_some(), "{fitted:?}");
    // The profile text keeps both.
    let reread = Profile::parse(&p.to_string()).unwrap();
    assert_eq!(reread.model(two_regimes), Some(fitted));
    // The samples survive the CSV form.
    let csv: String = samples
        .iter()
        .map(|s| fit::sample_to_csv(s) + "\n")
        .collect();
    let back = fit::samples_from_csv(&format!("{}\n{csv}", fit::CSV_HEADER)).unwrap();
    assert_eq!(back.len(), samples.len());
    assert_eq!(back[7].product_ms, samples[7].product_ms);
    assert_eq!(back[7].features, samples[7].features);
    for (b, s) in back.iter().zip(&samples) {
        assert_eq!(b.built_on_gpu, s.built_on_gpu);
    }
    assert_eq!(p.methods.len(), truth.methods.len());

    // Setups re-measured alone (`calibrate --setup-samples`): samples without a product time
    // inform only the setup model, those without a setup time only the product model. Here
    // the re-measured setups are half the first ones, on a third of the matrices.
    let mut split: Vec<fit::Sample> = samples
        .iter()
        .map(|s| fit::Sample {
            setup_ms: f64::NAN,
            ..s.clone()
        })
        .collect();
    split.extend(
        samples
            .iter()
            .enumerate()
            .filter(|(i, _)| (i / truth.methods.len()).is_multiple_of(3))
            .map(|(_, s)| fit::Sample {
                setup_ms: s.setup_ms / 2.0,
                product_ms: f64::NAN,
                ..s.clone()
            }),
    );
    let (halved, _) = fit::fit(&split, "split", vec![], vec![], truth.cache_bytes).unwrap();
    let (m, h) = (&p.methods[1], halved.model(p.methods[1].method).unwrap());
    assert_eq!(
        h.weights, m.weights,
        "the product model is the same samples' fit"
    );
    for (a, b) in h.setup.iter().zip(&m.setup) {
        assert!(
            (a - b / 2.0).abs() < 1e-6 * b.abs().max(1.0),
            "{h:?} against {m:?}"
        );
    }
}

/// Each method's own traffic: `bccoo-plus` adds its slices' partial results (exactly two
/// per non-empty row of one entry, one written and one read back), the others none; `x_miss`
/// is 0 while `x` fits in the share of the cache that holds it (no GPU).
#[test]
fn method_traffic_and_x_miss() {
    let cache = 50.0 * 1048576.0;
    // 1M rows with one entry each (every other row empty), 8 MB of f64 x: two slices.
    let f = Features {
        nrows: 2_000_000,
        ncols: 1_000_000,
        nnz: 1_000_000,
        mean: 0.5,
        cv: 1.0,
        max_len: 1,
        empty_frac: 0.5,
        long_share: 0.0,
        scatter: 1.0,
        scalar_bytes: 8,
        x_bytes: 8_000_000,
        vendor: 0,
        device_type: wgpu::DeviceType::Other,
        subgroup_size: 0,
        shares_memory_with_host: false,
    };
    for &m in Method::ALL {
        let extra = f.traffic_bytes(m, cache) - f.minimal_bytes();
        let expect = if m == Method::BccooPlus {
            2.0 * 1_000_000.0 * 8.0
        } else {
            0.0
        };
        assert!(
            (extra - expect).abs() < 1e-6 * expect.max(1.0),
            "{m}: {extra}"
        );
    }
    // Longer rows of scattered columns meet more slices, never more than there are.
    let long = Features {
        mean: 16.0,
        nnz: 32_000_000,
        empty_frac: 0.0,
        ..f.clone()
    };
    let partial = long.traffic_bytes(Method::BccooPlus, cache) - long.minimal_bytes();
    let per_row = partial / (2.0 * 8.0 * long.nrows as f64);
    assert!(per_row > 1.9 && per_row <= 2.0, "{per_row}");
    // x_miss: none while x fits, the share missed beyond it.
    assert_eq!(f.x_miss(8e6), 0.0);
    assert!((f.x_miss(2e6) - 0.75).abs() < 1e-12);
    let r = f.regressors(cache, 2e6);
    assert!((r[NREG - 1] - 0.75).abs() < 1e-12);
    // Profiles written before `x_miss` read it with weight 0: the generic one is such a file.
    let generic = builtin_for(0x1234, wgpu::DeviceType::DiscreteGpu);
    assert_eq!(generic.traffic, Traffic::Minimal);
    assert!(generic.methods.iter().all(|m| m.weights[NREG - 1] == 0.0));
}
