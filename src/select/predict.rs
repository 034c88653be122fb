//! The cost model's predictions: a [`Profile`]'s coefficients read against the [`Features`]
//! of a matrix and adapter. (The profile's data and its file format are in `crate::profile`,
//! below the methods, so that their options can name a profile.)

use super::features::{Features, NREG};
use crate::profile::{MethodModel, Profile, Traffic};
use crate::Method;

/// Index of `ln_mnnz` (the stored entries, ln of millions) among the regressors.
const LN_MNNZ: usize = 8;

/// The least matrix a profile without a data range (version 1) is taken as fitted on, entries.
const DATA_MIN_NNZ: f64 = 1e6;

impl MethodModel {
    /// Predicted time of one product by the global fit alone (regressors neither clamped nor
    /// corrected; [`Profile::product_ms`] is the profile's full prediction), ms, per byte of
    /// the method's own traffic ([`Traffic::Method`], what `calibrate` fits); `x_cache_bytes`
    /// as in [`Features::regressors`].
    pub fn product_ms(&self, f: &Features, cache_bytes: f64, x_cache_bytes: f64) -> f64 {
        let bytes = f.traffic_bytes(self.method, cache_bytes);
        self.product_ms_at(bytes, &f.regressors(cache_bytes, x_cache_bytes))
    }

    /// Predicted setup (format build and upload), ms, built on the GPU or on the host.
    pub fn setup_ms(&self, f: &Features, on_gpu: bool) -> f64 {
        let c = match self.host_setup {
            Some(h) if !on_gpu => h,
            _ => self.setup,
        };
        let mb = f.nnz as f64 * (4.0 + f.scalar_bytes as f64) / 1e6;
        let mrows = f.nrows as f64 / 1e6;
        (c[0] + c[1] * mb + c[2] * mrows).max(0.0)
    }
}

impl Profile {
    /// The regressors the model reads for `f`: [`Features::regressors`] clamped to the range.
    pub fn regressors(&self, f: &Features) -> [f64; NREG] {
        let mut r = f.regressors(self.cache_bytes, self.x_cache_bytes());
        if let Some((lo, hi)) = &self.range {
            for ((x, a), b) in r.iter_mut().zip(lo).zip(hi) {
                *x = x.clamp(*a, *b);
            }
        }
        r
    }

    /// Whether `f` is smaller (in stored entries) than every matrix this profile was fitted on:
    /// there the model holds ns per byte at the data's edge while a product is bound by its
    /// launches and latencies instead, and its choice is an extrapolation. A profile without a
    /// range is taken as fitted from `DATA_MIN_NNZ` entries up.
    pub fn below_data(&self, f: &Features) -> bool {
        let least_nnz = match &self.range {
            Some((lo, _)) => lo[LN_MNNZ].exp() * 1e6,
            None => DATA_MIN_NNZ,
        };
        (f.nnz as f64) < least_nnz
    }

    /// Predicted time of one product of `m` (one of this profile's models) on `f`, ms: the
    /// global fit at the clamped regressors, times the kernel correction.
    pub fn product_ms(&self, m: &MethodModel, f: &Features) -> f64 {
        let r = self.regressors(f);
        let t = m.product_ms_at(self.bytes(m.method, f), &r);
        match &self.kernel {
            Some(k) if !m.residuals.is_empty() => t * k.correction(&r, &m.residuals).exp(),
            _ => t,
        }
    }

    /// The bytes of one product of `method` on `f` that this profile's weights are per.
    pub fn bytes(&self, method: Method, f: &Features) -> f64 {
        match self.traffic {
            Traffic::Minimal => f.minimal_bytes(),
            Traffic::Method => f.traffic_bytes(method, self.cache_bytes),
        }
    }
}
