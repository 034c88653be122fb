//! The pipeline cache: one compiled pipeline per kernel variant and device, and (where the
//! adapter has `Features::PIPELINE_CACHE`) the driver's compiled code kept in a file between
//! processes.

use super::Gpu;
use crate::kernel::{LaneMode, Variant};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A wgpu pipeline cache every compile goes through, and the file it is kept in.
pub(crate) struct DiskCache {
    cache: wgpu::PipelineCache,
    /// `None` for an application's own cache, which the application saves.
    file: Option<PathBuf>,
    /// Pipelines were compiled since the last save.
    changed: AtomicBool,
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
        // Written aside, then renamed: a reader in another process never sees half a file.
        let tmp = file.with_extension(format!("tmp{}", std::process::id()));
        let io = |source| Error::Io {
            path: file.clone(),
            source,
        };
        std::fs::write(&tmp, &data).map_err(io)?;
        std::fs::rename(&tmp, file).map_err(io)?;
        log::debug!(
            "pipeline cache {} saved ({} bytes)",
            file.display(),
            data.len()
        );
        Ok(())
    }

    /// Saves the pipeline cache after a `prepare`; a failure costs the next process compile
    /// time, so it is logged rather than returned.
    pub(crate) fn save_pipeline_cache_quietly(&self) {
        if let Err(e) = self.save_pipeline_cache() {
            log::warn!("{e}");
        }
    }

    /// The compiled pipeline for a kernel variant, built once per device.
    pub(crate) fn pipeline(&self, variant: &Variant) -> Result<Arc<wgpu::ComputePipeline>> {
        let key = variant.key();
        if let Some(p) = crate::lock(&self.inner.pipelines).get(&key) {
            return Ok(p.clone());
        }
        let label = variant.label();
        let compiling = std::time::Instant::now();
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
        let spent = compiling.elapsed().as_nanos() as u64;
        self.inner
            .compile_ns
            .fetch_add(spent, std::sync::atomic::Ordering::Relaxed);
        let p = Arc::new(pipeline);
        crate::lock(&self.inner.pipelines).insert(key, p.clone());
        Ok(p)
    }
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
