//! Recording one-off GPU work (a setup, a validation, a value update) into a single compute
//! pass: kernels bound by position, each dispatched over a 2-D grid of workgroups.

use super::pool::Bind;
use super::Gpu;
use crate::kernel::{Kernel, LaneMode, Variant};
use crate::Result;
use std::sync::Arc;

/// Records dispatches into one compute pass, binding buffers by position (or, timing each
/// dispatch, into a pass per dispatch: [`PASS_TIMES_VAR`]).
pub(crate) struct Recorder<'a> {
    gpu: &'a Gpu,
    pass: Option<wgpu::ComputePass<'static>>,
    timed: Option<Timed<'a>>,
}

/// Set to 1, one-off GPU work (setups, validation, value updates) runs each dispatch in a pass
/// of its own with a timestamp pair and logs the times at debug level: where a setup's GPU time
/// goes. Work submitted through [`submit_pass`] is waited for and logged at once; other
/// recordings are logged after the next read back has waited for them. Off, nothing is waited
/// for or logged.
pub(crate) const PASS_TIMES_VAR: &str = "WGSPMV_PASS_TIMES";

/// Dispatches timed by [`Recorder`]: the encoder the passes are begun on, the query set and each
/// timed dispatch's label; `deferred` (recorded into someone else's encoder) resolves the times
/// into a buffer logged after the next read back ([`log_deferred_pass_times`]).
struct Timed<'a> {
    enc: &'a mut wgpu::CommandEncoder,
    queries: wgpu::QuerySet,
    labels: Vec<String>,
    deferred: Option<String>,
}

/// A timed recording whose encoder was handed back to be submitted: the thread that recorded it
/// (which submits it before its own next read back), the recording's label, each dispatch's
/// label, and the buffer its timestamps are copied into.
pub(crate) type DeferredTimes = (std::thread::ThreadId, String, Vec<String>, wgpu::Buffer);

/// Recordings held at most per device: beyond them the oldest are dropped unlogged (an
/// application recording updates into its own encoders may never read back).
const DEFERRED_HELD: usize = 256;

/// Logs this thread's timed recordings on `gpu` handed back since the last call (called after
/// this thread's read back waited, so the GPU has run them). A debugging aid of
/// [`PASS_TIMES_VAR`].
pub(crate) fn log_deferred_pass_times(gpu: &Gpu) {
    let me = std::thread::current().id();
    let pending: Vec<DeferredTimes> = {
        let mut held = crate::lock(&gpu.inner.deferred_times);
        let (mine, others) = std::mem::take(&mut *held)
            .into_iter()
            .partition(|d| d.0 == me);
        *held = others;
        mine
    };
    for (_, label, names, buffer) in pending {
        if gpu
            .map_and_wait(&buffer, wgpu::MapMode::Read, 0..buffer.size())
            .is_err()
        {
            continue;
        }
        let ticks: Vec<u64> = match buffer.slice(..).get_mapped_range() {
            Ok(view) => bytemuck::pod_collect_to_vec(&view),
            Err(_) => Vec::new(),
        };
        buffer.unmap();
        log_times(gpu, &label, &names, &ticks);
    }
}

/// Logs each dispatch's GPU time from its timestamp pair, and the total.
fn log_times(gpu: &Gpu, label: &str, names: &[String], ticks: &[u64]) {
    let period = gpu.queue().get_timestamp_period() as f64;
    let mut total = 0.0;
    for (name, pair) in names.iter().zip(ticks.chunks_exact(2)) {
        let ms = pair[1].saturating_sub(pair[0]) as f64 * period / 1e6;
        total += ms;
        log::debug!("{label}: {name}: {ms:.4} ms");
    }
    log::debug!(
        "{label}: {} dispatches, {total:.4} ms of GPU time",
        names.len()
    );
}

/// Timestamp queries one timed recording holds (two per dispatch; later dispatches run untimed).
const TIMED_QUERIES: u32 = 512;

pub(crate) fn pass_times_wanted(gpu: &Gpu) -> bool {
    // Read once: every recording and read back asks.
    static SET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    gpu.info().has(wgpu::Features::TIMESTAMP_QUERY)
        && *SET.get_or_init(|| std::env::var(PASS_TIMES_VAR).is_ok_and(|v| v == "1"))
}

impl<'a> Recorder<'a> {
    /// A compute pass on `enc`, ended when the recorder is dropped (with [`PASS_TIMES_VAR`], a
    /// timed pass per dispatch, logged after the next read back).
    pub(crate) fn new(gpu: &'a Gpu, enc: &'a mut wgpu::CommandEncoder, label: &str) -> Self {
        if pass_times_wanted(gpu) {
            return Self::deferred(gpu, enc, label);
        }
        let pass = enc
            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(label),
                timestamp_writes: None,
            })
            .forget_lifetime();
        Self {
            gpu,
            pass: Some(pass),
            timed: None,
        }
    }

    /// A timed recorder whose times are logged after the next read back (its encoder is
    /// submitted by someone else).
    fn deferred(gpu: &'a Gpu, enc: &'a mut wgpu::CommandEncoder, label: &str) -> Self {
        Self::timed(gpu, enc, Some(label.to_owned()))
    }

    /// A recorder that begins a timed pass on `enc` for each dispatch (`deferred`: see
    /// [`Timed`]).
    fn timed(gpu: &'a Gpu, enc: &'a mut wgpu::CommandEncoder, deferred: Option<String>) -> Self {
        let queries = gpu.device().create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("wgspmv pass times"),
            ty: wgpu::QueryType::Timestamp,
            count: TIMED_QUERIES,
        });
        Self {
            gpu,
            pass: None,
            timed: Some(Timed {
                enc,
                queries,
                labels: Vec::new(),
                deferred,
            }),
        }
    }

    /// Dispatches `groups` workgroups of `kernel` with `buffers` at bindings 0, 1, ...
    pub(crate) fn dispatch(
        &mut self,
        kernel: Kernel,
        overrides: Vec<(&'static str, u32)>,
        buffers: &[&dyn Bind],
        groups: u32,
    ) -> Result<()> {
        self.dispatch_kernel(kernel, overrides, buffers, Groups::Direct(groups))
    }

    /// Dispatches `kernel` over the grid an earlier dispatch wrote into `indirect` (three
    /// words from its start), with `buffers` at bindings 0, 1, ...
    pub(crate) fn dispatch_indirect(
        &mut self,
        kernel: Kernel,
        overrides: Vec<(&'static str, u32)>,
        buffers: &[&dyn Bind],
        indirect: &wgpu::Buffer,
    ) -> Result<()> {
        self.dispatch_kernel(kernel, overrides, buffers, Groups::Indirect(indirect))
    }

    fn dispatch_kernel(
        &mut self,
        kernel: Kernel,
        overrides: Vec<(&'static str, u32)>,
        buffers: &[&dyn Bind],
        groups: Groups,
    ) -> Result<()> {
        // Timed dispatches are told apart by their overrides (a kernel's passes).
        let label = match &self.timed {
            Some(_) => format!("{} {overrides:?}", kernel.name),
            None => kernel.name.to_owned(),
        };
        let pipeline = pipeline_of(self.gpu, kernel, overrides)?;
        let resources: Vec<_> = buffers.iter().map(|b| b.binding()).collect();
        self.record(&pipeline, &label, resources, groups);
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
        self.record(pipeline, label, resources, Groups::Direct(groups));
    }

    fn record(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        label: &str,
        resources: Vec<wgpu::BindingResource>,
        groups: Groups,
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
        if let Some(t) = &mut self.timed {
            // The previous dispatch's pass ends before the next begins.
            self.pass = None;
            let q = 2 * t.labels.len() as u32;
            let writes = (q + 2 <= TIMED_QUERIES).then(|| wgpu::ComputePassTimestampWrites {
                query_set: &t.queries,
                beginning_of_pass_write_index: Some(q),
                end_of_pass_write_index: Some(q + 1),
            });
            if writes.is_some() {
                let groups = match groups {
                    Groups::Direct(n) => format!("{n} workgroups"),
                    Groups::Indirect(_) => "workgroups from the GPU".to_owned(),
                };
                t.labels.push(format!("{label} ({groups})"));
            }
            let pass = t.enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(label),
                timestamp_writes: writes,
            });
            self.pass = Some(pass.forget_lifetime());
        }
        let pass = self
            .pass
            .as_mut()
            .expect("a recorder has a pass while it records");
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &group, &[]);
        match groups {
            Groups::Direct(n) => {
                let [x, y] = self.gpu.grid(n);
                pass.dispatch_workgroups(x, y, 1);
            }
            Groups::Indirect(buffer) => pass.dispatch_workgroups_indirect(buffer, 0),
        }
    }
}

/// A dispatch's grid: a count of workgroups, or three words on the GPU.
enum Groups<'b> {
    Direct(u32),
    Indirect(&'b wgpu::Buffer),
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

impl Drop for Recorder<'_> {
    /// A deferred timed recording resolves its timestamps into a buffer of its own on the
    /// encoder, to be logged once the GPU has run it.
    fn drop(&mut self) {
        self.pass = None;
        let Some(t) = self.timed.take() else {
            return;
        };
        let (Some(label), false) = (t.deferred, t.labels.is_empty()) else {
            return;
        };
        let count = 2 * t.labels.len() as u32;
        let bytes = 8 * count as u64;
        let buffer = |usage| {
            self.gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgspmv pass times"),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        let resolve = buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC);
        let read = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        t.enc.resolve_query_set(&t.queries, 0..count, &resolve, 0);
        t.enc.copy_buffer_to_buffer(&resolve, 0, &read, 0, bytes);
        let mut held = crate::lock(&self.gpu.inner.deferred_times);
        if held.len() >= DEFERRED_HELD {
            held.remove(0);
        }
        held.push((std::thread::current().id(), label, t.labels, read));
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
        if pass_times_wanted(gpu) {
            return submit_timed(gpu, label, enc, f);
        }
        {
            let mut r = Recorder::new(gpu, &mut enc, label);
            f(&mut r)?;
        }
        gpu.submit([enc.finish()]);
        Ok(())
    })?
}

/// Records `f` with a timed pass per dispatch, submits it, waits and logs each dispatch's time.
fn submit_timed(
    gpu: &Gpu,
    label: &str,
    mut enc: wgpu::CommandEncoder,
    f: impl FnOnce(&mut Recorder) -> Result<()>,
) -> Result<()> {
    let (queries, labels) = {
        let mut r = Recorder::timed(gpu, &mut enc, None);
        f(&mut r)?;
        r.pass = None;
        let t = r.timed.take().expect("a timed recorder");
        (t.queries, t.labels)
    };
    let count = 2 * labels.len() as u32;
    if count == 0 {
        gpu.submit([enc.finish()]);
        return Ok(());
    }
    let resolve = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("wgspmv pass times resolve"),
        size: 8 * count as u64,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    enc.resolve_query_set(&queries, 0..count, &resolve, 0);
    let ticks: Vec<u64> = gpu.read_buffer_after(Some(enc), &resolve, count as usize)?;
    log_times(gpu, label, &labels, &ticks);
    Ok(())
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

/// Keys per tile of [`Recorder::radix_sort`] (`RADIX_WG * ITEMS` in
/// shaders/shared/radix_common.wgsl).
pub(crate) const RADIX_TILE: u32 = 256 * crate::kernel::RADIX_ITEMS[0];

/// Mirrors `struct RadixParams` in shaders/shared/radix_common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RadixParams {
    n: u32,
    shift: u32,
    tiles: u32,
    hi_words: u32,
}

/// The buffers of one side of [`Recorder::radix_sort`]'s ping-pong: the keys' low and high
/// words and the payloads.
pub(crate) struct SortSide<'b> {
    pub lo: &'b dyn Bind,
    pub hi: &'b dyn Bind,
    pub payload: &'b dyn Bind,
}

/// The radix sort's scratch: `counts` holds `256 * n.div_ceil(RADIX_TILE)` entries,
/// `block_sums` those entries divided by [`SCAN_BLOCK`], rounded up.
pub(crate) fn radix_scratch_len(n: u32) -> (u64, u64) {
    let counts = 256 * n.div_ceil(RADIX_TILE) as u64;
    (counts, counts.div_ceil(SCAN_BLOCK as u64).max(1))
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
        self.dispatch(crate::kernel::SCAN_U32_SUMS, vec![], &buffers, 1)?;
        self.dispatch(crate::kernel::SCAN_U32_DOWN, vec![], &buffers, blocks)
    }

    /// A stable LSD radix sort of `n` keys of `bits` bits (with `hi` words where `bits` > 32)
    /// and their payloads by 8-bit digits, moving them from `a` to `b` and back, one pass per
    /// digit; returns whether they end in `b` (an odd number of passes). No workgroup waits for
    /// another (no forward-progress assumption).
    pub(crate) fn radix_sort(
        &mut self,
        [a, b]: [&SortSide<'_>; 2],
        [counts, block_sums]: [&dyn Bind; 2],
        n: u32,
        bits: u32,
    ) -> Result<bool> {
        let passes = bits.div_ceil(8);
        let tiles = n.div_ceil(RADIX_TILE);
        let items = || vec![("ITEMS", crate::kernel::RADIX_ITEMS[0])];
        for pass in 0..passes {
            let (from, to) = if pass % 2 == 0 { (a, b) } else { (b, a) };
            let params = self.gpu.uniform_buffer(
                "radix params",
                bytemuck::bytes_of(&RadixParams {
                    n,
                    shift: 8 * pass,
                    tiles,
                    hi_words: (bits > 32) as u32,
                }),
            );
            self.dispatch(
                crate::kernel::RADIX_COUNT,
                items(),
                &[from.lo, from.hi, counts, &params],
                tiles,
            )?;
            self.scan(counts, block_sums, 256 * tiles)?;
            self.dispatch(
                crate::kernel::RADIX_SCATTER,
                items(),
                &[
                    from.lo,
                    from.hi,
                    from.payload,
                    &params,
                    counts,
                    to.lo,
                    to.hi,
                    to.payload,
                ],
                tiles,
            )?;
        }
        Ok(passes % 2 == 1)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Dispatches recorded a pass each, timed, compute what one pass computes: a scan over
    /// several blocks (a reduce, the block offsets, a down-sweep that reads them) in both ways;
    /// and a scan of more blocks than the offsets' workgroup takes in one chunk (three chunks).
    #[test]
    fn timed_dispatches_compute_what_one_pass_does() {
        let Some(gpu) = crate::gpu::test_gpu_with_timestamps() else {
            return;
        };
        let chunk = SCAN_BLOCK; // block sums one workgroup of the offsets pass takes at once
        let cases = [
            (3 * SCAN_BLOCK + 17, false, false),
            (3 * SCAN_BLOCK + 17, true, false),
            (3 * SCAN_BLOCK + 17, true, true),
            ((2 * chunk + 3) * SCAN_BLOCK + 5, false, false),
        ];
        let none = wgpu::BufferUsages::empty();
        for (n, timed, deferred) in cases {
            let items: Vec<u32> = (0..n).map(|i| (i * 7 + 3) % 11).collect();
            let expected: Vec<u32> = items
                .iter()
                .scan(0u32, |s, &v| {
                    let before = *s;
                    *s += v;
                    Some(before)
                })
                .collect();
            let data = gpu
                .storage_buffer(
                    "scan data",
                    bytemuck::cast_slice(&items),
                    wgpu::BufferUsages::COPY_SRC,
                )
                .unwrap();
            let sums = gpu
                .storage_zeroed("scan sums", 4 * n.div_ceil(SCAN_BLOCK) as u64, none)
                .unwrap();
            let scan = |r: &mut Recorder| r.scan(&data, &sums, n);
            if deferred {
                // Recorded into an encoder submitted afterwards; its times wait for a read back.
                let mut enc = gpu.device().create_command_encoder(&Default::default());
                scan(&mut Recorder::deferred(
                    &gpu,
                    &mut enc,
                    "test scan (deferred)",
                ))
                .unwrap();
                gpu.submit([enc.finish()]);
                let held = gpu
                    .inner
                    .deferred_times
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .iter()
                    .any(|(_, label, names, _)| {
                        label == "test scan (deferred)" && names.len() == 3
                    });
                assert!(
                    held,
                    "the deferred recording's three dispatches are not held"
                );
            } else if timed {
                let enc = gpu.device().create_command_encoder(&Default::default());
                submit_timed(&gpu, "test scan", enc, scan).unwrap();
            } else {
                submit_pass(&gpu, "test scan", "a test scan", scan).unwrap();
            }
            let got: Vec<u32> = gpu.read_buffer(&data, n as usize).unwrap();
            assert!(
                got == expected,
                "{n} entries, timed: {timed}, deferred: {deferred}: scan differs"
            );
            if deferred {
                log_deferred_pass_times(&gpu);
                let left = crate::lock(&gpu.inner.deferred_times).len();
                assert_eq!(left, 0, "deferred times left after logging");
            }
        }
    }
}
