//! Warming a GPU up before recordings are compared. From idle, a discrete GPU's clocks rise in
//! steps over a few hundred milliseconds of load, and rankings taken on the way can differ from
//! settled ones (a memory-bound kernel and a compute-bound one slow down unlike). A copy kernel
//! timed in the same submissions tells where the clocks are: once it has run as fast as it ever
//! has on this device, the GPU is warm, which a GPU kept busy shows within a millisecond.

use super::Gpu;
use crate::Result;
use std::time::Instant;

/// Bytes the probe copies (each way): memory-bound, a few microseconds on a fast GPU.
const PROBE_BYTES: u64 = 16 << 20;

/// Copies per probe sample, and samples per check.
const PROBE_REPS: u32 = 16;
const PROBE_ROUNDS: u32 = 4;

/// The probe within this factor of the fastest it has run on this device: warm (above the
/// probe's own spread, well below a lower clock step; docs/auto.md).
const WARM_WITHIN: f64 = 1.2;

/// GPU time of the busy work between two probes, ms.
const CHUNK_MS: f64 = 8.0;

/// Warm once the probe has not got 3% faster for this long where no fastest is known yet
/// (longer than one step of the clocks lasts; docs/auto.md), ms.
const QUIET_MS: f64 = 300.0;

/// The most a warm-up runs, ms.
const MOST_MS: f64 = 1500.0;

/// How long a warm-up may look (tests shorten it).
struct Settings {
    probe_bytes: u64,
    quiet_ms: f64,
    most_ms: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            probe_bytes: PROBE_BYTES,
            quiet_ms: QUIET_MS,
            most_ms: MOST_MS,
        }
    }
}

/// What a warm-up did.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WarmUp {
    /// Wall-clock milliseconds it took.
    pub ms: f64,
    /// Whether the GPU was found warm at once.
    pub was_warm: bool,
}

impl Gpu {
    /// Keeps the GPU busy with `busy` (about `busy_ms` of GPU time per call) until a copy
    /// kernel timed between its calls runs as fast as the fastest seen on this device, or, the
    /// first time, until it stops getting faster. `None` where nothing can tell: no timestamp
    /// queries (nothing was run then).
    /// A software adapter has no clocks to raise: `None` there too.
    pub(crate) fn warm_up(
        &self,
        busy: &mut dyn FnMut(&mut wgpu::ComputePass<'_>),
        busy_ms: f64,
    ) -> Result<Option<WarmUp>> {
        if self.info().device_type == wgpu::DeviceType::Cpu {
            return Ok(None);
        }
        self.warm_up_within(busy, busy_ms, &Settings::default())
    }

    fn warm_up_within(
        &self,
        busy: &mut dyn FnMut(&mut wgpu::ComputePass<'_>),
        busy_ms: f64,
        settings: &Settings,
    ) -> Result<Option<WarmUp>> {
        let start = Instant::now();
        if !self.info().has(wgpu::Features::TIMESTAMP_QUERY) {
            return Ok(None);
        }
        let mut probe = self.copy_recording(settings.probe_bytes)?;
        let fastest = *crate::lock(&self.inner.fastest_probe_ms);
        let warm = |ms: f64| fastest.is_some_and(|f| ms <= f * WARM_WITHIN);
        let Some(first) = self.probe(&mut probe, None, 0)? else {
            return Ok(None);
        };
        let mut best = first;
        let done = |best: f64| -> WarmUp {
            let mut f = crate::lock(&self.inner.fastest_probe_ms);
            *f = Some(f.map_or(best, |f: f64| f.min(best)));
            WarmUp {
                ms: start.elapsed().as_secs_f64() * 1e3,
                was_warm: false,
            }
        };
        if warm(first) {
            return Ok(Some(WarmUp {
                was_warm: true,
                ..done(best)
            }));
        }
        let per_chunk = ((CHUNK_MS / busy_ms.max(1e-4)).ceil() as u32).clamp(1, 5000);
        let mut improved = Instant::now();
        loop {
            let Some(ms) = self.probe(&mut probe, Some(&mut *busy), per_chunk)? else {
                return Ok(Some(done(best)));
            };
            if ms < best * 0.97 {
                improved = Instant::now();
            }
            best = best.min(ms);
            let quiet = improved.elapsed().as_secs_f64() * 1e3 >= settings.quiet_ms;
            let long = start.elapsed().as_secs_f64() * 1e3 >= settings.most_ms;
            // With the fastest known, a plateau of the clocks is not the top: only reaching it
            // ends the warm-up before the limit. Kept below it that long (another process on
            // the GPU, a hot one), the device's record becomes what it runs now (a record
            // set too slow is lowered by the next warm-up that beats it).
            let end = match fastest {
                Some(_) if warm(ms) => true,
                Some(_) if long => {
                    *crate::lock(&self.inner.fastest_probe_ms) = Some(best);
                    true
                }
                Some(_) => false,
                None => quiet || long,
            };
            if end {
                log::debug!(
                    "warm-up: probe {first:.4} -> {ms:.4} ms (fastest before {fastest:?}) in {:.1} ms",
                    start.elapsed().as_secs_f64() * 1e3
                );
                return Ok(Some(done(best)));
            }
        }
    }

    /// `calls` calls of `busy` (if given; one more in each round), then the probe's samples, in
    /// one submission; the probe's fastest sample, ms per copy.
    fn probe(
        &self,
        probe: &mut dyn FnMut(&mut wgpu::ComputePass<'_>),
        busy: Option<&mut dyn FnMut(&mut wgpu::ComputePass<'_>)>,
        calls: u32,
    ) -> Result<Option<f64>> {
        type Record<'r> = &'r mut dyn FnMut(&mut wgpu::ComputePass<'_>);
        let (mut records, reps, warm): (Vec<Record>, _, _) = match busy {
            Some(b) => (vec![b, probe], vec![1, PROBE_REPS], calls),
            None => (vec![probe], vec![PROBE_REPS], 0),
        };
        let Some(ms) = self.time_back_to_back(&mut records, warm, PROBE_ROUNDS, &reps)? else {
            return Ok(None);
        };
        let probe_ms = ms.last().expect("the probe was timed");
        Ok(Some(probe_ms.iter().copied().fold(f64::INFINITY, f64::min)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decision, on whatever adapter the tests have (lavapipe in CI): a device whose probe
    /// ran as fast before is warm at once; one that never reaches its recorded fastest probe
    /// keeps the busy work running until the probe stops getting faster, then records what it
    /// reached.
    #[test]
    fn warm_at_once_or_busy_until_the_probe_settles() {
        let Some(gpu) = crate::gpu::test_gpu_with_timestamps() else {
            return;
        };
        let settings = Settings {
            probe_bytes: 1 << 16,
            quiet_ms: 40.0,
            most_ms: 150.0,
        };
        let mut calls = 0u32;
        let mut busy = |_: &mut wgpu::ComputePass<'_>| calls += 1;
        // Nothing recorded yet: it runs until quiet and records the probe's fastest.
        let w = gpu.warm_up_within(&mut busy, 1.0, &settings).unwrap();
        let w = w.expect("timestamps tell");
        assert!(!w.was_warm);
        assert!(w.ms >= settings.quiet_ms, "{w:?}");
        let fastest = gpu
            .inner
            .fastest_probe_ms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .expect("recorded");
        assert!(fastest > 0.0 && fastest.is_finite());
        assert!(calls > 0);
        // A device recorded slower than it runs now is warm: no busy work.
        *crate::lock(&gpu.inner.fastest_probe_ms) = Some(1e9);
        calls = 0;
        let mut busy = |_: &mut wgpu::ComputePass<'_>| calls += 1;
        let w = gpu
            .warm_up_within(&mut busy, 1.0, &settings)
            .unwrap()
            .unwrap();
        assert!(w.was_warm, "{w:?}");
        assert_eq!(calls, 0);
        // One recorded faster than it can run: busy to the limit, then the record is what it
        // runs now.
        *crate::lock(&gpu.inner.fastest_probe_ms) = Some(1e-12);
        let mut calls = 0u32;
        let mut busy = |_: &mut wgpu::ComputePass<'_>| calls += 1;
        let w = gpu
            .warm_up_within(&mut busy, 1.0, &settings)
            .unwrap()
            .unwrap();
        assert!(!w.was_warm && w.ms >= settings.most_ms, "{w:?}");
        assert!(calls > 0);
        let now = gpu
            .inner
            .fastest_probe_ms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .expect("recorded");
        assert!(now > 1e-9, "{now}");
    }

    /// Back-to-back timing: one series per recording, a time for each round, every one
    /// positive; rounds beyond what one query set holds are clamped, not an error.
    #[test]
    fn back_to_back_series_per_recording_and_round() {
        let Some(gpu) = crate::gpu::test_gpu_with_timestamps() else {
            return;
        };
        let (mut a, mut b) = (
            gpu.copy_recording(1 << 16).unwrap(),
            gpu.copy_recording(1 << 17).unwrap(),
        );
        let mut records: Vec<&mut dyn FnMut(&mut wgpu::ComputePass<'_>)> = vec![&mut a, &mut b];
        let Some(ms) = gpu.time_back_to_back(&mut records, 2, 3, &[1, 2]).unwrap() else {
            eprintln!("no timestamps: skipped");
            return;
        };
        assert_eq!(ms.len(), 2);
        for series in &ms {
            assert_eq!(series.len(), 3);
            assert!(series.iter().all(|&t| t > 0.0 && t.is_finite()), "{ms:?}");
        }
        let most = (wgpu::QUERY_SET_MAX_QUERIES / 4) as usize;
        let ms = gpu
            .time_back_to_back(&mut records, 0, u32::MAX, &[1, 1])
            .unwrap()
            .expect("timestamps as before");
        assert_eq!(ms[0].len(), most);
        assert_eq!(ms[1].len(), most);
    }
}
