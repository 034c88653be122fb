//! The pipeline cache: one compiled pipeline per kernel variant and device.

use super::Gpu;
use crate::kernel::{LaneMode, Variant};
use crate::Result;
use std::sync::Arc;

impl Gpu {
    /// The compiled pipeline for a kernel variant, built once per device.
    pub(crate) fn pipeline(&self, variant: &Variant) -> Result<Arc<wgpu::ComputePipeline>> {
        let key = variant.key();
        if let Some(p) = self.inner.pipelines.lock().unwrap().get(&key) {
            return Ok(p.clone());
        }
        let label = variant.label();
        let mut source = variant.source();
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
        let constants: Vec<(&str, f64)> = variant
            .overrides
            .iter()
            .map(|&(k, v)| (k, v as f64))
            .collect();
        let compiling = std::time::Instant::now();
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
                    cache: None,
                })
        })?;
        let spent = compiling.elapsed().as_nanos() as u64;
        self.inner
            .compile_ns
            .fetch_add(spent, std::sync::atomic::Ordering::Relaxed);
        let p = Arc::new(pipeline);
        self.inner.pipelines.lock().unwrap().insert(key, p.clone());
        Ok(p)
    }
}
