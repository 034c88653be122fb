//! Recording one-off GPU work (a setup, a validation, a value update) into a single compute
//! pass: kernels bound by position, each dispatched over a 2-D grid of workgroups.

use super::pool::Bind;
use super::Gpu;
use crate::kernel::{Kernel, LaneMode, Variant};
use crate::Result;
use std::sync::Arc;

/// Records dispatches into one compute pass, binding buffers by position.
pub(crate) struct Recorder<'a> {
    gpu: &'a Gpu,
    pass: wgpu::ComputePass<'static>,
}

impl<'a> Recorder<'a> {
    /// A compute pass on `enc`, ended when the recorder is dropped.
    pub(crate) fn new(gpu: &'a Gpu, enc: &mut wgpu::CommandEncoder, label: &str) -> Self {
        let pass = enc
            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(label),
                timestamp_writes: None,
            })
            .forget_lifetime();
        Self { gpu, pass }
    }

    /// Dispatches `groups` workgroups of `kernel` with `buffers` at bindings 0, 1, ...
    pub(crate) fn dispatch(
        &mut self,
        kernel: Kernel,
        overrides: Vec<(&'static str, u32)>,
        buffers: &[&dyn Bind],
        groups: u32,
    ) -> Result<()> {
        let pipeline = pipeline_of(self.gpu, kernel, overrides)?;
        let resources: Vec<_> = buffers.iter().map(|b| b.binding()).collect();
        self.dispatch_pipeline(&pipeline, kernel.name, resources, groups);
        Ok(())
    }

    /// Dispatches `groups` workgroups of any `pipeline` with `resources` at bindings 0, 1, ...
    pub(crate) fn dispatch_pipeline(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        label: &str,
        resources: Vec<wgpu::BindingResource>,
        groups: u32,
    ) {
        let entries: Vec<wgpu::BindGroupEntry> = resources
            .into_iter()
            .enumerate()
            .map(|(i, resource)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource,
            })
            .collect();
        let group = self
            .gpu
            .device()
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(label),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            });
        let [x, y] = self.gpu.grid(groups);
        self.pass.set_pipeline(pipeline);
        self.pass.set_bind_group(0, &group, &[]);
        self.pass.dispatch_workgroups(x, y, 1);
    }
}

impl Recorder<'_> {
    /// Dispatches the passes of a kernel with a `PASS` override over the same `buffers`: each
    /// `(pass, groups)` in order, those of no workgroups left out.
    pub(crate) fn passes(
        &mut self,
        kernel: Kernel,
        buffers: &[&dyn Bind],
        passes: &[(u32, u32)],
    ) -> Result<()> {
        for &(pass, groups) in passes.iter().filter(|p| p.1 > 0) {
            self.dispatch(kernel, vec![("PASS", pass)], buffers, groups)?;
        }
        Ok(())
    }
}

/// Records `f`'s dispatches into one compute pass of a new encoder labelled `label` and submits
/// it (not waited for); errors the device raises meanwhile are reported as happening `during`.
pub(crate) fn submit_pass(
    gpu: &Gpu,
    label: &str,
    during: &str,
    f: impl FnOnce(&mut Recorder) -> Result<()>,
) -> Result<()> {
    submit_copies_and_pass(gpu, label, during, &[], f)
}

/// [`submit_pass`], after `copies` (source, destination, bytes from offset 0) on the same encoder.
pub(crate) fn submit_copies_and_pass(
    gpu: &Gpu,
    label: &str,
    during: &str,
    copies: &[(&wgpu::Buffer, &wgpu::Buffer, u64)],
    f: impl FnOnce(&mut Recorder) -> Result<()>,
) -> Result<()> {
    gpu.scoped(during, || -> Result<()> {
        let mut enc = gpu
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        for &(src, dst, bytes) in copies {
            gpu.record_copy(&mut enc, src, 0, dst, 0, bytes)?;
        }
        {
            let mut r = Recorder::new(gpu, &mut enc, label);
            f(&mut r)?;
        }
        gpu.submit([enc.finish()]);
        Ok(())
    })?
}

/// u32 entries per block of [`Recorder::scan`] (`SCAN_WG * SCAN_ITEMS` in
/// shaders/shared/scan_u32_common.wgsl); its `block_sums` need one entry per block.
pub(crate) const SCAN_BLOCK: u32 = 256 * 8;

/// Mirrors `struct ScanParams` in shaders/shared/scan_u32_common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ScanParams {
    n: u32,
    blocks: u32,
}

impl Recorder<'_> {
    /// Exclusive scan of the first `n` entries of `data` in place; `block_sums` holds at least
    /// `n / SCAN_BLOCK` entries, rounded up.
    pub(crate) fn scan(&mut self, data: &dyn Bind, block_sums: &dyn Bind, n: u32) -> Result<()> {
        let blocks = n.div_ceil(SCAN_BLOCK);
        let params = self
            .gpu
            .uniform_buffer("scan params", bytemuck::bytes_of(&ScanParams { n, blocks }));
        let buffers: [&dyn Bind; 3] = [data, block_sums, &params];
        self.dispatch(crate::kernel::SCAN_U32_REDUCE, vec![], &buffers, blocks)?;
        self.dispatch(crate::kernel::SCAN_U32_DOWN, vec![], &buffers, blocks)
    }
}

/// The pipeline of a u32 kernel (compiled once per device and overrides).
pub(crate) fn pipeline_of(
    gpu: &Gpu,
    kernel: Kernel,
    overrides: Vec<(&'static str, u32)>,
) -> Result<Arc<wgpu::ComputePipeline>> {
    gpu.pipeline(&Variant::new(kernel, "u32", LaneMode::Workgroup, overrides))
}
