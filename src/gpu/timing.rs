//! GPU timing: timestamp queries where the adapter has them, else a wall clock around many
//! dispatches in one submission.

use super::Gpu;
use crate::{Error, Result};
use std::time::Instant;

/// How a time was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// Timestamp queries at the start and end of one compute pass.
    GpuTimestamps,
    /// Host wall clock around one submission (includes submission overhead).
    WallClock,
}

/// The time of one repetition, averaged over many in one submission.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub ms: f64,
    pub repeats: u32,
    pub timer: Timer,
}

impl Gpu {
    /// Times `repeats` calls of `record`, all in one compute pass of one submission, after one
    /// untimed warm-up pass. Returns the mean time of one call.
    pub fn time_pass(&self, repeats: u32, mut record: impl FnMut(&mut wgpu::ComputePass<'_>)) -> Result<Timing> {
        let repeats = repeats.max(1);
        let device = self.device();
        // Warm-up: pipelines, first-touch page faults, clocks.
        self.scoped("warm-up", || {
            let mut enc = device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                record(&mut pass);
            }
            self.queue().submit([enc.finish()]);
        })?;
        self.wait()?;
        if self.info().has(wgpu::Features::TIMESTAMP_QUERY) {
            let ticks = self.timestamps(|enc, query_set| {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("wgspmv timed"),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    }),
                });
                for _ in 0..repeats {
                    record(&mut pass);
                }
            })?;
            let ns = ticks as f64 * self.queue().get_timestamp_period() as f64;
            // A zero reading means the driver did not really time it; fall through to the clock.
            if ns > 0.0 {
                return Ok(Timing { ms: ns / 1e6 / repeats as f64, repeats, timer: Timer::GpuTimestamps });
            }
        }
        let start = Instant::now();
        self.scoped("timed submission", || {
            let mut enc = device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                for _ in 0..repeats {
                    record(&mut pass);
                }
            }
            self.queue().submit([enc.finish()]);
        })?;
        self.wait()?;
        Ok(Timing { ms: start.elapsed().as_secs_f64() * 1e3 / repeats as f64, repeats, timer: Timer::WallClock })
    }

    /// Records work with a two-entry timestamp query set and returns `end - start` in ticks.
    fn timestamps(&self, record: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::QuerySet)) -> Result<u64> {
        let device = self.device();
        let (resolve, staging) = self.scoped("timestamp queries", || {
            let query_set = device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("wgspmv timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            });
            let resolve = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgspmv timestamp resolve"),
                size: 16,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let staging = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgspmv timestamp readback"),
                size: 16,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut enc = device.create_command_encoder(&Default::default());
            record(&mut enc, &query_set);
            enc.resolve_query_set(&query_set, 0..2, &resolve, 0);
            enc.copy_buffer_to_buffer(&resolve, 0, &staging, 0, 16);
            self.queue().submit([enc.finish()]);
            (resolve, staging)
        })?;
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait()?;
        rx.try_recv()
            .map_err(|_| Error::Map("timestamp readback was not mapped".into()))?
            .map_err(|e| Error::Map(e.to_string()))?;
        let view = staging.get_mapped_range(..).map_err(|e| Error::Map(e.to_string()))?;
        let t: Vec<u64> = bytemuck::pod_collect_to_vec(&view[..16]);
        drop(view);
        staging.unmap();
        drop(resolve);
        Ok(t[1].saturating_sub(t[0]))
    }

    /// Bandwidth of a device-to-device copy kernel over `bytes` bytes, in GB/s counting the read
    /// and the write (the physical ceiling for SpMV, measured like an SpMV).
    pub fn copy_bandwidth(&self, bytes: u64, repeats: u32) -> Result<f64> {
        let limit = self.info().max_binding_bytes();
        let bytes = bytes.min(limit).max(1 << 16) / 16 * 16;
        let kernel = super::shader::COPY;
        let wg = 256u32;
        let pipeline = self.pipeline(
            super::PipelineKey { kernel: kernel.name, variant: String::new(), overrides: vec![("WG_SIZE", wg)] },
            || kernel.source("u32", super::shader::LaneMode::Workgroup),
        )?;
        let src = self.scoped("allocating copy buffers", || {
            let mk = |label| {
                self.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                })
            };
            (mk("copy source"), mk("copy destination"))
        })?;
        let bind_group = self.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("copy"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: src.0.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: src.1.as_entire_binding() },
            ],
        });
        let groups = (bytes / 16).div_ceil(wg as u64) as u32;
        let dims = self.grid(groups);
        let t = self.time_pass(repeats, |pass| {
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(dims[0], dims[1], 1);
        })?;
        Ok(2.0 * bytes as f64 / (t.ms * 1e6))
    }

    /// A 2-D grid of at least `groups` workgroups within the per-dimension limit.
    pub(crate) fn grid(&self, groups: u32) -> [u32; 2] {
        let max = self.info().limits.max_compute_workgroups_per_dimension.max(1);
        if groups <= max {
            [groups, 1]
        } else {
            [max, groups.div_ceil(max)]
        }
    }
}
