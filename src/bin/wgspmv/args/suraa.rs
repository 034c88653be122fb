//! The `suraa` flags shared by `multiply` and `bench` (each parses `--setup` itself: `bench`
//! also accepts `both`).

use wgspmv::methods::suraa::{SetupOn, SuraaOptions};

#[derive(clap::Args)]
pub struct SuraaArgs {
    /// `suraa`'s budget of threads for its longest rows (group G1; the paper's
    /// max_child_threads; 0 disables the dynamic kernel); default: the library's.
    #[arg(long)]
    pub max_child: Option<u32>,
    /// Products per lane `suraa`'s scalar kernel stages in workgroup memory per round (0: rows are
    /// read directly, as in the paper); default: the library's.
    #[arg(long)]
    pub scalar_stage: Option<u32>,
    /// How `suraa`'s scalar rows reach y: gather (sums stored in sorted order, then gathered
    /// into y in row order) or scatter (written through the permutation, as in the paper).
    #[arg(long, default_value = "gather", value_parser = ["gather", "scatter"])]
    pub scalar_writes: String,
}

impl SuraaArgs {
    /// The options these flags ask for, with the setup on `setup`.
    pub fn options(&self, setup: SetupOn) -> wgspmv::Result<SuraaOptions> {
        Ok(SuraaOptions {
            setup,
            max_child: self.max_child,
            scalar_stage: self.scalar_stage,
            scalar_writes: self.scalar_writes.parse()?,
            ..Default::default()
        })
    }
}
