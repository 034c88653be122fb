//! Buffer-to-buffer copies. Drivers' copy commands can be much slower than a copy kernel, and
//! slower still unless sizes and offsets are multiples of 16 bytes (docs/setup.md): copies
//! between storage buffers run the copy kernel, other copies are split at 16-byte boundaries.

use super::Gpu;
use crate::kernel::{LaneMode, Variant, COPY};
use crate::Result;

/// Copies shorter than this take the copy command (a kernel's dispatch costs more than it saves).
const KERNEL_COPY_BYTES: u64 = 64 << 10;

/// Invocations per workgroup of the copy kernel (each copies 16 bytes).
const COPY_WG: u32 = 256;

/// The copy kernel's unit: one `vec4<u32>`.
const WORD4: u64 = 16;

/// Where a copy reads and writes.
struct Ends<'a> {
    src: &'a wgpu::Buffer,
    src_offset: u64,
    dst: &'a wgpu::Buffer,
    dst_offset: u64,
}

impl Gpu {
    /// Records into `enc` a copy of `bytes` bytes from `src` at `src_offset` to `dst` at
    /// `dst_offset` (the copy command's rules: offsets and size multiples of 4, `COPY_SRC` on
    /// `src` and `COPY_DST` on `dst`). Between two storage buffers at offsets the adapter can
    /// bind, the bulk runs the copy kernel and a tail under 16 bytes the copy command; otherwise
    /// the copy command, split so that its bulk starts and ends on 16-byte boundaries.
    pub(crate) fn record_copy(
        &self,
        enc: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        src_offset: u64,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let ends = Ends {
            src,
            src_offset,
            dst,
            dst_offset,
        };
        let bulk = if self.kernel_copies(&ends, bytes) {
            self.record_kernel_copy(enc, &ends, bytes / WORD4 * WORD4)?
        } else {
            0
        };
        record_command_copy(enc, &ends, bulk, bytes - bulk);
        Ok(())
    }

    /// The alignment of a storage binding's offset on this adapter.
    fn binding_alignment(&self) -> u64 {
        self.info()
            .limits
            .min_storage_buffer_offset_alignment
            .max(1) as u64
    }

    /// Whether [`Gpu::record_copy`] runs the copy kernel for this copy.
    fn kernel_copies(&self, e: &Ends, bytes: u64) -> bool {
        let storage = wgpu::BufferUsages::STORAGE;
        let align = self.binding_alignment();
        bytes >= KERNEL_COPY_BYTES
            && e.src != e.dst
            && e.src.usage().contains(storage)
            && e.dst.usage().contains(storage)
            && e.src_offset.is_multiple_of(align)
            && e.dst_offset.is_multiple_of(align)
    }

    /// The copy kernel over `bytes` (a multiple of 16) in ranges each within one binding;
    /// returns `bytes`.
    fn record_kernel_copy(
        &self,
        enc: &mut wgpu::CommandEncoder,
        e: &Ends,
        bytes: u64,
    ) -> Result<u64> {
        let pipeline = self.pipeline(&Variant::new(
            COPY,
            "u32",
            LaneMode::Workgroup,
            vec![("WG_SIZE", COPY_WG)],
        ))?;
        // Whole workgroups of 16-byte words, starting where the adapter can bind.
        let unit = (COPY_WG as u64 * WORD4).max(self.binding_alignment());
        let most = (self.info().max_binding_bytes() / unit * unit).max(unit);
        let layout = pipeline.get_bind_group_layout(0);
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("copy"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&pipeline);
        let mut done = 0;
        while done < bytes {
            let len = (bytes - done).min(most);
            let range = |buffer, offset: u64| {
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: offset + done,
                    size: std::num::NonZeroU64::new(len),
                })
            };
            let bind_group = self.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("copy"),
                layout: &layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: range(e.src, e.src_offset),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: range(e.dst, e.dst_offset),
                    },
                ],
            });
            let groups = (len / WORD4).div_ceil(COPY_WG as u64) as u32;
            let [x, y] = self.grid(groups);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(x, y, 1);
            done += len;
        }
        Ok(bytes)
    }
}

/// The copy command over `bytes` from `skip` bytes into `e`'s ends, split so that the middle
/// part starts and ends on 16-byte boundaries where both offsets allow it.
fn record_command_copy(enc: &mut wgpu::CommandEncoder, e: &Ends, skip: u64, bytes: u64) {
    let (src_offset, dst_offset) = (e.src_offset + skip, e.dst_offset + skip);
    let mut parts = [(0, bytes), (0, 0), (0, 0)];
    if src_offset % WORD4 == dst_offset % WORD4 {
        let head = ((WORD4 - src_offset % WORD4) % WORD4).min(bytes);
        let middle = (bytes - head) / WORD4 * WORD4;
        parts = [
            (0, head),
            (head, middle),
            (head + middle, bytes - head - middle),
        ];
    }
    for (at, len) in parts.into_iter().filter(|&(_, len)| len > 0) {
        enc.copy_buffer_to_buffer(e.src, src_offset + at, e.dst, dst_offset + at, len);
    }
}
