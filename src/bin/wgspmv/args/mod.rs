//! Flags and value lists shared by the subcommands; names are checked by clap, so a typo fails
//! before the GPU opens.

pub mod bccoo;
pub mod suraa;

use clap::builder::PossibleValuesParser;
use wgspmv::testing::SuiteClass;
use wgspmv::Method;

/// Every method name `Method::from_name` accepts.
pub fn method_names() -> PossibleValuesParser {
    let names = Method::ALL.iter().map(|m| m.name()).chain(["auto"]);
    PossibleValuesParser::new(names)
}

/// Every suite class name.
pub fn suite_class_names() -> PossibleValuesParser {
    PossibleValuesParser::new(SuiteClass::ALL.iter().map(|c| c.name()))
}
