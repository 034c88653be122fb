//! Checks of the buffers a caller brings (vectors from `GpuVector::from_buffer`, a CSR in GPU
//! buffers, new values): usages, device and aliasing, made before anything is recorded, so that
//! a mistake is a typed error naming the buffer and never reaches wgpu's default error handler
//! (which panics) or leaves a caller's encoder invalid.

use super::Gpu;
use crate::{Error, Result};

/// The flags of `usage` that `buffer` lacks, named as wgpu names them.
fn missing(buffer: &wgpu::Buffer, usage: wgpu::BufferUsages) -> Option<String> {
    let lacking = usage - buffer.usage();
    (!lacking.is_empty()).then(|| {
        lacking
            .iter_names()
            .map(|(name, _)| name)
            .collect::<Vec<_>>()
            .join(" | ")
    })
}

impl Gpu {
    /// `Err(CallerBuffer)` naming `name` and the flags it lacks where `buffer` lacks any of
    /// `usage`, which `needed_for` needs.
    pub(crate) fn check_usage(
        &self,
        name: &'static str,
        buffer: &wgpu::Buffer,
        usage: wgpu::BufferUsages,
        needed_for: &str,
    ) -> Result<()> {
        match missing(buffer, usage) {
            None => Ok(()),
            Some(flags) => Err(Error::CallerBuffer {
                array: name,
                problem: format!(
                    "lacks {flags} usage, which {needed_for} needs (it has {:?})",
                    buffer.usage()
                ),
            }),
        }
    }

    /// `Err(WrongDevice)` where `buffer` was created on another device than this `Gpu`'s. wgpu
    /// tells no buffer's device, so the check asks the device to use it in a way that moves
    /// nothing (a zero-byte copy in an encoder never submitted, or a bind group) and reads the
    /// error: a buffer of another device fails there, inside an error scope, instead of in the
    /// caller's encoder or in an assertion of wgpu's command tracking. A buffer with none of
    /// `COPY_SRC`, `COPY_DST` or `STORAGE` (or a storage-only one under 4 bytes) cannot be used
    /// by this crate at all and passes (the usage checks refuse it).
    pub(crate) fn check_device(&self, name: &'static str, buffer: &wgpu::Buffer) -> Result<()> {
        use wgpu::BufferUsages as U;
        let dev = self.device();
        let probed = self.scoped("checking a caller's buffer", || {
            if buffer.usage().intersects(U::COPY_SRC | U::COPY_DST) {
                let probe = dev.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("wgspmv device probe"),
                    size: 4,
                    usage: U::COPY_SRC | U::COPY_DST,
                    mapped_at_creation: false,
                });
                let mut enc = dev.create_command_encoder(&Default::default());
                if buffer.usage().contains(U::COPY_SRC) {
                    enc.copy_buffer_to_buffer(buffer, 0, &probe, 0, 0);
                } else {
                    enc.copy_buffer_to_buffer(&probe, 0, buffer, 0, 0);
                }
                drop(enc.finish());
            } else if buffer.usage().contains(U::STORAGE) && buffer.size() >= 4 {
                let layout = self.probe_layout();
                drop(dev.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("wgspmv device probe"),
                    layout: &layout,
                    entries: &[wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer,
                            offset: 0,
                            size: wgpu::BufferSize::new(4),
                        }),
                    }],
                }));
            }
        });
        match probed {
            // wgpu-core's DeviceMismatch: "<device> of <buffer> doesn't match <device>".
            Err(Error::Wgpu { message, .. }) if message.contains("doesn't match") => {
                Err(Error::WrongDevice { what: name })
            }
            other => other,
        }
    }

    /// A layout of one read-only storage binding visible to compute, made once per device.
    fn probe_layout(&self) -> wgpu::BindGroupLayout {
        self.inner
            .probe_layout
            .get_or_init(|| {
                self.device()
                    .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                        label: Some("wgspmv device probe"),
                        entries: &[wgpu::BindGroupLayoutEntry {
                            binding: 0,
                            visibility: wgpu::ShaderStages::COMPUTE,
                            ty: wgpu::BindingType::Buffer {
                                ty: wgpu::BufferBindingType::Storage { read_only: true },
                                has_dynamic_offset: false,
                                min_binding_size: None,
                            },
                            count: None,
                        }],
                    })
            })
            .clone()
    }
}

/// `Err` where `x` and `y` are the same buffer: the product reads one while it writes the other.
pub(crate) fn check_not_aliased(x: &wgpu::Buffer, y: &wgpu::Buffer) -> Result<()> {
    if x == y {
        return Err(Error::InvalidParameter {
            name: "y",
            value: "the buffer of x".into(),
            reason: "the output must be another buffer than the input (a product reads x while \
                     it writes y)"
                .into(),
        });
    }
    Ok(())
}
