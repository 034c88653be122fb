//! The `bccoo` / `bccoo-plus` flags shared by `multiply` and `bench`.

use std::path::PathBuf;
use wgspmv::methods::bccoo::{BccooOptions, Strategy};

#[derive(clap::Args)]
pub struct BccooArgs {
    /// How `bccoo` and `bccoo-plus` carry sums across workgroups: auto, single (adjacent
    /// synchronization), two (a second pass), or, in `bench`, both (rows `bccoo-single` and
    /// `bccoo-two`, ...).
    #[arg(long, default_value = "auto", value_parser = ["auto", "single", "two", "both"])]
    pub carry: String,
    /// Tune `bccoo` and `bccoo-plus` by timing candidate layouts on this adapter first (the BCCOO
    /// paper's section 4).
    #[arg(long)]
    pub tune: bool,
    /// With `--tune`: a guided search spending about this many products of the untuned plan
    /// (builds and timings) instead of the staged search of every parameter.
    #[arg(long)]
    pub tune_budget: Option<u32>,
    /// Remember `bccoo` tuning choices in this file across runs (read first, appended after).
    #[arg(long)]
    pub tune_file: Option<PathBuf>,
    /// `bccoo`'s blocks per thread tile; default: the library's choice.
    #[arg(long)]
    pub bccoo_tile: Option<u32>,
    /// `bccoo`'s block size as HxW (e.g. 2x1); default: the library's choice.
    #[arg(long)]
    pub bccoo_block: Option<String>,
    /// `bccoo`'s vertical slices (1 is BCCOO, more is BCCOO+); default: the library's choice.
    #[arg(long)]
    pub bccoo_slices: Option<u32>,
    /// `bccoo`'s strategy: per-thread (1) or cache (2, the workgroup result cache); default: the
    /// library's choice.
    #[arg(long)]
    pub bccoo_strategy: Option<String>,
    /// `bccoo`'s single-pass spin limit (0: nobody waits, the dispatch's last workgroup adds every
    /// carry); default: the library's.
    #[arg(long)]
    pub bccoo_spin: Option<u32>,
}

impl BccooArgs {
    /// One `(label suffix, options)` per carry path asked for (`both` gives two).
    pub fn variants(&self) -> wgspmv::Result<Vec<(&'static str, BccooOptions)>> {
        let carries = super::choose("carry", &self.carry, super::CARRIES)?;
        let (block_height, block_width) = match &self.bccoo_block {
            None => (None, None),
            Some(b) => {
                let parsed = b
                    .split_once('x')
                    .and_then(|(h, w)| Some((h.parse().ok()?, w.parse().ok()?)));
                let (h, w) = parsed.ok_or_else(|| wgspmv::Error::UnknownName {
                    what: "bccoo block",
                    name: b.clone(),
                    expected: "HxW, e.g. 2x1".into(),
                })?;
                (Some(h), Some(w))
            }
        };
        let strategy = match self.bccoo_strategy.as_deref() {
            None => Strategy::Auto,
            Some("per-thread") => Strategy::PerThread,
            Some("cache") => Strategy::ResultCache,
            Some(other) => {
                return Err(wgspmv::Error::UnknownName {
                    what: "bccoo strategy",
                    name: other.into(),
                    expected: "per-thread, cache".into(),
                })
            }
        };
        Ok(carries
            .into_iter()
            .map(|(suffix, carry)| {
                let o = BccooOptions {
                    carry,
                    tune: self.tune,
                    tune_file: self.tune_file.clone(),
                    tune_budget_products: self.tune_budget,
                    tile: self.bccoo_tile,
                    block_height,
                    block_width,
                    slices: self.bccoo_slices,
                    strategy,
                    spin_limit: self.bccoo_spin,
                    ..Default::default()
                };
                (suffix, o)
            })
            .collect())
    }

    /// The options for a single carry path (`both` is refused).
    pub fn options(&self) -> wgspmv::Result<BccooOptions> {
        match self.variants()?.as_slice() {
            [(_, o)] => Ok(o.clone()),
            _ => Err(wgspmv::Error::UnknownName {
                what: "carry",
                name: self.carry.clone(),
                expected: "auto, single, two".into(),
            }),
        }
    }
}
