//! The SpMV methods. Each has a host-side format build (pure CPU) and a GPU plan builder that
//! turns it into dispatch stages.

pub mod bccoo;
pub mod cmrs;
pub(crate) mod common;
pub mod csr;
pub(crate) mod long_rows;
pub mod speculative;
pub(crate) mod stored_zeros;
pub mod suraa;

use crate::{Error, Result};

/// An SpMV method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// One invocation per row (baseline).
    CsrScalar,
    /// One SIMD group (subgroup, or a team of lanes in workgroup memory) per row (baseline).
    CsrVector,
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
    /// Chosen from the matrix's row statistics and the adapter (see [`crate::select`]).
    Auto,
}

impl Method {
    /// Every concrete method, in report order.
    pub const ALL: &'static [Method] = &[
        Method::CsrScalar,
        Method::CsrVector,
        Method::Cmrs,
        Method::CmrsPadded,
        Method::Speculative,
        Method::Suraa,
        Method::Bccoo,
        Method::BccooPlus,
    ];

    /// The name used on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Method::CsrScalar => "csr-scalar",
            Method::CsrVector => "csr-vector",
            Method::Cmrs => "cmrs",
            Method::CmrsPadded => "cmrs-padded",
            Method::Speculative => "speculative",
            Method::Suraa => "suraa",
            Method::Bccoo => "bccoo",
            Method::BccooPlus => "bccoo-plus",
            Method::Auto => "auto",
        }
    }

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

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which cross-lane reduction a kernel uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LanePolicy {
    /// Subgroup operations when the device has them, else workgroup memory.
    #[default]
    Auto,
    /// Subgroup operations; an error if the device lacks `Features::SUBGROUP`.
    Subgroup,
    /// Workgroup memory and barriers, even where subgroups exist.
    Workgroup,
}

/// Parameters shared by the methods; `None` means "choose for this adapter and matrix".
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    pub lanes: LanePolicy,
    /// Invocations per workgroup (64, 128, 256 or 512).
    pub workgroup_size: Option<u32>,
    /// Lanes per row on the workgroup-memory path of `csr-vector` (4 to 128, a power of two);
    /// lanes per tile (T) on the workgroup-memory path of `speculative`.
    pub lanes_per_row: Option<u32>,
    /// Largest size of one matrix array on the GPU; larger matrices are split into row chunks.
    /// Defaults to the adapter's storage-binding limit; lower it to test chunking.
    pub max_chunk_bytes: Option<u64>,
    /// Parameters of `cmrs` and `cmrs-padded`.
    pub cmrs: cmrs::CmrsOptions,
    /// Parameters of `speculative`.
    pub speculative: speculative::SpeculativeOptions,
    /// Parameters of `suraa`.
    pub suraa: suraa::SuraaOptions,
    /// Parameters of `bccoo` and `bccoo-plus`.
    pub bccoo: bccoo::BccooOptions,
    /// How many products the caller expects to run with the plan; `Method::Auto` minimises
    /// setup + this many products. Default [`crate::select::DEFAULT_EXPECTED_PRODUCTS`].
    pub expected_products: Option<u64>,
    /// How `Method::Auto` chooses (profile, timed choice, remembered choices).
    pub auto: crate::select::AutoOptions,
}
