//! WGSL assembly. Each kernel is one file under `shaders/` that declares the files it needs with
//! `#import path` lines (as vello's shaders do); a [`Variant`] (kernel, scalar type, lane mode,
//! block height, override values) yields both its source and its pipeline key, so a key cannot
//! miss an input of the source. Tunable sizes are WGSL `override` constants, never copies.
//!
//! Import paths may hold placeholders filled from the variant: `{lanes}` (`subgroup` or
//! `workgroup`), `{scalar}` (`f32` or `f64`) and `{height}` (a generated block-rows prelude).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

include!(concat!(env!("OUT_DIR"), "/shader_files.rs"));

/// How a kernel reduces across a team of lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneMode {
    /// Subgroup operations (`Features::SUBGROUP`).
    Subgroup,
    /// Workgroup memory and barriers; runs everywhere.
    Workgroup,
}

impl LaneMode {
    /// The mode's name as it appears in import paths and labels (`subgroup`, `workgroup`).
    pub fn name(self) -> &'static str {
        match self {
            LaneMode::Subgroup => "subgroup",
            LaneMode::Workgroup => "workgroup",
        }
    }
}

/// Override constants and every value the library may give each.
pub type Overrides = &'static [(&'static str, &'static [u32])];
/// Override values of one pipeline.
pub type OverrideSet = Vec<(&'static str, u32)>;

/// A kernel: its file under `shaders/` (which names what it imports), its override ranges, and
/// the block heights it is assembled for (empty unless it imports a `{height}` prelude).
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    /// The kernel's name, used in pipeline keys, labels and messages.
    pub name: &'static str,
    /// Path under `shaders/` without `.wgsl`.
    pub file: &'static str,
    /// Block heights of kernels importing `…_{height}`: one source per height.
    pub heights: &'static [u32],
    /// The kernel's override constants, each with every value the library may give it.
    pub overrides: Overrides,
    /// Keeps only the combinations the library can produce and adds the overrides derived from
    /// the others (e.g. a buffer size); `None` keeps every combination.
    pub derive: Option<fn(&mut OverrideSet) -> bool>,
}

/// Workgroup sizes the library chooses from (all powers of two, so team reductions halve cleanly).
pub const WORKGROUP_SIZES: &[u32] = &[64, 128, 256, 512];
/// Team widths for the workgroup-memory path and subgroup sizes the subgroup path accepts.
pub const LANE_WIDTHS: &[u32] = &[4, 8, 16, 32, 64, 128];

/// The file that makes a kernel one assembled per value type (f32, f64): SpMV kernels (through
/// `shared/common`) and vector operations.
const SCALAR_FILE: &str = "shared/scalar";

fn file(path: &str) -> &'static str {
    FILES
        .iter()
        .find(|(p, _)| *p == path)
        .unwrap_or_else(|| panic!("no shader file shaders/{path}.wgsl"))
        .1
}

/// The `#import` paths a file declares, in order, placeholders unfilled.
fn imports_of(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("#import "))
        .map(str::trim)
}

/// The prelude a `{height}` import stands for: `const HEIGHT`, and `rows`, a block row's sums.
/// Height 1 keeps a bare scalar, so the driver has no unused vector lanes to carry.
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

/// One buildable form of a kernel: what a pipeline is compiled from and cached under.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The kernel this is a form of.
    pub kernel: Kernel,
    /// The WGSL value type: `f32` or `f64` for SpMV kernels, `u32` for the others.
    pub scalar: &'static str,
    /// The team reduction path (always `Workgroup` for kernels without teams).
    pub lanes: LaneMode,
    /// The block height, for kernels assembled per height; `None` otherwise.
    pub height: Option<u32>,
    /// The values given to the kernel's override constants.
    pub overrides: Vec<(&'static str, u32)>,
    /// Whether α and β come from immediate data (`var<immediate>`, `Features::IMMEDIATES`)
    /// instead of the kernel's uniform binding; only for kernels that read them.
    pub immediate_coeffs: bool,
}

/// The declaration that makes a kernel read α and β from a binding; its immediate form drops it
/// for [`IMMEDIATE_COEFFS`].
const UNIFORM_COEFFS: &str = "var<uniform> coeffs: Coeffs;";
/// α and β as immediate data, set with each product instead of written into a buffer.
const IMMEDIATE_COEFFS: &str = "var<immediate> coeffs: Coeffs;";

/// Key of a compiled pipeline: every input of the variant's source and constants.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PipelineKey {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The WGSL value type the source was assembled for.
    pub scalar: &'static str,
    /// The team reduction path; `None` for kernels without teams.
    pub lanes: Option<LaneMode>,
    /// The block height, for kernels assembled per height.
    pub height: Option<u32>,
    /// The values given to the kernel's override constants.
    pub overrides: Vec<(&'static str, u32)>,
    /// Whether α and β come from immediate data.
    pub immediate_coeffs: bool,
}

impl PipelineKey {
    /// The key as one line of the kernel list kept beside a pipeline cache:
    /// `name scalar lanes height overrides`, `-` for an input the kernel does not take, and
    /// ` immediate` after them for α and β in immediate data, e.g.
    /// `cmrs f32 subgroup - WG_SIZE=256,LANES=32,HEIGHT=4,BUF_COLS=0,PACKED=1,CELLS=1280`.
    pub(crate) fn to_line(&self) -> String {
        let overrides: Vec<String> = self
            .overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!(
            "{} {} {} {} {}{}",
            self.kernel,
            self.scalar,
            self.lanes.map_or("-", LaneMode::name),
            self.height.map_or("-".to_owned(), |h| h.to_string()),
            if overrides.is_empty() {
                "-".to_owned()
            } else {
                overrides.join(",")
            },
            if self.immediate_coeffs {
                " immediate"
            } else {
                ""
            }
        )
    }
}

impl Variant {
    /// A variant of `kernel`; inputs the kernel does not use are normalised away, so that equal
    /// sources share one key.
    pub fn new(
        kernel: Kernel,
        scalar: &'static str,
        lanes: LaneMode,
        overrides: Vec<(&'static str, u32)>,
    ) -> Self {
        let scalar = if kernel.per_scalar() { scalar } else { "u32" };
        let lanes = if kernel.uses_lanes() {
            lanes
        } else {
            LaneMode::Workgroup
        };
        Self {
            kernel,
            scalar,
            lanes,
            height: None,
            overrides,
            immediate_coeffs: false,
        }
    }

    /// The same variant reading α and β from immediate data (for kernels that read them; others
    /// are returned unchanged).
    pub fn with_immediate_coeffs(mut self) -> Self {
        self.immediate_coeffs = self.kernel.reads_coeffs();
        self
    }

    /// The variant a kernel-list line names ([`PipelineKey::to_line`]) among `kernels`, or
    /// `None` where the line names nothing this crate can build: another version's kernel or
    /// override, or a value the library never gives (so a list edited by hand compiles nothing
    /// the library would not).
    pub(crate) fn from_line(line: &str, kernels: &[Kernel]) -> Option<Variant> {
        let mut fields = line.split(' ');
        let (name, scalar, lanes, height, overrides) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        let immediate = match fields.next() {
            None => false,
            Some("immediate") => true,
            Some(_) => return None,
        };
        if fields.next().is_some() {
            return None;
        }
        let kernel = *kernels.iter().find(|k| k.name == name)?;
        let scalar = ["f32", "f64", "u32"].into_iter().find(|&s| s == scalar)?;
        let lanes = match lanes {
            "subgroup" => LaneMode::Subgroup,
            _ => LaneMode::Workgroup,
        };
        let mut given: Vec<(&str, u32)> = Vec::new();
        if overrides != "-" {
            for pair in overrides.split(',') {
                let (k, v) = pair.split_once('=')?;
                given.push((k, v.parse().ok()?));
            }
        }
        // The kernel's own overrides at values it lists; the rest must be what `derive` makes
        // of them.
        let mut set: OverrideSet = Vec::new();
        for &(k, v) in &given {
            if let Some(&(name, values)) = kernel.overrides.iter().find(|o| o.0 == k) {
                if !values.contains(&v) {
                    return None;
                }
                set.push((name, v));
            }
        }
        let mut full = set.clone();
        if let Some(derive) = kernel.derive {
            if !derive(&mut full) {
                return None;
            }
        }
        if full.len() != given.len() {
            return None;
        }
        let overrides = given
            .iter()
            .map(|&(k, v)| full.iter().find(|&&(n, w)| n == k && w == v).copied())
            .collect::<Option<OverrideSet>>()?;
        let mut variant = Variant::new(kernel, scalar, lanes, overrides);
        if height != "-" {
            let h: u32 = height.parse().ok()?;
            if !kernel.heights.contains(&h) {
                return None;
            }
            variant = variant.with_height(h);
        } else if !kernel.heights.is_empty() {
            return None;
        }
        if immediate {
            variant = variant.with_immediate_coeffs();
        }
        (variant.key().to_line() == line).then_some(variant)
    }

    /// The same variant assembled for blocks `h` rows high.
    pub fn with_height(mut self, h: u32) -> Self {
        self.height = Some(h);
        self
    }

    /// The key this variant's compiled pipeline is cached under.
    pub fn key(&self) -> PipelineKey {
        PipelineKey {
            kernel: self.kernel.name,
            scalar: self.scalar,
            lanes: self.kernel.uses_lanes().then_some(self.lanes),
            height: self.height,
            overrides: self.overrides.clone(),
            immediate_coeffs: self.immediate_coeffs,
        }
    }

    /// A short label for pipelines and messages, e.g. `bccoo[f32,subgroup,h2]`.
    pub fn label(&self) -> String {
        let mut parts = vec![self.scalar.to_owned()];
        if self.kernel.uses_lanes() {
            parts.push(self.lanes.name().to_owned());
        }
        if let Some(h) = self.height {
            parts.push(format!("h{h}"));
        }
        if self.immediate_coeffs {
            parts.push("immediate".to_owned());
        }
        format!("{}[{}]", self.kernel.name, parts.join(","))
    }

    /// The assembled WGSL: the kernel's file after everything it imports, each file once.
    pub fn source(&self) -> String {
        assert_eq!(
            self.height.is_some(),
            !self.kernel.heights.is_empty(),
            "{}: a block height is needed exactly for kernels assembled per height",
            self.kernel.name
        );
        if let Some(h) = self.height {
            assert!(
                self.kernel.heights.contains(&h),
                "{}: no block rows of height {h}",
                self.kernel.name
            );
        }
        let mut out = String::new();
        let mut seen = HashSet::new();
        self.append(self.kernel.file, &mut seen, &mut out);
        // Only the alias: a blanket replace would also rename identifiers such as SCALAR_STAGE.
        let out = out.replace(
            "alias scalar = SCALAR;",
            &format!("alias scalar = {};", self.scalar),
        );
        if !self.immediate_coeffs {
            return out;
        }
        // The binding's whole line (its `@group @binding` included) becomes the immediate data.
        let mut replaced = 0;
        let lines: Vec<&str> = out
            .lines()
            .map(|l| {
                if l.trim_start().starts_with("@group") && l.trim_end().ends_with(UNIFORM_COEFFS) {
                    replaced += 1;
                    IMMEDIATE_COEFFS
                } else {
                    l
                }
            })
            .collect();
        assert_eq!(
            replaced, 1,
            "{}: α and β must be declared once as `{UNIFORM_COEFFS}`",
            self.kernel.name
        );
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }

    fn fill(&self, path: &str) -> String {
        path.replace("{lanes}", self.lanes.name())
            .replace("{scalar}", self.scalar)
    }

    fn append(&self, path: &str, seen: &mut HashSet<String>, out: &mut String) {
        if path.contains("{height}") {
            if seen.insert(path.to_owned()) {
                out.push_str(&block_rows_prelude(self.height.unwrap_or(1)));
            }
            return;
        }
        let path = self.fill(path);
        if !seen.insert(path.clone()) {
            return;
        }
        let text = file(&path);
        for dep in imports_of(text) {
            self.append(dep, seen, out);
        }
        for line in text.lines().filter(|l| !l.trim().starts_with("#import ")) {
            out.push_str(line);
            out.push('\n');
        }
    }
}

impl Kernel {
    /// Every file this kernel reads, placeholders unfilled (`{height}` kept as written).
    fn closure(&self) -> &'static [String] {
        fn walk(path: &str, out: &mut Vec<String>) {
            if out.iter().any(|p| p == path) {
                return;
            }
            out.push(path.to_owned());
            if path.contains("{height}") {
                return;
            }
            // Placeholders do not change which files a file imports, only which twin is read.
            let concrete = path
                .replace("{lanes}", "workgroup")
                .replace("{scalar}", "f32");
            for dep in imports_of(file(&concrete)) {
                walk(dep, out);
            }
        }
        // Walked once per kernel file: every pipeline lookup asks (a few kernels' worth of
        // imports, kept for the process).
        type Closures = HashMap<&'static str, &'static [String]>;
        static CLOSURES: OnceLock<Mutex<Closures>> = OnceLock::new();
        let mut map = crate::lock(CLOSURES.get_or_init(Default::default));
        map.entry(self.file).or_insert_with(|| {
            let mut out = Vec::new();
            walk(self.file, &mut out);
            Box::leak(out.into_boxed_slice())
        })
    }

    /// A kernel built in f32 and f64 (SpMV kernels, vector operations); the others work on u32
    /// data only.
    pub fn per_scalar(&self) -> bool {
        self.closure().iter().any(|p| p == SCALAR_FILE)
    }

    /// Whether the kernel reads α and β (`coeffs`, bound as a uniform buffer unless its variant
    /// takes them as immediate data).
    pub fn reads_coeffs(&self) -> bool {
        self.closure().iter().any(|p| {
            let concrete = p.replace("{lanes}", "workgroup").replace("{scalar}", "f32");
            !p.contains("{height}") && file(&concrete).contains(UNIFORM_COEFFS)
        })
    }

    /// Whether the kernel has a subgroup and a workgroup-memory variant.
    pub fn uses_lanes(&self) -> bool {
        self.closure().iter().any(|p| p.contains("{lanes}"))
    }

    /// Whether the `scalar` variant needs `SHADER_INT64` (bit casts of f64).
    pub fn needs_int64(&self, scalar: &str) -> bool {
        scalar == "f64" && self.closure().iter().any(|p| p.contains("{scalar}"))
    }

    /// The assembled WGSL for one scalar type and lane mode (ignored by kernels without teams).
    /// Kernels with block rows are assembled per height instead ([`Kernel::source_for_height`]).
    pub fn source(&self, scalar: &'static str, lanes: LaneMode) -> String {
        Variant::new(*self, scalar, lanes, vec![]).source()
    }

    /// The assembled WGSL of a kernel with block rows, for blocks `h` rows high.
    pub fn source_for_height(&self, scalar: &'static str, lanes: LaneMode, h: u32) -> String {
        Variant::new(*self, scalar, lanes, vec![])
            .with_height(h)
            .source()
    }

    /// The block heights this kernel is assembled for: none for kernels without block rows.
    pub fn block_heights(&self) -> &'static [u32] {
        self.heights
    }

    /// The variant label used in test messages.
    pub fn variant(&self, scalar: &'static str, lanes: LaneMode) -> String {
        Variant::new(*self, scalar, lanes, vec![]).label()
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
            sets.retain_mut(derive);
        }
        sets
    }

    /// The (scalar, lane mode) pairs this kernel is built in.
    pub fn variants(&self) -> Vec<(&'static str, LaneMode)> {
        let scalars: &[&'static str] = if self.per_scalar() {
            &["f32", "f64"]
        } else {
            &["u32"]
        };
        let modes: &[LaneMode] = if self.uses_lanes() {
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

/// The device copy: the bandwidth ceiling every SpMV is reported against.
pub const COPY: Kernel = Kernel {
    name: "copy",
    file: "shared/copy",
    heights: &[],
    overrides: &[("WG_SIZE", WORKGROUP_SIZES)],
    derive: None,
};

/// A column of a row-major dense matrix to or from a vector (SpMM by one product per column).
pub const STRIDED_COPY: Kernel = Kernel {
    name: "strided_copy",
    file: "shared/strided_copy",
    heights: &[],
    overrides: &[("WG_SIZE", &[256]), ("WORDS", &[1, 2])],
    derive: None,
};

/// Value updates of formats that reorder values: a gather of words by the format's source
/// indices (BCCOO's with zeros kept as -0).
pub const GATHER: Kernel = Kernel {
    name: "gather",
    file: "shared/gather",
    heights: &[],
    overrides: &[
        ("WG_SIZE", &[256]),
        ("VAL_WORDS", &[1, 2]),
        ("MARK_ZEROS", &[0, 1]),
    ],
    derive: None,
};

/// The chunk hashes of a CSR matrix's structure in GPU buffers (`matrix::fingerprint_gpu`).
pub const FINGERPRINT: Kernel = Kernel {
    name: "fingerprint",
    file: "shared/fingerprint",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// The GPU check of a CSR matrix the caller holds on the GPU (src/matrix/gpu_csr.rs).
pub const CSR_CHECK: Kernel = Kernel {
    name: "csr_check",
    file: "shared/csr_check",
    heights: &[],
    overrides: &[("PASS", &[0, 1, 2])],
    derive: None,
};

/// Auto's features of a CSR matrix the caller holds on the GPU (src/select/features.rs).
pub const CSR_FEATURES: Kernel = Kernel {
    name: "csr_features",
    file: "shared/csr_features",
    heights: &[],
    overrides: &[("PASS", &[0, 1])],
    derive: None,
};

/// u32 prefix scan, first pass: the sum of each block (setups; `Recorder::scan`).
pub const SCAN_U32_REDUCE: Kernel = Kernel {
    name: "scan_u32_reduce",
    file: "shared/scan_u32_reduce",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// u32 prefix scan, second pass (one workgroup): the block sums into each block's offset.
pub const SCAN_U32_SUMS: Kernel = Kernel {
    name: "scan_u32_sums",
    file: "shared/scan_u32_sums",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// u32 prefix scan, last pass: each block scanned from its offset.
pub const SCAN_U32_DOWN: Kernel = Kernel {
    name: "scan_u32_down",
    file: "shared/scan_u32_down",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// Keys per invocation of one radix-sort tile (`Recorder::radix_sort`).
pub const RADIX_ITEMS: &[u32] = &[8];

/// Radix sort: the digit counts of each tile.
pub const RADIX_COUNT: Kernel = Kernel {
    name: "radix_count",
    file: "shared/radix_count",
    heights: &[],
    overrides: &[("ITEMS", RADIX_ITEMS)],
    derive: None,
};

/// Radix sort: a stable move of each tile's keys and payloads to their sorted positions.
pub const RADIX_SCATTER: Kernel = Kernel {
    name: "radix_scatter",
    file: "shared/radix_scatter",
    heights: &[],
    overrides: &[("ITEMS", RADIX_ITEMS)],
    derive: None,
};

/// Transposition on the GPU, first step: each entry's column as its sort key, its index as
/// the payload (`matrix::transpose`).
pub const TRANSPOSE_KEYS: Kernel = Kernel {
    name: "transpose_keys",
    file: "shared/transpose_keys",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// Transposition on the GPU, after the sort by column: the row of A holding each entry, in A's
/// order (neighbouring binary searches share their loads).
pub const TRANSPOSE_ROWS: Kernel = Kernel {
    name: "transpose_rows",
    file: "shared/transpose_rows",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// Transposition on the GPU, last step: the transposed row pointers, each transposed entry's
/// column (its row in A, gathered by sorted entry), and the longest transposed row.
pub const TRANSPOSE_FINISH: Kernel = Kernel {
    name: "transpose_finish",
    file: "shared/transpose_finish",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// Solvers: partial dot products (one or two at once), deterministic (`solvers`).
pub const DOT: Kernel = Kernel {
    name: "dot",
    file: "solvers/dot",
    heights: &[],
    overrides: &[("DOTS", &[1, 2])],
    derive: None,
};

/// Solvers: the partials added up and turned into the solver's scalars, on the GPU.
pub const REDUCE: Kernel = Kernel {
    name: "reduce",
    file: "solvers/reduce",
    heights: &[],
    overrides: &[("MODE", &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])],
    derive: None,
};

/// Vector updates (y = α·x + β·y, y ⊙ x, α·y), α and β read from a buffer
/// (`GpuVector::record_axpby_with` and its siblings).
pub const AXPBY: Kernel = Kernel {
    name: "axpby",
    file: "solvers/axpby",
    heights: &[],
    overrides: &[("OP", &[0, 1, 2])],
    derive: None,
};

/// Conjugate gradient: x and r updated by α (and z, with a Jacobi preconditioner), and the
/// partials of r·z and r·r, in one pass.
pub const CG_STEP: Kernel = Kernel {
    name: "cg_step",
    file: "solvers/cg_step",
    heights: &[],
    overrides: &[("JACOBI", &[0, 1])],
    derive: None,
};

/// BiCGStab's half step: x += α·p and r -= α·v.
pub const BICGSTAB_HALF_STEP: Kernel = Kernel {
    name: "bicgstab_half_step",
    file: "solvers/bicgstab_half_step",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// Conjugate gradient: the search direction updated by β.
pub const CG_UPDATE_P: Kernel = Kernel {
    name: "cg_update_p",
    file: "solvers/cg_update_p",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// BiCGStab: the search direction, p = r + β·(p − ω·v).
pub const BICGSTAB_P: Kernel = Kernel {
    name: "bicgstab_p",
    file: "solvers/bicgstab_p",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// BiCGStab: x += ω·s and r = s − ω·t, s held in r.
pub const BICGSTAB_UPDATE: Kernel = Kernel {
    name: "bicgstab_update",
    file: "solvers/bicgstab_update",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// PageRank's start: 1 / out-degree (negative: dangling), the ranks, the first product's
/// vector and the partials of the dangling nodes' rank, from G·1.
pub const PAGERANK_PREPARE: Kernel = Kernel {
    name: "pagerank_prepare",
    file: "solvers/pagerank_prepare",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// PageRank: the new ranks and the vector the next product multiplies, with the partial sums of
/// the ranks' change and of the dangling nodes' rank.
pub const PAGERANK_UPDATE: Kernel = Kernel {
    name: "pagerank_update",
    file: "solvers/pagerank_update",
    heights: &[],
    overrides: &[],
    derive: None,
};

/// Kernels that belong to no method.
pub const SHARED_KERNELS: &[Kernel] = &[
    COPY,
    STRIDED_COPY,
    GATHER,
    FINGERPRINT,
    CSR_CHECK,
    CSR_FEATURES,
    SCAN_U32_REDUCE,
    SCAN_U32_SUMS,
    SCAN_U32_DOWN,
    RADIX_COUNT,
    RADIX_SCATTER,
    TRANSPOSE_KEYS,
    TRANSPOSE_ROWS,
    TRANSPOSE_FINISH,
    DOT,
    REDUCE,
    AXPBY,
    CG_STEP,
    CG_UPDATE_P,
    BICGSTAB_HALF_STEP,
    BICGSTAB_P,
    BICGSTAB_UPDATE,
    PAGERANK_PREPARE,
    PAGERANK_UPDATE,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant the library can produce of the shared kernels (and a kernel with derived
    /// overrides and block heights) survives its kernel-list line; lines naming anything else
    /// are refused.
    #[test]
    fn kernel_list_lines_round_trip_and_refuse_what_the_library_never_builds() {
        let cmrs = crate::methods::all_kernels();
        let mut checked = 0;
        for k in &cmrs {
            let heights: Vec<Option<u32>> = if k.heights.is_empty() {
                vec![None]
            } else {
                k.heights.iter().map(|&h| Some(h)).collect()
            };
            for (scalar, lanes) in k.variants() {
                for set in k.override_sets().into_iter().take(40) {
                    for &h in &heights {
                        let mut v = Variant::new(*k, scalar, lanes, set.clone());
                        if let Some(h) = h {
                            v = v.with_height(h);
                        }
                        for v in [v.clone(), v.with_immediate_coeffs()] {
                            let line = v.key().to_line();
                            let back = Variant::from_line(&line, &cmrs)
                                .unwrap_or_else(|| panic!("{line} not read back"));
                            assert_eq!(back.key(), v.key(), "{line}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
        let good = Variant::new(COPY, "f32", LaneMode::Workgroup, vec![("WG_SIZE", 256)])
            .key()
            .to_line();
        assert_eq!(good, "copy u32 - - WG_SIZE=256");
        for bad in [
            "copy u32 - - WG_SIZE=100",
            "copy u32 - - WG_SIZE=256,EXTRA=1",
            "copy u32 - 4 WG_SIZE=256",
            "copy f16 - - WG_SIZE=256",
            "copy u32 - - WG_SIZE=256 more",
            // The copy reads no α and β, so it has no immediate form.
            "copy u32 - - WG_SIZE=256 immediate",
            "copy u32 -",
            "nothing u32 - - -",
            "",
        ] {
            assert!(Variant::from_line(bad, &cmrs).is_none(), "{bad}");
        }
        // A derived override must be what the kernel derives.
        let cmrs_line = cmrs
            .iter()
            .find(|k| k.name == "cmrs")
            .map(|k| {
                Variant::new(*k, "f32", LaneMode::Workgroup, k.override_sets()[0].clone())
                    .key()
                    .to_line()
            })
            .unwrap();
        let (head, cells) = cmrs_line.rsplit_once("CELLS=").unwrap();
        let wrong = format!("{head}CELLS={}", cells.parse::<u32>().unwrap() + 1);
        assert!(Variant::from_line(&wrong, &cmrs).is_none(), "{wrong}");
    }

    #[test]
    fn every_import_names_a_file() {
        for (path, text) in FILES {
            for dep in imports_of(text) {
                if dep.contains("{height}") {
                    continue;
                }
                for lanes in ["subgroup", "workgroup"] {
                    for scalar in ["f32", "f64"] {
                        let p = dep.replace("{lanes}", lanes).replace("{scalar}", scalar);
                        assert!(
                            FILES.iter().any(|(f, _)| *f == p),
                            "{path} imports {p}, which is no file"
                        );
                    }
                }
            }
        }
    }
}
