//! The `wgspmv` command: each subcommand run as a user would, its output files read back and
//! checked (y against the f64 reference, the bench CSV and plot, a calibrated profile that
//! `Auto` then loads). Typos fail at argument parsing, before any adapter opens.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wgspmv::{matrix::io, reference, CsrMatrix};

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

/// The words of `multiply`'s one line for `method`: name, ms per product, GB/s, share of the
/// copy, and the verdict. Panics unless exactly one line starts with the name and a number
/// (`--verbose`'s indented lines aside).
fn method_line<'a>(out: &'a str, method: &str) -> Vec<&'a str> {
    let lines: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| {
            w.first() == Some(&method) && w.get(1).is_some_and(|v| v.parse::<f64>().is_ok())
        })
        .collect();
    assert_eq!(lines.len(), 1, "one line for {method}: {out}");
    lines.into_iter().next().unwrap()
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
        &["bench", "--rounds", "0"],
        &["multiply", "--finish", "sometimes"],
    ] {
        let o = wgspmv(args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let t = text(&o);
        assert!(t.contains("invalid value"), "{args:?}: {t}");
        assert!(!t.contains("adapter:"), "{args:?} opened an adapter: {t}");
    }
}

/// `multiply --help` says y is written only with `--output`, lists the general flags first and
/// each method's flags under its own heading, with the names they always had.
#[test]
fn multiply_help_groups_method_flags_under_headings() {
    let o = wgspmv(&["multiply", "--help"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(help.contains("y is written only with --output"), "{help}");
    let at = |needle: &str| {
        help.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {help}"))
    };
    let general = at("\nOptions:\n");
    let speculative = at("\nspeculative options:\n");
    let suraa = at("\nsuraa options:\n");
    let bccoo = at("\nbccoo and bccoo-plus options:\n");
    assert!(
        general < speculative && speculative < suraa && suraa < bccoo,
        "{help}"
    );
    for flag in [
        "--matrix",
        "--method",
        "--x",
        "--output",
        "--f64",
        "--repeat",
        "--verbose",
    ] {
        assert!(
            (general..speculative).contains(&at(&format!(" {flag} "))),
            "{flag}"
        );
    }
    assert!((speculative..suraa).contains(&at(" --finish ")));
    for flag in [
        "--setup",
        "--max-child",
        "--scalar-stage",
        "--scalar-writes",
    ] {
        assert!((suraa..bccoo).contains(&at(&format!(" {flag} "))), "{flag}");
    }
    for flag in [
        "--carry",
        "--tune",
        "--tune-budget",
        "--tune-file",
        "--bccoo-tile",
        "--bccoo-block",
        "--bccoo-slices",
        "--bccoo-strategy",
        "--bccoo-spin",
    ] {
        assert!(bccoo < at(&format!(" {flag}")), "{flag}");
    }
    assert!(help.contains("-v, --verbose"), "{help}");
    assert!(help.contains(" --dims-per-entry "), "{help}");
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
    // Nor EGL's reports of the drivers Mesa tries before one that works.
    assert!(!err.contains("ERROR"), "{err}");
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
            assert!(
                out.contains("\nauto chose "),
                "auto says what it chose: {out}"
            );
        }
        let line = method_line(&out, method);
        assert_eq!(line.last(), Some(&"ok"), "{method}: {out}");
        assert!(
            out.contains(&format!("wrote y (67 values, from {method}) to ")),
            "{out}"
        );
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
            "--rounds",
            "3",
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
        // (Chosen by the model, or timed: the matrix is below the profile's data.)
        String::from_utf8_lossy(&o.stdout).contains("the cli-test profile's cost model"),
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
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            method_line(&out, method).last(),
            Some(&"ok"),
            "{method}: {}",
            text(&o)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `multiply` prints a short header and one line per method (ms per product, GB/s of minimal
/// traffic, its share of a copy timed in the same run, `ok`), and `auto`'s choice in one line;
/// setup times, parameters and auto's predictions only with `--verbose`, in words ("bytes less
/// than CSR", "the time of N products"), not the library's short forms.
#[test]
fn multiply_prints_one_line_per_method_and_details_with_verbose() {
    if common::gpu().is_none() {
        return;
    }
    let matrix = data("west0067.mtx");
    let args = ["multiply", "--matrix", &matrix, "--repeat", "2"];
    let o = wgspmv(&args, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("adapter: "), "{out}");
    assert_eq!(
        lines[1],
        format!("matrix: {matrix}: 67 rows x 67 columns, 294 nonzeros, computed in f32"),
        "{out}"
    );
    let copy: f64 = lines[2]
        .strip_prefix("copy: ")
        .and_then(|l| l.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a copy bandwidth: {out}"));
    assert!(copy > 0.0, "{out}");
    let header = lines
        .iter()
        .position(|l| l.starts_with("method "))
        .expect("a table header");
    assert!(
        lines[header].contains("ms per product")
            && lines[header].contains("GB/s")
            && lines[header].contains("% of copy"),
        "{out}"
    );
    let names: Vec<&str> = wgspmv::Method::ALL
        .iter()
        .map(|m| m.name())
        .chain(["auto"])
        .collect();
    // The table: exactly one line per method, in order, then auto's choice, and nothing else.
    assert_eq!(lines.len(), header + 1 + names.len() + 1, "{out}");
    let traffic = wgspmv::internals::minimal_traffic_bytes::<f32>(67, 67, 294) as f64;
    for (i, name) in names.iter().enumerate() {
        let w = method_line(&out, name);
        assert_eq!(lines[header + 1 + i].split_whitespace().next(), Some(*name));
        assert_eq!(w.len(), 5, "name, ms, GB/s, % of copy, verdict: {w:?}");
        let ms: f64 = w[1].parse().unwrap();
        let gbps: f64 = w[2].parse().unwrap();
        let share: f64 = w[3].strip_suffix('%').unwrap().parse().unwrap();
        assert!(ms > 0.0, "{w:?}");
        // The columns agree with one another, to the digits printed.
        let expected = traffic / (ms * 1e6);
        assert!((gbps / expected - 1.0).abs() < 0.01, "{w:?}: {expected}");
        let expected = 100.0 * gbps / copy;
        assert!((share / expected - 1.0).abs() < 0.07, "{w:?}: {expected}");
        assert_eq!(w[4], "ok", "{out}");
    }
    let chose = lines.last().unwrap();
    let chosen = chose
        .strip_prefix("auto chose ")
        .and_then(|l| l.split(':').next())
        .unwrap_or_else(|| panic!("auto's choice last: {out}"));
    assert!(names[..names.len() - 1].contains(&chosen), "{chose}");
    let above = lines[..lines.len() - 1].join("\n");
    for detail in [
        "setup",
        "parameters",
        "CSR",
        "products)",
        "limits:",
        "timed by",
    ] {
        assert!(
            !above.contains(detail),
            "{detail:?} without --verbose: {out}"
        );
    }

    // --verbose: the same lines, with each method's details under its own.
    let o = wgspmv(&[&args[..], &["--verbose"]].concat(), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("\nlimits: storage binding "), "{out}");
    assert!(out.contains("\n    nonzeros per row: "), "{out}");
    for name in &names {
        assert_eq!(method_line(&out, name).last(), Some(&"ok"), "{out}");
    }
    let count = |s: &str| out.matches(s).count();
    assert_eq!(count("\n    parameters: "), names.len(), "{out}");
    assert_eq!(count("\n    timed by "), names.len(), "{out}");
    let setups: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("    setup "))
        .collect();
    assert_eq!(setups.len(), names.len(), "{out}");
    for l in setups {
        let products = l
            .split_once(" ms (the time of ")
            .and_then(|(_, r)| r.split_once(" products)"));
        assert!(
            products.is_some_and(|(n, _)| n.parse::<f64>().is_ok()),
            "{l}"
        );
    }
    // cmrs's padding in words (where it does not run as the CSR vector kernel, as on lavapipe);
    // none of the library's short forms.
    for cmrs in out
        .lines()
        .filter(|l| l.starts_with("    parameters: height "))
    {
        assert!(
            [
                " bytes less than CSR)",
                " bytes more than CSR)",
                "(as many bytes as CSR)"
            ]
            .iter()
            .any(|w| cmrs.contains(w)),
            "{cmrs}"
        );
    }
    for short in ["vs CSR", "= ", "SpMV-equivalents"] {
        assert!(!out.contains(short), "{short:?}: {out}");
    }
    assert!(out.contains("\n    layout: blocks of "), "{out}");
    // auto's candidates: every method, with predictions and this run's measurements.
    let table = out
        .find("the methods auto weighed")
        .map(|at| &out[at..])
        .unwrap_or_else(|| panic!("auto's candidates: {out}"));
    assert!(table.contains("predicted setup") && table.contains("measured product"));
    for name in &names[..names.len() - 1] {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(*name))
            .unwrap_or_else(|| panic!("{name} among auto's candidates: {table}"));
        // Predicted and measured setup and product, each in ms.
        assert_eq!(row.matches(" ms").count(), 4, "{row}");
    }
    assert!(
        out.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("auto chose "),
        "{out}"
    );
}

/// `multiply --x X.mtx` with a dense X of 3 columns multiplies the 3 vectors at once (SpMM), says
/// how, and `--output` writes the rows × 3 result, equal to the reference column by column.
#[test]
fn multiply_transposed_writes_y_of_the_matrix_columns() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("multiply-transposed");
    // A rectangular matrix, so that a product with A instead of Aᵀ cannot pass.
    let a: CsrMatrix<f64> = CsrMatrix::from_triplets(
        5,
        3,
        vec![
            (0, 0, 1.0),
            (1, 2, -2.0),
            (3, 1, 4.0),
            (4, 0, 3.0),
            (4, 2, 0.5),
        ],
    )
    .unwrap();
    let (ap, xp, yp) = (dir.join("a.mtx"), dir.join("x.mtx"), dir.join("y.mtx"));
    io::write_matrix_market(&ap, &a).unwrap();
    let x = [1.0, 2.0, -1.0, 3.0, 2.0];
    io::write_vector(&xp, &x).unwrap();
    for method in ["bccoo", "auto"] {
        let _ = std::fs::remove_file(&yp);
        let args = [
            "multiply",
            "--matrix",
            ap.to_str().unwrap(),
            "--transpose",
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
        assert!(out.contains("the transpose of the matrix given"), "{out}");
        let y: Vec<f64> = io::read_vector(&yp).unwrap();
        // Aᵀx: column 0 = 1·1 + 3·2, column 1 = 4·3, column 2 = -2·2 + 0.5·2.
        assert_eq!(y, vec![7.0, 12.0, -3.0], "{method}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn solve_writes_x_and_fails_when_it_does_not_converge() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("solve");
    // A small SPD tridiagonal matrix, and a singular one (pure Neumann: A·1 = 0).
    let n = 40;
    let mut spd = Vec::new();
    let mut singular = Vec::new();
    for i in 0..n {
        spd.push((i, i, 2.5));
        singular.push((i, i, if i == 0 || i == n - 1 { 1.0 } else { 2.0 }));
        if i + 1 < n {
            for t in [&mut spd, &mut singular] {
                t.push((i, i + 1, -1.0));
                t.push((i + 1, i, -1.0));
            }
        }
    }
    let (ap, sp, xp) = (dir.join("a.mtx"), dir.join("s.mtx"), dir.join("x.mtx"));
    let a = CsrMatrix::from_triplets(n, n, spd).unwrap();
    io::write_matrix_market(&ap, &a).unwrap();
    io::write_matrix_market(&sp, &CsrMatrix::from_triplets(n, n, singular).unwrap()).unwrap();
    for solver in ["cg", "bicgstab"] {
        let _ = std::fs::remove_file(&xp);
        let args = [
            "solve",
            "--matrix",
            ap.to_str().unwrap(),
            "--solver",
            solver,
            "--tol",
            "1e-5",
            "--output",
            xp.to_str().unwrap(),
        ];
        let o = wgspmv(&args, &[]);
        assert!(o.status.success(), "{solver}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Converged"),
            "{}",
            text(&o)
        );
        let x: Vec<f64> = io::read_vector(&xp).unwrap();
        let ax = reference::spmv_par(&a, &x).unwrap();
        let err = ax.iter().map(|v| (v - 1.0).abs()).fold(0.0, f64::max);
        assert!(err < 1e-3, "{solver}: ‖Ax − 1‖∞ = {err}");
    }
    let o = wgspmv(&["solve", "--matrix", sp.to_str().unwrap()], &[]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not converged"),
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pagerank_writes_ranks_that_sum_to_one() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("pagerank");
    // A ring of 6 with a chord, and node 6 dangling.
    let g: CsrMatrix<f64> = CsrMatrix::from_triplets(
        6,
        6,
        vec![
            (0, 1, 1.0),
            (1, 2, 1.0),
            (2, 3, 1.0),
            (3, 4, 1.0),
            (4, 0, 1.0),
            (4, 5, 1.0),
            (2, 0, 1.0),
        ],
    )
    .unwrap();
    let (gp, rp) = (dir.join("g.mtx"), dir.join("r.mtx"));
    io::write_matrix_market(&gp, &g).unwrap();
    let args = [
        "pagerank",
        "--matrix",
        gp.to_str().unwrap(),
        "--tol",
        "1e-7",
        "--output",
        rp.to_str().unwrap(),
    ];
    let o = wgspmv(&args, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let r: Vec<f64> = io::read_vector(&rp).unwrap();
    let want = reference::pagerank(&g, 0.85, None, 1e-7, 1000).unwrap().x;
    assert!((r.iter().sum::<f64>() - 1.0).abs() < 1e-5, "{r:?}");
    for (a, b) in r.iter().zip(&want) {
        assert!((a - b).abs() < 1e-5, "{r:?} vs {want:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn multiply_many_vectors_writes_y_of_k_columns() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("multiply-many");
    let a: CsrMatrix<f64> = io::read_matrix_market(data("west0067.mtx")).unwrap();
    let (n, m, k) = (a.ncols(), a.nrows(), 3);
    let x: Vec<f64> = (0..n * k).map(|i| (i % 11) as f64 - 5.0).collect();
    let (xp, yp) = (dir.join("x.mtx"), dir.join("y.mtx"));
    io::write_dense(&xp, n, k, &x).unwrap();
    for (method, how) in [
        ("csr-vector", "SpMM kernel"),
        ("bccoo", "one product per vector"),
    ] {
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
        assert!(out.contains(&format!("ok ({how})")), "{method}: {out}");
        assert!(out.contains("X: 3 vectors"), "{out}");
        let y: CsrMatrix<f32> = io::read_matrix_market(&yp).unwrap();
        assert_eq!((y.nrows(), y.ncols()), (m, k));
        let a32 = a.cast::<f32>();
        for j in 0..k {
            let xj: Vec<f32> = x[j * n..(j + 1) * n].iter().map(|&v| v as f32).collect();
            let mut yj = vec![0.0f32; m];
            for (r, slot) in yj.iter_mut().enumerate() {
                let (cols, vals) = y.row(r);
                if let Some(p) = cols.iter().position(|&c| c as usize == j) {
                    *slot = vals[p];
                }
            }
            let y_ref = reference::spmv_par(&a32, &xj).unwrap();
            let c = reference::check(1.0, &a32, &xj, 0.0, None, &yj, &y_ref);
            assert!(c.ok, "{method} column {j}: worst row {:?}", c.worst_row);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
