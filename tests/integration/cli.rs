//! The `wgspmv` command: each subcommand run as a user would, its output files read back and
//! checked (y against the f64 reference, the bench CSV and plot, a calibrated profile that
//! `Auto` then loads). Typos fail at argument parsing, before any adapter opens.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wgspmv::{matrix::io, testing::reference, CsrMatrix};

fn wgspmv(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wgspmv"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the wgspmv binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgspmv-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn version_and_typos_fail_before_the_gpu() {
    let o = wgspmv(&["--version"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("wgspmv {}", env!("CARGO_PKG_VERSION"))
    );
    for args in [
        &["multiply", "--method", "aut"][..],
        &["bench", "--methods", "csr-scalar,bcoo"],
        &["bench", "--classes", "banded,nope"],
        &["multiply", "--finish", "sometimes"],
    ] {
        let o = wgspmv(args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let t = text(&o);
        assert!(t.contains("invalid value"), "{args:?}: {t}");
        assert!(!t.contains("adapter:"), "{args:?} opened an adapter: {t}");
    }
}

#[test]
fn info_lists_adapters_and_the_one_it_opens() {
    if common::gpu().is_none() {
        return;
    }
    let o = wgspmv(&["info"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("adapters found:"), "{out}");
    assert!(out.contains("wgspmv opens:\nadapter:"), "{out}");
    // The headless loader warning is silenced by the private runtime directory.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("XDG_RUNTIME_DIR"), "{err}");
}

#[test]
fn multiply_writes_y_equal_to_the_reference() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("multiply");
    let a: CsrMatrix<f64> = io::read_matrix_market(data("west0067.mtx")).unwrap();
    let x: Vec<f64> = (0..a.ncols()).map(|i| (i % 7) as f64 - 3.0).collect();
    let (xp, yp) = (dir.join("x.mtx"), dir.join("y.mtx"));
    io::write_vector(&xp, &x).unwrap();
    for method in ["auto", "cmrs", "speculative"] {
        let _ = std::fs::remove_file(&yp);
        let args = [
            "multiply",
            "--matrix",
            &data("west0067.mtx"),
            "--method",
            method,
            "--x",
            xp.to_str().unwrap(),
            "--output",
            yp.to_str().unwrap(),
            "--repeat",
            "2",
        ];
        let o = wgspmv(&args, &[]);
        assert!(o.status.success(), "{method}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        if method == "auto" {
            assert!(out.contains("auto ("), "auto lists its candidates: {out}");
        }
        // f32 on the GPU, written in decimal: checked like any f32 product.
        let y: Vec<f32> = io::read_vector(&yp).unwrap();
        let a32 = a.cast::<f32>();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let y_ref = reference::spmv_par(&a32, &x32).unwrap();
        let c = reference::check(1.0, &a32, &x32, 0.0, None, &y, &y_ref);
        assert!(c.ok, "{method}: worst row {:?}", c.worst_row);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_writes_csv_and_plot_and_calibrate_writes_a_profile_auto_loads() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("bench");
    let csv = dir.join("b.csv");
    let o = wgspmv(
        &[
            "bench",
            "--suite",
            "--scale",
            "0.002",
            "--classes",
            "banded,power_law",
            "--methods",
            "csr-scalar,auto",
            "--repeat",
            "2",
            "--csv",
            csv.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let body = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("matrix,"))
        .collect();
    assert_eq!(rows.len(), 4, "{body}");
    assert!(
        rows.iter().any(|r| r.starts_with("power_law,auto,")),
        "{body}"
    );
    let svg = std::fs::read_to_string(csv.with_extension("svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("device copy"),
        "{svg}"
    );

    let profile = dir.join("p.txt");
    let o = wgspmv(
        &[
            "calibrate",
            "--sizes",
            "0.001,0.002",
            "--structures",
            "perm,powerlaw,tall",
            "--name",
            "cli-test",
            "--out",
            profile.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = wgspmv(
        &[
            "multiply",
            "--method",
            "auto",
            "--matrix",
            &data("can_24.mtx"),
        ],
        &[("WGSPMV_PROFILE", &profile)],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("auto (cli-test profile"),
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
