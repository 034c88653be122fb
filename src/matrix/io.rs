//! Matrix Market input and output.
//!
//! Written here rather than taken from a crate: the Rust Matrix Market readers we looked at
//! (matrix-market-rs, sprs::io, nalgebra-sparse's pest grammar) either lack `pattern` or
//! skew-symmetric support, panic on malformed input, or report errors without a line number, and
//! none streams gzip. The format is small; this reader streams line by line, expands symmetric
//! storage, and names the line of every error.

use crate::matrix::{try_filled, try_push, try_with_capacity};
use crate::{CsrMatrix, Error, Result, Scalar};
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

/// Longest header or data line held in memory; a longer one is refused rather than buffered.
const MAX_LINE: usize = 1 << 20;

/// Most characters of a token or line that an error message quotes.
const QUOTE_CHARS: usize = 80;

/// Most bytes reserved on the word of a size line alone; past that, storage grows as entries arrive.
const HEADER_RESERVE_BYTES: usize = 1 << 28;

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
            parse_num::<i64>(lines, words.next(), "integer value").map(|v| T::from_f64(v as f64))
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

/// Reads a sparse matrix (coordinate layout; `real`, `integer` or `pattern` entries, the latter as
/// 1.0; `general`, `symmetric` or `skew-symmetric`, whose stored triangle is expanded), gzipped or
/// not. Duplicate entries are summed. Comment lines may hold any bytes; header and data lines must
/// be UTF-8 and at most 1 MiB long.
pub fn read_matrix_market<T: Scalar>(path: impl AsRef<Path>) -> Result<CsrMatrix<T>> {
    read_matrix(Lines::open(path.as_ref())?)
}

/// Like [`read_matrix_market`], from any reader; `name` is used in error messages.
pub fn read_matrix_market_from<T: Scalar>(
    reader: impl Read + 'static,
    name: &str,
) -> Result<CsrMatrix<T>> {
    read_matrix(Lines::from_reader(
        Path::new(name),
        Box::new(BufReader::new(reader)),
    ))
}

fn read_matrix<T: Scalar>(mut lines: Lines) -> Result<CsrMatrix<T>> {
    let h = parse_header(&mut lines)?;
    if h.layout != Layout::Coordinate {
        return Err(lines.err(
            "expected a sparse 'coordinate' matrix, found 'array' (a dense vector or matrix)",
        ));
    }
    if !lines.next_data()? {
        return Err(lines.err("missing size line"));
    }
    let mut w = lines.text().split_whitespace();
    let nrows: usize = parse_num(&lines, w.next(), "row count")?;
    let ncols: usize = parse_num(&lines, w.next(), "column count")?;
    let nnz: usize = parse_num(&lines, w.next(), "entry count")?;
    no_more_words(&lines, &mut w, "three numbers of the size line")?;
    if h.symmetry != Symmetry::General && nrows != ncols {
        return Err(lines.err(format!(
            "a {:?} matrix must be square, found {nrows}x{ncols}",
            h.symmetry
        )));
    }
    let expand = h.symmetry != Symmetry::General;
    // Trust the size line for a bounded reservation only: a corrupt one must not claim gigabytes.
    let promised = nnz.saturating_mul(if expand { 2 } else { 1 });
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
        let i: usize = parse_num(&lines, w.next(), "row index")?;
        let j: usize = parse_num(&lines, w.next(), "column index")?;
        if i == 0 || i > nrows || j == 0 || j > ncols {
            return Err(lines.err(format!(
                "entry ({i}, {j}) is outside the 1-based {nrows}x{ncols} matrix"
            )));
        }
        let v: T = parse_value(&lines, h.field, &mut w)?;
        no_more_words(&lines, &mut w, "entry")?;
        let (r, c) = (i - 1, j - 1);
        try_push(&mut triplets, (r, c, v), "Matrix Market entries")?;
        if expand && r != c {
            let mirrored = if h.symmetry == Symmetry::SkewSymmetric {
                T::from_f64(-v.to_f64())
            } else {
                v
            };
            try_push(&mut triplets, (c, r, mirrored), "Matrix Market entries")?;
        }
    }
    if lines.next_data()? {
        return Err(lines.err(format!(
            "more entries than the {nnz} the size line promised"
        )));
    }
    CsrMatrix::from_triplets(nrows, ncols, triplets)
}

/// Reads a dense vector: an `array` file with one column (or one row), or a `coordinate` file
/// with one column (missing entries are zero). Lines are read as by [`read_matrix_market`].
pub fn read_vector<T: Scalar>(path: impl AsRef<Path>) -> Result<Vec<T>> {
    let mut lines = Lines::open(path.as_ref())?;
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
    if n > u32::MAX as usize {
        return Err(lines.err(format!(
            "a vector of {n} elements exceeds the 32-bit index range"
        )));
    }
    let out = match h.layout {
        Layout::Array => {
            no_more_words(&lines, &mut w, "two numbers of an array size line")?;
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
            // The size line alone sets n: a few bytes of input can ask for gigabytes.
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
    let path = path.as_ref();
    let mut f = create(path)?;
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    writeln!(f, "%%MatrixMarket matrix array real general").map_err(io)?;
    writeln!(f, "{} 1", v.len()).map_err(io)?;
    for x in v {
        writeln!(f, "{x}").map_err(io)?;
    }
    f.flush().map_err(io)
}
