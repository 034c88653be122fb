//! Shader assembly: each kernel is one WGSL file, prefixed by the shared pieces it needs and with
//! the scalar type substituted. Tunable sizes are WGSL `override` constants, never copies.

/// How a kernel reduces across a team of lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneMode {
    /// Subgroup operations (`Features::SUBGROUP`).
    Subgroup,
    /// Workgroup memory and barriers; runs everywhere.
    Workgroup,
}

impl LaneMode {
    pub fn name(self) -> &'static str {
        match self {
            LaneMode::Subgroup => "subgroup",
            LaneMode::Workgroup => "workgroup",
        }
    }
}

/// A kernel: its file and which shared pieces it is assembled with.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    pub name: &'static str,
    body: &'static str,
    /// Uses `scalar`, `Coeffs`, `Chunk`, `write_y` from common.wgsl.
    spmv: bool,
    /// Assembled with a lane module: `lanes_of` (teams of lanes) and `team_sum`, from subgroups
    /// or workgroup memory.
    lanes: bool,
    /// Assembled with the team scans matching the lane module (`team_lane`, `team_scan_u32`,
    /// `team_seg_scan`).
    scans: bool,
    /// Assembled with `width_sum` (sums over aligned runs of lanes of any power-of-two width up to
    /// the workgroup) and `lane_slot`, matching the lane module.
    sums: bool,
    /// Assembled with bccoo's workgroup-wide scans (`group_seg_scan`, `group_sum`) matching the
    /// lane module.
    group_scan: bool,
    /// Assembled with `to_words` / `from_words` for the scalar type (the f64 one needs
    /// `SHADER_INT64`).
    scalar_bits: bool,
    /// Assembled once per bccoo block height ([`Kernel::source_for_height`]): `const HEIGHT` and
    /// `rows`, a block row's sums, sized to the height.
    block_rows: bool,
    /// Shared pieces placed before the body (e.g. a binding list common to several kernels).
    pieces: &'static [&'static str],
    /// Override constants and every value the library may give each.
    pub overrides: &'static [(&'static str, &'static [u32])],
    /// Keeps only the combinations the library can produce and adds the overrides derived from
    /// the others (e.g. a buffer size); `None` keeps every combination.
    derive: Option<fn(&mut Vec<(&'static str, u32)>) -> bool>,
}

const COMMON: &str = include_str!("../../shaders/common.wgsl");
/// Prepended to every kernel.
const GRID: &str = include_str!("../../shaders/grid.wgsl");
const LANES_SUBGROUP: &str = include_str!("../../shaders/lanes_subgroup.wgsl");
const LANES_WORKGROUP: &str = include_str!("../../shaders/lanes_workgroup.wgsl");
const CSR_BINDINGS: &str = include_str!("../../shaders/csr_bindings.wgsl");
const CSR_CHUNK: &str = include_str!("../../shaders/csr_chunk.wgsl");
const SCAN_COMMON: &str = include_str!("../../shaders/scan_common.wgsl");
const SCAN_SUBGROUP: &str = include_str!("../../shaders/scan_subgroup.wgsl");
const SCAN_WORKGROUP: &str = include_str!("../../shaders/scan_workgroup.wgsl");
const WIDTH_SUM_SUBGROUP: &str = include_str!("../../shaders/width_sum_subgroup.wgsl");
const WIDTH_SUM_WORKGROUP: &str = include_str!("../../shaders/width_sum_workgroup.wgsl");
const GROUP_SCAN_COMMON: &str = include_str!("../../shaders/bccoo_group_scan_common.wgsl");
const GROUP_SCAN_SUBGROUP: &str = include_str!("../../shaders/bccoo_group_scan_subgroup.wgsl");
const GROUP_SCAN_WORKGROUP: &str = include_str!("../../shaders/bccoo_group_scan_workgroup.wgsl");
const SCALAR_BITS_F32: &str = include_str!("../../shaders/scalar_bits_f32.wgsl");
const SCALAR_BITS_F64: &str = include_str!("../../shaders/scalar_bits_f64.wgsl");
const BCCOO_COMMON: &str = include_str!("../../shaders/bccoo_common.wgsl");
const SURAA_COMMON: &str = include_str!("../../shaders/suraa_common.wgsl");
const SURAA_ROWS: &str = include_str!("../../shaders/suraa_rows.wgsl");
const SPECULATIVE_COMMON: &str = include_str!("../../shaders/speculative_common.wgsl");

/// Workgroup sizes the library chooses from (all powers of two, so team reductions halve cleanly).
pub const WORKGROUP_SIZES: &[u32] = &[64, 128, 256, 512];
/// Team widths for the workgroup-memory path and subgroup sizes the subgroup path accepts.
pub const LANE_WIDTHS: &[u32] = &[4, 8, 16, 32, 64, 128];

pub const CSR_SCALAR: Kernel = plain_spmv_kernel(
    "csr_scalar",
    include_str!("../../shaders/csr_scalar.wgsl"),
    &[CSR_BINDINGS, CSR_CHUNK],
    &[("WG_SIZE", WORKGROUP_SIZES)],
);

pub const CSR_VECTOR: Kernel = Kernel {
    name: "csr_vector",
    body: include_str!("../../shaders/csr_vector.wgsl"),
    spmv: true,
    lanes: true,
    scans: false,
    sums: false,
    group_scan: false,
    scalar_bits: false,
    block_rows: false,
    pieces: &[CSR_BINDINGS, CSR_CHUNK],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES), ("LANES", LANE_WIDTHS)],
    derive: Some(|_| true),
};

/// Strip heights CMRS accepts (row-in-strip takes 4 bits).
pub const CMRS_HEIGHTS: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
/// Buffer columns of the CMRS variants: 0 is one per lane, the rest the smaller buffer's M.
pub const CMRS_BUF_COLS: &[u32] = &[0, 1, 2, 4, 8, 16, 32, 64, 128];

pub const CMRS: Kernel = Kernel {
    name: "cmrs",
    body: include_str!("../../shaders/cmrs.wgsl"),
    spmv: true,
    lanes: true,
    scans: false,
    sums: false,
    group_scan: false,
    scalar_bits: false,
    block_rows: false,
    pieces: &[],
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

/// The long-row passes of the row kernels (src/methods/long_rows.rs): pieces, then rows.
pub const LONG_ROWS: Kernel = plain_spmv_kernel(
    "long_rows",
    include_str!("../../shaders/long_rows.wgsl"),
    &[],
    &[("WG_SIZE", WORKGROUP_SIZES), ("FINISH", &[0, 1])],
);

/// The pass that lets stored zeros meet NaN and ±Inf in x, for formats that skip zero values.
pub const STORED_ZEROS: Kernel = Kernel {
    name: "stored_zeros",
    body: include_str!("../../shaders/stored_zeros.wgsl"),
    spmv: true,
    lanes: false,
    scans: false,
    sums: false,
    group_scan: false,
    scalar_bits: true,
    block_rows: false,
    pieces: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES)],
    derive: None,
};

pub const COPY: Kernel = Kernel {
    name: "copy",
    body: include_str!("../../shaders/copy.wgsl"),
    spmv: false,
    lanes: false,
    scans: false,
    sums: false,
    group_scan: false,
    scalar_bits: false,
    block_rows: false,
    pieces: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES)],
    derive: None,
};

/// Nonzeros per lane and tile (W) of `speculative`: a lane's head flags are one u32.
pub const SPECULATIVE_WORK: &[u32] = &[1, 2, 4, 8, 16, 32];
/// Tiles per team (S) of `speculative`.
pub const SPECULATIVE_TILES: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16];

pub const SPECULATIVE: Kernel = Kernel {
    name: "speculative",
    body: include_str!("../../shaders/speculative.wgsl"),
    spmv: true,
    lanes: true,
    scans: true,
    sums: false,
    group_scan: false,
    scalar_bits: false,
    block_rows: false,
    pieces: &[CSR_BINDINGS, CSR_CHUNK, SPECULATIVE_COMMON],
    overrides: &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("LANES", LANE_WIDTHS),
        ("WORK", SPECULATIVE_WORK),
        ("TILES", SPECULATIVE_TILES),
        ("STAGED", &[0, 1]),
        ("RESOLVE", &[0, 1]),
        ("TILE_ROWS", &[0, 1]),
        ("PAD_RUN", &[16, 32]),
    ],
    derive: None,
};

pub const SPECULATIVE_FINISH: Kernel = plain_spmv_kernel(
    "speculative_finish",
    include_str!("../../shaders/speculative_finish.wgsl"),
    &[SPECULATIVE_COMMON],
    &[("WG_SIZE", WORKGROUP_SIZES)],
);

/// Nonzeros per lane of one workgroup of SURAA's dynamic kernel.
pub const SURAA_DYNAMIC_ITEMS: &[u32] = &[1, 2, 4, 8, 16, 32, 64];
/// Products per lane SURAA's scalar role stages per round (0: rows are read directly).
pub const SURAA_SCALAR_STAGE: &[u32] = &[0, 1, 2, 4, 8, 16];

pub const SURAA: Kernel = Kernel {
    name: "suraa",
    body: include_str!("../../shaders/suraa.wgsl"),
    spmv: true,
    lanes: true,
    scans: false,
    sums: true,
    group_scan: false,
    scalar_bits: false,
    block_rows: false,
    pieces: &[SURAA_COMMON, CSR_BINDINGS, SURAA_ROWS],
    overrides: &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("LANES", LANE_WIDTHS),
        ("DYNAMIC_ITEMS", SURAA_DYNAMIC_ITEMS),
    ],
    derive: None,
};

pub const SURAA_SCALAR: Kernel = plain_spmv_kernel(
    "suraa_scalar",
    include_str!("../../shaders/suraa_scalar.wgsl"),
    &[SURAA_COMMON, CSR_BINDINGS, SURAA_ROWS],
    &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("SCALAR_STAGE", SURAA_SCALAR_STAGE),
        ("GATHER", &[0, 1]),
    ],
);

pub const SURAA_GATHER: Kernel = plain_spmv_kernel(
    "suraa_gather",
    include_str!("../../shaders/suraa_gather.wgsl"),
    &[SURAA_COMMON],
    &[("WG_SIZE", WORKGROUP_SIZES)],
);

pub const SURAA_COMBINE: Kernel = Kernel {
    name: "suraa_combine",
    body: include_str!("../../shaders/suraa_combine.wgsl"),
    spmv: true,
    lanes: true,
    scans: false,
    sums: true,
    group_scan: false,
    scalar_bits: false,
    block_rows: false,
    pieces: &[SURAA_COMMON],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES), ("LANES", LANE_WIDTHS)],
    derive: None,
};

/// Blocks per thread tile of `bccoo` (the paper's strategy-2 tile sizes, and 4); a uniform, not an
/// override.
pub const BCCOO_TILES: &[u32] = &[4, 8, 16, 24, 32, 40, 64, 96, 128];
/// Result-cache rows per invocation of `bccoo` (the paper limits it to 1 and 2).
pub const BCCOO_CACHE_FACTORS: &[u32] = &[1, 2];
/// Spin limits the library sets: the default and 0 (nobody waits; tests of the last workgroup's
/// finishing).
pub const BCCOO_SPIN_LIMITS: &[u32] = &[0, 1 << 20];

pub const BCCOO: Kernel = Kernel {
    name: "bccoo",
    body: include_str!("../../shaders/bccoo.wgsl"),
    spmv: true,
    lanes: true,
    scans: false,
    sums: false,
    group_scan: true,
    scalar_bits: true,
    block_rows: true,
    pieces: &[BCCOO_COMMON],
    overrides: &[
        ("WG_SIZE", WORKGROUP_SIZES),
        ("WIDTH", &[1, 2, 4]),
        ("COLS", &[0, 1, 2]),
        ("STRATEGY", &[1, 2]),
        ("CACHE_FACTOR", BCCOO_CACHE_FACTORS),
        ("SINGLE_PASS", &[0, 1]),
        ("SPIN_LIMIT", BCCOO_SPIN_LIMITS),
    ],
    derive: None,
};

pub const BCCOO_CARRY: Kernel = Kernel {
    name: "bccoo_carry",
    body: include_str!("../../shaders/bccoo_carry.wgsl"),
    spmv: true,
    lanes: true,
    scans: false,
    sums: false,
    group_scan: true,
    scalar_bits: true,
    block_rows: true,
    pieces: &[BCCOO_COMMON],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES)],
    derive: None,
};

pub const BCCOO_COMBINE: Kernel = plain_spmv_kernel(
    "bccoo_combine",
    include_str!("../../shaders/bccoo_combine.wgsl"),
    &[],
    &[
        ("WG_SIZE", &[256]),
        ("HEIGHT", &[1, 2, 3, 4]),
        ("SLICES", &[2, 4, 8, 16, 32]),
        ("MAPPED", &[0, 1]),
    ],
);

const RADIX_COMMON: &str = include_str!("../../shaders/radix_common.wgsl");
const SCAN_U32_COMMON: &str = include_str!("../../shaders/scan_u32_common.wgsl");
const WORKGROUP_SCAN_U32: &str = include_str!("../../shaders/workgroup_scan_u32.wgsl");

/// An SpMV kernel (scalar type f32 or f64) without lane teams, sums or scans.
const fn plain_spmv_kernel(
    name: &'static str,
    body: &'static str,
    pieces: &'static [&'static str],
    overrides: &'static [(&'static str, &'static [u32])],
) -> Kernel {
    Kernel {
        name,
        body,
        spmv: true,
        lanes: false,
        scans: false,
        sums: false,
        group_scan: false,
        scalar_bits: false,
        block_rows: false,
        pieces,
        overrides,
        derive: None,
    }
}

/// A u32 setup kernel: one file, shared pieces, no scalar type, no lane teams.
const fn setup_kernel(
    name: &'static str,
    body: &'static str,
    pieces: &'static [&'static str],
    overrides: &'static [(&'static str, &'static [u32])],
) -> Kernel {
    Kernel {
        name,
        body,
        spmv: false,
        lanes: false,
        scans: false,
        sums: false,
        group_scan: false,
        scalar_bits: false,
        block_rows: false,
        pieces,
        overrides,
        derive: None,
    }
}

/// Keys per invocation of one radix-sort tile.
pub const RADIX_ITEMS: &[u32] = &[8];

pub const SURAA_KEYS: Kernel = setup_kernel(
    "suraa_keys",
    include_str!("../../shaders/suraa_keys.wgsl"),
    &[],
    &[],
);
pub const RADIX_COUNT: Kernel = setup_kernel(
    "radix_count",
    include_str!("../../shaders/radix_count.wgsl"),
    &[RADIX_COMMON],
    &[("ITEMS", RADIX_ITEMS)],
);
pub const RADIX_SCATTER: Kernel = setup_kernel(
    "radix_scatter",
    include_str!("../../shaders/radix_scatter.wgsl"),
    &[RADIX_COMMON],
    &[("ITEMS", RADIX_ITEMS)],
);
pub const SCAN_U32_REDUCE: Kernel = setup_kernel(
    "scan_u32_reduce",
    include_str!("../../shaders/scan_u32_reduce.wgsl"),
    &[WORKGROUP_SCAN_U32, SCAN_U32_COMMON],
    &[],
);
pub const SCAN_U32_DOWN: Kernel = setup_kernel(
    "scan_u32_down",
    include_str!("../../shaders/scan_u32_down.wgsl"),
    &[WORKGROUP_SCAN_U32, SCAN_U32_COMMON],
    &[],
);
pub const SURAA_LENGTHS: Kernel = setup_kernel(
    "suraa_lengths",
    include_str!("../../shaders/suraa_lengths.wgsl"),
    &[],
    &[],
);
pub const SURAA_REARRANGE: Kernel = setup_kernel(
    "suraa_rearrange",
    include_str!("../../shaders/suraa_rearrange.wgsl"),
    &[],
    &[("VAL_WORDS", &[1, 2])],
);
pub const SURAA_PLAN: Kernel = setup_kernel(
    "suraa_plan",
    include_str!("../../shaders/suraa_plan.wgsl"),
    &[SURAA_COMMON, WORKGROUP_SCAN_U32],
    &[],
);

/// Every kernel the library can dispatch.
pub const ALL_KERNELS: &[Kernel] = &[
    CSR_SCALAR,
    CSR_VECTOR,
    CMRS,
    LONG_ROWS,
    STORED_ZEROS,
    SPECULATIVE,
    SPECULATIVE_FINISH,
    SURAA,
    SURAA_SCALAR,
    SURAA_GATHER,
    SURAA_COMBINE,
    SURAA_KEYS,
    RADIX_COUNT,
    RADIX_SCATTER,
    SCAN_U32_REDUCE,
    SCAN_U32_DOWN,
    SURAA_LENGTHS,
    SURAA_PLAN,
    SURAA_REARRANGE,
    BCCOO,
    BCCOO_CARRY,
    BCCOO_COMBINE,
    COPY,
];

use crate::methods::bccoo::format::BLOCK_HEIGHTS;

/// What a `block_rows` kernel is prefixed with for height `h`. Height 1 keeps a bare scalar: a
/// vec4 for every height cost f64 1x1 blocks 8% on an H100, and the driver cannot drop the unused
/// lanes of shuffles and workgroup arrays.
fn block_rows_prelude(h: u32) -> String {
    let (ty, get, put) = if h == 1 {
        ("scalar".to_owned(), "v", "*v = s")
    } else {
        (format!("vec{h}<scalar>"), "v[r]", "(*v)[r] = s")
    };
    format!(
        "const HEIGHT: u32 = {h}u;\nalias rows = {ty};\n\
         fn row_of(v: rows, r: u32) -> scalar {{ return {get}; }}\n\
         fn put_row(v: ptr<function, rows>, r: u32, s: scalar) {{ {put}; }}\n"
    )
}

impl Kernel {
    /// The assembled WGSL for one scalar type and lane mode (ignored by kernels without teams).
    /// Kernels with block rows are assembled per height instead ([`Kernel::source_for_height`]).
    pub fn source(&self, scalar: &str, lanes: LaneMode) -> String {
        assert!(
            !self.block_rows,
            "{} is assembled per block height (source_for_height)",
            self.name
        );
        self.assemble(scalar, lanes, "")
    }

    /// The assembled WGSL of a kernel with block rows, for blocks `h` rows high.
    pub fn source_for_height(&self, scalar: &str, lanes: LaneMode, h: u32) -> String {
        assert!(
            self.block_rows && BLOCK_HEIGHTS.contains(&h),
            "{}: no block rows of height {h}",
            self.name
        );
        self.assemble(scalar, lanes, &block_rows_prelude(h))
    }

    /// The block heights this kernel is assembled for: none for kernels without block rows.
    pub fn block_heights(&self) -> &'static [u32] {
        if self.block_rows {
            BLOCK_HEIGHTS
        } else {
            &[]
        }
    }

    fn assemble(&self, scalar: &str, lanes: LaneMode, prelude: &str) -> String {
        let mut s = String::from(GRID);
        s.push_str(prelude);
        if self.spmv {
            s.push_str(COMMON);
            s.push('\n');
        }
        if self.lanes {
            s.push_str(match lanes {
                LaneMode::Subgroup => LANES_SUBGROUP,
                LaneMode::Workgroup => LANES_WORKGROUP,
            });
            s.push('\n');
        }
        if self.scans {
            s.push_str(SCAN_COMMON);
            s.push('\n');
            s.push_str(match lanes {
                LaneMode::Subgroup => SCAN_SUBGROUP,
                LaneMode::Workgroup => SCAN_WORKGROUP,
            });
            s.push('\n');
        }
        if self.sums {
            s.push_str(match lanes {
                LaneMode::Subgroup => WIDTH_SUM_SUBGROUP,
                LaneMode::Workgroup => WIDTH_SUM_WORKGROUP,
            });
            s.push('\n');
        }
        if self.group_scan {
            s.push_str(GROUP_SCAN_COMMON);
            s.push('\n');
            s.push_str(match lanes {
                LaneMode::Subgroup => GROUP_SCAN_SUBGROUP,
                LaneMode::Workgroup => GROUP_SCAN_WORKGROUP,
            });
            s.push('\n');
        }
        if self.scalar_bits {
            s.push_str(if scalar == "f64" {
                SCALAR_BITS_F64
            } else {
                SCALAR_BITS_F32
            });
            s.push('\n');
        }
        for piece in self.pieces {
            s.push_str(piece);
            s.push('\n');
        }
        s.push_str(self.body);
        // Only the alias: a blanket replace would also rename identifiers such as SCALAR_STAGE.
        s.replace(
            "alias scalar = SCALAR;",
            &format!("alias scalar = {scalar};"),
        )
    }

    /// Whether the `scalar` variant needs `SHADER_INT64` (bit casts of f64).
    pub fn needs_int64(&self, scalar: &str) -> bool {
        self.scalar_bits && scalar == "f64"
    }

    /// The variant label used in pipeline keys and test messages.
    pub fn variant(&self, scalar: &str, lanes: LaneMode) -> String {
        if self.lanes {
            format!("{scalar},{}", lanes.name())
        } else if self.spmv {
            scalar.to_owned()
        } else {
            String::new()
        }
    }

    /// Every combination of override values the library can produce for this kernel (team
    /// widths never exceed the workgroup).
    pub fn override_sets(&self) -> Vec<Vec<(&'static str, u32)>> {
        let mut sets: Vec<Vec<(&'static str, u32)>> = vec![vec![]];
        for &(name, values) in self.overrides {
            sets = sets
                .into_iter()
                .flat_map(|s| {
                    values.iter().map(move |&v| {
                        let mut s = s.clone();
                        s.push((name, v));
                        s
                    })
                })
                .collect();
        }
        let get = |s: &[(&str, u32)], n: &str| s.iter().find(|p| p.0 == n).map(|p| p.1);
        sets.retain(|s| match (get(s, "WG_SIZE"), get(s, "LANES")) {
            (Some(w), Some(l)) => l <= w,
            _ => true,
        });
        if let Some(derive) = self.derive {
            sets.retain_mut(|s| derive(s));
        }
        sets
    }

    /// The (scalar, lane mode) pairs this kernel is built in.
    pub fn variants(&self) -> Vec<(&'static str, LaneMode)> {
        let scalars: &[&str] = if self.spmv { &["f32", "f64"] } else { &["u32"] };
        let modes: &[LaneMode] = if self.lanes {
            &[LaneMode::Subgroup, LaneMode::Workgroup]
        } else {
            &[LaneMode::Workgroup]
        };
        scalars
            .iter()
            .flat_map(|&s| modes.iter().map(move |&m| (s, m)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Size in bytes of the WGSL struct `name` in an assembled kernel.
    fn wgsl_struct_size(src: &str, name: &str) -> u32 {
        let module = naga::front::wgsl::parse_str(src).unwrap();
        let ty = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no struct {name}"));
        ty.1.inner.size(module.to_ctx())
    }

    #[test]
    fn host_mirrors_match_wgsl_struct_sizes() {
        for (scalar, size) in [("f32", 4), ("f64", 8)] {
            let src = CSR_SCALAR.source(scalar, LaneMode::Workgroup);
            // `Coeffs` is uploaded as `[alpha, beta]` of the scalar type (plan.rs).
            assert_eq!(wgsl_struct_size(&src, "Coeffs"), 2 * size);
            assert_eq!(
                wgsl_struct_size(&src, "Chunk") as usize,
                std::mem::size_of::<crate::methods::common::ChunkUniform>()
            );
        }
    }
}
