//! Compiled pipelines kept between processes (`GpuOptions::pipeline_cache_dir`): the file is
//! written after a plan compiled something, read by the next device, and a damaged or foreign
//! file is ignored, never trusted: every product stays right.

use crate::common;
use common::*;
use wgspmv::{testing::SuiteClass, Gpu, GpuOptions, Method, PlanOptions};

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
    assert_eq!(files.len(), 1, "{files:?}");
    let file = files[0].clone();
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
