//! [`Method`]: the SpMV methods by name, declared once in [`method_registry!`], which the
//! methods' folders (`methods/`) and the enum both read. A low module of its own, so that the
//! cost model (`select`), the options and the methods all name methods without importing one
//! another.

use crate::{Error, Result};

/// Every method once: its variant, its name and the folder under `methods/` that prepares it
/// (a `prepare(gpu, a, method, opts)` and a `KERNELS` list). Adding a method is its folder plus
/// one line here. Calls `$callback!` with the list.
macro_rules! method_registry {
    ($callback:ident) => {
        $callback! {
            /// One invocation per row (baseline).
            CsrScalar = "csr-scalar" => csr,
            /// One SIMD group (subgroup, or a team of lanes in workgroup memory) per row (baseline).
            CsrVector = "csr-vector" => csr,
            /// Compressed multirow storage: one SIMD group per strip of rows (Koza et al.).
            Cmrs = "cmrs" => cmrs,
            /// CMRS with the smaller buffer and zero-padded strips of the paper's section 6.7.
            CmrsPadded = "cmrs-padded" => cmrs,
            /// Speculative segmented sum on plain CSR, finished on the host or the GPU (Liu & Vinter).
            Speculative = "speculative" => speculative,
            /// Rows sorted by length and cut into Freedman–Diaconis segments, run by scalar, vector and
            /// "dynamic" kernels (SURAA).
            Suraa = "suraa" => suraa,
            /// Bit-flag blocked COO with the matrix-based segmented sum and adjacent synchronization
            /// between workgroups (yaSpMV).
            Bccoo = "bccoo" => bccoo,
            /// BCCOO over vertical slices stacked top-down, with a pass that adds the slices' results
            /// (yaSpMV's BCCOO+).
            BccooPlus = "bccoo-plus" => bccoo,
        }
    };
}
pub(crate) use method_registry;

macro_rules! declare_method {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal => $module:ident, )*) => {
        /// An SpMV method.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Method {
            $( $(#[$doc])* $variant, )*
            /// Chosen for this matrix, adapter and expected number of products (see
            /// [`crate::select`]).
            Auto,
        }

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
method_registry!(declare_method);

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
