//! The Matrix Market reader and CSR construction against sizes that ask for more memory than the
//! host has: they must come back as `Error::OutOfHostMemory`, never abort the process.
//!
//! These tests run again in a child process whose address space is capped (`ulimit -v`), so that
//! a size the host cannot hold fails alike on every machine instead of succeeding lazily on a
//! large one, and so that the reservations made on the word of a size line are shown bounded.

use std::io::{Cursor, Write};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use wgspmv::io::{read_matrix_market, read_matrix_market_from, read_vector};
use wgspmv::{CsrMatrix, Error, Result};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Set in the capped child, which then runs the test body itself.
const CHILD_ENV: &str = "WGSPMV_CAPPED_CHILD";

/// Address space of the capped child in KiB: far above what these tests need, far below what the
/// hostile sizes below ask for.
const CAP_KIB: u64 = 2 << 20;

/// True when the caller should run its body here (it is the capped child). Otherwise runs test
/// `name` of this binary in a capped child, asserts that it ran and passed, and returns false.
fn in_capped_child(name: &str) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return true;
    }
    if !cfg!(unix) {
        eprintln!("skipping {name}: it needs `sh -c ulimit -v` to cap the address space");
        return false;
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .expect("could not start sh");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "capped child of {name} failed ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("1 passed"), "capped child did not run {name}:\n{stdout}\n{stderr}");
    false
}

/// A scratch directory under the system temp dir, unique per process and call, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("wgspmv-mtx_fuzz-{}-{label}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn mm_bytes(bytes: &[u8]) -> Result<CsrMatrix<f64>> {
    read_matrix_market_from(Cursor::new(bytes.to_vec()), "mem.mtx")
}

/// Asserts that `r` failed with `Error::OutOfHostMemory { what, bytes }`.
fn assert_out_of_host_memory<T: std::fmt::Debug>(r: Result<T>, what: &str, bytes: u64) {
    match r {
        Err(Error::OutOfHostMemory { what: w, bytes: b }) if w == what && b == bytes => {}
        other => panic!("expected OutOfHostMemory {{ what: {what}, bytes: {bytes} }}, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Sizes from the input that the host cannot hold
// ---------------------------------------------------------------------------------------------

/// Regression: this three-line file made from_triplets allocate a 16 GiB row_ptr with `vec!`, and
/// the failed allocation aborted the process. It is an error now, whichever way the file is read.
#[test]
fn huge_row_count_is_an_error_not_an_abort() {
    if !in_capped_child("huge_row_count_is_an_error_not_an_abort") {
        return;
    }
    let text = b"%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n1 1 1.0\n";
    let bytes = (u32::MAX as u64 + 1) * 4;
    assert_out_of_host_memory(mm_bytes(text), "row_ptr", bytes);
    let dir = TempDir::new("rows");
    assert_out_of_host_memory(read_matrix_market::<f32>(dir.write("a.mtx", text)), "row_ptr", bytes);
    assert_out_of_host_memory(read_matrix_market::<f64>(dir.write("a.mtx.gz", &gzip(text))), "row_ptr", bytes);
}

/// from_triplets and zeros refuse a row count whose row_ptr the host cannot hold; zeros checks the
/// 32-bit range before computing nrows + 1.
#[test]
fn huge_row_count_in_constructors_is_an_error() {
    if !in_capped_child("huge_row_count_in_constructors_is_an_error") {
        return;
    }
    let n = u32::MAX as usize;
    let bytes = (n as u64 + 1) * 4;
    assert_out_of_host_memory(CsrMatrix::<f32>::from_triplets(n, 1, vec![(0, 0, 1.0)]), "row_ptr", bytes);
    assert_out_of_host_memory(CsrMatrix::<f64>::from_triplets(n, n, vec![]), "row_ptr", bytes);
    assert_out_of_host_memory(CsrMatrix::<f32>::zeros(n, 1), "row_ptr", bytes);
    let e = CsrMatrix::<f32>::zeros(usize::MAX, 1).unwrap_err();
    assert!(matches!(e, Error::TooLargeForU32 { what: "nrows", .. }), "{e:?}");
    // A wide matrix needs no memory per column.
    assert_eq!(CsrMatrix::<f32>::from_triplets(1, n, vec![(0, n - 1, 2.0)]).unwrap().col_idx(), &[n as u32 - 1]);
}

/// A coordinate vector of u32::MAX elements with one entry needs a 32 GiB dense vector: an error.
#[test]
fn huge_coordinate_vector_is_an_error() {
    if !in_capped_child("huge_coordinate_vector_is_an_error") {
        return;
    }
    let dir = TempDir::new("vec");
    let p = dir.write("v.mtx", b"%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n7 1 1.0\n");
    assert_out_of_host_memory(read_vector::<f64>(&p), "vector", u32::MAX as u64 * 8);
}

/// A size line that promises far more entries or values than the file has reserves a bounded
/// amount up front: the read fails at the end of the file, not for want of memory.
#[test]
fn huge_declared_counts_reserve_little() {
    if !in_capped_child("huge_declared_counts_reserve_little") {
        return;
    }
    let ends_early = |r: Result<()>, line: usize| match r {
        Err(Error::MatrixMarket { line: l, message, .. }) if l == line && message.contains("file ends") => {}
        other => panic!("expected 'file ends' on line {line}, got {other:?}"),
    };
    let max = usize::MAX;
    for symmetry in ["general", "symmetric", "skew-symmetric"] {
        let text = format!("%%MatrixMarket matrix coordinate real {symmetry}\n3 3 {max}\n1 1 1\n2 1 2\n");
        ends_early(mm_bytes(text.as_bytes()).map(drop), 5);
    }
    let dir = TempDir::new("counts");
    let array = dir.write("a.mtx", b"%%MatrixMarket matrix array real general\n4294967295 1\n1\n2\n");
    ends_early(read_vector::<f64>(array).map(drop), 5);
    let coord = format!("%%MatrixMarket matrix coordinate real general\n3 1 {max}\n1 1 1\n");
    ends_early(read_vector::<f32>(dir.write("c.mtx", coord.as_bytes())).map(drop), 4);
}
