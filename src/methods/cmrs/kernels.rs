//! The CMRS kernel (shaders/cmrs/) and the workgroup buffer it sizes.

use crate::kernel::{Kernel, LANE_WIDTHS, WORKGROUP_SIZES};

/// Strip heights CMRS accepts (row-in-strip takes 4 bits).
pub const CMRS_HEIGHTS: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
/// Buffer columns of the CMRS variants: 0 is one per lane, the rest the smaller buffer's M.
pub const CMRS_BUF_COLS: &[u32] = &[0, 1, 2, 4, 8, 16, 32, 64, 128];

/// The CMRS kernel: one team of lanes per strip of rows, products summed in a workgroup buffer.
pub const CMRS: Kernel = Kernel {
    name: "cmrs",
    file: "cmrs/cmrs",
    heights: &[],
    overrides: &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("LANES", LANE_WIDTHS),
        ("HEIGHT", CMRS_HEIGHTS),
        ("BUF_COLS", CMRS_BUF_COLS),
        ("PACKED", &[0, 1]),
    ],
    derive: Some(|set| {
        let get = |s: &[(&str, u32)], n: &str| s.iter().find(|p| p.0 == n).unwrap().1;
        let (wg, lanes, h, m) = (
            get(set, "WG_SIZE"),
            get(set, "LANES"),
            get(set, "HEIGHT"),
            get(set, "BUF_COLS"),
        );
        if m > lanes {
            return false;
        }
        set.push(("CELLS", cmrs_cells(wg, lanes, h, m)));
        true
    }),
};

/// Workgroup buffer cells of the CMRS kernel: per team, `height` rows of `cols + 1` cells (the
/// extra cell staggers rows across memory banks). With subgroups larger than `lanes` there are
/// fewer, wider teams, which need no more cells.
pub fn cmrs_cells(wg: u32, lanes: u32, height: u32, buf_cols: u32) -> u32 {
    let cols = if buf_cols == 0 { lanes } else { buf_cols };
    wg / lanes * height * (cols + 1)
}

/// The GPU build of the CMRS format from a CSR matrix in GPU buffers.
pub const CMRS_BUILD: Kernel = Kernel {
    name: "cmrs_build",
    file: "cmrs/build",
    heights: &[],
    overrides: &[("PASS", &[0, 1]), ("VAL_WORDS", &[1, 2])],
    derive: None,
};

/// The GPU build of `cmrs-padded`'s strips from a CSR matrix in GPU buffers.
pub const CMRS_BUILD_PADDED: Kernel = Kernel {
    name: "cmrs_build_padded",
    file: "cmrs/build_padded",
    heights: &[],
    overrides: &[("PASS", &[0, 1, 2, 3]), ("VAL_WORDS", &[1, 2])],
    derive: None,
};

/// The rows that strips built on the GPU leave to the long-row passes, gathered on the GPU.
pub const CMRS_BUILD_LONG: Kernel = Kernel {
    name: "cmrs_build_long",
    file: "cmrs/build_long",
    heights: &[],
    overrides: &[("PASS", &[0, 1]), ("VAL_WORDS", &[1, 2])],
    derive: None,
};

/// Every kernel of `cmrs` and `cmrs-padded`, for validation.
pub const KERNELS: &[Kernel] = &[CMRS, CMRS_BUILD, CMRS_BUILD_PADDED, CMRS_BUILD_LONG];
