//! Every kernel, in every scalar type, lane mode and override combination the library can build,
//! must pass naga's validator and translate to SPIR-V. Needs no GPU.

use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};
use rayon::prelude::*;
use wgspmv::shaders::{all_kernels, Kernel, LaneMode};

fn validator() -> Validator {
    let mut v = Validator::new(
        ValidationFlags::all(),
        Capabilities::FLOAT64 | Capabilities::SUBGROUP | Capabilities::SHADER_INT64,
    );
    v.subgroup_stages(ShaderStages::COMPUTE);
    v.subgroup_operations(SubgroupOperationSet::all());
    v
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
            let info = validator()
                .validate(&module)
                .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(src)));
            let sets = kernel.override_sets();
            sets.par_iter()
                .map(|set| {
                    let constants = set
                        .iter()
                        .map(|&(k, v)| (k.to_string(), v as f64))
                        .collect();
                    let (m, i) = naga::back::pipeline_constants::process_overrides(
                        &module, &info, None, &constants,
                    )
                    .unwrap_or_else(|e| panic!("{label} {set:?}: {e}"));
                    let opts = naga::back::spv::Options {
                        lang_version: (1, 3),
                        ..Default::default()
                    };
                    naga::back::spv::write_vec(&m, &i, &opts, None)
                        .unwrap_or_else(|e| panic!("{label} {set:?}: {e}"));
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
            let constants = set
                .iter()
                .map(|&(k, v)| (k.to_string(), v as f64))
                .collect();
            let (m, i) =
                naga::back::pipeline_constants::process_overrides(&module, &info, None, &constants)
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
            naga::back::msl::write_string(
                &m,
                &i,
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
                ..Default::default()
            };
            naga::back::hlsl::Writer::new(
                &mut hlsl,
                &hlsl_options,
                &naga::back::hlsl::PipelineOptions::default(),
            )
            .write(&m, &i, None)
            .unwrap_or_else(|e| panic!("{label} to HLSL: {e}"));
        })
        .count();
    assert!(translated >= 30, "only {translated} variants translated");
}
