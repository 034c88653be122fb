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

/// Regression (probe): a tiny `.mtx` declaring 4294967295 rows made `multiply` allocate a 16 GiB
/// row pointer and keep running; an x declaring u32::MAX elements asked for 34 GiB. Both size
/// lines are refused at once, naming the dimension; `--dims-per-entry` lets a hypersparse matrix
/// through.
#[test]
fn multiply_refuses_huge_size_lines_at_once() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("huge");
    let run = |a: &Path, x: Option<&Path>, extra: &[&str]| {
        let mut args = vec!["multiply", "--matrix", a.to_str().unwrap()];
        if let Some(x) = x {
            args.extend(["--x", x.to_str().unwrap()]);
        }
        args.extend(["--method", "csr-scalar", "--repeat", "1"]);
        args.extend(extra);
        let start = std::time::Instant::now();
        let o = wgspmv(&args, &[]);
        (o, start.elapsed())
    };
    let huge = dir.join("huge.mtx");
    std::fs::write(
        &huge,
        "%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n1 1 1\n",
    )
    .unwrap();
    let (o, took) = run(&huge, None, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("declares 4294967295 rows"), "{}", text(&o));
    assert!(took.as_secs() < 60, "took {took:?}");

    let x = dir.join("x.mtx");
    std::fs::write(
        &x,
        "%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n7 1 1\n",
    )
    .unwrap();
    let a = PathBuf::from(data("can_24.mtx"));
    let (o, _) = run(&a, Some(&x), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("declares 4294967295 vector elements")
            && err.contains("x must have the matrix's 24 columns"),
        "{}",
        text(&o)
    );
    // A coordinate x of the matrix's columns reads, however few entries it lists.
    std::fs::write(
        &x,
        "%%MatrixMarket matrix coordinate real general\n24 1 1\n7 1 1\n",
    )
    .unwrap();
    let (o, _) = run(&a, Some(&x), &[]);
    assert!(o.status.success(), "{}", text(&o));

    // 2^20 + 8 rows and one entry: refused by default, read when the user vouches for it.
    let hypersparse = dir.join("hypersparse.mtx");
    let rows = (1 << 20) + 8;
    std::fs::write(
        &hypersparse,
        format!("%%MatrixMarket matrix coordinate real general\n{rows} 2 1\n{rows} 2 1.5\n"),
    )
    .unwrap();
    let (o, _) = run(&hypersparse, None, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("dimension_per_entry"),
        "{}",
        text(&o)
    );
    let (o, _) = run(&hypersparse, None, &["--dims-per-entry", "2000000"]);
    assert!(o.status.success(), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regression: a dense `array` matrix was refused by the reader, and a matrix holding NaN or an
/// infinity (`nan`, `inf`, `1e400` tokens, as SciPy reads them) by `multiply`, though each method
/// multiplies them and y is compared exactly where the reference is not finite. Hexadecimal
/// values are read exactly.
#[test]
fn multiply_reads_array_matrices_with_special_values() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("specials");
    let a = dir.join("a.mtx");
    std::fs::write(
        &a,
        "%%MatrixMarket matrix array real general\n4 3\n1\nNaN\n0x1p-2\n0\nInf\n2\n1e400\n-3\n4\n-0\n0\n-INFINITY\n",
    )
    .unwrap();
    for method in ["csr-vector", "bccoo", "auto"] {
        let args = [
            "multiply",
            "--matrix",
            a.to_str().unwrap(),
            "--method",
            method,
            "--repeat",
            "1",
        ];
        let o = wgspmv(&args, &[]);
        assert!(o.status.success(), "{method}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(" ok ("),
            "{method}: {}",
            text(&o)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
