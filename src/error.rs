//! The one error type of the crate. Every failure a caller can cause or meet (bad input, missing
//! adapter, limits, device loss) is a variant here; panics are reserved for bugs.

use std::path::PathBuf;

/// Everything that can go wrong in `wgspmv`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An index array or value array has the wrong length for the stated dimensions.
    #[error("{array} has length {actual}, expected {expected}")]
    LengthMismatch {
        array: &'static str,
        expected: usize,
        actual: usize,
    },

    /// `row_ptr[0]` must be 0.
    #[error("row_ptr[0] is {0}, expected 0")]
    RowPtrStart(u32),

    /// `row_ptr` decreases somewhere.
    #[error("row_ptr is not monotone: row_ptr[{index}] = {value} < row_ptr[{prev_index}] = {prev}", prev_index = index - 1)]
    RowPtrNotMonotone { index: usize, value: u32, prev: u32 },

    /// The last entry of `row_ptr` disagrees with the number of stored entries.
    #[error("row_ptr[nrows] is {last}, but there are {nnz} stored entries")]
    RowPtrEnd { last: u32, nnz: usize },

    /// A column index is not below the column count.
    #[error("column index {col} at entry {entry} (row {row}) is out of range for {ncols} columns")]
    ColumnOutOfRange {
        row: usize,
        entry: usize,
        col: u32,
        ncols: usize,
    },

    /// Column indices within a row must be strictly increasing.
    #[error("columns in row {row} are not strictly increasing: entry {entry} has column {col} after column {prev}")]
    ColumnsNotSorted {
        row: usize,
        entry: usize,
        col: u32,
        prev: u32,
    },

    /// A row or column index of a triplet is outside the stated dimensions.
    #[error("triplet {entry} at ({row}, {col}) is outside a {nrows}x{ncols} matrix")]
    TripletOutOfRange {
        entry: usize,
        row: usize,
        col: usize,
        nrows: usize,
        ncols: usize,
    },

    /// A dimension or the number of stored entries does not fit the 32-bit indices the GPU uses.
    #[error("{what} = {value} exceeds the 32-bit index range (max {max}) that WGSL allows")]
    TooLargeForU32 {
        what: &'static str,
        value: u64,
        max: u64,
    },

    /// A value is NaN or infinite where the operation refuses non-finite values.
    #[error("non-finite value {value} at {location}")]
    NonFinite { location: String, value: f64 },

    /// Two operands have incompatible dimensions.
    #[error("dimension mismatch: {what} has {actual} elements, expected {expected}")]
    DimensionMismatch {
        what: &'static str,
        expected: usize,
        actual: usize,
    },

    /// A vector created on one device was passed to a plan on another.
    #[error("{what} lives on a different GPU device than the plan")]
    WrongDevice { what: &'static str },

    /// A method or parameter name that the library does not know.
    #[error("unknown {what} '{name}'; expected one of: {expected}")]
    UnknownName {
        what: &'static str,
        name: String,
        expected: String,
    },

    /// A method parameter outside its valid range.
    #[error("invalid parameter {name} = {value}: {reason}")]
    InvalidParameter {
        name: &'static str,
        value: String,
        reason: String,
    },

    /// A Matrix Market file could not be parsed.
    #[error("{}:{line}: {message}", path.display())]
    MatrixMarket {
        path: PathBuf,
        line: usize,
        message: String,
    },

    /// A Matrix Market header or data line is longer than the reader holds in memory (comment
    /// lines are skipped without being held, whatever their length).
    #[error("{}:{line}: line is longer than {limit} bytes", path.display())]
    LineTooLong {
        path: PathBuf,
        line: usize,
        limit: usize,
    },

    /// A Matrix Market file uses a field the library refuses (complex, hermitian).
    #[error("{}: {what} Matrix Market files are not supported (real, integer and pattern are)", path.display())]
    UnsupportedMatrixMarket { path: PathBuf, what: String },

    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// No GPU adapter was found.
    #[error("no GPU adapter found{detail}. Install a Vulkan, Metal or DX12 driver; on a machine without a GPU install Mesa's lavapipe (`apt-get install mesa-vulkan-drivers libvulkan1`)")]
    NoAdapter { detail: String },

    /// The adapter refused to create a device.
    #[error("the adapter '{adapter}' could not create a device: {message}")]
    RequestDevice { adapter: String, message: String },

    /// The adapter lacks a feature the operation needs (e.g. SHADER_F64 for f64 matrices).
    #[error("the adapter '{adapter}' lacks {feature}, which {needed_for} needs{hint}")]
    MissingFeature {
        adapter: String,
        feature: &'static str,
        needed_for: String,
        hint: &'static str,
    },

    /// A matrix or vector is larger than this adapter can hold or bind.
    #[error("{kernel} needs {limit_name} >= {needed}, and the device has {limit}; create the device with the limits `Gpu::wanted_limits` gives, or use another method")]
    DeviceLimit {
        kernel: String,
        limit_name: &'static str,
        needed: u64,
        limit: u64,
    },

    /// The plan's method cannot do what was asked (e.g. update its values in place).
    #[error("{method} plans cannot {what} yet: {why}")]
    Unsupported {
        method: &'static str,
        what: &'static str,
        why: &'static str,
    },

    /// A matrix or vector needs more memory than one binding or buffer of this adapter allows.
    #[error("{what} needs {bytes} bytes, more than this adapter's limit {limit_name} = {limit}; use a smaller matrix or an adapter with larger limits")]
    TooLargeForAdapter {
        what: String,
        bytes: u64,
        limit_name: &'static str,
        limit: u64,
    },

    /// The host could not allocate memory for an array whose size the input dictates (a matrix's
    /// row pointers, a dense vector, the entries being read); `bytes` is the size that was needed.
    #[error("could not allocate {bytes} bytes of host memory for {what}")]
    OutOfHostMemory { what: &'static str, bytes: u64 },

    /// The GPU ran out of memory.
    #[error("the GPU ran out of memory while {during}: {message}")]
    OutOfMemory { during: String, message: String },

    /// The device was lost (driver reset, GPU removed, or destroyed).
    #[error("the GPU device was lost ({reason}): {message}; create a new Gpu")]
    DeviceLost { reason: String, message: String },

    /// wgpu reported an error: a bug in this library or a broken driver.
    #[error("wgpu reported an error while {during}: {message}")]
    Wgpu { during: String, message: String },

    /// Mapping a buffer for reading failed.
    #[error("mapping a GPU buffer failed: {0}")]
    Map(String),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
