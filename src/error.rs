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
        /// Which array is wrong (`"row_ptr"`, `"values"`).
        array: &'static str,
        /// The length the dimensions call for.
        expected: usize,
        /// The length the array has.
        actual: usize,
    },

    /// `row_ptr[0]` must be 0.
    #[error("row_ptr[0] is {0}, expected 0")]
    RowPtrStart(u32),

    /// `row_ptr` decreases somewhere.
    #[error("row_ptr is not monotone: row_ptr[{index}] = {value} < row_ptr[{prev_index}] = {prev}", prev_index = index - 1)]
    RowPtrNotMonotone {
        /// The position in `row_ptr` of the first entry smaller than the one before it.
        index: usize,
        /// `row_ptr[index]`.
        value: u32,
        /// `row_ptr[index - 1]`, which is larger than `value`.
        prev: u32,
    },

    /// The last entry of `row_ptr` disagrees with the number of stored entries.
    #[error("row_ptr[nrows] is {last}, but there are {nnz} stored entries")]
    RowPtrEnd {
        /// `row_ptr[nrows]`, the stored-entry count the row pointers claim.
        last: u32,
        /// The length of the column index array, i.e. the real number of stored entries.
        nnz: usize,
    },

    /// A column index is not below the column count.
    #[error("column index {col} at entry {entry} (row {row}) is out of range for {ncols} columns")]
    ColumnOutOfRange {
        /// The row of the first bad entry.
        row: usize,
        /// The position of that entry in the column index array.
        entry: usize,
        /// The column index found there.
        col: u32,
        /// The matrix's column count, which `col` must be below.
        ncols: usize,
    },

    /// Column indices within a row must be strictly increasing.
    #[error("columns in row {row} are not strictly increasing: entry {entry} has column {col} after column {prev}")]
    ColumnsNotSorted {
        /// The row of the first out-of-order entry.
        row: usize,
        /// The position of that entry in the column index array.
        entry: usize,
        /// The column index of that entry.
        col: u32,
        /// The column index of the entry before it in the same row (not smaller than `col`).
        prev: u32,
    },

    /// A buffer the caller passed (a CSR array already on the GPU, a vector's buffer) cannot be
    /// used as it is.
    #[error("the {array} buffer {problem}")]
    CallerBuffer {
        /// Which buffer (`"row_ptr"`, `"col_idx"`, `"values"`, `"vector"`).
        array: &'static str,
        /// What is wrong with it: too small for the stated dimensions, or missing a usage.
        problem: String,
    },

    /// A row or column index of a triplet is outside the stated dimensions.
    #[error("triplet {entry} at ({row}, {col}) is outside a {nrows}x{ncols} matrix")]
    TripletOutOfRange {
        /// The position of the bad triplet in the input list.
        entry: usize,
        /// The triplet's row index.
        row: usize,
        /// The triplet's column index.
        col: usize,
        /// The stated row count.
        nrows: usize,
        /// The stated column count.
        ncols: usize,
    },

    /// A dimension or the number of stored entries does not fit the 32-bit indices the GPU uses.
    #[error("{what} = {value} exceeds the 32-bit index range (max {max}) that WGSL allows")]
    TooLargeForU32 {
        /// Which quantity is too large (a dimension or the stored-entry count).
        what: &'static str,
        /// Its value.
        value: u64,
        /// The largest value a 32-bit index holds.
        max: u64,
    },

    /// A value is NaN or infinite where the operation refuses non-finite values.
    #[error("non-finite value {value} at {location}")]
    NonFinite {
        /// Where the value was found, in words (e.g. the entry, row and column).
        location: String,
        /// The offending value, widened to `f64`.
        value: f64,
    },

    /// Two operands have incompatible dimensions.
    #[error("dimension mismatch: {what} has {actual} elements, expected {expected}")]
    DimensionMismatch {
        /// Which operand has the wrong size (e.g. `"x"`, `"y"`, `"values"`).
        what: &'static str,
        /// The number of elements the other operand (usually the matrix) requires.
        expected: usize,
        /// The number of elements it has.
        actual: usize,
    },

    /// A vector or buffer created on one device was passed to a plan or `Gpu` of another.
    #[error("{what} lives on a different GPU device than the plan")]
    WrongDevice {
        /// Which operand came from the other device (`"x"`, `"y"`, `"buffer"`, `"values"`,
        /// `"row_ptr"`, `"col_idx"`).
        what: &'static str,
    },

    /// A method or parameter name that the library does not know.
    #[error("unknown {what} '{name}'; expected one of: {expected}")]
    UnknownName {
        /// What kind of name was looked up (e.g. `"method"`).
        what: &'static str,
        /// The name given.
        name: String,
        /// The accepted names, comma-separated.
        expected: String,
    },

    /// A method parameter outside its valid range.
    #[error("invalid parameter {name} = {value}: {reason}")]
    InvalidParameter {
        /// The parameter (or input, such as a profile or calibration file) that was refused.
        name: &'static str,
        /// The refused value, or where in the input it was, as text.
        value: String,
        /// What a valid value would be, or why this one is refused.
        reason: String,
    },

    /// A Matrix Market file could not be parsed.
    #[error("{}:{line}: {message}", path.display())]
    MatrixMarket {
        /// The file being read.
        path: PathBuf,
        /// The 1-based line number where parsing failed.
        line: usize,
        /// What was wrong with that line.
        message: String,
    },

    /// A Matrix Market header or data line is longer than the reader holds in memory (comment
    /// lines are skipped without being held, whatever their length).
    #[error("{}:{line}: line is longer than {limit} bytes", path.display())]
    LineTooLong {
        /// The file being read.
        path: PathBuf,
        /// The 1-based number of the overlong line.
        line: usize,
        /// The longest line the reader accepts, in bytes.
        limit: usize,
    },

    /// A Matrix Market file uses a field the library refuses (complex, hermitian).
    #[error("{}: {what} Matrix Market files are not supported (real, integer and pattern are)", path.display())]
    UnsupportedMatrixMarket {
        /// The file being read.
        path: PathBuf,
        /// The refused header word (e.g. `complex`, `hermitian`).
        what: String,
    },

    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file that could not be read or written.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// No GPU adapter was found.
    #[error("no GPU adapter found{detail}. Install a Vulkan, Metal or DX12 driver; on a machine without a GPU install Mesa's lavapipe (`apt-get install mesa-vulkan-drivers libvulkan1`)")]
    NoAdapter {
        /// Extra context appended to the message: the adapter name asked for and the adapters
        /// seen, or wgpu's own error; may be empty.
        detail: String,
    },

    /// The adapter refused to create a device.
    #[error("the adapter '{adapter}' could not create a device: {message}")]
    RequestDevice {
        /// The adapter's name.
        adapter: String,
        /// wgpu's error message.
        message: String,
    },

    /// The adapter lacks a feature the operation needs (e.g. SHADER_F64 for f64 matrices).
    #[error("the adapter '{adapter}' lacks {feature}, which {needed_for} needs{hint}")]
    MissingFeature {
        /// The adapter's name.
        adapter: String,
        /// The missing wgpu feature (e.g. `"SHADER_F64"`).
        feature: &'static str,
        /// What needs the feature, in words.
        needed_for: String,
        /// A suggestion for avoiding the need, appended to the message; may be empty.
        hint: &'static str,
    },

    /// A matrix or vector is larger than this adapter can hold or bind.
    #[error("{kernel} needs {limit_name} >= {needed}, and the device has {limit}; create the device with the limits `Gpu::wanted_limits` gives, or use smaller options (workgroup size, block size) or another method")]
    DeviceLimit {
        /// The label of the kernel (pipeline) that exceeds the limit.
        kernel: String,
        /// The name of the `wgpu::Limits` field that is too low.
        limit_name: &'static str,
        /// The value the kernel needs.
        needed: u64,
        /// The device's value of that limit.
        limit: u64,
    },

    /// The plan's method cannot do what was asked (e.g. update its values in place).
    #[error("{method} plans cannot {what} yet: {why}")]
    Unsupported {
        /// The plan's method name.
        method: &'static str,
        /// The refused operation, as a verb phrase.
        what: &'static str,
        /// Why the method cannot do it.
        why: &'static str,
    },

    /// A matrix or vector needs more memory than one binding or buffer of this adapter allows.
    #[error("{what} needs {bytes} bytes, more than this adapter's limit {limit_name} = {limit}; use a smaller matrix or an adapter with larger limits")]
    TooLargeForAdapter {
        /// The array or buffer that is too large, in words.
        what: String,
        /// Its size in bytes.
        bytes: u64,
        /// The name of the `wgpu::Limits` field it exceeds.
        limit_name: &'static str,
        /// The adapter's value of that limit, in bytes.
        limit: u64,
    },

    /// The host could not allocate memory for an array whose size the input dictates (a matrix's
    /// row pointers, a dense vector, the entries being read); `bytes` is the size that was needed.
    #[error("could not allocate {bytes} bytes of host memory for {what}")]
    OutOfHostMemory {
        /// The array that could not be allocated.
        what: &'static str,
        /// The size that was needed, in bytes.
        bytes: u64,
    },

    /// The GPU ran out of memory.
    #[error("the GPU ran out of memory while {during}: {message}")]
    OutOfMemory {
        /// The operation that was running, as a verb phrase.
        during: String,
        /// wgpu's error message.
        message: String,
    },

    /// The device was lost (driver reset, GPU removed, or destroyed).
    #[error("the GPU device was lost ({reason}): {message}; create a new Gpu")]
    DeviceLost {
        /// wgpu's reason code, as text (e.g. `Destroyed`, `Unknown`).
        reason: String,
        /// wgpu's message.
        message: String,
    },

    /// wgpu reported an error: a bug in this library or a broken driver.
    #[error("wgpu reported an error while {during}: {message}")]
    Wgpu {
        /// The operation that was running, as a verb phrase.
        during: String,
        /// wgpu's error message.
        message: String,
    },

    /// Mapping a buffer for reading failed.
    #[error("mapping a GPU buffer failed: {0}")]
    Map(String),

    /// A Matrix Market file declares a size beyond what the reader's limits allow
    /// (`matrix::io::ReadLimits`): checked on the size line, before anything of that size is
    /// allocated.
    #[error("{}:{line}: the file declares {declared} {dimension}, more than the {limit} allowed: {why}", path.display())]
    InputTooLarge {
        /// The file being read.
        path: PathBuf,
        /// The 1-based line of the size line (or, for entries that mirroring a symmetric
        /// triangle makes too many, of the entry that crossed the limit).
        line: usize,
        /// Which size: `"rows"`, `"columns"`, `"entries"` or `"vector elements"`.
        dimension: &'static str,
        /// The size the file declares (for mirrored entries, the count reached).
        declared: u64,
        /// The largest size allowed.
        limit: u64,
        /// Where the limit comes from, in words.
        why: String,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
