//! Prints the driver's statistics for a kernel variant (registers, spills, shared memory: whatever
//! VK_KHR_pipeline_executable_properties reports). The SPIR-V is written as wgpu's Vulkan backend
//! writes it for the library; the pipeline is created with ash, since wgpu cannot capture
//! statistics. NVIDIA's driver reports "Local Memory Size" with bit 36 set: the bytes
//! are the value less 2^36.
//!
//!     cargo run --release --example pipeline_stats -- --kernel bccoo --scalar f64 --height 1 --set WG_SIZE=512
//!     cargo run --release --example pipeline_stats -- --kernel csr_vector --scalar f32 --all-sets

use ash::{ext, khr, vk};
use clap::{Parser, ValueEnum};
use naga::back::spv;
use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};
use std::collections::BTreeMap;
use std::ffi::c_char;
use std::process::ExitCode;
use wgspmv::internals::{all_kernels, kernel::LaneMode};

#[derive(Parser)]
#[command(
    about = "Driver statistics (registers, spills, shared memory) of a kernel's Vulkan compute pipeline"
)]
struct Args {
    /// Kernel name (csr_scalar, csr_vector, cmrs, speculative, suraa, bccoo, ...).
    #[arg(long)]
    kernel: String,
    /// f32, f64, or u32 for setup kernels; default: the kernel's first.
    #[arg(long)]
    scalar: Option<String>,
    /// Lane mode; default: the kernel's first.
    #[arg(long, value_enum)]
    lanes: Option<Lanes>,
    /// Block height, for kernels assembled per height (bccoo, bccoo_carry).
    #[arg(long)]
    height: Option<u32>,
    /// An override, NAME=VALUE (repeatable); the others keep their WGSL defaults.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_set)]
    sets: Vec<(String, u32)>,
    /// One line per override combination the library may use, instead of --set.
    #[arg(long, conflicts_with = "sets")]
    all_sets: bool,
    /// Part of the device name (case-insensitive); default: the first discrete GPU, else the first.
    #[arg(long)]
    adapter: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Lanes {
    Subgroup,
    Workgroup,
}

fn parse_set(s: &str) -> Result<(String, u32), String> {
    let (name, value) = s.split_once('=').ok_or("expected NAME=VALUE")?;
    Ok((
        name.to_owned(),
        value.parse().map_err(|e| format!("{value}: {e}"))?,
    ))
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    let all = all_kernels();
    let kernel = all.iter().find(|k| k.name == args.kernel).ok_or_else(|| {
        format!(
            "no kernel {}; kernels: {}",
            args.kernel,
            all.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
        )
    })?;
    let want_lanes = args.lanes.map(|l| match l {
        Lanes::Subgroup => LaneMode::Subgroup,
        Lanes::Workgroup => LaneMode::Workgroup,
    });
    let variants = kernel.variants();
    let (scalar, lanes) = *variants
        .iter()
        .find(|(s, l)| {
            args.scalar.as_deref().is_none_or(|w| w == *s) && want_lanes.is_none_or(|w| w == *l)
        })
        .ok_or_else(|| {
            format!(
                "{} has no such variant; variants: {variants:?}",
                kernel.name
            )
        })?;
    let source = match (kernel.block_heights(), args.height) {
        ([], None) => kernel.source(scalar, lanes),
        ([], Some(_)) => return Err(format!("{} has no block heights", kernel.name)),
        (hs, Some(h)) if hs.contains(&h) => kernel.source_for_height(scalar, lanes, h),
        (hs, _) => return Err(format!("{} needs --height, one of {hs:?}", kernel.name)),
    };
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| e.emit_to_string(&source))?;
    // The capabilities tests/integration/shaders.rs validates with.
    let mut validator = Validator::new(
        ValidationFlags::all(),
        Capabilities::FLOAT64 | Capabilities::SUBGROUP | Capabilities::SHADER_INT64,
    );
    validator
        .subgroup_stages(ShaderStages::COMPUTE)
        .subgroup_operations(SubgroupOperationSet::all());
    let info = validator
        .validate(&module)
        .map_err(|e| e.emit_to_string(&source))?;
    for (name, _) in &args.sets {
        if !module
            .overrides
            .iter()
            .any(|(_, o)| o.name.as_deref() == Some(name))
        {
            let names: Vec<_> = module
                .overrides
                .iter()
                .filter_map(|(_, o)| o.name.as_deref())
                .collect();
            return Err(format!(
                "{} has no override {name}; overrides: {}",
                kernel.name,
                names.join(", ")
            ));
        }
    }
    let sets: Vec<Vec<(String, u32)>> = if args.all_sets {
        kernel
            .override_sets()
            .into_iter()
            .map(|s| s.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            .collect()
    } else {
        vec![args.sets]
    };

    let gpu = unsafe { Gpu::new(args.adapter.as_deref())? };
    println!("device: {}", gpu.name);
    let height = args
        .height
        .map(|h| format!(" height {h}"))
        .unwrap_or_default();
    let label = format!(
        "{} [{}]{height}",
        kernel.name,
        kernel.variant(scalar, lanes)
    );
    for set in sets {
        let overrides = if set.is_empty() {
            "(defaults)".to_owned()
        } else {
            set.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let constants: naga::back::PipelineConstants =
            set.iter().map(|(k, v)| (k.clone(), *v as f64)).collect();
        let (m, i) = naga::back::pipeline_constants::process_overrides(
            &module,
            &info,
            Some((naga::ShaderStage::Compute, "main")),
            &constants,
        )
        .map_err(|e| format!("{label} {overrides}: {e}"))?;
        let executables = unsafe { gpu.statistics(&m, &i)? };
        if !args.all_sets {
            println!("== {label} {overrides}");
        }
        for (exe, stats) in executables {
            if args.all_sets {
                let stats: Vec<_> = stats.iter().map(|(n, v, _)| format!("{n}={v}")).collect();
                println!("{label} {overrides}: {exe}: {}", stats.join(", "));
            } else {
                println!("  {exe}");
                stats
                    .iter()
                    .for_each(|(n, v, d)| println!("    {n} = {v}  ({d})"));
            }
        }
    }
    unsafe { gpu.destroy() };
    Ok(())
}

/// A device with pipeline statistics enabled, and the SPIR-V options wgpu-hal would use on it.
struct Gpu {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    executables: khr::pipeline_executable_properties::Device,
    name: String,
    options: spv::Options<'static>,
    stage_flags: vk::PipelineShaderStageCreateFlags,
}

/// A statistic: name, value, description.
type Statistic = (String, String, String);

fn vk_err(call: &'static str) -> impl Fn(vk::Result) -> String {
    move |e| format!("{call}: {e}")
}

fn text(s: Result<&std::ffi::CStr, std::ffi::FromBytesUntilNulError>) -> String {
    s.map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl Gpu {
    unsafe fn new(adapter: Option<&str>) -> Result<Gpu, String> {
        let entry = ash::Entry::load().map_err(|e| format!("no Vulkan loader: {e}"))?;
        let version = entry
            .try_enumerate_instance_version()
            .map_err(vk_err("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_2 {
            return Err("the Vulkan loader is older than 1.2".into());
        }
        let app = vk::ApplicationInfo::default().api_version(version.min(vk::API_VERSION_1_3));
        let instance = entry
            .create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
            .map_err(vk_err("vkCreateInstance"))?;
        let devices = instance
            .enumerate_physical_devices()
            .map_err(vk_err("vkEnumeratePhysicalDevices"))?;
        let named: Vec<_> = devices
            .iter()
            .map(|&pd| (pd, instance.get_physical_device_properties(pd)))
            .collect();
        let name_of = |p: &vk::PhysicalDeviceProperties| text(p.device_name_as_c_str());
        let chosen = match adapter {
            Some(s) => named
                .iter()
                .find(|(_, p)| name_of(p).to_lowercase().contains(&s.to_lowercase())),
            None => named
                .iter()
                .find(|(_, p)| p.device_type == vk::PhysicalDeviceType::DISCRETE_GPU)
                .or(named.first()),
        };
        let all = named
            .iter()
            .map(|(_, p)| name_of(p))
            .collect::<Vec<_>>()
            .join(", ");
        let &(pd, props) =
            chosen.ok_or_else(|| format!("no matching Vulkan device; devices: [{all}]"))?;
        let name = format!(
            "{} (Vulkan {}.{}.{}, driver {:#x})",
            name_of(&props),
            vk::api_version_major(props.api_version),
            vk::api_version_minor(props.api_version),
            vk::api_version_patch(props.api_version),
            props.driver_version
        );

        let extensions = instance
            .enumerate_device_extension_properties(pd)
            .map_err(vk_err("vkEnumerateDeviceExtensionProperties"))?;
        let has = |e: &std::ffi::CStr| {
            extensions
                .iter()
                .any(|p| p.extension_name_as_c_str() == Ok(e))
        };
        if !has(khr::pipeline_executable_properties::NAME) {
            return Err(format!(
                "{name} does not support VK_KHR_pipeline_executable_properties"
            ));
        }
        let is_1_3 = props.api_version >= vk::API_VERSION_1_3;
        let mut pep = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut robust2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
        let mut query = vk::PhysicalDeviceFeatures2::default().push_next(&mut pep);
        if is_1_3 {
            query = query.push_next(&mut v13);
        }
        if has(ext::robustness2::NAME) {
            query = query.push_next(&mut robust2);
        }
        instance.get_physical_device_features2(pd, &mut query);
        let core = query.features;
        if pep.pipeline_executable_info == vk::FALSE {
            return Err(format!(
                "{name} does not support the pipelineExecutableInfo feature"
            ));
        }

        // The features wgpu-hal enables for the library (WANTED_FEATURES) where supported: robust
        // buffer access, and robustBufferAccess2 instead of naga's buffer bounds checks, change
        // the code the driver generates.
        let core = vk::PhysicalDeviceFeatures {
            shader_float64: core.shader_float64,
            shader_int64: core.shader_int64,
            robust_buffer_access: core.robust_buffer_access,
            ..Default::default()
        };
        let robust_buffer_access2 =
            robust2.robust_buffer_access2 == vk::TRUE && core.robust_buffer_access == vk::TRUE;
        let mut v13 = vk::PhysicalDeviceVulkan13Features {
            subgroup_size_control: v13.subgroup_size_control,
            shader_zero_initialize_workgroup_memory: v13.shader_zero_initialize_workgroup_memory,
            ..Default::default()
        };
        let mut robust2 =
            vk::PhysicalDeviceRobustness2FeaturesEXT::default().robust_buffer_access2(true);
        let mut pep = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
            .pipeline_executable_info(true);
        let mut device_extensions: Vec<*const c_char> =
            vec![khr::pipeline_executable_properties::NAME.as_ptr()];
        let families = instance.get_physical_device_queue_family_properties(pd);
        let family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or("no compute queue family")? as u32;
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&[1.0])];
        let mut create = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_features(&core)
            .push_next(&mut pep);
        if is_1_3 {
            create = create.push_next(&mut v13);
        }
        if robust_buffer_access2 {
            device_extensions.push(ext::robustness2::NAME.as_ptr());
            create = create.push_next(&mut robust2);
        }
        let device = instance
            .create_device(
                pd,
                &create.enabled_extension_names(&device_extensions),
                None,
            )
            .map_err(vk_err("vkCreateDevice"))?;

        // wgpu-hal's naga options (SPIR-V 1.6 on Vulkan 1.3), with the library's loop bounding off (src/gpu/mod.rs).
        let mut options = spv::Options {
            lang_version: if is_1_3 { (1, 6) } else { (1, 3) },
            force_loop_bounding: false,
            ..Default::default()
        };
        options.bounds_check_policies = BoundsCheckPolicies {
            index: BoundsCheckPolicy::Restrict,
            buffer: if robust_buffer_access2 {
                BoundsCheckPolicy::Unchecked
            } else {
                BoundsCheckPolicy::Restrict
            },
            ..Default::default()
        };
        options.zero_initialize_workgroup_memory =
            if v13.shader_zero_initialize_workgroup_memory == vk::TRUE {
                spv::ZeroInitializeWorkgroupMemoryMode::Native
            } else {
                spv::ZeroInitializeWorkgroupMemoryMode::Polyfill
            };
        // wgpu-hal lets the subgroup size vary whenever subgroups are enabled.
        let stage_flags = if v13.subgroup_size_control == vk::TRUE {
            vk::PipelineShaderStageCreateFlags::ALLOW_VARYING_SUBGROUP_SIZE
        } else {
            vk::PipelineShaderStageCreateFlags::empty()
        };
        let executables = khr::pipeline_executable_properties::Device::new(&instance, &device);
        Ok(Gpu {
            _entry: entry,
            instance,
            device,
            executables,
            name,
            options,
            stage_flags,
        })
    }

    /// Compiles the module's `main` and returns each executable's label and statistics.
    unsafe fn statistics(
        &self,
        module: &naga::Module,
        info: &naga::valid::ModuleInfo,
    ) -> Result<Vec<(String, Vec<Statistic>)>, String> {
        let spirv = spv::write_vec(module, info, &self.options, None)
            .map_err(|e| format!("SPIR-V: {e}"))?;
        let d = &self.device;
        let shader = d
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&spirv), None)
            .map_err(vk_err("vkCreateShaderModule"))?;

        // One set layout per group up to the highest, with the bindings `main` uses.
        let mut groups: BTreeMap<u32, Vec<vk::DescriptorSetLayoutBinding>> = BTreeMap::new();
        for (handle, var) in module.global_variables.iter() {
            let (Some(rb), false) = (&var.binding, info.get_entry_point(0)[handle].is_empty())
            else {
                continue;
            };
            let ty = match var.space {
                naga::AddressSpace::Storage { .. } => vk::DescriptorType::STORAGE_BUFFER,
                naga::AddressSpace::Uniform => vk::DescriptorType::UNIFORM_BUFFER,
                space => {
                    return Err(format!(
                        "binding {}/{} in unsupported space {space:?}",
                        rb.group, rb.binding
                    ))
                }
            };
            groups.entry(rb.group).or_default().push(
                vk::DescriptorSetLayoutBinding::default()
                    .binding(rb.binding)
                    .descriptor_type(ty)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE),
            );
        }
        let count = groups.keys().last().map_or(0, |g| g + 1);
        let set_layouts = (0..count)
            .map(|g| {
                d.create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default()
                        .bindings(groups.get(&g).map_or(&[][..], Vec::as_slice)),
                    None,
                )
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(vk_err("vkCreateDescriptorSetLayout"))?;
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts),
                None,
            )
            .map_err(vk_err("vkCreatePipelineLayout"))?;

        let stage = vk::PipelineShaderStageCreateInfo::default()
            .flags(self.stage_flags)
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(shader)
            .name(c"main");
        let create = vk::ComputePipelineCreateInfo::default()
            .flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR)
            .stage(stage)
            .layout(layout);
        let pipeline = d
            .create_compute_pipelines(vk::PipelineCache::null(), &[create], None)
            .map_err(|(_, e)| vk_err("vkCreateComputePipelines")(e))?[0];

        let mut out = Vec::new();
        let executables = self
            .executables
            .get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline))
            .map_err(vk_err("vkGetPipelineExecutablePropertiesKHR"))?;
        for (index, exe) in executables.iter().enumerate() {
            let which = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipeline)
                .executable_index(index as u32);
            let stats = self
                .executables
                .get_pipeline_executable_statistics(&which)
                .map_err(vk_err("vkGetPipelineExecutableStatisticsKHR"))?;
            let stats = stats
                .iter()
                .map(|s| {
                    (
                        text(s.name_as_c_str()),
                        value(s),
                        text(s.description_as_c_str()),
                    )
                })
                .collect();
            out.push((
                format!(
                    "{} ({}; subgroup size {})",
                    text(exe.name_as_c_str()),
                    text(exe.description_as_c_str()),
                    exe.subgroup_size
                ),
                stats,
            ));
        }

        d.destroy_pipeline(pipeline, None);
        d.destroy_pipeline_layout(layout, None);
        set_layouts
            .into_iter()
            .for_each(|l| d.destroy_descriptor_set_layout(l, None));
        d.destroy_shader_module(shader, None);
        Ok(out)
    }

    unsafe fn destroy(self) {
        self.device.destroy_device(None);
        self.instance.destroy_instance(None);
    }
}

fn value(s: &vk::PipelineExecutableStatisticKHR) -> String {
    // SAFETY: `format` says which union field the driver wrote.
    unsafe {
        match s.format {
            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                (s.value.b32 == vk::TRUE).to_string()
            }
            vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
            vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
            vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => s.value.f64.to_string(),
            other => format!("(format {other:?})"),
        }
    }
}
