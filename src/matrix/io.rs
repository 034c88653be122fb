//! Matrix Market input and output.
//!
//! Written here rather than taken from a crate: the Rust Matrix Market readers we looked at
//! (matrix-market-rs, sprs::io, nalgebra-sparse's pest grammar) either lack `pattern` or
//! skew-symmetric support, panic on malformed input, or report errors without a line number, and
//! none streams gzip. The format is small; this reader streams line by line, expands symmetric
//! storage, and names the line of every error.
//!
//! Values are read as C's `strtod` (hence the format's reference reader and SciPy's `mmread`)
//! reads them, each correctly rounded once into the matrix's type ([`Scalar::parse_decimal`]):
//! decimal, `nan`, `inf` and `infinity` in any case, and hexadecimal floats; a value beyond the
//! type's range is ±infinity. An `integer` value must be decimal digits with an optional sign, of
//! any length: one past `i64` is read like a real (the matrix holds floats anyway), not refused.
//!
//! Sizes: a size line is a few bytes that can declare billions of rows. Every size a file declares
//! is checked against [`ReadLimits`] on its size line, before anything of that size is allocated
//! (a typed [`Error::InputTooLarge`] names the dimension), and storage whose size a file only
//! declares grows as the data arrives: a file's rows, columns and vector length may exceed
//! [`ReadLimits::DEFAULT_FREE_DIMENSION`] only where the file lists that many values, so reading a
//! small file never allocates much, whatever its size line says.

use crate::matrix::{try_filled, try_push, try_with_capacity};
use crate::{CsrMatrix, Error, Gpu, Result, Scalar};
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Symmetry {
    General,
    Symmetric,
    SkewSymmetric,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    Coordinate,
    Array,
}

struct Header {
    layout: Layout,
    field: Field,
    symmetry: Symmetry,
}

/// How large a Matrix Market file may say its matrix or vector is. Every size is checked on the
/// size line, before anything of that size is allocated; a refused one is
/// [`Error::InputTooLarge`], naming the dimension, the limit and where the limit comes from.
///
/// A row count, column count or vector length `d` is accepted when
///
/// - `d <= max_dimension()`: by default `u32::MAX`, as `CsrMatrix` and every GPU kernel index with
///   32 bits; [`for_gpu`](Self::for_gpu) lowers it to the longest vector the adapter binds, as x
///   (one element per column) and y (one per row) must be bound whole; and
/// - `d <= free_dimension()` (default [`DEFAULT_FREE_DIMENSION`](Self::DEFAULT_FREE_DIMENSION),
///   2^20) or `d <= dimension_per_entry() × v` (default
///   [`DEFAULT_DIMENSION_PER_ENTRY`](Self::DEFAULT_DIMENSION_PER_ENTRY), 1), where `v` is the
///   number of values the file lists: the entry count of a `coordinate` file, every value of an
///   `array` one. A file must hold them all, so storage of a size that the file declares is at
///   most a fixed floor (4 MiB of row pointers, 8 MiB for an f64 vector) or, by default, no more
///   than its values take anyway (a row pointer is 4 bytes and an f64 element 8; a value is at
///   least 2 bytes of the file, and an entry held while reading 16 to 24).
///
/// The entries a `coordinate` file declares, and the entries stored (a mirrored triangle and an
/// `array` file's nonzero values included), may be at most `max_entries()`: by default
/// `u32::MAX`, the range of `CsrMatrix`'s 32-bit row pointers.
///
/// A genuine matrix with more empty rows than entries, beyond 2^20 rows, is refused by default:
/// raise [`with_dimension_per_entry`](Self::with_dimension_per_entry) or
/// [`with_free_dimension`](Self::with_free_dimension) to read one.
///
/// ```
/// use wgspmv::matrix::io::{read_matrix_market_from_with, ReadLimits};
/// use wgspmv::Error;
/// let tiny = "%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n1 1 1.0\n";
/// let e = read_matrix_market_from_with::<f32>(tiny.as_bytes(), "tiny.mtx", &ReadLimits::default())
///     .unwrap_err();
/// assert!(matches!(e, Error::InputTooLarge { dimension: "rows", declared: 4294967295, .. }));
/// // An x of exactly the matrix's 3 000 000 columns may be read, even with few entries.
/// let x_limits = ReadLimits::default()
///     .cap_dimension(3_000_000, "x must have the matrix's 3000000 columns")
///     .with_free_dimension(3_000_000);
/// assert_eq!(x_limits.max_dimension(), 3_000_000);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    max_dimension: usize,
    max_dimension_why: Cow<'static, str>,
    max_entries: usize,
    free_dimension: usize,
    dimension_per_entry: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_dimension: u32::MAX as usize,
            max_dimension_why: Cow::Borrowed(
                "CsrMatrix and every GPU kernel index with 32-bit integers",
            ),
            max_entries: u32::MAX as usize,
            free_dimension: Self::DEFAULT_FREE_DIMENSION,
            dimension_per_entry: Self::DEFAULT_DIMENSION_PER_ENTRY,
        }
    }
}

impl ReadLimits {
    /// Rows, columns or vector elements a file may declare whatever it lists: 2^20, so that the
    /// storage a tiny file can ask for is a few MiB (4 MiB of row pointers; an f64 x, 8 MiB).
    pub const DEFAULT_FREE_DIMENSION: usize = 1 << 20;

    /// Beyond [`DEFAULT_FREE_DIMENSION`](Self::DEFAULT_FREE_DIMENSION), rows (or columns, or
    /// vector elements) a file may declare per value it lists: 1. A row pointer (4 bytes) or an
    /// f64 vector element (8 bytes) then takes no more than the entry read for it (16 to 24
    /// bytes while reading, 8 to 12 in the matrix, at least 4 in the file).
    pub const DEFAULT_DIMENSION_PER_ENTRY: usize = 1;

    /// The default limits, with dimensions capped so that a vector of one element per row (y) or
    /// per column (x) of `T` fits one storage binding of `gpu`
    /// (`max_storage_buffer_binding_size`, which [`GpuVector`](crate::GpuVector) needs).
    pub fn for_gpu<T: Scalar>(gpu: &Gpu) -> Self {
        let bytes = gpu.info().max_binding_bytes();
        let elements = bytes / std::mem::size_of::<T>() as u64;
        Self::default().cap_dimension(
            usize::try_from(elements).unwrap_or(usize::MAX),
            format!(
                "a vector of one {} per row (y) or column (x) must fit this adapter's \
                 max_storage_buffer_binding_size of {bytes} bytes",
                T::NAME
            ),
        )
    }

    /// Lowers the largest row count, column count and vector length to `max` (never raises it),
    /// `why` saying where that limit comes from in the error that refuses a larger one.
    pub fn cap_dimension(mut self, max: usize, why: impl Into<Cow<'static, str>>) -> Self {
        if max < self.max_dimension {
            self.max_dimension = max;
            self.max_dimension_why = why.into();
        }
        self
    }

    /// Lowers the most entries a file may declare or store (after mirroring) to `max`.
    pub fn cap_entries(mut self, max: usize) -> Self {
        self.max_entries = self.max_entries.min(max);
        self
    }

    /// Sets the rows, columns or vector length accepted whatever the file lists (still at most
    /// [`max_dimension`](Self::max_dimension)).
    pub fn with_free_dimension(mut self, n: usize) -> Self {
        self.free_dimension = n;
        self
    }

    /// Sets how many rows, columns or vector elements beyond
    /// [`free_dimension`](Self::free_dimension) a file may declare per value it lists.
    pub fn with_dimension_per_entry(mut self, k: usize) -> Self {
        self.dimension_per_entry = k;
        self
    }

    /// The largest row count, column count or vector length accepted.
    pub fn max_dimension(&self) -> usize {
        self.max_dimension
    }

    /// The most entries a file may declare or store.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Rows, columns or vector length accepted whatever the file lists.
    pub fn free_dimension(&self) -> usize {
        self.free_dimension
    }

    /// Rows, columns or vector elements allowed per listed value, beyond `free_dimension`.
    pub fn dimension_per_entry(&self) -> usize {
        self.dimension_per_entry
    }

    /// Refuses `declared` rows, columns or vector elements (`dimension`) of a file listing
    /// `values` values, on the size line `lines` is at.
    fn check_dimension(
        &self,
        lines: &Lines,
        dimension: &'static str,
        declared: usize,
        values: u64,
    ) -> Result<()> {
        let refuse = |limit: u64, why: String| Error::InputTooLarge {
            path: lines.path.clone(),
            line: lines.line_no,
            dimension,
            declared: declared as u64,
            limit,
            why,
        };
        if declared > self.max_dimension {
            return Err(refuse(
                self.max_dimension as u64,
                self.max_dimension_why.clone().into_owned(),
            ));
        }
        let by_data = values.saturating_mul(self.dimension_per_entry as u64);
        let limit = by_data.max(self.free_dimension as u64);
        if declared as u64 > limit {
            let values = match values {
                1 => "1 value".to_owned(),
                n => format!("{n} values"),
            };
            return Err(refuse(
                limit,
                format!(
                    "the file lists {values}, and beyond {} (ReadLimits::free_dimension) rows, \
                     columns and vector elements are limited to {} per listed value \
                     (ReadLimits::dimension_per_entry)",
                    self.free_dimension, self.dimension_per_entry
                ),
            ));
        }
        Ok(())
    }

    /// Refuses `count` entries, declared on the size line or (`stored`) reached while storing
    /// the entries of the line `lines` is at.
    fn check_entries(&self, lines: &Lines, count: u64, stored: bool) -> Result<()> {
        if count <= self.max_entries as u64 {
            return Ok(());
        }
        Err(Error::InputTooLarge {
            path: lines.path.clone(),
            line: lines.line_no,
            dimension: "entries",
            declared: count,
            limit: self.max_entries as u64,
            why: format!(
                "{}ReadLimits::max_entries, by default the range of CsrMatrix's 32-bit row pointers",
                if stored {
                    "stored entries (a mirrored triangle and an array's nonzero values included) \
                     are limited by "
                } else {
                    ""
                }
            ),
        })
    }
}

/// Longest header or data line held in memory; a longer one is refused rather than buffered.
const MAX_LINE: usize = 1 << 20;

/// Most characters of a token or line that an error message quotes.
const QUOTE_CHARS: usize = 80;

/// Most bytes reserved on the word of a size line alone; past that, storage grows (doubling) as
/// entries arrive, so that it never holds more than twice what the file's data needs.
const HEADER_RESERVE_BYTES: usize = 1 << 20;

/// `s` in single quotes for an error message, cut to [`QUOTE_CHARS`] characters and `…`.
fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("'{}…'", &s[..cut]),
        None => format!("'{s}'"),
    }
}

/// The capacity to reserve for `count` elements of `E` promised by a size line.
fn header_capacity<E>(count: usize) -> usize {
    count.min(HEADER_RESERVE_BYTES / std::mem::size_of::<E>().max(1))
}

/// What [`Lines::advance`] found.
enum Line {
    /// A header or data line, now in `Lines::text`.
    Text,
    /// A comment or blank line, consumed without being stored.
    Skipped,
    End,
}

/// Line-numbered reader over a possibly gzipped file. Lines are read as bytes in bounded chunks:
/// comments are opaque (any bytes, any length) and only header and data lines must be UTF-8.
struct Lines {
    path: PathBuf,
    inner: Box<dyn BufRead>,
    line_no: usize,
    /// The current header or data line, without leading whitespace or its end.
    text: String,
}

/// A streaming gzip decoder over `file`.
#[cfg(feature = "gzip")]
fn gunzip(file: BufReader<File>) -> std::io::Result<Box<dyn BufRead>> {
    Ok(Box::new(BufReader::new(
        flate2::bufread::MultiGzDecoder::new(file),
    )))
}

/// Without the `gzip` feature a gzipped file is an error that says so.
#[cfg(not(feature = "gzip"))]
fn gunzip(_file: BufReader<File>) -> std::io::Result<Box<dyn BufRead>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "gzip-compressed, and this build of wgspmv has no `gzip` feature",
    ))
}

impl Lines {
    fn open(path: &Path) -> Result<Self> {
        let io_err = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = BufReader::new(File::open(path).map_err(io_err)?);
        // Detect gzip by its magic bytes, not by the file name.
        let gz = file.fill_buf().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
        let inner: Box<dyn BufRead> = if gz {
            gunzip(file).map_err(io_err)?
        } else {
            Box::new(file)
        };
        Ok(Self::from_reader(path, inner))
    }

    fn from_reader(path: &Path, inner: Box<dyn BufRead>) -> Self {
        Self {
            path: path.to_owned(),
            inner,
            line_no: 0,
            text: String::new(),
        }
    }

    fn err(&self, message: impl Into<String>) -> Error {
        Error::MatrixMarket {
            path: self.path.clone(),
            line: self.line_no,
            message: message.into(),
        }
    }

    /// The current header or data line.
    fn text(&self) -> &str {
        &self.text
    }

    /// Reads the next line. With `skip_comments`, a line whose first non-blank byte is `%` is
    /// consumed unstored, like a blank line; any other line is kept in `text`.
    fn advance(&mut self, skip_comments: bool) -> Result<Line> {
        #[derive(PartialEq)]
        enum State {
            Blank,
            Text,
            Comment,
        }
        self.line_no += 1;
        let mut bytes = std::mem::take(&mut self.text).into_bytes();
        bytes.clear();
        let (mut state, mut leading, mut read_any) = (State::Blank, 0usize, false);
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.err(format!("read failed: {e}"))),
            };
            if chunk.is_empty() {
                break;
            }
            read_any = true;
            let newline = chunk.iter().position(|&b| b == b'\n');
            let mut part = &chunk[..newline.unwrap_or(chunk.len())];
            let used = newline.map_or(chunk.len(), |i| i + 1);
            if state == State::Blank {
                let blanks = part.iter().take_while(|b| b.is_ascii_whitespace()).count();
                leading += blanks;
                part = &part[blanks..];
                if let Some(&first) = part.first() {
                    state = if skip_comments && first == b'%' {
                        State::Comment
                    } else {
                        State::Text
                    };
                }
            }
            let too_long = state == State::Text && bytes.len() + part.len() > MAX_LINE;
            if state == State::Text && !too_long {
                bytes.extend_from_slice(part);
            }
            self.inner.consume(used);
            if too_long {
                return Err(Error::LineTooLong {
                    path: self.path.clone(),
                    line: self.line_no,
                    limit: MAX_LINE,
                });
            }
            if newline.is_some() {
                break;
            }
        }
        match state {
            _ if !read_any => Ok(Line::End),
            State::Comment => Ok(Line::Skipped),
            State::Blank if skip_comments => Ok(Line::Skipped),
            State::Blank | State::Text => {
                let end = bytes
                    .iter()
                    .rposition(|b| !b.is_ascii_whitespace())
                    .map_or(0, |i| i + 1);
                bytes.truncate(end);
                match String::from_utf8(bytes) {
                    Ok(text) => {
                        self.text = text;
                        Ok(Line::Text)
                    }
                    Err(e) => {
                        let at = e.utf8_error().valid_up_to();
                        let byte = e.as_bytes()[at];
                        Err(self.err(format!(
                            "byte 0x{byte:02x} at column {} is not valid UTF-8",
                            leading + at + 1
                        )))
                    }
                }
            }
        }
    }

    /// Reads the next header line; false at end of file.
    fn next_line(&mut self) -> Result<bool> {
        Ok(matches!(self.advance(false)?, Line::Text))
    }

    /// Reads the next line that is neither blank nor a comment; false at end of file.
    fn next_data(&mut self) -> Result<bool> {
        loop {
            match self.advance(true)? {
                Line::Text => return Ok(true),
                Line::Skipped => continue,
                Line::End => return Ok(false),
            }
        }
    }
}

fn parse_header(lines: &mut Lines) -> Result<Header> {
    if !lines.next_line()? {
        return Err(lines.err("empty file"));
    }
    let words: Vec<String> = lines
        .text()
        .split_whitespace()
        .map(|w| w.to_ascii_lowercase())
        .collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(lines.err(format!(
            "bad header {}: expected '%%MatrixMarket matrix <coordinate|array> <field> <symmetry>'",
            quote(lines.text())
        )));
    }
    let unsupported = |what: &str| Error::UnsupportedMatrixMarket {
        path: lines.path.clone(),
        what: what.to_owned(),
    };
    let layout = match words[2].as_str() {
        "coordinate" => Layout::Coordinate,
        "array" => Layout::Array,
        other => {
            return Err(lines.err(format!(
                "unknown layout {} (expected coordinate or array)",
                quote(other)
            )))
        }
    };
    let field = match words[3].as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        "complex" => return Err(unsupported("complex")),
        other => return Err(lines.err(format!("unknown field {}", quote(other)))),
    };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" => return Err(unsupported("hermitian")),
        other => return Err(lines.err(format!("unknown symmetry {}", quote(other)))),
    };
    if layout == Layout::Array && field == Field::Pattern {
        return Err(lines.err("'array pattern' is not a valid combination"));
    }
    Ok(Header {
        layout,
        field,
        symmetry,
    })
}

fn parse_num<N: std::str::FromStr>(lines: &Lines, word: Option<&str>, what: &str) -> Result<N> {
    let w = word.ok_or_else(|| lines.err(format!("missing {what}")))?;
    w.parse()
        .map_err(|_| lines.err(format!("{} is not a valid {what}", quote(w))))
}

/// The value of an entry line, parsed straight into `T`. Pattern entries are 1.0; a single
/// trailing token on them is skipped, because real files carry one (SuiteSparse's Ragusa16 is
/// declared `pattern` yet lists weights), and the format gives pattern entries no value to take.
/// Integer values are decimal digits with an optional sign, of any length: one beyond `i64` is
/// read like a real, correctly rounded (and ±infinity beyond the type's range), since the matrix
/// holds floats anyway.
fn parse_value<'a, T: Scalar>(
    lines: &Lines,
    field: Field,
    words: &mut impl Iterator<Item = &'a str>,
) -> Result<T> {
    match field {
        Field::Pattern => {
            let _ignored = words.next();
            Ok(T::from_f64(1.0))
        }
        Field::Integer => {
            let w = words
                .next()
                .ok_or_else(|| lines.err("missing integer value"))?;
            let digits = w.strip_prefix(['+', '-']).unwrap_or(w);
            let integer = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
            integer
                .then(|| T::parse_decimal(w))
                .flatten()
                .ok_or_else(|| lines.err(format!("{} is not a valid integer value", quote(w))))
        }
        Field::Real => {
            let w = words
                .next()
                .ok_or_else(|| lines.err("missing real value"))?;
            T::parse_decimal(w)
                .ok_or_else(|| lines.err(format!("{} is not a valid real value", quote(w))))
        }
    }
}

fn no_more_words<'a>(
    lines: &Lines,
    words: &mut impl Iterator<Item = &'a str>,
    what: &str,
) -> Result<()> {
    match words.next() {
        Some(extra) => Err(lines.err(format!("unexpected {} after the {what}", quote(extra)))),
        None => Ok(()),
    }
}

/// Reads a sparse matrix, gzipped or not, with the default [`ReadLimits`]:
///
/// - `coordinate` layout: `real`, `integer` or `pattern` entries (the latter as 1.0); duplicate
///   entries are summed, and explicit zeros are kept as stored entries.
/// - `array` layout (a dense matrix, as SciPy's `mmread` reads it): `real` or `integer` values in
///   column-major order; only the nonzero ones are stored (0 and -0 are left out, NaN is kept).
///
/// Either may be `general`, `symmetric` or `skew-symmetric`; the stored triangle of the latter two
/// is expanded (a skew-symmetric `array` lists the strictly lower triangle, its diagonal being
/// zero). Values are read as described in the [module documentation](self). Comment lines may
/// hold any bytes; header and data lines must be UTF-8 and at most 1 MiB long.
pub fn read_matrix_market<T: Scalar>(path: impl AsRef<Path>) -> Result<CsrMatrix<T>> {
    read_matrix_market_with(path, &ReadLimits::default())
}

/// Like [`read_matrix_market`], with sizes checked against `limits` (for instance
/// [`ReadLimits::for_gpu`]).
pub fn read_matrix_market_with<T: Scalar>(
    path: impl AsRef<Path>,
    limits: &ReadLimits,
) -> Result<CsrMatrix<T>> {
    read_matrix(Lines::open(path.as_ref())?, limits)
}

/// Like [`read_matrix_market`], from any reader; `name` is used in error messages.
pub fn read_matrix_market_from<T: Scalar>(
    reader: impl Read + 'static,
    name: &str,
) -> Result<CsrMatrix<T>> {
    read_matrix_market_from_with(reader, name, &ReadLimits::default())
}

/// Like [`read_matrix_market_from`], with sizes checked against `limits`.
pub fn read_matrix_market_from_with<T: Scalar>(
    reader: impl Read + 'static,
    name: &str,
    limits: &ReadLimits,
) -> Result<CsrMatrix<T>> {
    read_matrix(
        Lines::from_reader(Path::new(name), Box::new(BufReader::new(reader))),
        limits,
    )
}

/// The number of values an `array` file of `nrows` x `ncols` lists: all of them for `general`,
/// the lower triangle with (`symmetric`) or without (`skew-symmetric`) the diagonal otherwise.
fn array_values(symmetry: Symmetry, nrows: usize, ncols: usize) -> u64 {
    let (m, n) = (nrows as u64, ncols as u64);
    match symmetry {
        Symmetry::General => m.saturating_mul(n),
        Symmetry::Symmetric => n.saturating_mul(n.saturating_add(1)) / 2,
        Symmetry::SkewSymmetric => n.saturating_mul(n.saturating_sub(1)) / 2,
    }
}

fn read_matrix<T: Scalar>(mut lines: Lines, limits: &ReadLimits) -> Result<CsrMatrix<T>> {
    let h = parse_header(&mut lines)?;
    if !lines.next_data()? {
        return Err(lines.err("missing size line"));
    }
    let mut w = lines.text().split_whitespace();
    let nrows: usize = parse_num(&lines, w.next(), "row count")?;
    let ncols: usize = parse_num(&lines, w.next(), "column count")?;
    let nnz: Option<usize> = match h.layout {
        Layout::Coordinate => Some(parse_num(&lines, w.next(), "entry count")?),
        Layout::Array => None,
    };
    match h.layout {
        Layout::Coordinate => no_more_words(&lines, &mut w, "three numbers of the size line")?,
        Layout::Array => no_more_words(&lines, &mut w, "two numbers of an array size line")?,
    }
    if h.symmetry != Symmetry::General && nrows != ncols {
        return Err(lines.err(format!(
            "a {:?} matrix must be square, found {nrows}x{ncols}",
            h.symmetry
        )));
    }
    // Every size is checked here, before row_ptr (nrows + 1) or anything else of a declared
    // size exists; the number of values is what the file must list to be read at all.
    let values = match nnz {
        Some(nnz) => {
            limits.check_entries(&lines, nnz as u64, false)?;
            nnz as u64
        }
        None => array_values(h.symmetry, nrows, ncols),
    };
    limits.check_dimension(&lines, "rows", nrows, values)?;
    limits.check_dimension(&lines, "columns", ncols, values)?;
    let triplets = match nnz {
        Some(nnz) => read_coordinate_entries::<T>(&mut lines, &h, limits, nrows, ncols, nnz)?,
        None => read_array_entries::<T>(&mut lines, &h, limits, nrows, ncols, values)?,
    };
    if lines.next_data()? {
        return Err(lines.err(match nnz {
            Some(nnz) => format!("more entries than the {nnz} the size line promised"),
            None => format!("more values than the {values} the size line promised"),
        }));
    }
    CsrMatrix::from_triplets(nrows, ncols, triplets)
}

/// Adds the entry at 0-based `(r, c)` and, in a symmetric matrix, its mirror image, keeping to
/// `limits.max_entries`.
fn push_entry<T: Scalar>(
    lines: &Lines,
    limits: &ReadLimits,
    symmetry: Symmetry,
    triplets: &mut Vec<(usize, usize, T)>,
    (r, c, v): (usize, usize, T),
) -> Result<()> {
    let mirrored = match symmetry {
        _ if r == c => None,
        Symmetry::General => None,
        Symmetry::Symmetric => Some(v),
        Symmetry::SkewSymmetric => Some(T::from_f64(-v.to_f64())),
    };
    let count = triplets.len() as u64 + 1 + mirrored.is_some() as u64;
    limits.check_entries(lines, count, true)?;
    try_push(triplets, (r, c, v), "Matrix Market entries")?;
    if let Some(m) = mirrored {
        try_push(triplets, (c, r, m), "Matrix Market entries")?;
    }
    Ok(())
}

/// The `nnz` entry lines of a `coordinate` matrix, as triplets (symmetric storage expanded).
fn read_coordinate_entries<T: Scalar>(
    lines: &mut Lines,
    h: &Header,
    limits: &ReadLimits,
    nrows: usize,
    ncols: usize,
    nnz: usize,
) -> Result<Vec<(usize, usize, T)>> {
    // Trust the size line for a bounded reservation only: a corrupt one must not claim gigabytes.
    let per_line = if h.symmetry == Symmetry::General {
        1
    } else {
        2
    };
    let promised = nnz.saturating_mul(per_line);
    let mut triplets: Vec<(usize, usize, T)> = try_with_capacity(
        header_capacity::<(usize, usize, T)>(promised),
        "Matrix Market entries",
    )?;
    for k in 0..nnz {
        if !lines.next_data()? {
            return Err(lines.err(format!(
                "file ends after {k} entries, the size line promised {nnz}"
            )));
        }
        let mut w = lines.text().split_whitespace();
        let i: usize = parse_num(lines, w.next(), "row index")?;
        let j: usize = parse_num(lines, w.next(), "column index")?;
        if i == 0 || i > nrows || j == 0 || j > ncols {
            return Err(lines.err(format!(
                "entry ({i}, {j}) is outside the 1-based {nrows}x{ncols} matrix"
            )));
        }
        let v: T = parse_value(lines, h.field, &mut w)?;
        no_more_words(lines, &mut w, "entry")?;
        push_entry(lines, limits, h.symmetry, &mut triplets, (i - 1, j - 1, v))?;
    }
    Ok(triplets)
}

/// The `values` values of an `array` matrix (column-major; the lower triangle, with or without
/// the diagonal, when symmetric), as triplets of the nonzero ones (symmetric storage expanded).
fn read_array_entries<T: Scalar>(
    lines: &mut Lines,
    h: &Header,
    limits: &ReadLimits,
    nrows: usize,
    ncols: usize,
    values: u64,
) -> Result<Vec<(usize, usize, T)>> {
    // Zeros are not stored: storage grows with the nonzero values as they arrive.
    let mut triplets: Vec<(usize, usize, T)> = Vec::new();
    let mut k = 0u64;
    for c in 0..ncols {
        let first = match h.symmetry {
            Symmetry::General => 0,
            Symmetry::Symmetric => c,
            Symmetry::SkewSymmetric => c + 1,
        };
        for r in first..nrows {
            if !lines.next_data()? {
                return Err(lines.err(format!(
                    "file ends after {k} of the {values} values the size line promised"
                )));
            }
            let mut w = lines.text().split_whitespace();
            let v: T = parse_value(lines, h.field, &mut w)?;
            no_more_words(lines, &mut w, "value")?;
            k += 1;
            // NaN compares unequal to zero, and is kept.
            if v != T::default() {
                push_entry(lines, limits, h.symmetry, &mut triplets, (r, c, v))?;
            }
        }
    }
    Ok(triplets)
}

/// Reads a dense vector with the default [`ReadLimits`]: an `array` file with one column (or one
/// row), or a `coordinate` file with one column or row (missing entries are zero, repeated ones
/// add up). Lines and values are read as by [`read_matrix_market`].
pub fn read_vector<T: Scalar>(path: impl AsRef<Path>) -> Result<Vec<T>> {
    read_vector_with(path, &ReadLimits::default())
}

/// Like [`read_vector`], with its length checked against `limits` (the `vector elements`
/// dimension). To read the x of a known matrix, cap the length at its column count and allow that
/// many without data (`ReadLimits::default().cap_dimension(ncols, ..).with_free_dimension(ncols)`):
/// a sparse `coordinate` x then reads whatever few entries it lists.
pub fn read_vector_with<T: Scalar>(path: impl AsRef<Path>, limits: &ReadLimits) -> Result<Vec<T>> {
    read_vector_lines(Lines::open(path.as_ref())?, limits)
}

/// Like [`read_vector`], from any reader; `name` is used in error messages.
pub fn read_vector_from<T: Scalar>(reader: impl Read + 'static, name: &str) -> Result<Vec<T>> {
    read_vector_from_with(reader, name, &ReadLimits::default())
}

/// Like [`read_vector_from`], with its length checked against `limits`.
pub fn read_vector_from_with<T: Scalar>(
    reader: impl Read + 'static,
    name: &str,
    limits: &ReadLimits,
) -> Result<Vec<T>> {
    read_vector_lines(
        Lines::from_reader(Path::new(name), Box::new(BufReader::new(reader))),
        limits,
    )
}

fn read_vector_lines<T: Scalar>(mut lines: Lines, limits: &ReadLimits) -> Result<Vec<T>> {
    let h = parse_header(&mut lines)?;
    if !lines.next_data()? {
        return Err(lines.err("missing size line"));
    }
    let mut w = lines.text().split_whitespace();
    let nrows: usize = parse_num(&lines, w.next(), "row count")?;
    let ncols: usize = parse_num(&lines, w.next(), "column count")?;
    if nrows != 1 && ncols != 1 {
        return Err(lines.err(format!(
            "a vector must have one row or one column, found {nrows}x{ncols}"
        )));
    }
    let n = nrows * ncols; // one of them is 0 or 1
    let out = match h.layout {
        Layout::Array => {
            no_more_words(&lines, &mut w, "two numbers of an array size line")?;
            // The file must list all n values: storage grows as they arrive.
            limits.check_dimension(&lines, "vector elements", n, n as u64)?;
            let mut out = try_with_capacity(header_capacity::<T>(n), "vector")?;
            for k in 0..n {
                if !lines.next_data()? {
                    return Err(lines.err(format!("file ends after {k} of {n} values")));
                }
                let mut w = lines.text().split_whitespace();
                try_push(
                    &mut out,
                    parse_value::<T>(&lines, h.field, &mut w)?,
                    "vector",
                )?;
                no_more_words(&lines, &mut w, "value")?;
            }
            out
        }
        Layout::Coordinate => {
            let nnz: usize = parse_num(&lines, w.next(), "entry count")?;
            no_more_words(&lines, &mut w, "three numbers of the size line")?;
            // The dense vector of n is allocated once the entries are read: n is checked
            // against what the file must list first.
            limits.check_entries(&lines, nnz as u64, false)?;
            limits.check_dimension(&lines, "vector elements", n, nnz as u64)?;
            let mut entries: Vec<(usize, T)> =
                try_with_capacity(header_capacity::<(usize, T)>(nnz), "Matrix Market entries")?;
            for k in 0..nnz {
                if !lines.next_data()? {
                    return Err(lines.err(format!("file ends after {k} of {nnz} entries")));
                }
                let mut w = lines.text().split_whitespace();
                let i: usize = parse_num(&lines, w.next(), "row index")?;
                let j: usize = parse_num(&lines, w.next(), "column index")?;
                if i == 0 || i > nrows || j == 0 || j > ncols {
                    return Err(lines.err(format!(
                        "entry ({i}, {j}) is outside the {nrows}x{ncols} vector"
                    )));
                }
                let v = parse_value::<T>(&lines, h.field, &mut w)?;
                no_more_words(&lines, &mut w, "entry")?;
                try_push(
                    &mut entries,
                    ((i - 1) + (j - 1), v),
                    "Matrix Market entries",
                )?;
            }
            let mut out = try_filled(n, T::default(), "vector")?;
            for (idx, v) in entries {
                // A single entry stays exact; duplicates add up.
                out[idx] = if out[idx] == T::default() {
                    v
                } else {
                    T::from_f64(out[idx].to_f64() + v.to_f64())
                };
            }
            out
        }
    };
    if lines.next_data()? {
        return Err(lines.err(format!("more values than the {n} the size line promised")));
    }
    Ok(out)
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })
}

/// Writes a matrix as `coordinate real general`, values in their shortest exact decimal form.
pub fn write_matrix_market<T: Scalar>(path: impl AsRef<Path>, m: &CsrMatrix<T>) -> Result<()> {
    let path = path.as_ref();
    let mut f = create(path)?;
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    writeln!(f, "%%MatrixMarket matrix coordinate real general").map_err(io)?;
    writeln!(f, "{} {} {}", m.nrows(), m.ncols(), m.nnz()).map_err(io)?;
    for r in 0..m.nrows() {
        let (cols, vals) = m.row(r);
        for (c, v) in cols.iter().zip(vals) {
            writeln!(f, "{} {} {}", r + 1, c + 1, v).map_err(io)?;
        }
    }
    f.flush().map_err(io)
}

/// Writes a vector as a one-column `array real general` file.
pub fn write_vector<T: Scalar>(path: impl AsRef<Path>, v: &[T]) -> Result<()> {
    write_dense(path, v.len(), 1, v)
}

/// Writes a dense `rows × cols` matrix, `column_major` holding it column after column (as the
/// format lists it), as an `array real general` file.
pub fn write_dense<T: Scalar>(
    path: impl AsRef<Path>,
    rows: usize,
    cols: usize,
    column_major: &[T],
) -> Result<()> {
    let path = path.as_ref();
    if rows.checked_mul(cols) != Some(column_major.len()) {
        return Err(Error::DimensionMismatch {
            what: "dense matrix elements (rows x cols)",
            expected: rows.saturating_mul(cols),
            actual: column_major.len(),
        });
    }
    let mut f = create(path)?;
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    writeln!(f, "%%MatrixMarket matrix array real general").map_err(io)?;
    writeln!(f, "{rows} {cols}").map_err(io)?;
    for x in column_major {
        writeln!(f, "{x}").map_err(io)?;
    }
    f.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
    use std::cell::Cell;
    use std::io::Cursor;

    /// The system allocator, noting the largest single allocation of each thread, so that a test
    /// can show what a read asked for (not what the host happened to grant).
    struct Tracking;

    thread_local! {
        static LARGEST: Cell<usize> = const { Cell::new(0) };
    }

    fn note(bytes: usize) {
        let _ = LARGEST.try_with(|c| c.set(c.get().max(bytes)));
    }

    // SAFETY: every call is passed on to `System` unchanged.
    unsafe impl GlobalAlloc for Tracking {
        unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
            note(layout.size());
            System.alloc(layout)
        }
        unsafe fn alloc_zeroed(&self, layout: AllocLayout) -> *mut u8 {
            note(layout.size());
            System.alloc_zeroed(layout)
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
            note(new_size);
            System.realloc(ptr, layout, new_size)
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
            System.dealloc(ptr, layout)
        }
    }

    #[global_allocator]
    static ALLOCATOR: Tracking = Tracking;

    /// `f()` and the largest single allocation it made on this thread, in bytes.
    fn largest_allocation<R>(f: impl FnOnce() -> R) -> (R, usize) {
        LARGEST.with(|c| c.set(0));
        let r = f();
        (r, LARGEST.with(|c| c.get()))
    }

    fn mm<T: Scalar>(text: &str) -> Result<CsrMatrix<T>> {
        read_matrix_market_from(Cursor::new(text.to_owned()), "mem.mtx")
    }

    fn mm_with<T: Scalar>(text: &str, limits: &ReadLimits) -> Result<CsrMatrix<T>> {
        read_matrix_market_from_with(Cursor::new(text.to_owned()), "mem.mtx", limits)
    }

    fn vector<T: Scalar>(text: &str) -> Result<Vec<T>> {
        read_vector_from(Cursor::new(text.to_owned()), "mem.mtx")
    }

    /// The matrix as a dense row-major table of f64.
    fn dense<T: Scalar>(m: &CsrMatrix<T>) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; m.ncols()]; m.nrows()];
        for (r, row) in d.iter_mut().enumerate() {
            let (cols, vals) = m.row(r);
            for (&c, v) in cols.iter().zip(vals) {
                row[c as usize] = v.to_f64();
            }
        }
        d
    }

    /// Asserts `r` is `InputTooLarge` for `dimension` with these numbers on `line`; returns `why`.
    #[track_caller]
    fn too_large<R: std::fmt::Debug>(
        r: Result<R>,
        dimension: &str,
        declared: u64,
        limit: u64,
        line: usize,
    ) -> String {
        match r {
            Err(Error::InputTooLarge {
                dimension: d,
                declared: n,
                limit: l,
                line: at,
                why,
                ..
            }) if d == dimension && n == declared && l == limit && at == line => why,
            other => panic!(
                "expected InputTooLarge {{ {dimension}, {declared}, {limit}, line {line} }}, \
                 got {other:?}"
            ),
        }
    }

    /// Asserts `r` is a Matrix Market error on `line` whose message has `needle`.
    #[track_caller]
    fn mm_error<R: std::fmt::Debug>(r: Result<R>, line: usize, needle: &str) {
        match r {
            Err(Error::MatrixMarket {
                line: l, message, ..
            }) if l == line && message.contains(needle) => {}
            other => panic!("expected '{needle}' on line {line}, got {other:?}"),
        }
    }

    const MIB: usize = 1 << 20;

    // -----------------------------------------------------------------------------------------
    // Sizes (issue item 4)
    // -----------------------------------------------------------------------------------------

    /// The probe's file: before, 4294967295 rows made from_triplets ask for a 16 GiB row_ptr
    /// (granted, and filled, on a host that large). Now the size line is refused, naming the
    /// rows, before anything of that size is allocated.
    #[test]
    fn huge_row_count_is_refused_on_the_size_line() {
        let text = "%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n1 1 1.0\n";
        let (r, largest) = largest_allocation(|| mm::<f64>(text));
        let why = too_large(r, "rows", u32::MAX as u64, 1 << 20, 2);
        assert!(why.contains("lists 1 value,"), "{why}");
        assert!(largest < 64 << 10, "largest allocation {largest} bytes");
        // Columns alike (the CLI makes an x of ncols), and a size past the 32-bit range is
        // refused for that range.
        let text = "%%MatrixMarket matrix coordinate real general\n1 4294967295 0\n";
        too_large(mm::<f32>(text), "columns", u32::MAX as u64, 1 << 20, 2);
        let text = "%%MatrixMarket matrix coordinate real general\n4294967296 1 0\n";
        let why = too_large(mm::<f32>(text), "rows", 1 << 32, u32::MAX as u64, 2);
        assert!(why.contains("32-bit"), "{why}");
        let e = mm::<f32>(text).unwrap_err().to_string();
        assert!(
            e.starts_with("mem.mtx:2: the file declares 4294967296 rows, more than the"),
            "{e}"
        );
    }

    /// Before, a coordinate vector declaring u32::MAX elements asked for the dense vector
    /// (34 GiB of f64) once its one entry was read.
    #[test]
    fn huge_coordinate_vector_is_refused_on_the_size_line() {
        let text = "%%MatrixMarket matrix coordinate real general\n4294967295 1 1\n7 1 1.0\n";
        let (r, largest) = largest_allocation(|| vector::<f64>(text));
        too_large(r, "vector elements", u32::MAX as u64, 1 << 20, 2);
        assert!(largest < 64 << 10, "largest allocation {largest} bytes");
        let text = "%%MatrixMarket matrix coordinate real general\n1 4294967296 1\n1 7 1.0\n";
        too_large(
            vector::<f32>(text),
            "vector elements",
            1 << 32,
            u32::MAX as u64,
            2,
        );
    }

    /// Before, an array vector declaring u32::MAX values reserved 256 MiB on the word of its
    /// size line; storage now grows as the values arrive (the file must list them all).
    #[test]
    fn huge_array_vector_grows_with_its_values() {
        let text = "%%MatrixMarket matrix array real general\n4294967295 1\n1\n2\n";
        let (r, largest) = largest_allocation(|| vector::<f64>(text));
        mm_error(r, 5, "file ends after 2 of 4294967295 values");
        assert!(largest <= MIB, "largest allocation {largest} bytes");
        let text = "%%MatrixMarket matrix array real general\n1 4294967296\n1\n";
        too_large(
            vector::<f64>(text),
            "vector elements",
            1 << 32,
            u32::MAX as u64,
            2,
        );
    }

    /// A size line promising far more entries than the file holds reserves at most 1 MiB.
    #[test]
    fn huge_entry_count_reserves_little() {
        let text = "%%MatrixMarket matrix coordinate real symmetric\n3 3 4294967295\n1 1 1\n";
        let (r, largest) = largest_allocation(|| mm::<f64>(text));
        mm_error(r, 4, "file ends after 1 entries");
        assert!(largest <= MIB, "largest allocation {largest} bytes");
        let text = "%%MatrixMarket matrix coordinate real general\n3 3 4294967296\n1 1 1\n";
        let why = too_large(mm::<f64>(text), "entries", 1 << 32, u32::MAX as u64, 2);
        assert!(why.contains("max_entries"), "{why}");
    }

    /// Rows up to 2^20 need no entries; past that, one entry per row or column.
    #[test]
    fn legit_matrix_with_many_empty_rows_reads() {
        let free = ReadLimits::DEFAULT_FREE_DIMENSION;
        let text =
            format!("%%MatrixMarket matrix coordinate real general\n{free} {free} 1\n{free} 1 2\n");
        let (m, largest) = largest_allocation(|| mm::<f32>(&text).unwrap());
        assert_eq!((m.nrows(), m.ncols(), m.nnz()), (free, free, 1));
        assert_eq!(m.row(free - 1), (&[0u32][..], &[2.0f32][..]));
        // Nothing is larger than the row pointers (4 MiB), the floor's price.
        assert!(
            largest <= (free + 1) * 4,
            "largest allocation {largest} bytes"
        );
        let over = free + 1;
        let text = format!("%%MatrixMarket matrix coordinate real general\n{over} 3 1\n1 1 2\n");
        too_large(mm::<f32>(&text), "rows", over as u64, free as u64, 2);
        // Past the floor, as many rows as entries are fine; one more is not.
        let mut body = String::new();
        let n = free + 5;
        for k in 0..n {
            body.push_str(&format!("{} 1 1\n", 2 * (k % 3) + 1));
        }
        let ok = format!("%%MatrixMarket matrix coordinate pattern general\n{n} 1 {n}\n{body}");
        assert_eq!(mm::<f32>(&ok).unwrap().nrows(), n);
        let refused = format!(
            "%%MatrixMarket matrix coordinate pattern general\n{} 1 {n}\n{body}",
            n + 1
        );
        too_large(mm::<f32>(&refused), "rows", n as u64 + 1, n as u64, 2);
        // A caller that trusts a hypersparse file says so.
        let limits = ReadLimits::default().with_dimension_per_entry(4);
        let head = "%%MatrixMarket matrix coordinate real general\n4194304 1 1048576\n";
        let m = mm_with::<f32>(&format!("{head}{}", "1 1 1\n".repeat(1 << 20)), &limits);
        assert_eq!(m.unwrap().nrows(), 4 << 20);
    }

    /// A coordinate vector of up to 2^20 elements needs no entries; a longer one as many.
    #[test]
    fn coordinate_vector_length_is_bounded_by_its_entries() {
        let free = ReadLimits::DEFAULT_FREE_DIMENSION;
        let text = format!("%%MatrixMarket matrix coordinate real general\n{free} 1 1\n3 1 5\n");
        let (v, largest) = largest_allocation(|| vector::<f64>(&text).unwrap());
        assert_eq!((v.len(), v[2]), (free, 5.0));
        assert!(largest <= free * 8, "largest allocation {largest} bytes");
        let text = format!(
            "%%MatrixMarket matrix coordinate real general\n1 {} 1\n1 3 5\n",
            free + 1
        );
        too_large(
            vector::<f64>(&text),
            "vector elements",
            free as u64 + 1,
            free as u64,
            2,
        );
        // The CLI's x: capped at the matrix's columns, which are allowed without entries.
        let n = 3 * free;
        let limits = ReadLimits::default()
            .cap_dimension(n, "x must have the matrix's columns")
            .with_free_dimension(n);
        let text = format!("%%MatrixMarket matrix coordinate real general\n{n} 1 1\n{n} 1 5\n");
        let read = |t: &str| read_vector_from_with::<f32>(Cursor::new(t.to_owned()), "x", &limits);
        assert_eq!(read(&text).unwrap()[n - 1], 5.0);
        let text = format!(
            "%%MatrixMarket matrix coordinate real general\n{} 1 1\n1 1 5\n",
            n + 1
        );
        let why = too_large(read(&text), "vector elements", n as u64 + 1, n as u64, 2);
        assert_eq!(why, "x must have the matrix's columns");
    }

    /// max_entries counts the entries declared, and those stored once a triangle is mirrored.
    #[test]
    fn max_entries_limits_declared_and_mirrored_entries() {
        let limits = ReadLimits::default().cap_entries(3);
        let text = "%%MatrixMarket matrix coordinate real general\n3 3 4\n";
        too_large(mm_with::<f64>(text, &limits), "entries", 4, 3, 2);
        // A diagonal entry is stored once: 1 + 2 entries are within 3.
        let text = "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n2 1 1\n";
        assert_eq!(mm_with::<f64>(text, &limits).unwrap().nnz(), 3);
        let text = "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 1\n3 1 1\n";
        let why = too_large(mm_with::<f64>(text, &limits), "entries", 4, 3, 4);
        assert!(why.contains("mirrored"), "{why}");
        let text = "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n";
        too_large(mm_with::<f64>(text, &limits), "entries", 4, 3, 6);
        // Zeros of an array are not stored, so they do not count.
        let text = "%%MatrixMarket matrix array real general\n2 2\n1\n0\n3\n4\n";
        assert_eq!(mm_with::<f64>(text, &limits).unwrap().nnz(), 3);
    }

    // -----------------------------------------------------------------------------------------
    // Values and the array layout (issue item 5)
    // -----------------------------------------------------------------------------------------

    /// A general array matrix is read column by column; zeros (either sign) are not stored, NaN
    /// and infinities are. Before, every array matrix was refused.
    #[test]
    fn array_general_matrix() {
        let text = "%%MatrixMarket matrix array real general\n% c\n3 2\n1\n0\n-0\n2.5\nnan\n-inf\n";
        let m = mm::<f64>(text).unwrap();
        assert_eq!(m.row_ptr(), &[0, 2, 3, 4]);
        assert_eq!(m.col_idx(), &[0, 1, 1, 1]);
        let v = m.values();
        assert_eq!((v[0], v[1], v[3]), (1.0, 2.5, f64::NEG_INFINITY));
        assert!(v[2].is_nan());
        let i = mm::<f32>("%%MatrixMarket matrix array integer general\n1 3\n4\n0\n-6\n").unwrap();
        assert_eq!(dense(&i), [[4.0, 0.0, -6.0]]);
        // Empty arrays.
        assert_eq!(
            mm::<f64>("%%MatrixMarket matrix array real general\n0 0\n")
                .unwrap()
                .nnz(),
            0
        );
        assert_eq!(
            mm::<f64>("%%MatrixMarket matrix array real general\n2 0\n")
                .unwrap()
                .nrows(),
            2
        );
    }

    /// A symmetric array lists the lower triangle with its diagonal, column by column.
    #[test]
    fn array_symmetric_matrix() {
        let text = "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n0\n6\n";
        let m = mm::<f64>(text).unwrap();
        assert_eq!(
            dense(&m),
            [[1.0, 2.0, 3.0], [2.0, 4.0, 0.0], [3.0, 0.0, 6.0]]
        );
        assert_eq!(m.row_ptr(), &[0, 3, 5, 7]);
        assert_eq!(m.col_idx(), &[0, 1, 2, 0, 1, 0, 2]);
    }

    /// A skew-symmetric array lists the strictly lower triangle; the diagonal is zero.
    #[test]
    fn array_skew_symmetric_matrix() {
        let text = "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n-2\n3\n";
        let m = mm::<f32>(text).unwrap();
        assert_eq!(
            dense(&m),
            [[0.0, -1.0, 2.0], [1.0, 0.0, -3.0], [-2.0, 3.0, 0.0]]
        );
        assert_eq!(m.row_ptr(), &[0, 2, 4, 6]);
        assert_eq!(m.col_idx(), &[1, 2, 0, 2, 0, 1]);
        assert_eq!(
            mm::<f32>("%%MatrixMarket matrix array real skew-symmetric\n1 1\n")
                .unwrap()
                .nnz(),
            0
        );
    }

    /// Array files that end early, run long, put two values on a line, or are not square when
    /// symmetric fail on the right line; a zero-length dimension needs no values but is still
    /// bounded.
    #[test]
    fn array_matrix_errors() {
        let h = "%%MatrixMarket matrix array real";
        mm_error(
            mm::<f64>(&format!("{h} general\n2 2\n1\n2\n3\n")),
            6,
            "file ends after 3 of the 4",
        );
        mm_error(
            mm::<f64>(&format!("{h} symmetric\n2 2\n1\n2\n3\n4\n")),
            6,
            "more values than the 3",
        );
        mm_error(
            mm::<f64>(&format!("{h} general\n2 1\n1 2\n3\n")),
            3,
            "unexpected '2'",
        );
        mm_error(
            mm::<f64>(&format!("{h} general\n2 1 2\n1\n3\n")),
            2,
            "unexpected '2'",
        );
        mm_error(
            mm::<f64>(&format!("{h} symmetric\n2 3\n")),
            2,
            "must be square",
        );
        mm_error(
            mm::<f64>(&format!("{h} general\n2 1\n1\nx\n")),
            4,
            "'x' is not a valid real",
        );
        mm_error(
            mm::<f64>("%%MatrixMarket matrix array integer general\n1 1\n1.5\n"),
            3,
            "integer",
        );
        too_large(
            mm::<f64>(&format!("{h} general\n4294967295 0\n")),
            "rows",
            u32::MAX as u64,
            1 << 20,
            2,
        );
        let (r, largest) =
            largest_allocation(|| mm::<f64>(&format!("{h} general\n1 4294967295\n1\n2\n")));
        mm_error(r, 5, "file ends after 2 of the 4294967295 values");
        assert!(largest < 64 << 10, "largest allocation {largest} bytes");
    }

    /// `nan`, `inf`, `infinity` in any case and with signs, and `1e400` (±inf, as SciPy reads it;
    /// `1e39` is finite in f64 and infinite in f32, as a cast makes it).
    #[test]
    fn special_value_tokens() {
        let text = "%%MatrixMarket matrix array real general\n8 1\nnan\nNaN\n-NAN\ninf\n-Infinity\n+INF\n1e400\n-1e400\n";
        for v in [
            mm::<f64>(text).unwrap().values().to_vec(),
            vector::<f64>(text).unwrap(),
        ] {
            assert!(v[..3].iter().all(|x| x.is_nan()), "{v:?}");
            assert_eq!(
                &v[3..],
                [1.0, -1.0, 1.0, 1.0, -1.0].map(|s| s * f64::INFINITY)
            );
        }
        let v = vector::<f32>(text).unwrap();
        assert_eq!(
            &v[3..],
            [1.0, -1.0, 1.0, 1.0, -1.0].map(|s| s * f32::INFINITY)
        );
        let v = vector::<f32>(
            "%%MatrixMarket matrix array real general\n3 1\n1e39\n3.4028235e38\n1e-50\n",
        )
        .unwrap();
        assert_eq!(v, [f32::INFINITY, f32::MAX, 0.0]);
        let v =
            vector::<f64>("%%MatrixMarket matrix array real general\n2 1\n1e39\n1e-400\n").unwrap();
        assert_eq!(v, [1e39, 0.0]);
        // Integer entries are digits: specials are not integers.
        mm_error(
            mm::<f64>("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 nan\n"),
            3,
            "integer",
        );
    }

    /// Hexadecimal floats (C99, as `strtod` and the reference reader take them) are read exactly,
    /// correctly rounded into the type. Before, each was "not a valid real value".
    #[test]
    fn hexadecimal_floats() {
        let f64s = [
            ("0x1.8p1", 3.0),
            ("-0X1P-1", -0.5),
            ("0x.8", 0.5),
            ("0x10", 16.0),
            ("+0xAp+2", 40.0),
            ("0x1p-1074", 5e-324),
            ("0x1p-1075", 0.0),
            ("0x1.0000000000001p-1075", 5e-324),
            ("0x1.fffffffffffffp1023", f64::MAX),
            ("0x1.fffffffffffff8p1023", f64::INFINITY),
            ("0x1p1024", f64::INFINITY),
            ("0x1p99999999999999999999", f64::INFINITY),
            ("0x1p-99999999999999999999", 0.0),
            // Ties go to even; a nonzero digit past the tie rounds up.
            ("0x1.00000000000008p0", 1.0),
            ("0x1.00000000000018p0", 1.0 + 2.0 * f64::EPSILON),
            (
                "0x1.000000000000080000000000000000001p0",
                1.0 + f64::EPSILON,
            ),
        ];
        for (s, v) in f64s {
            assert_eq!(f64::parse_decimal(s), Some(v), "{s}");
        }
        assert!(f64::parse_decimal("-0x0p0").unwrap().is_sign_negative());
        // Leading zeros and digits past the 64 bits held are counted in the exponent.
        let tiny = format!("0x0.{}1p128", "0".repeat(31));
        assert_eq!(f64::parse_decimal(&tiny), Some(1.0));
        let long = format!("0x1{}p-400", "0".repeat(100));
        assert_eq!(f64::parse_decimal(&long), Some(1.0));
        let f32s = [
            ("0x1.8p1", 3.0),
            ("0x1p-149", f32::from_bits(1)),
            ("0x1p-150", 0.0),
            ("0x1.000002p-150", f32::from_bits(1)),
            ("0x1.fffffep127", f32::MAX),
            ("0x1.ffffffp127", f32::INFINITY),
            ("0x1.000001p0", 1.0),
            ("0x1.000003p0", 1.0 + 2.0 * f32::EPSILON),
            ("0x1.0000010000000001p0", 1.0 + f32::EPSILON),
            ("0x1p200", f32::INFINITY),
        ];
        for (s, v) in f32s {
            assert_eq!(f32::parse_decimal(s), Some(v), "{s}");
        }
        for bad in [
            "0x", "0x.", "0xp1", "0x1p", "0x1p+", "0x1.8q", "0x1p1.5", "0xg", "0x-1", "1x1",
        ] {
            assert_eq!(f64::parse_decimal(bad), None, "{bad}");
        }
        let text =
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 0x1.8p1\n2 2 -0x1p-2\n";
        assert_eq!(mm::<f32>(text).unwrap().values(), &[3.0, -0.25]);
    }

    /// Integer values past i64 are read as floats, correctly rounded once. Before, they were
    /// refused; and those within i64 went through f64 to f32, rounding twice.
    #[test]
    fn integer_values_beyond_i64_and_single_rounding() {
        let text = "%%MatrixMarket matrix coordinate integer general\n1 3 3\n1 1 99999999999999999999\n1 2 -18446744073709551617\n1 3 +007\n";
        let m = mm::<f64>(text).unwrap();
        assert_eq!(m.values(), &[1e20, -18446744073709551617.0, 7.0]);
        // 2^60 + 2^36 + 1: just over half an f32 step above 2^60. Through f64 it became
        // 2^60 + 2^36, a tie, then 2^60.
        let text =
            "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1152921573326323713\n";
        assert_eq!(
            mm::<f32>(text).unwrap().values(),
            &[(1u64 << 60) as f32 + (1u64 << 37) as f32]
        );
        let v = vector::<f32>(
            "%%MatrixMarket matrix array integer general\n1 1\n1152921573326323713\n",
        )
        .unwrap();
        assert_eq!(v, [1152921642045800448.0f32]);
        // Digits only.
        for bad in ["1e3", "0x10", "1.0", "+", "", "1_000"] {
            let text =
                format!("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 {bad} \n");
            assert!(mm::<f64>(&text).is_err(), "{bad}");
        }
    }
}
