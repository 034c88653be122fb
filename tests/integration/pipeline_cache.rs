//! Compiled pipelines kept between processes (`GpuOptions::pipeline_cache_dir`): the file is
//! written after a plan compiled something, read by the next device, and a damaged or foreign
//! file is ignored, never trusted: every product stays right. Beside it, the list of kernels the
//! plans asked for, which the next device compiles ahead.

use crate::common;
use common::*;
use wgspmv::{testing::SuiteClass, BuildOn, Gpu, GpuOptions, Method, PlanOptions};

fn open(dir: &std::path::Path) -> Gpu {
    pollster::block_on(Gpu::with_options(GpuOptions {
        pipeline_cache_dir: Some(dir.to_owned()),
        ..Default::default()
    }))
    .expect("the test adapter opens again")
}

fn cache_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn pipelines_are_kept_between_devices_and_bad_files_ignored() {
    let Some(g) = gpu() else { return };
    let dir = std::env::temp_dir().join(format!("wgspmv-pipelines-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let a = SuiteClass::PowerLaw.generate(20_000, 3).cast::<f32>();
    let first = open(&dir);
    let kept = first
        .device()
        .features()
        .contains(wgpu::Features::PIPELINE_CACHE);
    let plan = first.prepare(&a, Method::CsrVector).unwrap();
    assert!(plan.report().compile_ms > 0.0, "{}", plan.report());
    let files = cache_files(&dir);
    if !kept {
        // GL and the like: nothing is written, nothing breaks.
        assert!(
            files.is_empty(),
            "{} on {}: {files:?}",
            g.info().name,
            g.info().backend
        );
        check_method(
            &first,
            &a,
            Method::CsrVector,
            &PlanOptions::default(),
            "no cache",
        );
        return;
    }
    assert_eq!(files.len(), 2, "the cache and its kernel list: {files:?}");
    let file = files
        .iter()
        .find(|f| f.extension().is_some_and(|e| e == "bin"))
        .expect("the cache file")
        .clone();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains(env!("CARGO_PKG_VERSION")), "{name}");
    let written = std::fs::read(&file).unwrap();
    assert!(!written.is_empty());
    // A warm plan of the same device compiles nothing and writes nothing.
    let again = first.prepare(&a, Method::CsrVector).unwrap();
    assert_eq!(again.report().compile_ms, 0.0);
    // A second device reads the file; its products are right.
    let second = open(&dir);
    check_method(
        &second,
        &a,
        Method::CsrVector,
        &PlanOptions::default(),
        "from the cache",
    );
    // A damaged file, then a foreign one (another adapter's bytes): ignored, then overwritten.
    for (what, bytes) in [
        ("damaged", written[..written.len() / 2].to_vec()),
        ("garbage", vec![0x5a; 4096]),
    ] {
        std::fs::write(&file, &bytes).unwrap();
        let third = open(&dir);
        for &m in &[Method::CsrScalar, Method::Speculative] {
            check_method(&third, &a, m, &PlanOptions::default(), what);
        }
        let now = std::fs::read(&file).unwrap();
        assert_ne!(now, bytes, "{what}: the file was not rewritten");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Methods whose plans, built on the GPU, ask for most kinds of kernel: scans, sorts, checks,
/// block builds, the products.
const ASKING: [Method; 5] = [
    Method::CsrVector,
    Method::Cmrs,
    Method::Bccoo,
    Method::Suraa,
    Method::Speculative,
];

/// The kernel list: a second device compiles ahead every kernel the first one's plans asked for
/// (each listed line names a kernel this crate builds), after which the same plans compile
/// nothing; lines of another version or edited by hand compile nothing and break nothing.
#[test]
fn kernels_asked_for_are_compiled_ahead_by_the_next_device() {
    let Some(g) = gpu() else { return };
    let dir = std::env::temp_dir().join(format!("wgspmv-kernels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let a = SuiteClass::PowerLaw.generate(20_000, 5).cast::<f32>();
    let opts = PlanOptions {
        build_on: BuildOn::Gpu,
        ..Default::default()
    };
    let first = open(&dir);
    if !first
        .device()
        .features()
        .contains(wgpu::Features::PIPELINE_CACHE)
    {
        // Nothing kept, nothing listed: nothing to compile ahead.
        assert_eq!(first.compile_kernels_ahead(), 0, "{}", g.info().name);
        return;
    }
    // A fresh directory: nothing listed yet.
    assert_eq!(first.compile_kernels_ahead(), 0);
    for &m in &ASKING {
        // Products of α and β other than (1, 0): their immediate-data forms are listed too.
        check_method(&first, &a, m, &opts, "first device");
    }
    let list = cache_files(&dir)
        .into_iter()
        .find(|f| f.extension().is_some_and(|e| e == "kernels"))
        .expect("a kernel list beside the cache");
    let lines = std::fs::read_to_string(&list).unwrap();
    let listed = lines.lines().count();
    assert!(listed >= ASKING.len(), "{lines}");
    let second = open(&dir);
    assert_eq!(
        second.compile_kernels_ahead(),
        listed,
        "every listed kernel compiles ahead:\n{lines}"
    );
    assert_eq!(second.compile_kernels_ahead(), 0, "once per device");
    for &m in &ASKING {
        let plan = second.prepare_with(&a, m, &opts).unwrap();
        assert_eq!(plan.report().compile_ms, 0.0, "{m}: {}", plan.report());
    }
    check_method(&second, &a, Method::Bccoo, &opts, "compiled ahead");
    // The same adapter opened without immediate data compiles the listed kernels it can use:
    // those reading α and β from a binding, not their immediate forms.
    let usable = lines.lines().filter(|l| !l.ends_with(" immediate")).count();
    if g.info().has_immediate_coeffs() {
        assert!(usable < listed, "immediate forms listed:\n{lines}");
    }
    let plain = pollster::block_on(Gpu::with_options(GpuOptions {
        pipeline_cache_dir: Some(dir.clone()),
        disabled_features: wgpu::Features::IMMEDIATES,
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(plain.compile_kernels_ahead(), usable, "{lines}");
    check_method(&plain, &a, Method::Bccoo, &opts, "without immediate data");
    // Lines no version of this crate writes, among good ones: the good ones compile, the
    // others are skipped; the next device's plans are right.
    let good = lines
        .lines()
        .find(|l| l.contains(" f32 ") && l.contains("WG_SIZE="))
        .expect("an f32 kernel with a workgroup size")
        .to_owned();
    let edited = [
        good.clone(),
        "no_such_kernel f32 - - -".to_owned(),
        good.replace("WG_SIZE=", "WG_SIZE=7"),
        good.replace(" f32 ", " f16 "),
        format!("{good} extra"),
        String::new(),
        "\u{0}\u{1}garbage".to_owned(),
    ];
    std::fs::write(&list, edited.join("\n")).unwrap();
    let third = open(&dir);
    assert_eq!(third.compile_kernels_ahead(), 1, "only the good line");
    for &m in &ASKING {
        check_method(&third, &a, m, &opts, "after an edited list");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
