//! Test support (feature `testing`): the synthetic suite and the CPU reference every GPU result
//! is checked against. The library itself never calls them.

pub mod reference;
pub mod suite;

pub use suite::SuiteClass;
