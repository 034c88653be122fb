//! Passes several methods append (shaders/passes/).

use crate::kernel::{Kernel, WORKGROUP_SIZES};

/// The long-row passes of the row kernels: pieces, then rows.
pub const LONG_ROWS: Kernel = Kernel {
    name: "long_rows",
    file: "passes/long_rows",
    heights: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES), ("FINISH", &[0, 1])],
    derive: None,
};

/// The long-row passes' description built on the GPU from a CSR matrix's row pointers.
pub const LONG_ROWS_BUILD: Kernel = Kernel {
    name: "long_rows_build",
    file: "passes/long_rows_build",
    heights: &[],
    overrides: &[("PASS", &[0, 1, 2])],
    derive: None,
};

pub const KERNELS: &[Kernel] = &[LONG_ROWS, LONG_ROWS_BUILD];
