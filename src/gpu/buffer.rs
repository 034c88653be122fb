//! Dense vectors living on the GPU.

use super::Gpu;
use crate::{Error, Result, Scalar};
use std::marker::PhantomData;
use std::ops::Range;

/// Whether `value` is +0 (all bits zero: what a cleared buffer holds).
fn is_positive_zero<T: Scalar>(value: T) -> bool {
    bytemuck::bytes_of(&value).iter().all(|&b| b == 0)
}

/// A dense vector of `T` in GPU memory. Results stay here until the caller reads them.
pub struct GpuVector<T> {
    pub(crate) buffer: wgpu::Buffer,
    len: usize,
    pub(crate) gpu: Gpu,
    _t: PhantomData<T>,
}

impl<T: Scalar> GpuVector<T> {
    /// Uploads `data`.
    pub fn from_slice(gpu: &Gpu, data: &[T]) -> Result<Self> {
        Self::new(gpu, data.len(), Some(data))
    }

    /// A vector of `len` elements holding `data`, or zeros where `data` is `None` (a new buffer,
    /// which wgpu clears on the GPU: nothing crosses from the host).
    fn new(gpu: &Gpu, len: usize, data: Option<&[T]>) -> Result<Self> {
        let _turn = gpu.gl_turn();
        gpu.check_scalar::<T>()?;
        let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        let limit = gpu.info().max_binding_bytes();
        if bytes > limit {
            return Err(Error::TooLargeForAdapter {
                what: format!("a vector of {len} {}", T::NAME),
                bytes,
                limit_name: "max_storage_buffer_binding_size",
                limit,
            });
        }
        // Where CPU and GPU share memory, vectors can be mapped in place (the speculative
        // method's host stage reads and writes rows of y without a copy).
        let info = gpu.info();
        let map = if info.shares_memory_with_host()
            && info.has(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        {
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE
        } else {
            wgpu::BufferUsages::empty()
        };
        let extra = wgpu::BufferUsages::COPY_SRC | map;
        let buffer = match data {
            Some(data) => gpu
                .storage_buffer("wgspmv vector", bytemuck::cast_slice(data), extra)?
                .into_inner(),
            None => gpu.scoped("allocating a vector", || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some("wgspmv vector"),
                    size: bytes.max(16).next_multiple_of(4),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | extra,
                    mapped_at_creation: false,
                })
            })?,
        };
        Ok(Self {
            buffer,
            len,
            gpu: gpu.clone(),
            _t: PhantomData,
        })
    }

    /// Wraps a buffer the application owns (one its own passes write or read) as a vector of its
    /// first `len` elements, without a copy. The buffer needs `STORAGE` usage; it must come from
    /// this `Gpu`'s device (another device's is `Error::WrongDevice`). Other usages are asked
    /// for by what uses them, each a typed error where it is missing: `COPY_SRC` by
    /// [`read`](Self::read) and [`try_clone`](Self::try_clone), `COPY_DST` by
    /// [`write`](Self::write) and [`fill`](Self::fill). A plan's products need nothing more.
    pub fn from_buffer(gpu: &Gpu, buffer: wgpu::Buffer, len: usize) -> Result<Self> {
        let _turn = gpu.gl_turn();
        gpu.check_scalar::<T>()?;
        let bad = |reason: String| Error::InvalidParameter {
            name: "buffer",
            value: format!("{} bytes, {:?}", buffer.size(), buffer.usage()),
            reason,
        };
        if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(bad("a vector's buffer needs STORAGE usage".into()));
        }
        let bytes = len as u64 * std::mem::size_of::<T>() as u64;
        if bytes > buffer.size() {
            return Err(bad(format!("{len} {} take {bytes} bytes", T::NAME)));
        }
        let limit = gpu.info().max_binding_bytes();
        if buffer.size() > limit {
            return Err(Error::TooLargeForAdapter {
                what: "the vector's buffer".into(),
                bytes: buffer.size(),
                limit_name: "max_storage_buffer_binding_size",
                limit,
            });
        }
        gpu.check_device("buffer", &buffer)?;
        Ok(Self {
            buffer,
            len,
            gpu: gpu.clone(),
            _t: PhantomData,
        })
    }

    /// A copy of this vector in a new buffer, made on the GPU (queued; no wait).
    pub fn try_clone(&self) -> Result<Self> {
        let _turn = self.gpu.gl_turn();
        if !self.buffer.usage().contains(wgpu::BufferUsages::COPY_SRC) {
            return Err(Error::InvalidParameter {
                name: "buffer",
                value: format!("{:?}", self.buffer.usage()),
                reason: "copying a vector needs COPY_SRC usage".into(),
            });
        }
        let size = self.buffer.size();
        let buffer = self.gpu.scoped("allocating a vector copy", || {
            let buffer = self.gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgspmv vector"),
                size,
                usage: self.buffer.usage() | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut enc = self
                .gpu
                .device()
                .create_command_encoder(&Default::default());
            self.gpu
                .record_copy(&mut enc, &self.buffer, 0, &buffer, 0, size)?;
            self.gpu.submit([enc.finish()]);
            Ok(buffer)
        })??;
        Ok(Self {
            buffer,
            len: self.len,
            gpu: self.gpu.clone(),
            _t: PhantomData,
        })
    }

    /// A vector of `len` copies of `value` (zeros are made on the GPU, other values uploaded).
    pub fn filled(gpu: &Gpu, len: usize, value: T) -> Result<Self> {
        if is_positive_zero(value) {
            Self::new(gpu, len, None)
        } else {
            Self::from_slice(gpu, &vec![value; len])
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the vector has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The underlying buffer (at least 16 bytes; the first `len` elements are the vector).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Overwrites the whole vector with `data` (same length).
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        let _turn = self.gpu.gl_turn();
        if data.len() != self.len {
            return Err(Error::DimensionMismatch {
                what: "data written to a GpuVector",
                expected: self.len,
                actual: data.len(),
            });
        }
        if data.is_empty() {
            return Ok(());
        }
        self.gpu.check_usage(
            "vector",
            &self.buffer,
            wgpu::BufferUsages::COPY_DST,
            "writing a vector from the host",
        )?;
        self.gpu.scoped("writing a vector", || {
            self.gpu
                .write_buffer(&self.buffer, 0, bytemuck::cast_slice(data))
        })
    }

    /// Sets every element to `value` (e.g. NaN, to catch unwritten outputs in tests); zeros are
    /// written on the GPU, other values from the host.
    pub fn fill(&mut self, value: T) -> Result<()> {
        if !is_positive_zero(value) || self.len == 0 {
            return self.write(&vec![value; self.len]);
        }
        let _turn = self.gpu.gl_turn();
        self.gpu.check_usage(
            "vector",
            &self.buffer,
            wgpu::BufferUsages::COPY_DST,
            "clearing a vector",
        )?;
        let bytes = self.len as u64 * std::mem::size_of::<T>() as u64;
        self.gpu.scoped("clearing a vector", || {
            let mut enc = self
                .gpu
                .device()
                .create_command_encoder(&Default::default());
            enc.clear_buffer(&self.buffer, 0, Some(bytes));
            self.gpu.submit([enc.finish()]);
        })
    }

    /// Reads the vector back, blocking until the GPU has finished the work that writes it.
    pub fn read(&self) -> Result<Vec<T>> {
        let _turn = self.gpu.gl_turn();
        let (staging, rx) = self.start_read()?;
        let status = self.gpu.wait_for_callback(rx)?;
        Self::finish_read(staging, Some(status), self.len)
    }

    /// Reads the vector back without blocking the calling thread. The task sleeps until the map
    /// callback wakes it: on native backends callbacks run only while the device is polled, so a
    /// short-lived thread waits on the device meanwhile.
    pub async fn read_async(&self) -> Result<Vec<T>> {
        // The GL turn is taken by each synchronous step, never held across the await.
        let (staging, rx) = {
            let _turn = self.gpu.gl_turn();
            self.start_read()?
        };
        #[cfg(not(target_arch = "wasm32"))]
        {
            let gpu = self.gpu.clone();
            std::thread::spawn(move || {
                let _turn = gpu.gl_turn();
                let _ = super::wait_for_device(gpu.device(), gpu.info().backend);
            });
        }
        let status = rx.await;
        self.gpu.check_alive()?;
        let status = status.map_err(|_| Error::Map("the map callback was dropped".into()))?;
        let _turn = self.gpu.gl_turn();
        Self::finish_read(staging, Some(status), self.len)
    }

    fn start_read(
        &self,
    ) -> Result<(
        wgpu::Buffer,
        futures::channel::oneshot::Receiver<Result<(), wgpu::BufferAsyncError>>,
    )> {
        start_read(&self.gpu, &self.buffer)
    }

    fn finish_read(
        staging: wgpu::Buffer,
        status: Option<Result<(), wgpu::BufferAsyncError>>,
        len: usize,
    ) -> Result<Vec<T>> {
        finish_read(staging, status, len)
    }
}

/// Byte ranges of one buffer to read back: mapped in place when `in_place` (the buffer has
/// `MAP_READ`), else copied through one staging buffer shared by the whole read.
pub(crate) struct RangeRead<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub ranges: Vec<Range<u64>>,
    pub in_place: bool,
}

impl<'a> RangeRead<'a> {
    /// The first `bytes` of `buffer`, through a staging copy.
    pub(crate) fn first(buffer: &'a wgpu::Buffer, bytes: u64) -> Self {
        Self {
            buffer,
            ranges: std::iter::once(0..bytes).collect(),
            in_place: false,
        }
    }
}

impl super::Gpu {
    /// Reads the first `len` elements of a plan's buffer back, blocking (for tests and reports).
    pub(crate) fn read_buffer<P: bytemuck::Pod>(
        &self,
        buffer: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<P>> {
        self.read_buffer_after(None, buffer, len)
    }

    /// [`Gpu::read_buffer`], its copy recorded after the work in `before` and submitted with it:
    /// one submission where there would be two.
    pub(crate) fn read_buffer_after<P: bytemuck::Pod>(
        &self,
        before: Option<wgpu::CommandEncoder>,
        buffer: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<P>> {
        if len == 0 {
            // Nothing to read: `before` is still submitted.
            self.read_ranges_after(before, &[])?;
            return Ok(Vec::new());
        }
        let bytes = ((len * std::mem::size_of::<P>()) as u64)
            .next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            .min(buffer.size());
        let got = self.read_ranges_after(before, &[RangeRead::first(buffer, bytes)])?;
        // Collect rather than cast in place: the bytes need not be aligned for P.
        Ok(bytemuck::pod_collect_to_vec(
            &got[0][0][..len * std::mem::size_of::<P>()],
        ))
    }

    /// Maps `buffer` (or `range` of it) and waits for the mapping.
    pub(crate) fn map_and_wait(
        &self,
        buffer: &wgpu::Buffer,
        mode: wgpu::MapMode,
        range: Range<u64>,
    ) -> Result<()> {
        // A clear owed to a reused buffer must land before the host sees it.
        self.flush_clears();
        let (tx, rx) = futures::channel::oneshot::channel();
        buffer.map_async(mode, range, move |r| {
            let _ = tx.send(r);
        });
        self.wait_for_callback(rx)?
            .map_err(|e| Error::Map(e.to_string()))
    }

    /// Reads the ranges of several buffers in one round trip. Returns the bytes per request and
    /// range. On an error no buffer is left mapped, so the caller's buffers stay usable.
    pub(crate) fn read_ranges(&self, reqs: &[RangeRead]) -> Result<Vec<Vec<Vec<u8>>>> {
        self.read_ranges_after(None, reqs)
    }

    /// [`Gpu::read_ranges`], the copies recorded after the work in `before` and submitted with
    /// it.
    pub(crate) fn read_ranges_after(
        &self,
        before: Option<wgpu::CommandEncoder>,
        reqs: &[RangeRead],
    ) -> Result<Vec<Vec<Vec<u8>>>> {
        let started = std::time::Instant::now();
        self.flush_clears();
        let mut staging_len = 0u64;
        let mut at = Vec::new();
        for r in reqs {
            let mut offs = Vec::new();
            if !r.in_place {
                for range in &r.ranges {
                    offs.push(staging_len);
                    staging_len += range.end - range.start;
                }
            }
            at.push(offs);
        }
        let staging = if staging_len > 0 {
            let staging = self.readback_buffer(staging_len)?;
            let mut enc =
                before.unwrap_or_else(|| self.device().create_command_encoder(&Default::default()));
            for (r, offs) in reqs.iter().zip(&at) {
                for (range, &o) in r.ranges.iter().zip(offs) {
                    self.record_copy(
                        &mut enc,
                        r.buffer,
                        range.start,
                        &staging,
                        o,
                        range.end - range.start,
                    )?;
                }
            }
            self.scoped("submitting a read back", || self.submit([enc.finish()]))?;
            Some(staging)
        } else {
            if let Some(enc) = before {
                self.scoped("submitting work", || self.submit([enc.finish()]))?;
            }
            None
        };
        let mut to_map: Vec<&wgpu::Buffer> = reqs
            .iter()
            .filter(|r| r.in_place && !r.ranges.is_empty())
            .map(|r| r.buffer)
            .collect();
        to_map.extend(staging.as_ref());
        let mut pending = Vec::new();
        for b in &to_map {
            let (tx, rx) = futures::channel::oneshot::channel();
            b.map_async(wgpu::MapMode::Read, .., move |r| {
                let _ = tx.send(r);
            });
            pending.push(rx);
        }
        let submitted = started.elapsed();
        let mut waited = Ok(());
        for rx in pending {
            if let Err(e) = self
                .wait_for_callback(rx)
                .and_then(|r| r.map_err(|e| Error::Map(e.to_string())))
            {
                waited = waited.and(Err(e));
            }
        }
        if let Err(e) = waited {
            for b in to_map {
                let _ = self.scoped("unmapping after a failed map", || b.unmap());
            }
            return Err(e);
        }
        let mut out = Vec::new();
        let staging_view = match &staging {
            Some(s) => Some(
                s.get_mapped_range(..)
                    .map_err(|e| Error::Map(e.to_string()))?,
            ),
            None => None,
        };
        for (r, offs) in reqs.iter().zip(&at) {
            let mut got = Vec::new();
            if r.in_place && !r.ranges.is_empty() {
                let view = r
                    .buffer
                    .get_mapped_range(..)
                    .map_err(|e| Error::Map(e.to_string()))?;
                for range in &r.ranges {
                    got.push(view[range.start as usize..range.end as usize].to_vec());
                }
                drop(view);
                r.buffer.unmap();
            } else {
                // Empty ranges (and a read of nothing but empty ranges) have no staging bytes.
                for (range, &o) in r.ranges.iter().zip(offs) {
                    got.push(match &staging_view {
                        Some(view) if range.end > range.start => {
                            view[o as usize..(o + range.end - range.start) as usize].to_vec()
                        }
                        _ => Vec::new(),
                    });
                }
            }
            out.push(got);
        }
        drop(staging_view);
        if let Some(s) = staging {
            s.unmap();
        }
        log::trace!(
            "read back of {staging_len} staged bytes: submitted at {submitted:?}, done at {:?}",
            started.elapsed()
        );
        if super::recorder::pass_times_wanted(self) {
            super::recorder::log_deferred_pass_times(self);
        }
        Ok(out)
    }

    /// Writes byte ranges into `buffer`: through a write mapping of the span they cover when
    /// `in_place` (the buffer has `MAP_WRITE`), else as queued writes (ordered before the next
    /// submission).
    pub(crate) fn write_ranges(
        &self,
        buffer: &wgpu::Buffer,
        writes: &[(u64, Vec<u8>)],
        in_place: bool,
    ) -> Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        if !in_place {
            for (off, bytes) in writes {
                self.write_buffer(buffer, *off, bytes);
            }
            return Ok(());
        }
        let lo =
            writes.iter().map(|w| w.0).min().unwrap() / wgpu::MAP_ALIGNMENT * wgpu::MAP_ALIGNMENT;
        let hi = writes
            .iter()
            .map(|w| w.0 + w.1.len() as u64)
            .max()
            .unwrap()
            .next_multiple_of(4)
            .min(buffer.size());
        self.map_and_wait(buffer, wgpu::MapMode::Write, lo..hi)?;
        {
            let mut view = buffer
                .get_mapped_range_mut(lo..hi)
                .map_err(|e| Error::Map(e.to_string()))?;
            for (off, bytes) in writes {
                let o = (off - lo) as usize;
                super::copy_in_parallel(view.slice(o..o + bytes.len()), bytes);
            }
        }
        buffer.unmap();
        Ok(())
    }
}

type MapReceiver = futures::channel::oneshot::Receiver<Result<(), wgpu::BufferAsyncError>>;

/// The first bytes of a buffer, copied after the work of a submission and mapped when it has
/// run: the host records more work meanwhile ([`Gpu::read_later`], [`Gpu::finish_read`]).
pub(crate) struct PendingRead {
    staging: wgpu::Buffer,
    rx: MapReceiver,
}

impl super::Gpu {
    /// Submits `before` with a copy of `buffer`'s first `len` elements of `P` recorded after
    /// its work, and asks for the copy's mapping without waiting for it.
    pub(crate) fn read_later<P: bytemuck::Pod>(
        &self,
        mut before: wgpu::CommandEncoder,
        buffer: &wgpu::Buffer,
        len: usize,
    ) -> Result<PendingRead> {
        self.flush_clears();
        let bytes = ((len.max(1) * std::mem::size_of::<P>()) as u64)
            .next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            .min(buffer.size());
        let staging = self.readback_buffer(bytes)?;
        self.record_copy(&mut before, buffer, 0, &staging, 0, bytes)?;
        let t = std::time::Instant::now();
        let commands = before.finish();
        let finished = t.elapsed();
        self.scoped("submitting work", || self.submit([commands]))?;
        log::trace!(
            "read_later: finish {:.3} ms, submit {:.3} ms",
            finished.as_secs_f64() * 1e3,
            (t.elapsed() - finished).as_secs_f64() * 1e3
        );
        let (tx, rx) = futures::channel::oneshot::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        Ok(PendingRead { staging, rx })
    }

    /// A buffer of `size` bytes to copy GPU data into and map for reading.
    fn readback_buffer(&self, size: u64) -> Result<wgpu::Buffer> {
        self.scoped("allocating a readback buffer", || {
            self.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgspmv readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    /// Waits for `read`'s submission to have run (not for work submitted after it) and returns
    /// its first `len` elements.
    pub(crate) fn finish_read<P: bytemuck::Pod>(
        &self,
        read: PendingRead,
        len: usize,
    ) -> Result<Vec<P>> {
        let PendingRead { staging, rx } = read;
        let status = self.wait_for_map(rx);
        finish_read(staging, Some(status?), len)
    }
}

fn start_read(gpu: &super::Gpu, buffer: &wgpu::Buffer) -> Result<(wgpu::Buffer, MapReceiver)> {
    gpu.check_usage(
        "vector",
        buffer,
        wgpu::BufferUsages::COPY_SRC,
        "reading a vector back",
    )?;
    let size = buffer.size();
    let staging = gpu.readback_buffer(size)?;
    gpu.scoped("submitting a read back", || -> Result<()> {
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        gpu.record_copy(&mut enc, buffer, 0, &staging, 0, size)?;
        gpu.submit([enc.finish()]);
        Ok(())
    })??;
    let (tx, rx) = futures::channel::oneshot::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    Ok((staging, rx))
}

fn finish_read<P: bytemuck::Pod>(
    staging: wgpu::Buffer,
    status: Option<Result<(), wgpu::BufferAsyncError>>,
    len: usize,
) -> Result<Vec<P>> {
    match status {
        Some(Ok(())) => {}
        Some(Err(e)) => return Err(Error::Map(e.to_string())),
        None => {
            return Err(Error::Map(
                "the GPU finished but the buffer was not mapped".into(),
            ))
        }
    }
    let view = staging
        .get_mapped_range(..)
        .map_err(|e| Error::Map(e.to_string()))?;
    // Collect rather than cast in place: mapped memory need not be aligned for T.
    let out: Vec<P> = bytemuck::pod_collect_to_vec(&view[..len * std::mem::size_of::<P>()]);
    drop(view);
    staging.unmap();
    Ok(out)
}

impl<T> std::fmt::Debug for GpuVector<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuVector(len {})", self.len)
    }
}
