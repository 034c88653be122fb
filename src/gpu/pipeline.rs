//! The pipeline cache: one compiled pipeline per kernel variant and device, and (where the
//! adapter has `Features::PIPELINE_CACHE`) the driver's compiled code kept in a file between
//! processes.

use super::Gpu;
use crate::kernel::{LaneMode, Variant};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A wgpu pipeline cache every compile goes through, the file it is kept in, and the list of
/// kernels plans asked for, kept beside it for the next process to compile ahead.
pub(crate) struct DiskCache {
    cache: wgpu::PipelineCache,
    /// `None` for an application's own cache, which the application saves.
    file: Option<PathBuf>,
    /// Pipelines were compiled, or new kernels asked for, since the last save.
    changed: AtomicBool,
    /// The kernel list as the last process left it (lines of `PipelineKey::to_line`).
    listed: Vec<String>,
    /// Whether the listed kernels were handed out to compile ahead (once per device).
    listed_taken: AtomicBool,
    /// Kernels plans asked for in this process, in the order first asked.
    asked: Mutex<Vec<String>>,
}

/// A stage's compiled kernel: the form that reads α and β from its `coeffs` binding, and where
/// the device has immediate data the form that takes them there, compiled at its first use.
/// Products of α = 1, β = 0 bind a constant pair and run the first form (`y = A·x` runs as on a
/// device without immediate data); other pairs from the host run the second, so a new pair
/// writes no buffer.
#[derive(Clone)]
pub(crate) struct StagePipeline {
    variant: Variant,
    main: Arc<wgpu::ComputePipeline>,
    immediates: bool,
}

impl StagePipeline {
    /// The form that reads α and β from the stage's binding (compiled at setup).
    pub fn main(&self) -> &Arc<wgpu::ComputePipeline> {
        &self.main
    }

    /// Whether the kernel has an immediate-data form on this device.
    pub fn takes_immediates(&self) -> bool {
        self.immediates
    }

    /// The form that takes α and β as immediate data (see [`takes_immediates`](Self::takes_immediates)).
    pub fn immediate_form(&self, gpu: &Gpu) -> Result<Arc<wgpu::ComputePipeline>> {
        debug_assert!(
            self.immediates,
            "{} has no immediate form",
            self.variant.label()
        );
        gpu.pipeline(&self.variant.clone().with_immediate_coeffs())
    }

    /// Whether both are one compiled pipeline.
    pub fn same_as(&self, other: &StagePipeline) -> bool {
        Arc::ptr_eq(&self.main, &other.main)
    }
}

/// Lines a kernel list keeps: a few plans' worth of every method's kernels.
const LISTED_MOST: usize = 256;

/// One pipeline's place in the device's table. A caller that finds it being compiled (by a
/// compile ahead, or another thread) waits for that compile rather than starting a second.
#[derive(Default)]
pub(crate) struct Slot {
    pipeline: Option<Arc<wgpu::ComputePipeline>>,
    /// A plan asked for it (not only a compile ahead): listed for the next process.
    asked: bool,
}

/// Who wants a pipeline: a plan (its wait is its compile time) or a compile ahead.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Caller {
    Plan,
    Ahead,
}

impl Gpu {
    /// Keeps compiled pipelines in `dir` between processes, where the device has
    /// `Features::PIPELINE_CACHE` (Vulkan adapters; [`Gpu::device_descriptor`] asks for it).
    /// Returns whether a cache is now used. The file is named after the adapter (wgpu's
    /// `pipeline_cache_key`: vendor and device) and this crate's version, and wgpu and the
    /// driver check the rest (driver version, their formats) inside the data: a file that does
    /// not match is ignored and overwritten, never used. Saved after each `prepare` that
    /// compiled a pipeline, and by [`Gpu::save_pipeline_cache`]. The directory is the caller's:
    /// a file someone else wrote there reaches the driver.
    pub fn use_pipeline_cache_dir(&self, dir: impl AsRef<Path>) -> Result<bool> {
        let dir = dir.as_ref();
        if !self
            .device()
            .features()
            .contains(wgpu::Features::PIPELINE_CACHE)
        {
            return Ok(false);
        }
        let Some(key) = wgpu::util::pipeline_cache_key(&self.device().adapter_info()) else {
            return Ok(false);
        };
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
        let file = dir.join(format!("{key}_wgspmv-{}.bin", env!("CARGO_PKG_VERSION")));
        let data = std::fs::read(&file).ok();
        let listed: Vec<String> = std::fs::read_to_string(file.with_extension("kernels"))
            .map(|text| text.lines().take(LISTED_MOST).map(str::to_owned).collect())
            .unwrap_or_default();
        let cache = self.scoped("loading the pipeline cache", || {
            // SAFETY: the data is what `PipelineCache::get_data` returned for a device of this
            // cache key (the file is named by it); wgpu and the driver validate its headers and
            // fall back to an empty cache (`fallback`) where it does not match.
            unsafe {
                self.device()
                    .create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                        label: Some("wgspmv pipelines"),
                        data: data.as_deref(),
                        fallback: true,
                    })
            }
        })?;
        log::debug!(
            "pipeline cache {} ({} bytes read)",
            file.display(),
            data.map_or(0, |d| d.len())
        );
        *crate::lock(&self.inner.disk_cache) = Some(Arc::new(DiskCache {
            cache,
            file: Some(file),
            changed: AtomicBool::new(false),
            listed,
            listed_taken: AtomicBool::new(false),
            asked: Mutex::default(),
        }));
        Ok(true)
    }

    /// Compiles through `cache`, the application's own (which it saves itself, with
    /// `PipelineCache::get_data`); the device needs `Features::PIPELINE_CACHE`.
    pub fn use_pipeline_cache(&self, cache: wgpu::PipelineCache) {
        *crate::lock(&self.inner.disk_cache) = Some(Arc::new(DiskCache {
            cache,
            file: None,
            changed: AtomicBool::new(false),
            listed: Vec::new(),
            listed_taken: AtomicBool::new(false),
            asked: Mutex::default(),
        }));
    }

    /// Writes the pipeline cache to its file now (see [`Gpu::use_pipeline_cache_dir`]); nothing
    /// where no file is kept or nothing was compiled since the last save.
    pub fn save_pipeline_cache(&self) -> Result<()> {
        let Some(dc) = crate::lock(&self.inner.disk_cache).clone() else {
            return Ok(());
        };
        let Some(file) = &dc.file else {
            return Ok(());
        };
        if !dc.changed.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let Some(data) = dc.cache.get_data() else {
            return Ok(());
        };
        // This process's kernels first (the order they were asked for, which is the order a
        // compile ahead takes), then the earlier processes' others.
        let mut lines = crate::lock(&dc.asked).clone();
        lines.truncate(LISTED_MOST);
        for l in &dc.listed {
            if lines.len() < LISTED_MOST && !lines.contains(l) {
                lines.push(l.clone());
            }
        }
        write_aside(file, &data)?;
        write_aside(&file.with_extension("kernels"), lines.join("\n").as_bytes())?;
        log::debug!(
            "pipeline cache {} saved ({} bytes, {} kernels listed)",
            file.display(),
            data.len(),
            lines.len()
        );
        Ok(())
    }

    /// The kernels earlier processes' plans asked for, as the list kept beside the pipeline
    /// cache names them; empty without a cache directory, and after the first call.
    pub(crate) fn take_listed_kernels(&self) -> Vec<String> {
        match crate::lock(&self.inner.disk_cache).clone() {
            Some(dc) if !dc.listed_taken.swap(true, Ordering::AcqRel) => dc.listed.clone(),
            _ => Vec::new(),
        }
    }

    /// Compiles `variants` on several threads (the pipelines plans then find ready), and
    /// returns how many are ready. A variant that fails to compile is left to the plan that
    /// asks for it, which reports the error. One thread on GL, whose context serializes
    /// compiles anyway.
    pub(crate) fn compile_ahead(&self, variants: &[Variant]) -> usize {
        let threads = if self.info().backend == wgpu::Backend::Gl {
            1
        } else {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .clamp(1, 8)
        };
        let next = std::sync::atomic::AtomicUsize::new(0);
        let ready = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..threads.min(variants.len()) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(v) = variants.get(i) else { break };
                    match self.pipeline_for(v, Caller::Ahead) {
                        Ok(_) => {
                            ready.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => log::debug!("compiling {} ahead: {e}", v.label()),
                    }
                });
            }
        });
        ready.into_inner()
    }

    /// Saves the pipeline cache after a `prepare`; a failure costs the next process compile
    /// time, so it is logged rather than returned.
    pub(crate) fn save_pipeline_cache_quietly(&self) {
        if let Err(e) = self.save_pipeline_cache() {
            log::warn!("{e}");
        }
    }

    /// A stage's kernel: `variant`, and its immediate-data form where this device has immediate
    /// data ([`GpuInfo::has_immediate_coeffs`](super::GpuInfo::has_immediate_coeffs)) and the
    /// kernel reads α and β.
    pub(crate) fn stage_pipeline(&self, variant: &Variant) -> Result<StagePipeline> {
        Ok(StagePipeline {
            main: self.pipeline(variant)?,
            variant: variant.clone(),
            immediates: self.info().has_immediate_coeffs() && variant.kernel.reads_coeffs(),
        })
    }

    /// A stage's kernel that reads α and β from its binding on every device, for a stage that
    /// binds a pair of its own there.
    pub(crate) fn bound_stage_pipeline(&self, variant: &Variant) -> Result<StagePipeline> {
        Ok(StagePipeline {
            main: self.pipeline(variant)?,
            variant: variant.clone(),
            immediates: false,
        })
    }

    /// The compiled pipeline for a kernel variant, built once per device.
    pub(crate) fn pipeline(&self, variant: &Variant) -> Result<Arc<wgpu::ComputePipeline>> {
        self.pipeline_for(variant, Caller::Plan)
    }

    fn pipeline_for(
        &self,
        variant: &Variant,
        caller: Caller,
    ) -> Result<Arc<wgpu::ComputePipeline>> {
        let key = variant.key();
        let slot = crate::lock(&self.inner.pipelines)
            .entry(key.clone())
            .or_default()
            .clone();
        let asked = std::time::Instant::now();
        let (mut slot, waited) = match slot.try_lock() {
            Ok(s) => (s, false),
            Err(std::sync::TryLockError::Poisoned(p)) => (p.into_inner(), false),
            Err(std::sync::TryLockError::WouldBlock) => (crate::lock(&slot), true),
        };
        // A plan's compile time is what it waited for its pipelines, compiled here or ahead.
        let charge = |gpu: &Gpu| {
            if caller == Caller::Plan {
                let spent = asked.elapsed().as_nanos() as u64;
                gpu.inner.compile_ns.fetch_add(spent, Ordering::Relaxed);
            }
        };
        if caller == Caller::Plan && !slot.asked {
            slot.asked = true;
            self.list_asked(&key);
        }
        if let Some(p) = &slot.pipeline {
            if waited {
                charge(self);
            }
            return Ok(p.clone());
        }
        let p = Arc::new(self.compile(variant)?);
        charge(self);
        slot.pipeline = Some(p.clone());
        Ok(p)
    }

    /// Adds a kernel a plan asked for to the list kept for the next process.
    fn list_asked(&self, key: &crate::kernel::PipelineKey) {
        let Some(dc) = crate::lock(&self.inner.disk_cache).clone() else {
            return;
        };
        let line = key.to_line();
        if !dc.listed.contains(&line) {
            dc.changed.store(true, Ordering::Release);
        }
        crate::lock(&dc.asked).push(line);
    }

    /// Compiles a variant's pipeline (through the pipeline cache, where there is one).
    fn compile(&self, variant: &Variant) -> Result<wgpu::ComputePipeline> {
        let label = variant.label();
        let mut source = variant.source();
        let constants: Vec<(&str, f64)> = variant
            .overrides
            .iter()
            .map(|&(k, v)| (k, v as f64))
            .collect();
        // wgpu does not check workgroup memory against the limit, and a driver may not either:
        // NVIDIA's ran an over-limit f64 `bccoo` variant and faulted (Xid 13), leaving the
        // product's fence unsignalled forever. Counted on the module with its overrides applied.
        let limit = self.info().limits.max_compute_workgroup_storage_size as u64;
        if let Some(needed) = workgroup_bytes(&source, &constants) {
            if needed > limit {
                return Err(crate::Error::DeviceLimit {
                    kernel: label,
                    limit_name: "max_compute_workgroup_storage_size",
                    needed,
                    limit,
                });
            }
        }
        // In a browser the WGSL goes to the browser's own compiler, which wants the directive
        // that naga (wgpu's compiler everywhere else) does not parse yet.
        if self.info().backend == wgpu::Backend::BrowserWebGpu
            && variant.kernel.uses_lanes()
            && variant.lanes == LaneMode::Subgroup
        {
            source = format!("enable subgroups;\n{source}");
        }
        // A typed error, not a validation message, for a device created with low limits.
        let storage = source
            .lines()
            .filter(|l| !l.trim_start().starts_with("//") && l.contains("var<storage"))
            .count() as u64;
        let limit = self.info().limits.max_storage_buffers_per_shader_stage as u64;
        if storage > limit {
            return Err(crate::Error::DeviceLimit {
                kernel: label,
                limit_name: "max_storage_buffers_per_shader_stage",
                needed: storage,
                limit,
            });
        }
        let disk = crate::lock(&self.inner.disk_cache).clone();
        let pipeline = self.scoped(&format!("compiling {label}"), || {
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(&label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            };
            // SAFETY: naga's forced loop bounding (a counter and a branch in every loop) slows
            // row loops several-fold, so it is off, which requires every loop to terminate. Ours
            // do: each runs over an index range read from validated row pointers of one chunk,
            // whose entries fit one storage binding (at most 2^30 of them with 4-byte indices), so
            // `k + step` with `step <= 128` never wraps a u32. Bounds checks and division guards
            // stay on.
            let checks = wgpu::ShaderRuntimeChecks {
                force_loop_bounding: false,
                ..wgpu::ShaderRuntimeChecks::checked()
            };
            let module = unsafe { self.inner.device.create_shader_module_trusted(desc, checks) };
            self.inner
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&label),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &constants,
                        ..Default::default()
                    },
                    cache: disk.as_ref().map(|d| &d.cache),
                })
        })?;
        if let Some(d) = &disk {
            d.changed.store(true, Ordering::Release);
        }
        Ok(pipeline)
    }
}

/// Writes `data` to `path` aside, then renames it: a reader in another process never sees half
/// a file.
fn write_aside(path: &Path, data: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    std::fs::write(&tmp, data).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Bytes of workgroup memory a kernel declares once `constants` are applied (every
/// `var<workgroup>`, each at its alignment), or `None` where naga cannot tell: then wgpu's own
/// compile reports what is wrong with the module.
pub(crate) fn workgroup_bytes(source: &str, constants: &[(&str, f64)]) -> Option<u64> {
    let module = naga::front::wgsl::parse_str(source).ok()?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .ok()?;
    let mut values = naga::back::PipelineConstants::default();
    for &(name, value) in constants {
        values.insert(name.to_string(), value);
    }
    let (module, _) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((naga::ShaderStage::Compute, "main")),
        &values,
    )
    .ok()?;
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).ok()?;
    let mut bytes = 0u32;
    for (_, global) in module.global_variables.iter() {
        if global.space == naga::AddressSpace::WorkGroup {
            let layout = &layouter[global.ty];
            bytes = layout.alignment.round_up(bytes).checked_add(layout.size)?;
        }
    }
    Some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::workgroup_bytes;

    #[test]
    fn workgroup_bytes_counts_override_sized_arrays_at_their_alignment() {
        let src = "override N: u32 = 4u;\n\
                   override USE_B: u32 = 1u;\n\
                   var<workgroup> a: array<f32, N * 3u>;\n\
                   var<workgroup> b: array<vec4<f32>, select(1u, N, USE_B == 1u)>;\n\
                   var<workgroup> c: atomic<u32>;\n\
                   @compute @workgroup_size(1) fn main() {\n\
                       a[0] = 1.0; b[0] = vec4<f32>(0.0); atomicStore(&c, 0u);\n\
                   }\n";
        // 12 floats (48 bytes), 4 vec4s at 16 (64), one word: 116.
        assert_eq!(workgroup_bytes(src, &[]), Some(116));
        // 30 floats (120 bytes, the vec4s then start at 128), 10 vec4s, one word: 292.
        assert_eq!(workgroup_bytes(src, &[("N", 10.0)]), Some(292));
        // The override that shrinks an array to one element.
        assert_eq!(
            workgroup_bytes(src, &[("N", 10.0), ("USE_B", 0.0)]),
            Some(148)
        );
        // Not WGSL: left to wgpu's compile to report.
        assert_eq!(workgroup_bytes("fn (", &[]), None);
    }
}
