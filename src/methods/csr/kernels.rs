//! The CSR baselines' kernels (shaders/csr/).

use crate::kernel::{Kernel, LANE_WIDTHS, WORKGROUP_SIZES};

/// `csr-scalar`: one invocation per row.
pub const CSR_SCALAR: Kernel = Kernel {
    name: "csr_scalar",
    file: "csr/scalar",
    heights: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES)],
    derive: None,
};

/// `csr-vector`: one team of lanes per row, partial sums reduced across the team.
pub const CSR_VECTOR: Kernel = Kernel {
    name: "csr_vector",
    file: "csr/vector",
    heights: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES), ("LANES", LANE_WIDTHS)],
    derive: None,
};

/// Invocations per row of the SpMM kernel (columns taken at once).
pub const SPMM_COLS: &[u32] = &[1, 2, 4, 8, 16, 32];

/// SpMM (`Y = αAX + βY`, dense X and Y of k columns) on the CSR arrays: `COLS` invocations per
/// row, each entry read once for all k columns.
pub const CSR_SPMM: Kernel = Kernel {
    name: "csr_spmm",
    file: "csr/spmm",
    heights: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES), ("COLS", SPMM_COLS)],
    derive: None,
};

/// SpMM for a column-major X: one invocation per row and block of 4 columns.
pub const CSR_SPMM_BY_ROW: Kernel = Kernel {
    name: "csr_spmm_by_row",
    file: "csr/spmm_by_row",
    heights: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES)],
    derive: None,
};

/// SpMM's rows too long for [`CSR_SPMM`]: pieces summed by workgroups (`FINISH` 0), then added
/// into Y per long row and column (`FINISH` 1).
pub const CSR_SPMM_LONG: Kernel = Kernel {
    name: "csr_spmm_long",
    file: "csr/spmm_long",
    heights: &[],
    overrides: &[
        ("WG_SIZE", &[256]),
        ("COLS", SPMM_COLS),
        ("FINISH", &[0, 1]),
    ],
    derive: None,
};

/// Every kernel of the CSR baselines, for validation.
pub const KERNELS: &[Kernel] = &[
    CSR_SCALAR,
    CSR_VECTOR,
    CSR_SPMM,
    CSR_SPMM_BY_ROW,
    CSR_SPMM_LONG,
];
