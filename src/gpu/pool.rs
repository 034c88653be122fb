//! Device memory kept for reuse: the buffers of a dropped plan go back to the [`Gpu`]'s pool
//! (up to a byte limit) and the next plan's working buffers of the same usage and size class come
//! from it, so a rebuilt plan neither waits for the driver's fresh memory nor for the release of
//! the old one (docs/setup.md measures both).
//!
//! A pooled buffer may be larger than asked for (its size class); [`DeviceBuffer::size`] and
//! [`DeviceBuffer::as_entire_binding`] are the size asked for, so shaders' `arrayLength` and
//! read-backs see exactly that. A reused buffer is cleared on the GPU before any later work that
//! could see it: the clear is queued and submitted ahead of the next [`Gpu::submit`], and flushed
//! before a queue write, a host mapping, or a plan recorded into a caller's encoder. Buffers a
//! caller's encoder may use after the plan is gone are never lent (see
//! [`DeviceBuffer::keep_out_of_pool`]).

use super::Gpu;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Uploads at least this large go through a pooled staging buffer; smaller ones are mapped at
/// creation, which costs less than a map's round trip (docs/setup.md measures both).
pub(crate) const STAGED_UPLOAD_BYTES: u64 = 1 << 20;

/// Idle bytes a device keeps by default (see [`Gpu::set_buffer_pool_bytes`]).
pub const DEFAULT_POOL_BYTES: u64 = 1 << 30;

/// A buffer a plan owns: either from the pool (returned to it on drop) or plain (uniforms,
/// uploads, the caller's own buffers shared with a plan).
pub struct DeviceBuffer {
    buffer: wgpu::Buffer,
    /// The bytes asked for (at most `buffer.size()`).
    len: u64,
    pool: Option<Weak<Pool>>,
    /// Cleared once the buffer may be used by work this library does not submit (a caller's
    /// encoder): it is then freed, never handed to another plan.
    returnable: AtomicBool,
}

impl DeviceBuffer {
    /// A buffer used whole and not pooled.
    pub(crate) fn plain(buffer: wgpu::Buffer) -> Self {
        let len = buffer.size();
        Self {
            buffer,
            len,
            pool: None,
            returnable: AtomicBool::new(false),
        }
    }
    /// A buffer of the pool's, `len` bytes of it asked for, returned to the pool on drop.
    fn pooled(buffer: wgpu::Buffer, len: u64, pool: &Arc<Pool>) -> Self {
        Self {
            buffer,
            len,
            pool: Some(Arc::downgrade(pool)),
            returnable: AtomicBool::new(true),
        }
    }
    /// Never returns this buffer to the pool: work recorded into a caller's encoder may use it
    /// after the plan is dropped, when the pool would have lent it to another.
    pub(crate) fn keep_out_of_pool(&self) {
        self.returnable.store(false, Ordering::Relaxed);
    }
    /// The bytes asked for: what is bound and what may be read.
    pub fn size(&self) -> u64 {
        self.len
    }
    /// The buffer bound at its asked-for size (the allocation may be larger).
    pub fn as_entire_binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: 0,
            size: std::num::NonZeroU64::new(self.len),
        })
    }
    /// The buffer, for keeping outside a plan (e.g. a vector's): no longer returned to the pool.
    pub(crate) fn into_inner(self) -> wgpu::Buffer {
        self.keep_out_of_pool();
        self.buffer.clone()
    }
}

/// What a one-off pass binds: a caller's buffer whole, a plan's at its asked-for size.
pub(crate) trait Bind {
    fn binding(&self) -> wgpu::BindingResource<'_>;
}

impl Bind for wgpu::Buffer {
    fn binding(&self) -> wgpu::BindingResource<'_> {
        self.as_entire_binding()
    }
}

impl Bind for DeviceBuffer {
    fn binding(&self) -> wgpu::BindingResource<'_> {
        self.as_entire_binding()
    }
}

impl Bind for Arc<DeviceBuffer> {
    fn binding(&self) -> wgpu::BindingResource<'_> {
        self.as_entire_binding()
    }
}

impl std::ops::Deref for DeviceBuffer {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if !self.returnable.load(Ordering::Relaxed) {
            return;
        }
        if let Some(pool) = self.pool.take().and_then(|p| p.upgrade()) {
            pool.give_back(self.buffer.clone());
        }
    }
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer({} of {} bytes)",
            self.len,
            self.buffer.size()
        )
    }
}

/// Idle buffers by (usage, size), oldest first for eviction, and the clears owed to reused ones.
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<Idle>,
    /// The byte range of each reused buffer that must read as zero.
    clears: Mutex<Vec<(wgpu::Buffer, std::ops::Range<u64>)>>,
}

#[derive(Default)]
struct Idle {
    by_kind: HashMap<(u32, u64), Vec<wgpu::Buffer>>,
    /// Return order, for evicting the oldest first: (usage, size) per buffer.
    order: VecDeque<(u32, u64)>,
    bytes: u64,
    limit: Option<u64>,
}

impl Idle {
    fn limit(&self) -> u64 {
        self.limit.unwrap_or(DEFAULT_POOL_BYTES)
    }
    /// Drops the oldest idle buffers until `room` more bytes fit under the limit.
    fn evict_for(&mut self, room: u64) {
        while self.bytes + room > self.limit() {
            let Some(kind) = self.order.pop_front() else {
                break;
            };
            if let Some(list) = self.by_kind.get_mut(&kind) {
                if !list.is_empty() {
                    // The oldest of a kind is the first returned.
                    list.remove(0);
                    self.bytes -= kind.1;
                }
            }
        }
    }
}

/// The allocation size for `bytes`: the next of 8 steps per power of two (at most 1/8 more),
/// so that plans of similar sizes share buffers.
pub(crate) fn size_class(bytes: u64) -> u64 {
    if bytes <= 256 {
        return 256;
    }
    let top = 1u64 << (63 - bytes.leading_zeros());
    bytes.next_multiple_of((top / 8).max(4))
}

impl Pool {
    /// An idle buffer of `usage` and exactly `size` bytes, if one is kept.
    fn take(&self, usage: wgpu::BufferUsages, size: u64) -> Option<wgpu::Buffer> {
        let mut idle = crate::lock(&self.idle);
        let kind = (usage.bits(), size);
        let buffer = idle.by_kind.get_mut(&kind)?.pop()?;
        idle.bytes -= size;
        // Forget one return of this kind (which one does not matter: same kind, same size).
        if let Some(at) = idle.order.iter().rposition(|k| *k == kind) {
            idle.order.remove(at);
        }
        Some(buffer)
    }

    fn give_back(&self, buffer: wgpu::Buffer) {
        let mut idle = crate::lock(&self.idle);
        let size = buffer.size();
        if size > idle.limit() {
            return;
        }
        idle.evict_for(size);
        let kind = (buffer.usage().bits(), size);
        idle.by_kind.entry(kind).or_default().push(buffer);
        idle.order.push_back(kind);
        idle.bytes += size;
    }
}

impl Gpu {
    /// A buffer of `size` bytes (a multiple of 4) with `usage`, bound at that size: an idle one
    /// of its size class from the pool, or a new one. `zeroed`: a reused one is cleared before
    /// any later GPU work of this library (new ones come zeroed from wgpu); otherwise it holds
    /// stale data until the caller overwrites it. Out of memory with idle buffers kept, those are
    /// released and the allocation tried once more.
    pub(crate) fn pooled_buffer(
        &self,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
        zeroed_from: Option<u64>,
    ) -> crate::Result<DeviceBuffer> {
        let pool = &self.inner.pool;
        let class = size_class(size);
        // Rounded up past the limit: exactly what was asked instead.
        let class = if class > self.info().max_binding_bytes() {
            size
        } else {
            class
        };
        let buffer = match pool.take(usage, class) {
            Some(reused) => {
                if let Some(from) = zeroed_from.filter(|&from| from < size) {
                    pool.clears
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((reused.clone(), from..size));
                }
                reused
            }
            None => {
                let during = format!("allocating {label} ({size} bytes)");
                let create = || {
                    self.scoped(&during, || {
                        self.inner.device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some(label),
                            size: class,
                            usage,
                            mapped_at_creation: false,
                        })
                    })
                };
                match create() {
                    Err(crate::Error::OutOfMemory { .. }) if self.buffer_pool_bytes() > 0 => {
                        self.release_buffer_pool();
                        self.wait()?;
                        create()?
                    }
                    other => other?,
                }
            }
        };
        Ok(DeviceBuffer::pooled(buffer, size, pool))
    }

    /// `data` in a pooled buffer of `usage` (with `COPY_DST`), written through a pooled staging
    /// buffer and copied on the GPU (submitted, not waited for).
    pub(crate) fn upload_staged(
        &self,
        label: &str,
        data: &[u8],
        usage: wgpu::BufferUsages,
    ) -> crate::Result<DeviceBuffer> {
        let size = (data.len() as u64).next_multiple_of(4);
        let staging_usage = wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC;
        let class = size_class(size);
        let staging = match self.inner.pool.take(staging_usage, class) {
            Some(reused) => {
                // Waits for the copy that last read it.
                self.map_and_wait(&reused, wgpu::MapMode::Write, 0..size)?;
                reused
            }
            None => self.scoped(&format!("allocating staging for {label}"), || {
                self.inner.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("wgspmv staging"),
                    size: class,
                    usage: staging_usage,
                    mapped_at_creation: true,
                })
            })?,
        };
        // Back to the pool (or freed) however this ends; a buffer is not lent while mapped.
        let staging = DeviceBuffer::pooled(staging, size, &self.inner.pool);
        {
            let mut view = match staging.slice(0..size).get_mapped_range_mut() {
                Ok(view) => view,
                Err(e) => {
                    // Still mapped: never lent again.
                    staging.keep_out_of_pool();
                    return Err(crate::Error::Map(e.to_string()));
                }
            };
            let (head, tail) = (data.len(), size as usize);
            super::copy_in_parallel(view.slice(..head), data);
            view.slice(head..tail).fill(0);
        }
        staging.unmap();
        let dst = self.pooled_buffer(label, size, usage, None)?;
        self.scoped(&format!("uploading {label}"), || {
            let mut enc =
                self.inner
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("staged upload"),
                    });
            self.record_copy(&mut enc, &staging, 0, &dst, 0, size)?;
            self.submit([enc.finish()]);
            Ok(())
        })??;
        Ok(dst)
    }

    /// Submits `commands` after the clears owed to reused buffers. Every submission of this
    /// library goes through here. The clears are taken and submitted under one lock: another
    /// thread's work must not reach the queue between them.
    pub(crate) fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(
        &self,
        commands: I,
    ) -> wgpu::SubmissionIndex {
        let mut owed = crate::lock(&self.inner.pool.clears);
        let clears = self.encode_clears(&mut owed);
        self.inner.queue.submit(clears.into_iter().chain(commands))
    }

    /// Submits the clears owed to reused buffers now, if any: before the host maps a buffer and
    /// before a plan is recorded into a caller's encoder.
    pub(crate) fn flush_clears(&self) {
        let mut owed = crate::lock(&self.inner.pool.clears);
        if let Some(clears) = self.encode_clears(&mut owed) {
            self.inner.queue.submit([clears]);
        }
    }

    /// `Queue::write_buffer` after the clears owed (a queued write runs before the next
    /// submission's work, so a clear submitted with it would undo it).
    pub(crate) fn write_buffer(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        let mut owed = crate::lock(&self.inner.pool.clears);
        if let Some(clears) = self.encode_clears(&mut owed) {
            self.inner.queue.submit([clears]);
        }
        self.inner.queue.write_buffer(buffer, offset, data);
    }

    fn encode_clears(
        &self,
        owed: &mut Vec<(wgpu::Buffer, std::ops::Range<u64>)>,
    ) -> Option<wgpu::CommandBuffer> {
        if owed.is_empty() {
            return None;
        }
        let mut enc = self
            .inner
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("clearing reused buffers"),
            });
        for (buffer, range) in owed.drain(..) {
            enc.clear_buffer(&buffer, range.start, Some(range.end - range.start));
        }
        Some(enc.finish())
    }

    /// The idle device memory this device keeps for reuse, at most (default 1 GiB); 0 keeps
    /// none. Lowering it releases the oldest idle buffers at once.
    pub fn set_buffer_pool_bytes(&self, bytes: u64) {
        let mut idle = crate::lock(&self.inner.pool.idle);
        idle.limit = Some(bytes);
        idle.evict_for(0);
    }

    /// Idle device memory kept for reuse now, in bytes.
    pub fn buffer_pool_bytes(&self) -> u64 {
        crate::lock(&self.inner.pool.idle).bytes
    }

    /// Releases every idle buffer to the driver (e.g. before the application allocates a lot).
    pub fn release_buffer_pool(&self) {
        let _turn = self.gl_turn();
        let mut idle = crate::lock(&self.inner.pool.idle);
        idle.by_kind.clear();
        idle.order.clear();
        idle.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    /// A reused buffer whose head a copy overwrites is cleared only beyond that head: the tail
    /// reads zero, the head still holds the dropped buffer's words (nothing written twice); a
    /// zeroed one is cleared whole.
    #[test]
    fn reused_buffers_are_cleared_beyond_what_a_copy_writes() {
        let Some(gpu) = crate::gpu::test_gpu() else {
            return;
        };
        let none = wgpu::BufferUsages::empty();
        let (bytes, written) = (1000u64, 602u64);
        let words = (bytes / 4) as usize;
        let leave_stale = || {
            let b = gpu.storage_zeroed("stale", bytes, none).unwrap();
            gpu.write_buffer(&b, 0, &vec![0xA5u8; bytes as usize]);
            gpu.wait().unwrap();
        };
        leave_stale();
        let b = gpu
            .storage_zeroed_after("tail", bytes, written, none)
            .unwrap();
        assert_eq!(
            gpu.buffer_pool_bytes(),
            0,
            "the stale buffer was not reused"
        );
        let got: Vec<u32> = gpu.read_buffer(&b, words).unwrap();
        // The clear starts on the word holding byte `written` (the copy rewrites its head).
        let first_cleared = (written / 4) as usize;
        assert!(
            got[..first_cleared].iter().all(|&w| w == 0xA5A5_A5A5),
            "head cleared"
        );
        assert!(
            got[first_cleared..].iter().all(|&w| w == 0),
            "tail not cleared"
        );
        drop(b);
        gpu.wait().unwrap();
        leave_stale();
        let b = gpu.storage_zeroed("whole", bytes, none).unwrap();
        let got: Vec<u32> = gpu.read_buffer(&b, words).unwrap();
        assert!(
            got.iter().all(|&w| w == 0),
            "a zeroed buffer is not cleared whole"
        );
    }

    #[test]
    fn size_classes_round_up_by_at_most_an_eighth() {
        assert_eq!(size_class(1), 256);
        assert_eq!(size_class(256), 256);
        assert_eq!(size_class(257), 288);
        for bytes in [
            300u64,
            4096,
            4100,
            1 << 20,
            (1 << 20) + 1,
            3 << 26,
            (64 << 20) + 4,
        ] {
            let c = size_class(bytes);
            assert!(c >= bytes && c - bytes <= bytes / 8, "{bytes} -> {c}");
            assert_eq!(c % 4, 0);
            assert_eq!(size_class(c), c, "a class is its own class");
        }
    }
}
