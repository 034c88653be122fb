//! The value types a matrix can hold on the GPU.

/// A floating-point value type that has a WGSL counterpart: `f32` everywhere, `f64` where the
/// adapter has `Features::SHADER_F64` (Vulkan, DX12; not Metal).
pub trait Scalar:
    bytemuck::Pod
    + Copy
    + Default
    + PartialEq
    + PartialOrd
    + Send
    + Sync
    + std::fmt::Debug
    + std::fmt::Display
    + 'static
{
    /// The WGSL spelling of the type, substituted for `SCALAR` in the shaders.
    const WGSL: &'static str;
    /// Short name used in reports ("f32", "f64").
    const NAME: &'static str;
    /// Whether the GPU needs `Features::SHADER_F64` for this type.
    const NEEDS_F64: bool;
    /// Converts from f64, rounding to nearest.
    fn from_f64(v: f64) -> Self;
    /// Converts to f64 exactly.
    fn to_f64(self) -> f64;
    /// Machine epsilon of the type, as f64.
    const EPSILON: f64;
    /// A quiet NaN, used to poison outputs so that unwritten elements are caught.
    const NAN: Self;
    /// Parses a decimal number straight into this type (one rounding, not two via f64).
    fn parse_decimal(s: &str) -> Option<Self>;
}

impl Scalar for f32 {
    const WGSL: &'static str = "f32";
    const NAME: &'static str = "f32";
    const NEEDS_F64: bool = false;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const EPSILON: f64 = f32::EPSILON as f64;
    const NAN: Self = f32::NAN;
    fn parse_decimal(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

impl Scalar for f64 {
    const WGSL: &'static str = "f64";
    const NAME: &'static str = "f64";
    const NEEDS_F64: bool = true;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    const EPSILON: f64 = f64::EPSILON;
    const NAN: Self = f64::NAN;
    fn parse_decimal(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}
