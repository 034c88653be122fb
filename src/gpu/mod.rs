//! The GPU context: adapter and device choice, features and limits, buffers, pipelines, timing.

mod buffer;
mod caller;
mod coefficients;
mod copy;
mod dense;
mod pipeline;
pub(crate) use pipeline::StagePipeline;
mod pool;
pub(crate) mod recorder;
mod timing;
mod warm;
pub(crate) use warm::WarmUp;

pub use buffer::GpuVector;
pub(crate) use buffer::RangeRead;
pub(crate) use caller::check_not_aliased;
pub use coefficients::{Coefficient, Coefficients};
pub use dense::{GpuMatrix, Layout};
pub(crate) use pool::Bind;
pub(crate) use pool::DeviceBuffer;
pub use pool::DEFAULT_POOL_BYTES;
pub use timing::{Timer, Timing};

use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Features `wgspmv` uses when the adapter has them; none is required.
pub(crate) const WANTED_FEATURES: wgpu::Features = wgpu::Features::SUBGROUP
    .union(wgpu::Features::SHADER_F64)
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
    .union(wgpu::Features::SHADER_INT64)
    .union(wgpu::Features::PIPELINE_CACHE)
    .union(wgpu::Features::IMMEDIATES);

/// How to choose and open the adapter.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Pick the first adapter whose name contains this (case-insensitive); `name/backend` (e.g.
    /// `llvmpipe/gl`, `nvidia/vulkan`) also requires the backend (vulkan, metal, dx12, gl). When
    /// `None`, the environment variable `WGSPMV_ADAPTER` (or wgpu's `WGPU_ADAPTER_NAME`) is
    /// consulted, then wgpu's high-performance adapter is taken (`WGPU_POWER_PREF=low` for the
    /// integrated GPU of a laptop).
    pub adapter_name: Option<String>,
    /// Backends to consider; `None` means wgpu's default, overridable with `WGPU_BACKEND`.
    pub backends: Option<wgpu::Backends>,
    /// Features not to request even if the adapter has them, e.g. `SUBGROUP` to exercise the
    /// workgroup-memory paths.
    pub disabled_features: wgpu::Features,
    /// A directory where compiled pipelines are kept between processes (a wgpu
    /// `PipelineCache`, on adapters with `Features::PIPELINE_CACHE`: Vulkan), one file per
    /// adapter, driver and crate version. `None`: the environment variable
    /// `WGSPMV_PIPELINE_CACHE` names one, else nothing is kept. See
    /// [`Gpu::use_pipeline_cache_dir`].
    pub pipeline_cache_dir: Option<std::path::PathBuf>,
}

/// What an adapter is and can do, as far as SpMV cares.
#[derive(Clone, Debug)]
pub struct GpuInfo {
    /// The adapter's name as the driver reports it (what [`GpuOptions::adapter_name`] matches).
    pub name: String,
    /// The graphics API wgpu drives it through (Vulkan, Metal, DX12, ...).
    pub backend: wgpu::Backend,
    /// Discrete, integrated, virtual or CPU (software) adapter.
    pub device_type: wgpu::DeviceType,
    /// PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel, 0x106b Apple; 0 when unknown).
    pub vendor: u32,
    /// The driver's name and version information, as one string.
    pub driver: String,
    /// The smallest subgroup (SIMD width) the adapter may run a kernel with, in invocations.
    pub subgroup_min_size: u32,
    /// The largest subgroup (SIMD width) the adapter may run a kernel with, in invocations.
    pub subgroup_max_size: u32,
    /// Features enabled on the device (a subset of [`Gpu::wanted_features`] for devices we opened).
    pub features: wgpu::Features,
    /// Limits the device was created with (for devices we opened, the adapter's own).
    pub limits: wgpu::Limits,
    /// Why this adapter was opened (the name asked for, or wgpu's choice among those found).
    pub chosen_because: String,
}

/// Whether the adapter runs our compute shaders: wgpu's flag, except that a desktop GL core
/// context below 4.3 is flagged as able through an extension while naga writes GLSL for the core
/// version, which has none (docs/backends.md).
pub fn adapter_has_compute(adapter: &wgpu::Adapter) -> bool {
    let info = adapter.get_info();
    let flagged = adapter
        .get_downlevel_capabilities()
        .flags
        .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS);
    flagged && (info.backend != wgpu::Backend::Gl || gl_core_has_compute(&info.driver_info))
}

/// For a GL driver string ("3.3.0 <vendor>", "4.5 (Core Profile) Mesa", "OpenGL ES 3.2 ..."):
/// false only for a desktop core version below 4.3.
fn gl_core_has_compute(driver_info: &str) -> bool {
    if driver_info.starts_with("OpenGL ES") {
        return true;
    }
    let mut parts = driver_info
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>());
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor) >= (4, 3),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn gl_versions_without_compute() {
        use super::gl_core_has_compute as ok;
        assert!(!ok("3.3.0 vendor 1.2.3"));
        assert!(!ok("4.2.0 vendor"));
        assert!(ok("4.3.0 vendor"));
        assert!(ok("4.5 (Core Profile) vendor 1.2.3"));
        assert!(ok("OpenGL ES 3.2 vendor 1.2.3"));
        assert!(ok(""));
    }
}

/// "name (backend, device type)", the way adapters are listed in messages.
pub(crate) fn adapter_label(info: &wgpu::AdapterInfo) -> String {
    format!(
        "{} ({}, {:?})",
        info.name,
        info.backend.to_str(),
        info.device_type
    )
}

impl GpuInfo {
    /// Whether the device has all of the features in `f` enabled.
    pub fn has(&self, f: wgpu::Features) -> bool {
        self.features.contains(f)
    }
    /// Whether products take α and β as immediate data (`Features::IMMEDIATES` with room for
    /// two f64), so that changing them writes no buffer. Not through GL, where wgpu emulates
    /// immediate data with uniforms and a kernel's second form would compile while other
    /// threads wait on wgpu's context lock.
    pub fn has_immediate_coeffs(&self) -> bool {
        self.has(wgpu::Features::IMMEDIATES)
            && self.limits.max_immediate_size >= 16
            && self.backend != wgpu::Backend::Gl
    }
    /// Whether CPU and GPU share memory (integrated GPUs, software adapters), where mapping
    /// working buffers costs no copy.
    pub fn shares_memory_with_host(&self) -> bool {
        matches!(
            self.device_type,
            wgpu::DeviceType::IntegratedGpu | wgpu::DeviceType::Cpu
        )
    }
    /// The largest buffer this device can bind as one storage binding (and allocate).
    pub fn max_binding_bytes(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }
}

impl std::fmt::Display for GpuInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.limits;
        let yes = |feat| if self.has(feat) { "yes" } else { "no" };
        writeln!(
            f,
            "adapter: {} ({:?}, {:?}, driver {}): {}",
            self.name, self.backend, self.device_type, self.driver, self.chosen_because
        )?;
        writeln!(
            f,
            "subgroups: {} (size {}..={}), f64: {}, timestamps: {}, mappable primary buffers: {}",
            yes(wgpu::Features::SUBGROUP),
            self.subgroup_min_size,
            self.subgroup_max_size,
            yes(wgpu::Features::SHADER_F64),
            yes(wgpu::Features::TIMESTAMP_QUERY),
            yes(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        )?;
        write!(
            f,
            "limits: storage binding {} MiB, buffer {} MiB, workgroup memory {} KiB, {} invocations/workgroup, {} workgroups/dimension",
            l.max_storage_buffer_binding_size >> 20,
            l.max_buffer_size >> 20,
            l.max_compute_workgroup_storage_size >> 10,
            l.max_compute_invocations_per_workgroup,
            l.max_compute_workgroups_per_dimension
        )
    }
}

pub(crate) struct GpuInner {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: GpuInfo,
    /// Set by the device-lost callback (only on devices we opened).
    lost: Arc<Mutex<Option<(String, String)>>>,
    pipelines: Mutex<HashMap<crate::kernel::PipelineKey, Arc<Mutex<pipeline::Slot>>>>,
    /// Time plans spent waiting for pipelines to compile, in ns: setup splits leave it out
    /// (once per device).
    pub compile_ns: AtomicU64,
    /// Distinguishes devices so that a vector from one is never bound on another.
    pub id: u64,
    /// Working buffers of dropped plans, kept for the next ones.
    pool: Arc<pool::Pool>,
    /// The warm-up probe's fastest time on this device, ms per copy (`Gpu::warm_up`).
    fastest_probe_ms: Mutex<Option<f64>>,
    /// Timed recordings handed back in other encoders, logged after the recording thread's
    /// next read back (`WGSPMV_PASS_TIMES`).
    pub(crate) deferred_times: Mutex<Vec<recorder::DeferredTimes>>,
    /// The pipeline cache compiles go through, and where it is saved (`gpu/pipeline.rs`).
    disk_cache: Mutex<Option<Arc<pipeline::DiskCache>>>,
    /// The bind group layout that checks which device a caller's buffer belongs to.
    probe_layout: std::sync::OnceLock<wgpu::BindGroupLayout>,
    /// The small buffers vector operations share, by value type and length (kept by
    /// `solvers`, which owns what they hold; nothing in them refers back to the device).
    pub(crate) vector_scratch: Mutex<VectorScratch>,
}

/// See [`GpuInner::vector_scratch`].
pub(crate) type VectorScratch =
    HashMap<(std::any::TypeId, usize), Arc<dyn std::any::Any + Send + Sync>>;

/// A GPU device and queue with what `wgspmv` knows about them. Cheap to clone (shared).
#[derive(Clone)]
pub struct Gpu {
    pub(crate) inner: Arc<GpuInner>,
}

/// The calling thread's turn to drive a GL device ([`Gpu::turn`]); released when dropped, on
/// the thread that took it.
#[must_use = "the turn ends when the guard is dropped"]
pub struct DeviceTurn {
    _held: Option<parking_lot::ReentrantMutexGuard<'static, ()>>,
}

impl std::fmt::Debug for DeviceTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceTurn")
            .field("held", &self._held.is_some())
            .finish()
    }
}

/// Waits until the work submitted to `device` is done. wgpu's GL backend holds its one context
/// lock for the whole of a wait, and panics in any other thread that waits more than 6 s for it
/// ("Could not lock adapter context"); there the wait is taken in short slices, the lock free
/// between them, so several threads sharing a `Gpu` on GL take turns instead.
pub(crate) fn wait_for_device(
    device: &wgpu::Device,
    backend: wgpu::Backend,
) -> std::result::Result<(), wgpu::PollError> {
    if backend != wgpu::Backend::Gl {
        return device.poll(wgpu::PollType::wait_indefinitely()).map(drop);
    }
    loop {
        match device.poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: Some(std::time::Duration::from_millis(5)),
        }) {
            Err(wgpu::PollError::Timeout) => std::thread::yield_now(),
            other => return other.map(drop),
        }
    }
}

/// Where adapters are looked for: one wgpu instance per process and descriptor, shared by every
/// `Gpu` this crate opens, for every backend but GL; and GL's adapters, enumerated once per
/// process and descriptor and kept. wgpu names buffers by ids local to their instance: a buffer
/// of another instance's device cannot be told apart from one of ours (wgpu-core panics on it,
/// or takes it for another buffer), while one of another device of the same instance is a
/// validation error that the checks of callers' buffers (`gpu/caller.rs`) turn into
/// `Error::WrongDevice`. GL is enumerated once because wgpu-hal gives every GL adapter an
/// enumeration makes the instance's one EGL context, each adapter with a lock of its own: two
/// enumerations' adapters race for the context from different threads (wgpu panics with
/// `BadAccess`, as when an unused adapter is dropped while another thread holds it). Devices of
/// one kept adapter share its lock.
struct Adapters {
    /// The instance of every backend but GL (`None` where only GL is asked for).
    instance: Option<wgpu::Instance>,
    /// GL's adapters (empty where GL is not asked for).
    gl: Vec<wgpu::Adapter>,
}

fn adapters_for(desc: wgpu::InstanceDescriptor) -> Adapters {
    type Shared<V> = Mutex<Vec<((wgpu::Backends, wgpu::InstanceFlags), V)>>;
    static SHARED: Shared<wgpu::Instance> = Mutex::new(Vec::new());
    static GL: Shared<(wgpu::Instance, Vec<wgpu::Adapter>)> = Mutex::new(Vec::new());
    let with_backends = |backends| wgpu::InstanceDescriptor {
        backends,
        flags: desc.flags,
        memory_budget_thresholds: desc.memory_budget_thresholds,
        backend_options: desc.backend_options.clone(),
        display: None,
    };
    let not_gl = desc.backends - wgpu::Backends::GL;
    let instance = (!not_gl.is_empty()).then(|| {
        let key = (not_gl, desc.flags);
        let mut all = crate::lock(&SHARED);
        match all.iter().find(|(k, _)| *k == key) {
            Some((_, i)) => i.clone(),
            None => {
                let i = wgpu::Instance::new(with_backends(not_gl));
                all.push((key, i.clone()));
                i
            }
        }
    });
    let mut gl = Vec::new();
    if desc.backends.contains(wgpu::Backends::GL) {
        let key = (wgpu::Backends::GL, desc.flags);
        let mut all = crate::lock(&GL);
        gl = match all.iter().find(|(k, _)| *k == key) {
            Some((_, (_, adapters))) => adapters.clone(),
            None => {
                let i = wgpu::Instance::new(with_backends(wgpu::Backends::GL));
                // (Native enumeration is ready at once: nothing waits under the lock.)
                let adapters = pollster::block_on(i.enumerate_adapters(wgpu::Backends::GL));
                all.push((key, (i, adapters.clone())));
                adapters
            }
        };
    }
    Adapters { instance, gl }
}

/// The order in which wgpu's `request_adapter` prefers kinds of device (lower first; no order
/// without a preference).
fn device_rank(kind: wgpu::DeviceType, preference: wgpu::PowerPreference) -> u8 {
    use wgpu::DeviceType::*;
    if preference == wgpu::PowerPreference::None {
        return 0;
    }
    let low_power = preference == wgpu::PowerPreference::LowPower;
    match kind {
        DiscreteGpu if low_power => 2,
        IntegratedGpu if low_power => 1,
        DiscreteGpu => 1,
        IntegratedGpu => 2,
        Other => 3,
        VirtualGpu => 4,
        Cpu => 5,
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl Gpu {
    /// The limits to create a device with so that every method runs at its best on `adapter`:
    /// WebGPU's defaults, raised to the adapter's own where the kernels use more (storage buffers
    /// per stage, binding and buffer sizes, workgroup memory and size). For applications that
    /// create their own device and share it with [`Gpu::from_device`].
    pub fn wanted_limits(adapter: &wgpu::Adapter) -> wgpu::Limits {
        let have = adapter.limits();
        let default = wgpu::Limits::default();
        let base = if default.check_limits(&have) {
            default
        } else {
            wgpu::Limits::downlevel_defaults()
        };
        wgpu::Limits {
            max_storage_buffers_per_shader_stage: have.max_storage_buffers_per_shader_stage,
            max_storage_buffer_binding_size: have.max_storage_buffer_binding_size,
            max_buffer_size: have.max_buffer_size,
            max_compute_workgroup_storage_size: have.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: have.max_compute_invocations_per_workgroup,
            max_compute_workgroup_size_x: have.max_compute_workgroup_size_x,
            max_compute_workgroups_per_dimension: have.max_compute_workgroups_per_dimension,
            max_immediate_size: have.max_immediate_size,
            ..base
        }
    }

    /// The optional features `wgspmv` uses that `adapter` has (subgroups, f64, timestamps,
    /// mappable primary buffers, 64-bit integers, immediate data); none is required.
    pub fn wanted_features(adapter: &wgpu::Adapter) -> wgpu::Features {
        adapter.features() & WANTED_FEATURES
    }

    /// The descriptor to create an application's device with, so that every method runs at its
    /// best on `adapter`: [`wanted_features`](Self::wanted_features) and
    /// [`wanted_limits`](Self::wanted_limits). The one way to set up a device to share with
    /// [`Gpu::from_device`]; an app that needs more of its own adds to the fields it returns
    /// (features are optional to wgspmv: a device without them loses subgroups, f64 or timing,
    /// and says so in [`GpuInfo`]).
    ///
    /// ```no_run
    /// # use wgspmv::{wgpu, Gpu};
    /// # async fn app(adapter: wgpu::Adapter) -> Result<Gpu, wgpu::RequestDeviceError> {
    /// let (device, queue) = adapter.request_device(&Gpu::device_descriptor(&adapter)).await?;
    /// let gpu = Gpu::from_device(device.clone(), queue.clone());
    /// # Ok(gpu) }
    /// ```
    pub fn device_descriptor(adapter: &wgpu::Adapter) -> wgpu::DeviceDescriptor<'static> {
        wgpu::DeviceDescriptor {
            label: Some("wgspmv"),
            required_features: Self::wanted_features(adapter),
            required_limits: Self::wanted_limits(adapter),
            ..Default::default()
        }
    }

    /// Opens the default adapter (see [`GpuOptions::adapter_name`]), blocking.
    pub fn new() -> Result<Self> {
        pollster::block_on(Self::with_options(GpuOptions::default()))
    }

    /// Opens an adapter chosen by `opts`.
    pub async fn with_options(opts: GpuOptions) -> Result<Self> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        if let Some(b) = opts.backends {
            desc.backends = b;
        }
        // wgpu checks indirect dispatch sizes with a pipeline of its own, which some GL drivers
        // cannot build (the device is then lost at creation); suraa, our one indirect dispatch,
        // sizes its grid within the limits by construction. WGPU_VALIDATION_INDIRECT_CALL=1
        // keeps the check.
        if std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none() {
            desc.flags
                .remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
        }
        let sources = adapters_for(desc);
        let (wanted, source) = match opts.adapter_name.clone() {
            Some(name) => (Some(name), "GpuOptions::adapter_name"),
            None => match std::env::var("WGSPMV_ADAPTER") {
                Ok(name) => (Some(name), "WGSPMV_ADAPTER"),
                Err(_) => (std::env::var("WGPU_ADAPTER_NAME").ok(), "WGPU_ADAPTER_NAME"),
            },
        };
        let mut adapters = Vec::new();
        if let Some(instance) = &sources.instance {
            adapters.extend(instance.enumerate_adapters(wgpu::Backends::all()).await);
        }
        adapters.extend(sources.gl.iter().cloned());
        let found: Vec<String> = adapters
            .iter()
            .map(|a| adapter_label(&a.get_info()))
            .collect();
        let found = if found.is_empty() {
            "none".to_owned()
        } else {
            found.join(", ")
        };
        let (adapter, chosen_because) = match wanted {
            Some(name) => {
                let (part, backend) = match name.rsplit_once('/') {
                    Some((part, backend)) => (part.to_lowercase(), Some(backend.to_lowercase())),
                    None => (name.to_lowercase(), None),
                };
                let adapter = adapters
                    .into_iter()
                    .find(|a| {
                        let info = a.get_info();
                        info.name.to_lowercase().contains(&part)
                            && backend
                                .as_ref()
                                .is_none_or(|b| info.backend.to_str().eq_ignore_ascii_case(b))
                    })
                    .ok_or_else(|| Error::NoAdapter {
                        detail: format!(" matching {source}='{name}' (found: {found})"),
                    })?;
                (adapter, format!("matches {source}='{name}'"))
            }
            None => {
                let preference = wgpu::PowerPreference::from_env()
                    .unwrap_or(wgpu::PowerPreference::HighPerformance);
                // wgpu's choice among the other backends, then GL's best kind of device where
                // it is a better kind (as one instance over every backend would choose).
                let rank = |a: &wgpu::Adapter| device_rank(a.get_info().device_type, preference);
                let mut best = None;
                let mut last_error = None;
                if let Some(instance) = &sources.instance {
                    let options = wgpu::RequestAdapterOptions {
                        power_preference: preference,
                        ..Default::default()
                    };
                    match instance.request_adapter(&options).await {
                        Ok(a) => best = Some(a),
                        Err(e) => last_error = Some(e.to_string()),
                    }
                }
                if let Some(gl) = sources.gl.iter().min_by_key(|a| rank(a)) {
                    if best.as_ref().is_none_or(|b| rank(gl) < rank(b)) {
                        best = Some(gl.clone());
                    }
                }
                let adapter = best.ok_or_else(|| Error::NoAdapter {
                    detail: format!(
                        " ({}; found: {found})",
                        last_error.unwrap_or_else(|| "no adapter".into())
                    ),
                })?;
                let why = format!("wgpu's {preference:?} choice among {found}");
                if adapter_has_compute(&adapter) {
                    (adapter, why)
                } else {
                    // A GL 3.3 context has no compute shaders; another adapter may.
                    match adapters.into_iter().find(adapter_has_compute) {
                        Some(other) => (
                            other,
                            format!("{why} lacks compute shaders, so the first that has them"),
                        ),
                        None => (adapter, why),
                    }
                }
            }
        };
        if !adapter_has_compute(&adapter) {
            return Err(Error::MissingFeature {
                adapter: adapter_label(&adapter.get_info()),
                feature: "COMPUTE_SHADERS (a downlevel capability)",
                needed_for: "every SpMV kernel".into(),
                hint: "; on GL, wgpu asks for desktop GL 3.3, and a driver that gives exactly 3.3 has no compute shaders for naga to write: use the Vulkan adapter",
            });
        }
        let adapter_info = adapter.get_info();
        let features = adapter.features() & WANTED_FEATURES & !opts.disabled_features;
        // Ask for the adapter's real limits: the defaults (128 MiB bindings, 16 KiB workgroup
        // memory) would hide what the hardware can do.
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("wgspmv"),
                required_features: features,
                required_limits: limits,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::RequestDevice {
                adapter: adapter_info.name.clone(),
                message: e.to_string(),
            })?;
        let lost = Arc::new(Mutex::new(None));
        let lost2 = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            *crate::lock(&lost2) = Some((format!("{reason:?}"), message));
        });
        let gpu = Self::assemble(device, queue, adapter_info, lost, chosen_because);
        let dir = opts.pipeline_cache_dir.clone().or_else(|| {
            std::env::var_os("WGSPMV_PIPELINE_CACHE")
                .filter(|d| !d.is_empty())
                .map(Into::into)
        });
        if let Some(dir) = dir {
            // A cache that cannot be read or made costs compile time, nothing else.
            if let Err(e) = gpu.use_pipeline_cache_dir(&dir) {
                log::warn!("pipeline cache in {} not used: {e}", dir.display());
            }
        }
        Ok(gpu)
    }

    /// Wraps a device and queue that the host application owns, so SpMV shares its device. The
    /// features and limits used are those the device was created with; `wgspmv` installs no
    /// callbacks on it.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue) -> Self {
        let info = device.adapter_info();
        let why = "the application's device".to_owned();
        Self::assemble(device, queue, info, Arc::new(Mutex::new(None)), why)
    }

    fn assemble(
        device: wgpu::Device,
        queue: wgpu::Queue,
        a: wgpu::AdapterInfo,
        lost: Arc<Mutex<Option<(String, String)>>>,
        chosen_because: String,
    ) -> Self {
        let info = GpuInfo {
            name: a.name,
            backend: a.backend,
            device_type: a.device_type,
            vendor: a.vendor,
            driver: format!("{} {}", a.driver, a.driver_info).trim().to_owned(),
            subgroup_min_size: a.subgroup_min_size,
            subgroup_max_size: a.subgroup_max_size,
            features: device.features(),
            limits: device.limits(),
            chosen_because,
        };
        log::info!("wgspmv on {}", info.name);
        Self {
            inner: Arc::new(GpuInner {
                device,
                queue,
                info,
                lost,
                pipelines: Mutex::default(),
                compile_ns: AtomicU64::new(0),
                id: next_id(),
                pool: Arc::default(),
                fastest_probe_ms: Mutex::default(),
                deferred_times: Mutex::default(),
                probe_layout: Default::default(),
                disk_cache: Mutex::default(),
                vector_scratch: Mutex::default(),
            }),
        }
    }

    /// What this adapter is and can do.
    pub fn info(&self) -> &GpuInfo {
        &self.inner.info
    }
    /// The wgpu device, for applications that record their own work next to SpMV.
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }
    /// The wgpu queue that SpMV submits to.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    /// Fails with [`Error::DeviceLost`] once the device is gone.
    pub(crate) fn check_alive(&self) -> Result<()> {
        if let Some((reason, message)) = crate::lock(&self.inner.lost).clone() {
            return Err(Error::DeviceLost { reason, message });
        }
        Ok(())
    }

    /// Fails when `T` needs a feature this device lacks.
    pub(crate) fn check_scalar<T: crate::Scalar>(&self) -> Result<()> {
        if T::NEEDS_F64 && !self.info().has(wgpu::Features::SHADER_F64) {
            return Err(Error::MissingFeature {
                adapter: self.info().name.clone(),
                feature: "SHADER_F64",
                needed_for: "f64 values".into(),
                hint: " (Metal and some drivers have no f64; use f32)",
            });
        }
        Ok(())
    }

    /// Runs `f` inside error scopes and turns what wgpu reports into typed errors.
    pub(crate) fn scoped<R>(&self, during: &str, f: impl FnOnce() -> R) -> Result<R> {
        self.check_alive()?;
        let dev = &self.inner.device;
        // Internal too: a shader the backend cannot translate (e.g. GLSL for a GL 3.3 context)
        // is one, and uncaught it would reach wgpu's default handler, which panics.
        let internal = dev.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = dev.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let started = std::time::Instant::now();
        let out = f();
        log::trace!("{during}: {:?}", started.elapsed());
        let v = pollster::block_on(val.pop());
        let o = pollster::block_on(oom.pop());
        let i = pollster::block_on(internal.pop());
        self.check_alive()?;
        if let Some(e) = o {
            return Err(Error::OutOfMemory {
                during: during.into(),
                message: e.to_string(),
            });
        }
        if let Some(e) = v.or(i) {
            return Err(Error::Wgpu {
                during: during.into(),
                message: e.to_string(),
            });
        }
        Ok(out)
    }

    /// Time this device has spent compiling pipelines, in ns.
    pub(crate) fn compile_ns(&self) -> u64 {
        self.inner.compile_ns.load(Ordering::Relaxed)
    }

    /// On wgpu's GL backend, the turn of the calling thread to drive the device, held by every
    /// public call for its whole length (reentrant: calls within calls take it again). wgpu's GL
    /// backend serializes its work behind a context lock that a thread waits for at most 6 s
    /// before wgpu panics ("Could not lock adapter context"), and a GL driver may hold it that
    /// long (llvmpipe compiles a kernel at its first dispatch). One turn per process, not per
    /// `Gpu`: the devices of one GL adapter share its lock. Elsewhere `None`: Vulkan, Metal and
    /// DX12 take calls from any number of threads.
    pub(crate) fn gl_turn(&self) -> Option<parking_lot::ReentrantMutexGuard<'static, ()>> {
        static GL_TURN: parking_lot::ReentrantMutex<()> = parking_lot::ReentrantMutex::new(());
        (self.inner.info.backend == wgpu::Backend::Gl).then(|| GL_TURN.lock())
    }

    /// Holds off every other thread's `wgspmv` call on a GL device while the guard lives: take it
    /// around your own calls (encoders, submits, polls, buffer maps) on a device that threads
    /// share with `wgspmv` on wgpu's GL backend. There wgpu runs every call behind one context
    /// lock and panics in a thread that has waited 6 s for it, as it can when another thread's
    /// submit is slow; `wgspmv`'s own calls take this turn, so that one thread at a time drives
    /// the device. Reentrant (`wgspmv` calls made while holding it proceed); on every other
    /// backend it holds nothing.
    pub fn turn(&self) -> DeviceTurn {
        DeviceTurn {
            _held: self.gl_turn(),
        }
    }

    /// Waits until all submitted work is done.
    pub fn wait(&self) -> Result<()> {
        let _turn = self.gl_turn();
        self.check_alive()?;
        wait_for_device(&self.inner.device, self.inner.info.backend).map_err(|e| Error::Wgpu {
            during: "waiting for the GPU".into(),
            message: e.to_string(),
        })?;
        self.check_alive()
    }

    /// Waits for the map callback `rx` of a buffer written by work submitted before later work
    /// (the later work is not waited for), polling the device without blocking every 50 µs.
    /// (wgpu 30's blocking poll for one submission index asserts when another thread's poll has
    /// just emptied the queue, so it is not used.)
    pub(crate) fn wait_for_map<R>(
        &self,
        mut rx: futures::channel::oneshot::Receiver<R>,
    ) -> Result<R> {
        loop {
            match rx.try_recv() {
                Ok(Some(r)) => return Ok(r),
                Ok(None) => {
                    {
                        let _turn = self.gl_turn();
                        let _ = self.inner.device.poll(wgpu::PollType::Poll);
                    }
                    self.check_alive()?;
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
                Err(_) => return Err(Error::Map("the map callback was dropped".into())),
            }
        }
    }

    /// Waits for the GPU, then for a map callback to have run. Another thread polling the same
    /// device may be the one that runs it, a moment after our own wait returns.
    pub(crate) fn wait_for_callback<R>(
        &self,
        rx: futures::channel::oneshot::Receiver<R>,
    ) -> Result<R> {
        self.wait()?;
        self.receive_callback(rx)
    }

    /// The value of a map callback whose work the GPU has finished, polling until it has run.
    fn receive_callback<R>(&self, mut rx: futures::channel::oneshot::Receiver<R>) -> Result<R> {
        let start = std::time::Instant::now();
        loop {
            match rx.try_recv() {
                Ok(Some(r)) => return Ok(r),
                Ok(None) if start.elapsed().as_secs() < 60 => {
                    let _ = self.inner.device.poll(wgpu::PollType::Poll);
                    std::thread::yield_now();
                }
                Ok(None) => {
                    return Err(Error::Map(
                        "a map callback did not run within 60 s of its work finishing".into(),
                    ))
                }
                Err(_) => return Err(Error::Map("the map callback was dropped".into())),
            }
            self.check_alive()?;
        }
    }

    /// Creates a storage buffer holding `data` (at least 16 bytes, so that empty arrays bind).
    /// Large arrays go through a staging buffer kept in the pool and into a pooled buffer: a
    /// repeated upload then writes memory the process already holds (fresh mapped memory is what
    /// made uploads slow, docs/setup.md).
    pub(crate) fn storage_buffer(
        &self,
        label: &str,
        data: &[u8],
        extra: wgpu::BufferUsages,
    ) -> Result<DeviceBuffer> {
        let size = (data.len() as u64).max(16).next_multiple_of(4);
        let limit = self.info().limits.max_buffer_size;
        if size > limit {
            return Err(Error::TooLargeForAdapter {
                what: label.into(),
                bytes: size,
                limit_name: "max_buffer_size",
                limit,
            });
        }
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | extra;
        if data.len() as u64 >= pool::STAGED_UPLOAD_BYTES {
            return self.upload_staged(label, data, usage);
        }
        self.scoped(&format!("allocating {label} ({size} bytes)"), || {
            let buf = self.inner.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: !data.is_empty(),
            });
            if !data.is_empty() {
                let mut view = buf.get_mapped_range_mut(..).expect("mapped at creation");
                copy_in_parallel(view.slice(..data.len()), data);
                drop(view);
                buf.unmap();
            }
            DeviceBuffer::plain(buf)
        })
    }

    /// A zero-filled storage buffer of `bytes` (at least 16) for the GPU to write: from the
    /// pool when a dropped plan left one of its size class (cleared before any later work).
    pub(crate) fn storage_zeroed(
        &self,
        label: &str,
        bytes: u64,
        extra: wgpu::BufferUsages,
    ) -> Result<DeviceBuffer> {
        self.storage_for_gpu(label, bytes, extra, Some(0))
    }

    /// [`Gpu::storage_zeroed`] for a buffer whose first `bytes` a copy recorded next overwrites:
    /// a reused one is not cleared first (only a padded tail would need it).
    pub(crate) fn storage_overwritten(
        &self,
        label: &str,
        bytes: u64,
        extra: wgpu::BufferUsages,
    ) -> Result<DeviceBuffer> {
        self.storage_zeroed_after(label, bytes, bytes, extra)
    }

    /// [`Gpu::storage_zeroed`] for a buffer of `bytes` whose first `written` bytes a copy
    /// recorded next overwrites: a reused one is cleared only beyond them (a padded tail), not
    /// written twice.
    pub(crate) fn storage_zeroed_after(
        &self,
        label: &str,
        bytes: u64,
        written: u64,
        extra: wgpu::BufferUsages,
    ) -> Result<DeviceBuffer> {
        // Clears start on a whole word; the copy, recorded after them, rewrites the rest.
        let from = written.min(bytes) / wgpu::COPY_BUFFER_ALIGNMENT * wgpu::COPY_BUFFER_ALIGNMENT;
        self.storage_for_gpu(label, bytes, extra, Some(from))
    }

    fn storage_for_gpu(
        &self,
        label: &str,
        bytes: u64,
        extra: wgpu::BufferUsages,
        zeroed_from: Option<u64>,
    ) -> Result<DeviceBuffer> {
        let size = bytes.max(16).next_multiple_of(4);
        let limit = self.info().max_binding_bytes();
        if size > limit {
            return Err(Error::TooLargeForAdapter {
                what: label.into(),
                bytes: size,
                limit_name: "max_storage_buffer_binding_size",
                limit,
            });
        }
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC
            | extra;
        self.pooled_buffer(label, size, usage, zeroed_from)
    }

    /// Creates a small uniform buffer.
    pub(crate) fn uniform_buffer(&self, label: &str, data: &[u8]) -> DeviceBuffer {
        use wgpu::util::DeviceExt;
        DeviceBuffer::plain(self.inner.device.create_buffer_init(
            &wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: data,
                usage: wgpu::BufferUsages::UNIFORM,
            },
        ))
    }
}

/// Bytes per piece of a parallel copy into mapped memory.
const COPY_PIECE: usize = 8 << 20;

/// Copies `src` into mapped memory, in pieces on rayon's threads when it is large: one thread's
/// copy into write-combined memory runs well below what the bus takes.
pub(crate) fn copy_in_parallel(dst: wgpu::WriteOnly<'_, [u8]>, src: &[u8]) {
    use rayon::prelude::*;
    let mut dst = dst;
    if src.len() <= 2 * COPY_PIECE {
        dst.copy_from_slice(src);
        return;
    }
    // Pieces as arrays: a `WriteOnly` of a sized type may go to another thread.
    let (pieces, mut tail) = dst.into_chunks::<COPY_PIECE>();
    let pieces: Vec<wgpu::WriteOnly<'_, [u8; COPY_PIECE]>> = pieces.into_iter().collect();
    let (head, rest) = src.split_at(pieces.len() * COPY_PIECE);
    pieces
        .into_par_iter()
        .zip(head.par_chunks_exact(COPY_PIECE))
        .for_each(|(d, s)| wgpu::WriteOnly::<'_, [u8]>::from(d).copy_from_slice(s));
    tail.copy_from_slice(rest);
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gpu({})", self.info().name)
    }
}

/// For unit tests: the default adapter; `None` (the test skips) without one, a panic instead
/// where `CI` is set.
#[cfg(test)]
pub(crate) fn test_gpu() -> Option<Gpu> {
    match Gpu::new() {
        Ok(g) => Some(g),
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but no GPU adapter could be opened: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: no GPU adapter ({e})");
            None
        }
    }
}

/// For unit tests: [`test_gpu`] where it has timestamp queries (`None` without them).
#[cfg(test)]
pub(crate) fn test_gpu_with_timestamps() -> Option<Gpu> {
    let g = test_gpu()?;
    if g.info().has(wgpu::Features::TIMESTAMP_QUERY) {
        Some(g)
    } else {
        eprintln!("SKIPPED: no timestamp queries");
        None
    }
}

#[cfg(test)]
mod copy_tests {
    use super::{copy_in_parallel, COPY_PIECE};

    #[test]
    fn parallel_copy_writes_every_byte_in_place() {
        for len in [
            0,
            5,
            2 * COPY_PIECE,
            2 * COPY_PIECE + 1,
            3 * COPY_PIECE + COPY_PIECE / 2,
        ] {
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            let mut dst = vec![0u8; len];
            copy_in_parallel(wgpu::WriteOnly::from_mut(dst.as_mut_slice()), &src);
            assert!(dst == src, "length {len}");
        }
    }
}
