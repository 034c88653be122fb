//! Remembered timed choices: per adapter, matrix fingerprint, scalar and workload, in the process
//! and optionally in a text file (one line per choice, appended; the last line for a key wins).

use crate::{Error, Method, Result};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// What identifies a remembered choice.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// Hash of the adapter's name, driver and backend.
    pub adapter: u64,
    /// Hash of the matrix structure (dimensions, row pointers, column indices).
    pub matrix: u64,
    /// The value type's name (`f32` or `f64`).
    pub scalar: &'static str,
    /// Decade of the expected number of products (round(log10)).
    pub products_decade: i32,
}

/// A remembered choice.
#[derive(Clone, Debug, PartialEq)]
pub struct Remembered {
    /// The method the timing chose.
    pub method: Method,
    /// Its measured time per product, ms.
    pub product_ms: f64,
}

fn memory() -> &'static Mutex<HashMap<Key, Remembered>> {
    static M: OnceLock<Mutex<HashMap<Key, Remembered>>> = OnceLock::new();
    M.get_or_init(Default::default)
}

/// The tag of a remembered line: v3 since the fingerprint's chunks are hashed in 32-bit lanes,
/// as a GPU computes them (lines of v1 and v2 hashed the same structure otherwise and are
/// ignored).
const VERSION: &str = "v3";

fn line_of(k: &Key, r: &Remembered) -> String {
    format!(
        "{VERSION} {:016x} {:016x} {} {} {} {:?}\n",
        k.adapter,
        k.matrix,
        k.scalar,
        k.products_decade,
        r.method.name(),
        r.product_ms
    )
}

fn parse_line(line: &str) -> Option<(Key, Remembered)> {
    let t: Vec<&str> = line.split_whitespace().collect();
    if t.len() != 7 || t[0] != VERSION {
        return None;
    }
    let scalar = match t[3] {
        "f32" => "f32",
        "f64" => "f64",
        _ => return None,
    };
    Some((
        Key {
            adapter: u64::from_str_radix(t[1], 16).ok()?,
            matrix: u64::from_str_radix(t[2], 16).ok()?,
            scalar,
            products_decade: t[4].parse().ok()?,
        },
        Remembered {
            method: Method::from_name(t[5])
                .ok()
                .filter(|m| *m != Method::Auto)?,
            product_ms: t[6].parse().ok()?,
        },
    ))
}

/// Looks `key` up in the process, then in `file` (lines that do not parse are ignored: the file
/// is a cache, not an input).
pub fn recall(key: &Key, file: Option<&Path>) -> Option<Remembered> {
    if let Some(r) = memory().lock().unwrap_or_else(|e| e.into_inner()).get(key) {
        return Some(r.clone());
    }
    let text = std::fs::read_to_string(file?).ok()?;
    let found = text
        .lines()
        .filter_map(parse_line)
        .rfind(|(k, _)| k == key)
        .map(|(_, r)| r)?;
    memory()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key.clone(), found.clone());
    Some(found)
}

/// Remembers a choice in the process and, if given, appends it to `file`.
pub fn store(key: Key, value: Remembered, file: Option<&Path>) -> Result<()> {
    let line = line_of(&key, &value);
    memory()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, value);
    if let Some(path) = file {
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        f.write_all(line.as_bytes()).map_err(io)?;
    }
    Ok(())
}

/// Forgets every choice remembered in this process (files are left alone).
pub fn forget_all() {
    memory().lock().unwrap_or_else(|e| e.into_inner()).clear();
}
