//! GPU timing: timestamp queries where the adapter has them, else a wall clock around many
//! dispatches in one submission.

use super::Gpu;
use crate::Result;
use std::time::Instant;

/// How long the GPU must have run without getting faster before round-robin samples start, and
/// the most a settling may take, seconds.
const SETTLE_S: f64 = 0.2;
const SETTLE_MAX_S: f64 = 1.5;

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
    /// Milliseconds per repetition: the median over samples of each sample's mean.
    pub ms: f64,
    /// Repetitions per sample actually recorded (may be fewer than asked, to keep a sample
    /// short).
    pub repeats: u32,
    /// How the time was taken.
    pub timer: Timer,
}

impl Gpu {
    /// Times `record`: the mean time of one call over `repeats` calls recorded back to back in
    /// one compute pass, the median of several such samples. First the GPU is kept busy until its
    /// speed has settled, so that a discrete GPU's clocks have left their idle state (a GPU idle
    /// while the host prepared the next matrix otherwise reads slow).
    pub fn time_pass(
        &self,
        repeats: u32,
        mut record: impl FnMut(&mut wgpu::ComputePass<'_>),
    ) -> Result<Timing> {
        let repeats = repeats.max(1);
        // The first call compiles and faults pages in; the second estimates one call's cost.
        self.submit_pass(1, &mut record)?;
        let once = self.submit_pass(1, &mut record)?.max(1e-6);
        let per_batch = ((0.01 / once) as u32).clamp(1, 1000);
        // Clocks ramp up in steps, and a GPU left idle for a moment (the host building a plan)
        // can need longer than a fixed warm-up.
        self.settle(per_batch, &mut record, 0.2, 0.3, 2.0)?;
        // Keep one sample under about a second, whatever `repeats` asks.
        let reps = repeats.min(((1.0 / once) as u32).max(1));
        let samples = if reps as f64 * once > 0.3 { 3 } else { 7 };
        let mut times = Vec::with_capacity(samples);
        let mut timer = Timer::GpuTimestamps;
        for _ in 0..samples {
            let (ms, t) = self.sample(reps, &mut record)?;
            times.push(ms);
            timer = t;
        }
        times.sort_by(f64::total_cmp);
        Ok(Timing {
            ms: times[times.len() / 2],
            repeats: reps,
            timer,
        })
    }

    /// Times several recordings against one another, ms per call in the order given: each is
    /// sampled in turn, `rounds` times over, and keeps its fastest sample. With `settle`, first
    /// the GPU's clocks are brought up (samples taken right after the host built a plan read a
    /// discrete GPU at idle clocks; docs/auto.md) and each sample is a few milliseconds of GPU
    /// time, at most `max_reps` calls; without, exactly `max_reps` calls per sample and nothing
    /// before them.
    pub(crate) fn time_round_robin(
        &self,
        records: &mut [&mut dyn FnMut(&mut wgpu::ComputePass<'_>)],
        rounds: u32,
        max_reps: u32,
        settle: bool,
    ) -> Result<Vec<f64>> {
        if !settle {
            let mut best = vec![f64::INFINITY; records.len()];
            for _ in 0..rounds.max(1) {
                for (i, record) in records.iter_mut().enumerate() {
                    best[i] = best[i].min(self.sample(max_reps.max(1), record)?.0);
                }
            }
            return Ok(best);
        }
        let mut reps = Vec::with_capacity(records.len());
        for record in records.iter_mut() {
            // The first call compiles and faults pages in; the second estimates one call.
            self.submit_pass(1, *record)?;
            let once = self.submit_pass(1, *record)?.max(1e-6);
            reps.push(((0.003 / once) as u32).clamp(1, max_reps.max(1)));
        }
        // A discrete GPU idle while the host built a plan runs at low clocks for a while, longer
        // than the samples last: keep it busy with the first recording first, until a copy
        // kernel timed between its batches shows the clocks up (`warm_up`); without timestamps,
        // in batches of about 5 ms until it stops getting faster.
        if let Some(first) = records.first_mut() {
            let gpu_once = self.sample(1, first)?.0 / 1e3;
            if self.warm_up(*first, gpu_once * 1e3)?.is_none() {
                let per_batch = ((0.005 / gpu_once.max(1e-7)) as u32).clamp(1, 5000);
                self.settle(per_batch, first, SETTLE_S, SETTLE_S, SETTLE_MAX_S)?;
            }
        }
        let mut best = vec![f64::INFINITY; records.len()];
        for _ in 0..rounds.max(1) {
            for (i, record) in records.iter_mut().enumerate() {
                best[i] = best[i].min(self.sample(reps[i], record)?.0);
            }
        }
        Ok(best)
    }

    /// Times recordings against one another in one submission, so that the GPU never waits on
    /// the host between samples (a discrete GPU lowers its clocks within such gaps): `warm`
    /// calls of the first recording, then `rounds` turns of `reps[i]` calls of each, every turn
    /// its own pass between two timestamps. Returns, per recording, ms per call in each round;
    /// `None` where the adapter has no timestamp queries or its driver reads them as zero.
    pub(crate) fn time_back_to_back(
        &self,
        records: &mut [&mut dyn FnMut(&mut wgpu::ComputePass<'_>)],
        warm: u32,
        rounds: u32,
        reps: &[u32],
    ) -> Result<Option<Vec<Vec<f64>>>> {
        let n = records.len();
        if n == 0 || !self.info().has(wgpu::Features::TIMESTAMP_QUERY) {
            return Ok((n == 0).then(Vec::new));
        }
        // Two queries per pass, within what one query set holds.
        let most = wgpu::QUERY_SET_MAX_QUERIES / (2 * n as u32);
        let rounds = rounds.clamp(1, most.max(1));
        let count = 2 * rounds * n as u32;
        let reps: Vec<u32> = (0..n)
            .map(|i| reps.get(i).copied().unwrap_or(1).max(1))
            .collect();
        let device = self.device();
        let (enc, resolve) = self.scoped("timed submission", || {
            let query_set = device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("wgspmv back-to-back timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count,
            });
            let resolve = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgspmv timestamp resolve"),
                size: 8 * count as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let mut enc = device.create_command_encoder(&Default::default());
            if warm > 0 {
                let mut pass = enc.begin_compute_pass(&Default::default());
                for _ in 0..warm {
                    (records[0])(&mut pass);
                }
            }
            let mut q = 0;
            for _ in 0..rounds {
                for (record, &reps) in records.iter_mut().zip(&reps) {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("wgspmv timed"),
                        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                            query_set: &query_set,
                            beginning_of_pass_write_index: Some(q),
                            end_of_pass_write_index: Some(q + 1),
                        }),
                    });
                    for _ in 0..reps {
                        record(&mut pass);
                    }
                    q += 2;
                }
            }
            enc.resolve_query_set(&query_set, 0..count, &resolve, 0);
            (enc, resolve)
        })?;
        let ticks: Vec<u64> = self.read_buffer_after(Some(enc), &resolve, count as usize)?;
        let period = self.queue().get_timestamp_period() as f64;
        let mut ms = vec![Vec::with_capacity(rounds as usize); n];
        for (k, pair) in ticks.chunks_exact(2).enumerate() {
            let ns = pair[1].saturating_sub(pair[0]) as f64 * period;
            if ns <= 0.0 {
                return Ok(None);
            }
            ms[k % n].push(ns / 1e6 / reps[k % n] as f64);
        }
        Ok(Some(ms))
    }

    /// Keeps the GPU busy with batches of `per_batch` calls of `record` until no batch has been
    /// 3% faster than the best for `window` seconds (running at least `min` and at most `max`
    /// seconds): clocks ramp up in steps after the GPU was idle.
    fn settle(
        &self,
        per_batch: u32,
        record: &mut (impl FnMut(&mut wgpu::ComputePass<'_>) + ?Sized),
        min: f64,
        window: f64,
        max: f64,
    ) -> Result<()> {
        let start = Instant::now();
        let (mut best, mut improved) = (f64::INFINITY, start);
        loop {
            let t = self.submit_pass(per_batch, record)?;
            if t < best * 0.97 {
                improved = Instant::now();
            }
            best = best.min(t);
            let elapsed = start.elapsed().as_secs_f64();
            if elapsed >= max || (elapsed >= min && improved.elapsed().as_secs_f64() >= window) {
                return Ok(());
            }
        }
    }

    /// Submits `reps` calls in one pass and waits; returns the wall-clock seconds.
    fn submit_pass(
        &self,
        reps: u32,
        record: &mut (impl FnMut(&mut wgpu::ComputePass<'_>) + ?Sized),
    ) -> Result<f64> {
        let start = Instant::now();
        self.scoped("timed submission", || {
            let mut enc = self.device().create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                for _ in 0..reps {
                    record(&mut pass);
                }
            }
            self.submit([enc.finish()]);
        })?;
        self.wait()?;
        Ok(start.elapsed().as_secs_f64())
    }

    /// One sample: milliseconds per call over `reps` calls, by timestamps where possible.
    fn sample(
        &self,
        reps: u32,
        record: &mut (impl FnMut(&mut wgpu::ComputePass<'_>) + ?Sized),
    ) -> Result<(f64, Timer)> {
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
                for _ in 0..reps {
                    record(&mut pass);
                }
            })?;
            let ns = ticks as f64 * self.queue().get_timestamp_period() as f64;
            // A zero reading means the driver did not really time it; fall back to the clock.
            if ns > 0.0 {
                return Ok((ns / 1e6 / reps as f64, Timer::GpuTimestamps));
            }
        }
        let secs = self.submit_pass(reps, record)?;
        Ok((secs * 1e3 / reps as f64, Timer::WallClock))
    }

    /// Records work with a two-entry timestamp query set and returns `end - start` in ticks.
    fn timestamps(
        &self,
        record: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::QuerySet),
    ) -> Result<u64> {
        let device = self.device();
        let resolve = self.scoped("timestamp queries", || {
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
            let mut enc = device.create_command_encoder(&Default::default());
            record(&mut enc, &query_set);
            enc.resolve_query_set(&query_set, 0..2, &resolve, 0);
            self.submit([enc.finish()]);
            resolve
        })?;
        let t: Vec<u64> = self.read_buffer(&resolve, 2)?;
        Ok(t[1].saturating_sub(t[0]))
    }

    /// Bandwidth of a device-to-device copy kernel over `bytes` bytes, in GB/s counting the read
    /// and the write (the physical ceiling for SpMV, measured like an SpMV).
    pub fn copy_bandwidth(&self, bytes: u64, repeats: u32) -> Result<f64> {
        let bytes = bytes.min(self.info().max_binding_bytes()).max(1 << 16) / 16 * 16;
        let t = self.time_pass(repeats, self.copy_recording(bytes)?)?;
        Ok(2.0 * bytes as f64 / (t.ms * 1e6))
    }

    /// A recording of one copy kernel over `bytes` (a multiple of 16 within one binding) between
    /// two buffers from the pool, returned when the recording is dropped.
    pub(crate) fn copy_recording(
        &self,
        bytes: u64,
    ) -> Result<impl FnMut(&mut wgpu::ComputePass<'_>) + 'static> {
        const WG: u32 = 256;
        let bytes = bytes.min(self.info().max_binding_bytes()).max(16) / 16 * 16;
        let pipeline = self.pipeline(&crate::kernel::Variant::new(
            crate::kernel::COPY,
            "u32",
            crate::kernel::LaneMode::Workgroup,
            vec![("WG_SIZE", WG)],
        ))?;
        let none = wgpu::BufferUsages::empty();
        let src = self.storage_zeroed("copy source", bytes, none)?;
        let dst = self.storage_zeroed("copy target", bytes, none)?;
        let bind_group = self.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("copy"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: src.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: dst.as_entire_binding(),
                },
            ],
        });
        let [x, y] = self.grid((bytes / 16).div_ceil(WG as u64) as u32);
        Ok(move |pass: &mut wgpu::ComputePass<'_>| {
            // The buffers live as long as the recording.
            let _ = (&src, &dst);
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(x, y, 1);
        })
    }

    /// A 2-D grid of at least `groups` workgroups within the per-dimension limit.
    pub(crate) fn grid(&self, groups: u32) -> [u32; 2] {
        let max = self
            .info()
            .limits
            .max_compute_workgroups_per_dimension
            .max(1);
        if groups <= max {
            [groups, 1]
        } else {
            [max, groups.div_ceil(max)]
        }
    }
}
