//! The Matrix Market reader against hostile input: sizes that ask for more memory than the host
//! has, and a property-based fuzz that starts from real files (tests/data) and small embedded ones.
//! Mutated files must read as Ok or as a typed Err, never a panic or an abort; edits that keep the
//! meaning (line ends, separators, order, comments, gzip) must read back the very same matrix.
//!
//! Tests that can allocate from a declared size run again in a child process whose address space
//! is capped (`ulimit -v`), so that a size the host cannot hold fails alike on every machine
//! instead of succeeding lazily on a large one, and so that the reservations are shown bounded.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use wgspmv::matrix::io::{
    read_matrix_market, read_matrix_market_from, read_matrix_market_from_with,
    read_matrix_market_with, read_vector, read_vector_with, ReadLimits,
};
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
    // The test's full name in this binary: its module path without the crate's name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = &format!("{module}::{name}");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .expect("could not start sh");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "capped child of {name} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("1 passed"),
        "capped child did not run {name}:\n{stdout}\n{stderr}"
    );
    false
}

/// A scratch directory under the system temp dir, unique per process and call, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "wgspmv-mtx_fuzz-{}-{label}-{n}",
            std::process::id()
        ));
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
        other => {
            panic!("expected OutOfHostMemory {{ what: {what}, bytes: {bytes} }}, got {other:?}")
        }
    }
}

/// Asserts that `r` failed with `Error::InputTooLarge` for `dimension` on line 2 (the size line),
/// declaring `declared`.
#[track_caller]
fn assert_too_large<T: std::fmt::Debug>(r: Result<T>, dimension: &str, declared: u64) {
    match r {
        Err(Error::InputTooLarge {
            dimension: d,
            declared: n,
            line: 2,
            ..
        }) if d == dimension && n == declared => {}
        other => panic!("expected InputTooLarge {{ {dimension}: {declared} }}, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Sizes from the input that the host cannot hold
// ---------------------------------------------------------------------------------------------

/// Regression: this three-line file made from_triplets allocate a 16 GiB row_ptr with `vec!`, and
/// the failed allocation aborted the process; later it asked for the 16 GiB with `try_reserve`,
/// which a host that large grants. Its size line is refused now, before anything of that size is
/// allocated (one entry allows no more than 2^20 rows), whichever way the file is read.
#[test]
fn huge_row_count_is_an_error_not_an_abort() {
    if !in_capped_child("huge_row_count_is_an_error_not_an_abort") {
        return;
    }
    let text = b"%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n1 1 1.0\n";
    let rows = u32::MAX as u64;
    assert_too_large(mm_bytes(text), "rows", rows);
    let dir = TempDir::new("rows");
    assert_too_large(
        read_matrix_market::<f32>(dir.write("a.mtx", text)),
        "rows",
        rows,
    );
    assert_too_large(
        read_matrix_market::<f64>(dir.write("a.mtx.gz", &gzip(text))),
        "rows",
        rows,
    );
    // With limits of its own, a caller may still let it through to the host's memory.
    let limits = ReadLimits::default().with_free_dimension(usize::MAX);
    assert_out_of_host_memory(
        read_matrix_market_with::<f32>(dir.write("b.mtx", text), &limits),
        "row_ptr",
        (rows + 1) * 4,
    );
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
    assert_out_of_host_memory(
        CsrMatrix::<f32>::from_triplets(n, 1, vec![(0, 0, 1.0)]),
        "row_ptr",
        bytes,
    );
    assert_out_of_host_memory(
        CsrMatrix::<f64>::from_triplets(n, n, vec![]),
        "row_ptr",
        bytes,
    );
    assert_out_of_host_memory(CsrMatrix::<f32>::zeros(n, 1), "row_ptr", bytes);
    let e = CsrMatrix::<f32>::zeros(usize::MAX, 1).unwrap_err();
    assert!(
        matches!(e, Error::TooLargeForU32 { what: "nrows", .. }),
        "{e:?}"
    );
    // A wide matrix needs no memory per column.
    assert_eq!(
        CsrMatrix::<f32>::from_triplets(1, n, vec![(0, n - 1, 2.0)])
            .unwrap()
            .col_idx(),
        &[n as u32 - 1]
    );
}

/// A coordinate vector of u32::MAX elements with one entry needs a 32 GiB dense vector: its size
/// line is refused before the vector is allocated.
#[test]
fn huge_coordinate_vector_is_an_error() {
    if !in_capped_child("huge_coordinate_vector_is_an_error") {
        return;
    }
    let dir = TempDir::new("vec");
    let text = b"%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n7 1 1.0\n";
    let p = dir.write("v.mtx", text);
    assert_too_large(read_vector::<f64>(&p), "vector elements", u32::MAX as u64);
    let gz = dir.write("v.mtx.gz", &gzip(text));
    assert_too_large(read_vector::<f32>(&gz), "vector elements", u32::MAX as u64);
    let limits = ReadLimits::default().with_free_dimension(usize::MAX);
    assert_out_of_host_memory(
        read_vector_with::<f64>(&p, &limits),
        "vector",
        u32::MAX as u64 * 8,
    );
}

/// A size line that promises far more entries or values than the file has reserves a bounded
/// amount up front: the read fails at the end of the file, not for want of memory.
#[test]
fn huge_declared_counts_reserve_little() {
    if !in_capped_child("huge_declared_counts_reserve_little") {
        return;
    }
    let ends_early = |r: Result<()>, line: usize| match r {
        Err(Error::MatrixMarket {
            line: l, message, ..
        }) if l == line && message.contains("file ends") => {}
        other => panic!("expected 'file ends' on line {line}, got {other:?}"),
    };
    // The most entries CsrMatrix can hold; more are refused on the size line.
    let max = u32::MAX as usize;
    for symmetry in ["general", "symmetric", "skew-symmetric"] {
        let text =
            format!("%%MatrixMarket matrix coordinate real {symmetry}\n3 3 {max}\n1 1 1\n2 1 2\n");
        ends_early(mm_bytes(text.as_bytes()).map(drop), 5);
        let text = text.replace(&max.to_string(), &usize::MAX.to_string());
        assert_too_large(mm_bytes(text.as_bytes()), "entries", usize::MAX as u64);
    }
    let dir = TempDir::new("counts");
    let array = dir.write(
        "a.mtx",
        b"%%MatrixMarket matrix array real general\n4294967295 1\n1\n2\n",
    );
    ends_early(read_vector::<f64>(array).map(drop), 5);
    // A dense array matrix stores its nonzero values as they arrive.
    let array = b"%%MatrixMarket matrix array real general\n65536 65536\n1\n2\n";
    ends_early(mm_bytes(array).map(drop), 5);
    let coord = format!("%%MatrixMarket matrix coordinate real general\n3 1 {max}\n1 1 1\n");
    ends_early(
        read_vector::<f32>(dir.write("c.mtx", coord.as_bytes())).map(drop),
        4,
    );
}

/// `ReadLimits::for_gpu` caps rows and columns at the longest vector of the type that one storage
/// binding of the adapter holds (x and y are bound whole), naming that limit.
#[test]
fn for_gpu_caps_dimensions_at_the_binding_size() {
    let Some(gpu) = crate::common::gpu() else {
        return;
    };
    let Some(small) = crate::common::reopened(&gpu, |a| wgspmv::wgpu::Limits {
        max_storage_buffer_binding_size: 1 << 16,
        ..wgspmv::Gpu::wanted_limits(a)
    }) else {
        eprintln!("SKIPPED: the adapter refuses a 64 KiB binding limit");
        return;
    };
    let binding = small.info().max_binding_bytes();
    let limits = ReadLimits::for_gpu::<f32>(&small);
    assert_eq!(limits.max_dimension() as u64, binding / 4);
    assert_eq!(
        ReadLimits::for_gpu::<f64>(&small).max_dimension() as u64,
        binding / 8
    );
    assert_eq!(
        ReadLimits::for_gpu::<f32>(&gpu).max_dimension() as u64,
        (gpu.info().max_binding_bytes() / 4).min(u32::MAX as u64)
    );
    let n = limits.max_dimension();
    for (rows, cols, dimension) in [(n + 1, 1, "rows"), (1, n + 1, "columns")] {
        let text =
            format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} 1\n1 1 1\n");
        let r = read_matrix_market_from_with::<f32>(Cursor::new(text), "mem.mtx", &limits);
        match r {
            Err(Error::InputTooLarge {
                dimension: d,
                limit,
                why,
                ..
            }) if d == dimension && limit == n as u64 => {
                assert!(why.contains("max_storage_buffer_binding_size"), "{why}")
            }
            other => panic!("{dimension}: {other:?}"),
        }
    }
    let text = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} 1\n{n} 1 1\n");
    let a = read_matrix_market_from_with::<f32>(Cursor::new(text), "mem.mtx", &limits).unwrap();
    // What the limits let through, the adapter binds.
    let x = wgspmv::GpuVector::from_slice(&small, &vec![1.0f32; a.ncols()]).unwrap();
    assert_eq!(x.len(), n);
}

// ---------------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------------

/// A base file and whether it is a vector (read with read_vector) or a matrix.
struct Base {
    name: &'static str,
    bytes: &'static [u8],
    vector: bool,
}

const BASES: &[Base] = &[
    Base { name: "west0067", bytes: include_bytes!("../data/west0067.mtx"), vector: false },
    Base { name: "bcsstk01", bytes: include_bytes!("../data/bcsstk01.mtx"), vector: false },
    Base { name: "can_24", bytes: include_bytes!("../data/can_24.mtx"), vector: false },
    Base { name: "n3c4-b4", bytes: include_bytes!("../data/n3c4-b4.mtx"), vector: false },
    Base {
        name: "skew",
        bytes: b"%%MatrixMarket matrix coordinate real skew-symmetric\n% a comment\n4 4 4\n2 1 0.5\n3 1 -2e3\n4 2 1.25e-7\n4 3 -0\n",
        vector: false,
    },
    Base { name: "array", bytes: b"%%MatrixMarket matrix array real general\n4 1\n1.5\n-2\n0\n3e-300\n", vector: true },
    Base {
        name: "coord_vector",
        bytes: b"%%MatrixMarket matrix coordinate integer general\n1 5 3\n1 2 7\n1 5 -1\n1 1 4\n",
        vector: true,
    },
];

/// The indices of the matrix bases.
fn matrix_bases() -> Vec<usize> {
    (0..BASES.len()).filter(|&i| !BASES[i].vector).collect()
}

/// The base files as they are read today (sanity check of the corpus).
#[test]
fn corpus_reads() {
    for b in BASES {
        let dir = TempDir::new("corpus");
        let p = dir.write("b.mtx", b.bytes);
        if b.vector {
            assert!(!read_vector::<f64>(&p).unwrap().is_empty(), "{}", b.name);
        } else {
            assert!(
                read_matrix_market::<f64>(&p).unwrap().nnz() > 0,
                "{}",
                b.name
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Fuzz: mutated files are Ok or a typed error
// ---------------------------------------------------------------------------------------------

/// Numbers that overflow, overstate or are not numbers, for size lines and entries. As row counts
/// the ones within u32 need at least 4 GiB of row_ptr, more than the capped child may map.
const HUGE: &[&str] = &[
    "4294967295",
    "4294967296",
    "2147483648",
    "1073741824",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999",
    "-1",
    "0",
    "1e400",
    "-1e400",
    "nan",
    "inf",
    "1.5",
];

#[derive(Clone, Debug)]
enum Mutation {
    FlipBit {
        at: usize,
        bit: u8,
    },
    SetByte {
        at: usize,
        byte: u8,
    },
    Truncate {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    DuplicateLine {
        line: usize,
    },
    DeleteLine {
        line: usize,
    },
    /// Replaces a token of a line after the header (token 0..3 of the size line, most often).
    Huge {
        token: usize,
        value: &'static str,
    },
    /// Inserts a line of `len` copies of `fill` (a long number, word, comment or blank line).
    LongLine {
        line: usize,
        len: usize,
        fill: u8,
    },
    /// Inserts a comment line of arbitrary bytes.
    Comment {
        line: usize,
        bytes: Vec<u8>,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        (at, 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        (at, any::<u8>()).prop_map(|(at, byte)| Mutation::SetByte { at, byte }),
        at.prop_map(|at| Mutation::Truncate { at }),
        (at, prop::collection::vec(any::<u8>(), 1..24))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        at.prop_map(|line| Mutation::DuplicateLine { line }),
        at.prop_map(|line| Mutation::DeleteLine { line }),
        (
            prop_oneof![3 => 0usize..3, 1 => any::<usize>()],
            prop::sample::select(HUGE)
        )
            .prop_map(|(token, value)| Mutation::Huge { token, value }),
        (
            at,
            prop_oneof![1usize..200, 900_000usize..1_100_000, Just((1 << 20) + 1)],
            prop::sample::select(b"1x% \t\xff".to_vec())
        )
            .prop_map(|(line, len, fill)| Mutation::LongLine { line, len, fill }),
        (at, prop::collection::vec(any::<u8>(), 0..40))
            .prop_map(|(line, bytes)| Mutation::Comment { line, bytes }),
    ]
}

/// Start offsets of the lines of `b` (each line keeps its '\n').
fn line_starts(b: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        b.iter()
            .enumerate()
            .filter(|&(i, &c)| c == b'\n' && i + 1 < b.len())
            .map(|(i, _)| i + 1),
    );
    starts
}

/// The byte range of line `k` (modulo the line count), with its '\n'.
fn line_range(b: &[u8], k: usize) -> std::ops::Range<usize> {
    let starts = line_starts(b);
    let k = k % starts.len();
    starts[k]..starts.get(k + 1).copied().unwrap_or(b.len())
}

fn apply(b: &mut Vec<u8>, m: &Mutation) {
    let len = b.len();
    match m {
        Mutation::FlipBit { at, bit } if len > 0 => b[at % len] ^= 1 << bit,
        Mutation::SetByte { at, byte } if len > 0 => b[at % len] = *byte,
        Mutation::Truncate { at } => b.truncate(at % (len + 1)),
        Mutation::Insert { at, bytes } => {
            b.splice(at % (len + 1)..at % (len + 1), bytes.iter().copied());
        }
        Mutation::DuplicateLine { line } => {
            let r = line_range(b, *line);
            let copy = b[r.clone()].to_vec();
            b.splice(r.end..r.end, copy);
        }
        Mutation::DeleteLine { line } => {
            b.drain(line_range(b, *line));
        }
        Mutation::Huge { token, value } => {
            // Tokens of the lines after the first, in order: the size line's come first.
            let body = line_starts(b).get(1).copied().unwrap_or(len);
            let mut spans = Vec::new();
            let mut i = body;
            while i < len {
                if b[i].is_ascii_whitespace() {
                    i += 1;
                    continue;
                }
                let s = i;
                while i < len && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                if b[s] != b'%' {
                    spans.push(s..i);
                }
            }
            if !spans.is_empty() {
                b.splice(spans[token % spans.len()].clone(), value.bytes());
            }
        }
        Mutation::LongLine { line, len: n, fill } => {
            let at = line_range(b, *line).start;
            let mut l = vec![*fill; *n];
            l.push(b'\n');
            b.splice(at..at, l);
        }
        Mutation::Comment { line, bytes } => {
            let at = line_range(b, *line).end;
            let mut l = vec![b'%'];
            l.extend(bytes.iter().copied().filter(|&c| c != b'\n'));
            l.push(b'\n');
            if at > 0 && b[at - 1] != b'\n' {
                l.insert(0, b'\n');
            }
            b.splice(at..at, l);
        }
        _ => {}
    }
}

/// How the mutated bytes reach the reader.
#[derive(Clone, Debug)]
enum Delivery {
    Memory,
    File,
    Gzip,
    /// Gzipped, then one byte of the compressed stream overwritten.
    CorruptGzip {
        at: usize,
        byte: u8,
    },
}

fn delivery() -> impl Strategy<Value = Delivery> {
    prop_oneof![
        Just(Delivery::Memory),
        Just(Delivery::File),
        Just(Delivery::Gzip),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Delivery::CorruptGzip { at, byte }),
    ]
}

/// Reads `bytes` as base `base` reads (matrix or vector) through `how`; Ok carries a matrix's nnz.
fn read_as(base: &Base, bytes: &[u8], how: &Delivery, dir: &Path) -> Result<Option<usize>> {
    let file = |b: &[u8]| {
        let p = dir.join(format!("case-{}.mtx", base.name));
        std::fs::write(&p, b).unwrap();
        p
    };
    let path = match how {
        Delivery::Memory if !base.vector => return mm_bytes(bytes).map(|m| Some(m.nnz())),
        Delivery::Memory | Delivery::File => file(bytes),
        Delivery::Gzip => file(&gzip(bytes)),
        Delivery::CorruptGzip { at, byte } => {
            let mut z = gzip(bytes);
            let n = z.len();
            z[at % n] = *byte;
            file(&z)
        }
    };
    if base.vector {
        read_vector::<f64>(&path).map(|_| None)
    } else {
        let m = read_matrix_market::<f32>(&path)?;
        // Whatever was read satisfies every CSR invariant.
        let (nr, nc, rp, ci, vals) = m.clone().into_parts();
        let rebuilt = CsrMatrix::try_new(nr, nc, rp, ci, vals).unwrap();
        // By bits: a mutated file may read as NaN, which `==` never equals.
        let bits = |m: &CsrMatrix<f32>| {
            let values: Vec<u32> = m.values().iter().map(|v| v.to_bits()).collect();
            (
                m.shape(),
                m.row_ptr().to_vec(),
                m.col_idx().to_vec(),
                values,
            )
        };
        assert_eq!(bits(&rebuilt), bits(&m));
        Ok(Some(m.nnz()))
    }
}

/// Longest error message expected: quotes are cut at 80 characters.
const MAX_MESSAGE_CHARS: usize = 400;

fn check_mutated(
    base: usize,
    mutations: &[Mutation],
    how: &Delivery,
    dir: &Path,
) -> std::result::Result<(), TestCaseError> {
    let base = &BASES[base];
    let mut bytes = base.bytes.to_vec();
    for m in mutations {
        apply(&mut bytes, m);
    }
    match read_as(base, &bytes, how, dir) {
        Ok(None) => {}
        Ok(Some(nnz)) => prop_assert!(
            nnz <= 2 * bytes.len(),
            "{nnz} entries from {} bytes",
            bytes.len()
        ),
        Err(e) => {
            let typed = matches!(
                e,
                Error::MatrixMarket { .. }
                    | Error::UnsupportedMatrixMarket { .. }
                    | Error::LineTooLong { .. }
                    | Error::OutOfHostMemory { .. }
                    | Error::TooLargeForU32 { .. }
                    | Error::InputTooLarge { .. }
            );
            prop_assert!(typed, "unexpected error variant {e:?}");
            let chars = e.to_string().chars().count();
            prop_assert!(chars <= MAX_MESSAGE_CHARS, "{chars}-character message: {e}");
        }
    }
    Ok(())
}

/// Mutated real and embedded files (bit flips, truncation, inserted junk, duplicated and deleted
/// lines, huge numbers, long lines, arbitrary bytes in comments; plain, gzipped or corrupt gzip)
/// read as Ok or as a typed error with a short message, never a panic or an abort, within the
/// capped address space.
#[test]
fn fuzz_mutated_files_give_ok_or_typed_error() {
    if !in_capped_child("fuzz_mutated_files_give_ok_or_typed_error") {
        return;
    }
    let dir = TempDir::new("fuzz");
    let strategy = (
        0..BASES.len(),
        prop::collection::vec(mutation(), 1..5),
        delivery(),
    );
    let mut runner = TestRunner::new(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |(base, mutations, how)| {
        check_mutated(base, &mutations, &how, &dir.0)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Fuzz: meaning-preserving edits read back the same matrix
// ---------------------------------------------------------------------------------------------

/// Edits that leave the matrix unchanged.
#[derive(Clone, Debug)]
struct Edits {
    crlf: bool,
    /// Separator between tokens: one of " ", "\t", "  \t ", " \t".
    separator: &'static str,
    /// Whitespace put before each data line.
    indent: &'static str,
    /// Trailing whitespace after each data line.
    trailing: &'static str,
    /// Order in which the entry lines are written.
    order: Vec<usize>,
    /// Comment lines of arbitrary bytes (no newline), inserted before line `at` (after the header).
    comments: Vec<(usize, Vec<u8>)>,
    /// Blank lines inserted before line `at` (after the header).
    blanks: Vec<usize>,
    final_newline: bool,
    gzip: bool,
}

/// The lines of a base file: header, comment lines, size line, entry lines (comments between
/// entries are not in the bases).
struct Parts {
    header: String,
    comments: Vec<Vec<u8>>,
    size: String,
    entries: Vec<String>,
}

fn parts(b: &[u8]) -> Parts {
    let mut lines = b
        .split(|&c| c == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let header = String::from_utf8(lines.next().unwrap().to_vec()).unwrap();
    let mut comments = Vec::new();
    let mut rest = Vec::new();
    for l in lines {
        if l.starts_with(b"%") {
            assert!(rest.is_empty(), "comment between entries in a base file");
            comments.push(l.to_vec());
        } else {
            rest.push(String::from_utf8(l.to_vec()).unwrap());
        }
    }
    let size = rest.remove(0);
    Parts {
        header,
        comments,
        size,
        entries: rest,
    }
}

fn edits(n_entries: usize) -> impl Strategy<Value = Edits> {
    let ws = |v: &'static [&'static str]| prop::sample::select(v.to_vec());
    (
        any::<bool>(),
        ws(&[" ", "\t", "  \t ", " \t"]),
        ws(&["", " ", "\t", " \t  "]),
        ws(&["", " ", "\t"]),
        Just((0..n_entries).collect::<Vec<_>>()).prop_shuffle(),
        prop::collection::vec(
            (any::<usize>(), prop::collection::vec(any::<u8>(), 0..60)),
            0..6,
        ),
        prop::collection::vec(any::<usize>(), 0..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(crlf, separator, indent, trailing, order, comments, blanks, final_newline, gzip)| {
                Edits {
                    crlf,
                    separator,
                    indent,
                    trailing,
                    order,
                    comments,
                    blanks,
                    final_newline,
                    gzip,
                }
            },
        )
}

fn render(p: &Parts, e: &Edits) -> Vec<u8> {
    let tokens = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(e.separator);
    let mut lines: Vec<Vec<u8>> = vec![tokens(&p.header).into_bytes()];
    lines.extend(p.comments.iter().cloned());
    lines.push(format!("{}{}{}", e.indent, tokens(&p.size), e.trailing).into_bytes());
    for &k in &e.order {
        lines.push(format!("{}{}{}", e.indent, tokens(&p.entries[k]), e.trailing).into_bytes());
    }
    for (at, bytes) in &e.comments {
        let mut l = b"%".to_vec();
        l.extend(bytes.iter().copied().filter(|&c| c != b'\n'));
        lines.insert(1 + at % lines.len(), l);
    }
    for at in &e.blanks {
        lines.insert(1 + at % lines.len(), b" \t ".to_vec());
    }
    let end: &[u8] = if e.crlf { b"\r\n" } else { b"\n" };
    let mut out = lines.join(end);
    if e.final_newline {
        out.extend_from_slice(end);
    }
    out
}

/// Bases with their parts, parsed once.
fn matrix_parts() -> Vec<(usize, Parts)> {
    matrix_bases()
        .into_iter()
        .map(|i| (i, parts(BASES[i].bytes)))
        .collect()
}

fn assert_same<T: wgspmv::Scalar>(
    a: &CsrMatrix<T>,
    b: &CsrMatrix<T>,
) -> std::result::Result<(), TestCaseError> {
    prop_assert_eq!((a.nrows(), a.ncols()), (b.nrows(), b.ncols()));
    prop_assert_eq!(a.row_ptr(), b.row_ptr());
    prop_assert_eq!(a.col_idx(), b.col_idx());
    let bits = |m: &CsrMatrix<T>| {
        m.values()
            .iter()
            .map(|v| bytemuck::bytes_of(v).to_vec())
            .collect::<Vec<_>>()
    };
    prop_assert_eq!(bits(a), bits(b));
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 256, failure_persistence: None, ..Config::default() })]

    /// CRLF line ends, tabs and runs of blanks between tokens, indented and padded lines, shuffled
    /// entry lines, extra comment lines of arbitrary (also non-UTF-8) bytes, blank lines, a missing
    /// final newline and gzip all read back the same matrix, bit for bit.
    #[test]
    fn fuzz_meaning_preserving_edits_read_the_same_matrix(
        (base, e) in (0..matrix_bases().len()).prop_flat_map(|k| {
            let (i, p) = matrix_parts().swap_remove(k);
            (Just(i), edits(p.entries.len()))
        })
    ) {
        let p = parts(BASES[base].bytes);
        let original = mm_bytes(BASES[base].bytes).unwrap();
        let edited = render(&p, &e);
        let dir = TempDir::new("same");
        let path = dir.write("e.mtx", &if e.gzip { gzip(&edited) } else { edited.clone() });
        let m = read_matrix_market::<f64>(&path).map_err(|err| TestCaseError::fail(format!("{err}")))?;
        assert_same(&m, &original)?;
        let m32 = read_matrix_market::<f32>(&path).map_err(|err| TestCaseError::fail(format!("{err}")))?;
        assert_same(&m32, &read_matrix_market_from::<f32>(Cursor::new(BASES[base].bytes), "orig").unwrap())?;
        assert_same(&mm_bytes(&edited).unwrap(), &original)?;
    }
}
