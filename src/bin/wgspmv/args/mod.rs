//! Flags and value lists shared by the subcommands; names are checked by clap, so a typo fails
//! before the GPU opens.

pub mod bccoo;
pub mod suraa;

use clap::builder::PossibleValuesParser;
use wgspmv::matrix::io::ReadLimits;
use wgspmv::methods::bccoo::Carry;
use wgspmv::methods::speculative::Finish;
use wgspmv::methods::suraa::SetupOn;
use wgspmv::methods::LanePolicy;
use wgspmv::testing::SuiteClass;
use wgspmv::{BuildOn, Method};

/// How large the Matrix Market files that multiply and bench read may say they are.
#[derive(clap::Args)]
pub struct ReadArgs {
    /// Rows or columns a Matrix Market file may declare per entry it lists, beyond 2^20 of them
    /// (so that a size line of a few bytes cannot ask for gigabytes); raise it to read a matrix
    /// with more empty rows than entries. Sizes are also capped by the adapter's binding limit.
    #[arg(long, default_value_t = ReadLimits::DEFAULT_DIMENSION_PER_ENTRY)]
    dims_per_entry: usize,
}

impl ReadArgs {
    /// `base` (the limits of the adapter) with the flags applied.
    pub fn limits(&self, base: ReadLimits) -> ReadLimits {
        base.with_dimension_per_entry(self.dims_per_entry)
    }
}

/// A flag's accepted names, each with the values it stands for under their row-label suffixes
/// (`both` stands for two rows).
pub type Choices<V> = [(&'static str, &'static [(&'static str, V)])];

/// Where `speculative` runs its check stage.
pub const FINISHES: &Choices<Finish> = &[
    ("auto", &[("", Finish::Auto)]),
    ("host", &[("", Finish::Host)]),
    ("gpu", &[("", Finish::Gpu)]),
    ("both", &[("-host", Finish::Host), ("-gpu", Finish::Gpu)]),
];

/// Where `suraa` sets up.
pub const SETUPS: &Choices<SetupOn> = &[
    ("auto", &[("", SetupOn::Auto)]),
    ("host", &[("", SetupOn::Host)]),
    ("gpu", &[("", SetupOn::Gpu)]),
    ("both", &[("-host", SetupOn::Host), ("-gpu", SetupOn::Gpu)]),
];

/// How `bccoo` carries sums across workgroups.
pub const CARRIES: &Choices<Carry> = &[
    ("auto", &[("", Carry::Auto)]),
    ("single", &[("", Carry::SinglePass)]),
    ("two", &[("", Carry::TwoPass)]),
    (
        "both",
        &[("-single", Carry::SinglePass), ("-two", Carry::TwoPass)],
    ),
];

/// How lanes cooperate.
pub const LANES: &Choices<LanePolicy> = &[
    ("auto", &[("", LanePolicy::Auto)]),
    ("subgroup", &[("", LanePolicy::Subgroup)]),
    ("workgroup", &[("", LanePolicy::Workgroup)]),
];

/// Where formats are built from a host CSR.
pub const BUILD_ON: &Choices<BuildOn> = &[
    ("auto", &[("", BuildOn::Auto)]),
    ("host", &[("", BuildOn::Host)]),
    ("gpu", &[("", BuildOn::Gpu)]),
];

/// The values `name` stands for among `choices`, or `UnknownName` listing the accepted names.
pub fn choose<V: Copy>(
    what: &'static str,
    name: &str,
    choices: &Choices<V>,
) -> wgspmv::Result<Vec<(&'static str, V)>> {
    match choices.iter().find(|(n, _)| *n == name) {
        Some((_, values)) => Ok(values.to_vec()),
        None => Err(wgspmv::Error::UnknownName {
            what,
            name: name.into(),
            expected: choices
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The one value `name` stands for, for flags where `both` makes no sense.
pub fn choose_one<V: Copy>(
    what: &'static str,
    name: &str,
    choices: &Choices<V>,
) -> wgspmv::Result<V> {
    match choose(what, name, choices)?.as_slice() {
        [(_, v)] => Ok(*v),
        _ => Err(wgspmv::Error::UnknownName {
            what,
            name: name.into(),
            expected: "a single value".into(),
        }),
    }
}

/// Every method name `Method::from_name` accepts.
pub fn method_names() -> PossibleValuesParser {
    let names = Method::ALL.iter().map(|m| m.name()).chain(["auto"]);
    PossibleValuesParser::new(names)
}

/// Every suite class name.
pub fn suite_class_names() -> PossibleValuesParser {
    PossibleValuesParser::new(SuiteClass::ALL.iter().map(|c| c.name()))
}
