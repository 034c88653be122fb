//! Every kernel, in every scalar type and lane mode the library can build, and a pairwise
//! covering of its override combinations, must pass naga's validator and translate to SPIR-V.
//! Needs no GPU.

use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};
use rayon::prelude::*;
use wgspmv::internals::all_kernels;
use wgspmv::internals::kernel::{Kernel, LaneMode};

fn validator() -> Validator {
    let mut v = Validator::new(
        ValidationFlags::all(),
        Capabilities::FLOAT64
            | Capabilities::SUBGROUP
            | Capabilities::SHADER_INT64
            | Capabilities::IMMEDIATES,
    );
    v.subgroup_stages(ShaderStages::COMPUTE);
    v.subgroup_operations(SubgroupOperationSet::all());
    v
}

/// `module` with the override values of `set` applied, ready for a backend.
fn with_overrides(
    label: &str,
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    set: &[(&'static str, u32)],
) -> (naga::Module, naga::valid::ModuleInfo) {
    let constants = set
        .iter()
        .map(|&(k, v)| (k.to_string(), v as f64))
        .collect();
    let (m, i) = naga::back::pipeline_constants::process_overrides(module, info, None, &constants)
        .unwrap_or_else(|e| panic!("{label} {set:?}: {e}"));
    (m.into_owned(), i.into_owned())
}

/// Every assembled source of a kernel: per scalar type and lane mode, and per block height for
/// the kernels assembled per height.
fn sources(kernel: &Kernel) -> Vec<(&'static str, LaneMode, Option<u32>, String)> {
    let mut out = Vec::new();
    for (scalar, lanes) in kernel.variants() {
        if kernel.block_heights().is_empty() {
            out.push((scalar, lanes, None, kernel.source(scalar, lanes)));
        }
        for &h in kernel.block_heights() {
            out.push((
                scalar,
                lanes,
                Some(h),
                kernel.source_for_height(scalar, lanes, h),
            ));
        }
    }
    out
}

/// A subset of `sets` in which every pair of override values that occurs together in `sets`
/// still occurs together, and the first and last sets (smallest and largest values) stay: the
/// full cross product of some kernels is thousands of sets, most of the test's time.
fn pairwise(sets: Vec<Vec<(&'static str, u32)>>) -> Vec<Vec<(&'static str, u32)>> {
    use std::collections::HashSet;
    type Pair = ((&'static str, u32), (&'static str, u32));
    let pairs = |s: &[(&'static str, u32)]| -> Vec<Pair> {
        let mut out = Vec::new();
        for i in 0..s.len() {
            for j in i + 1..s.len() {
                out.push((s[i], s[j]));
            }
        }
        out
    };
    let mut uncovered: HashSet<Pair> = sets.iter().flat_map(|s| pairs(s)).collect();
    let mut chosen: Vec<usize> = Vec::new();
    for i in [0, sets.len().saturating_sub(1)] {
        if i < sets.len() && !chosen.contains(&i) {
            chosen.push(i);
            for p in pairs(&sets[i]) {
                uncovered.remove(&p);
            }
        }
    }
    // Greedy: the set covering the most uncovered pairs next.
    while !uncovered.is_empty() {
        let (best, _) = sets
            .iter()
            .enumerate()
            .map(|(i, s)| (i, pairs(s).iter().filter(|p| uncovered.contains(p)).count()))
            .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))
            .expect("an uncovered pair lies in some set");
        chosen.push(best);
        for p in pairs(&sets[best]) {
            uncovered.remove(&p);
        }
    }
    chosen.into_iter().map(|i| sets[i].clone()).collect()
}

#[test]
fn pairwise_keeps_every_pair_and_drops_the_rest() {
    let names = ["A", "B", "C"];
    let mut full = Vec::new();
    for a in 0..3 {
        for b in 0..3 {
            for c in 0..2 {
                full.push(vec![(names[0], a), (names[1], b), (names[2], c)]);
            }
        }
    }
    let kept = pairwise(full.clone());
    assert!(kept.len() < full.len() && kept.len() >= 9, "{}", kept.len());
    assert_eq!(kept[0], full[0]);
    assert!(kept.contains(full.last().unwrap()));
    for s in &full {
        for i in 0..3 {
            for j in i + 1..3 {
                assert!(
                    kept.iter().any(|k| k[i] == s[i] && k[j] == s[j]),
                    "{:?} {:?} lost",
                    s[i],
                    s[j]
                );
            }
        }
    }
}

#[test]
fn every_shader_variant_validates_and_translates() {
    // Sources in parallel (rayon): naga's override processing dominates, and CI has two cores.
    let jobs: Vec<(Kernel, &'static str, LaneMode, Option<u32>, String)> = all_kernels()
        .into_iter()
        .flat_map(|k| {
            sources(&k)
                .into_iter()
                .map(move |(s, l, h, src)| (k, s, l, h, src))
        })
        .collect();
    let checked: usize = jobs
        .par_iter()
        .map(|(kernel, scalar, lanes, height, src)| {
            let label = format!(
                "{} [{}] height {height:?}",
                kernel.name,
                kernel.variant(scalar, *lanes)
            );
            let module = naga::front::wgsl::parse_str(src)
                .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(src)));
            // WebGPU's default limit, which every adapter grants and most apps request.
            let storage = module
                .global_variables
                .iter()
                .filter(|(_, g)| matches!(g.space, naga::AddressSpace::Storage { .. }))
                .count();
            assert!(
                storage <= 8,
                "{label}: {storage} storage buffers, over WebGPU's 8"
            );
            let info = validator()
                .validate(&module)
                .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(src)));
            let sets = pairwise(kernel.override_sets());
            sets.par_iter()
                .map(|set| {
                    let (m, i) = with_overrides(&label, &module, &info, set);
                    to_spirv(&format!("{label} {set:?}"), &m, &i);
                })
                .count()
        })
        .sum();
    assert!(checked >= 50, "only {checked} variants checked");
}

#[test]
fn workgroup_path_needs_no_subgroup_capability() {
    for kernel in &all_kernels() {
        for (scalar, _, _, src) in sources(kernel)
            .into_iter()
            .filter(|v| v.1 == LaneMode::Workgroup)
        {
            let module = naga::front::wgsl::parse_str(&src).unwrap();
            let mut caps = if scalar == "f64" {
                Capabilities::FLOAT64
            } else {
                Capabilities::empty()
            };
            if kernel.needs_int64(scalar) {
                caps |= Capabilities::SHADER_INT64;
            }
            Validator::new(ValidationFlags::all(), caps)
                .validate(&module)
                .unwrap_or_else(|e| panic!("{} {scalar}: {}", kernel.name, e.emit_to_string(&src)));
        }
    }
}

/// What wgpu's Metal and DX12 backends do with our WGSL: every f32 variant (both lane modes,
/// every block height; overrides at their first value) translates to MSL and HLSL. f64 is
/// offered on Vulkan only, so it is not translated.
#[test]
fn f32_variants_translate_to_msl_and_hlsl() {
    let jobs: Vec<(Kernel, LaneMode, Option<u32>, String)> = all_kernels()
        .into_iter()
        .flat_map(|k| {
            sources(&k)
                .into_iter()
                .filter(|v| v.0 != "f64")
                .map(move |(_, l, h, src)| (k, l, h, src))
        })
        .collect();
    let translated: usize = jobs
        .par_iter()
        .map(|(kernel, lanes, height, src)| {
            let label = format!("{} {lanes:?} height {height:?}", kernel.name);
            let module = naga::front::wgsl::parse_str(src).unwrap();
            let info = validator().validate(&module).unwrap();
            let set = kernel
                .override_sets()
                .into_iter()
                .next()
                .unwrap_or_default();
            let (m, i) = with_overrides(&label, &module, &info, &set);
            to_msl_and_hlsl(&label, &m, &i);
        })
        .count();
    assert!(translated >= 30, "only {translated} variants translated");
}

/// Translates a validated module, its overrides applied, to SPIR-V 1.3 (wgpu's Vulkan backend).
fn to_spirv(label: &str, m: &naga::Module, i: &naga::valid::ModuleInfo) {
    let opts = naga::back::spv::Options {
        lang_version: (1, 3),
        ..Default::default()
    };
    naga::back::spv::write_vec(m, i, &opts, None)
        .unwrap_or_else(|e| panic!("{label} to SPIR-V: {e}"));
}

/// Translates a validated module, its overrides applied, as wgpu's Metal and DX12 backends do
/// (immediate data, where it has some, in HLSL register 0 of space 0).
fn to_msl_and_hlsl(label: &str, m: &naga::Module, i: &naga::valid::ModuleInfo) {
    naga::back::msl::write_string(
        m,
        i,
        &naga::back::msl::Options {
            lang_version: (2, 4),
            ..Default::default()
        },
        &naga::back::msl::PipelineOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{label} to MSL: {e}"));
    let mut hlsl = String::new();
    let hlsl_options = naga::back::hlsl::Options {
        shader_model: naga::back::hlsl::ShaderModel::V6_0,
        immediates_target: Some(naga::back::hlsl::BindTarget {
            space: 0,
            register: 0,
            ..Default::default()
        }),
        ..Default::default()
    };
    naga::back::hlsl::Writer::new(
        &mut hlsl,
        &hlsl_options,
        &naga::back::hlsl::PipelineOptions::default(),
    )
    .write(m, i, None)
    .unwrap_or_else(|e| panic!("{label} to HLSL: {e}"));
}

/// The forms that take α and β as immediate data (`var<immediate>`, Vulkan, Metal and DX12 with
/// `Features::IMMEDIATES`): every kernel that reads them, in every scalar type and lane mode,
/// validates with `coeffs` as immediate data and no binding left for it, and translates to
/// SPIR-V; f32 also to MSL and HLSL.
#[test]
fn immediate_coefficient_forms_validate_and_translate() {
    use wgspmv::internals::kernel::Variant;
    let kernels: Vec<Kernel> = all_kernels()
        .into_iter()
        .filter(|k| k.reads_coeffs())
        .collect();
    assert!(
        kernels.len() >= 10,
        "{} kernels read α and β",
        kernels.len()
    );
    let checked: usize = kernels
        .par_iter()
        .flat_map(|k| k.variants().into_par_iter().map(move |v| (*k, v)))
        .map(|(kernel, (scalar, lanes))| {
            let set = kernel
                .override_sets()
                .into_iter()
                .next()
                .unwrap_or_default();
            let mut variant = Variant::new(kernel, scalar, lanes, set.clone());
            if let Some(&h) = kernel.block_heights().first() {
                variant = variant.with_height(h);
            }
            let variant = variant.with_immediate_coeffs();
            assert!(variant.immediate_coeffs, "{}", kernel.name);
            let label = variant.label();
            let src = variant.source();
            let module = naga::front::wgsl::parse_str(&src)
                .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(&src)));
            let spaces: Vec<naga::AddressSpace> = module
                .global_variables
                .iter()
                .filter(|(_, g)| g.name.as_deref() == Some("coeffs"))
                .map(|(_, g)| g.space)
                .collect();
            assert_eq!(spaces, [naga::AddressSpace::Immediate], "{label}");
            let info = validator()
                .validate(&module)
                .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(&src)));
            let (m, i) = with_overrides(&label, &module, &info, &set);
            to_spirv(&label, &m, &i);
            if scalar == "f32" {
                to_msl_and_hlsl(&label, &m, &i);
            }
            1
        })
        .sum();
    assert!(checked >= 20, "only {checked} variants checked");
}
