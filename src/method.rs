//! [`Method`]: the SpMV methods by name, and [`method_registry!`], the list that names and
//! dispatches them. A low module of its own, so that the cost model, the options and the
//! methods all name methods without importing one another.

use crate::{Error, Result};

/// An SpMV method. Each concrete one has a line in the registry below (the compiler checks that
/// the two lists agree).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// One invocation per row (baseline).
    CsrScalar,
    /// One SIMD group (subgroup, or a team of lanes in workgroup memory) per row (baseline).
    CsrVector,
    /// Rows packed into tiles of equal entry counts, one workgroup per tile, each tile's
    /// gathers of `x` in column order and its rows summed in workgroup memory (CSR-Stream,
    /// Greathouse & Daga).
    CsrStream,
    /// Compressed multirow storage: one SIMD group per strip of rows (Koza et al.).
    Cmrs,
    /// CMRS with the smaller buffer and zero-padded strips of the paper's section 6.7.
    CmrsPadded,
    /// Speculative segmented sum on plain CSR, finished on the host or the GPU (Liu & Vinter).
    Speculative,
    /// Rows sorted by length and cut into Freedman–Diaconis segments, run by scalar, vector and
    /// "dynamic" kernels (SURAA).
    Suraa,
    /// Bit-flag blocked COO with the matrix-based segmented sum and adjacent synchronization
    /// between workgroups (yaSpMV).
    Bccoo,
    /// BCCOO over vertical slices stacked top-down, with a pass that adds the slices' results
    /// (yaSpMV's BCCOO+).
    BccooPlus,
    /// Chosen for this matrix, adapter and expected number of products (the cost model of the
    /// crate's `select` module).
    Auto,
}

/// Every concrete method once: its variant, its name and the folder under `methods/` that
/// prepares it (a `prepare(gpu, a, method, opts)` and a `KERNELS` list). Adding a method is its
/// variant above, one line here, and its folder. Calls `$callback!` with the list.
macro_rules! method_registry {
    ($callback:ident) => {
        $callback! {
            CsrScalar = "csr-scalar" => csr,
            CsrVector = "csr-vector" => csr,
            CsrStream = "csr-stream" => csr_stream,
            Cmrs = "cmrs" => cmrs,
            CmrsPadded = "cmrs-padded" => cmrs,
            Speculative = "speculative" => speculative,
            Suraa = "suraa" => suraa,
            Bccoo = "bccoo" => bccoo,
            BccooPlus = "bccoo-plus" => bccoo,
        }
    };
}
pub(crate) use method_registry;

macro_rules! method_names {
    ($( $variant:ident = $name:literal => $module:ident, )*) => {
        impl Method {
            /// Every concrete method, in report order.
            pub const ALL: &'static [Method] = &[$(Method::$variant),*];

            /// The name used on command lines and in reports.
            pub fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Auto => "auto",
                }
            }
        }
    };
}
method_registry!(method_names);

impl Method {
    /// Looks a method up by [`name`](Self::name).
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .chain([Method::Auto])
            .find(|m| m.name() == name)
            .ok_or_else(|| Error::UnknownName {
                what: "method",
                name: name.to_owned(),
                expected: Self::ALL
                    .iter()
                    .chain(&[Method::Auto])
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::from_name(s)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
