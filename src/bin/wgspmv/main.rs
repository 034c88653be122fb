//! `wgspmv`: the library's command line. Install with `cargo install --path . --features cli`.
//!
//!     wgspmv info                                   # adapters, and the one wgspmv picks
//!     wgspmv multiply --matrix A.mtx --method auto --output y.mtx
//!     wgspmv bench --suite --scale 1 --csv ours.csv
//!     wgspmv solve --matrix A.mtx --solver cg --output x.mtx
//!     wgspmv pagerank --matrix G.mtx --output r.mtx
//!     wgspmv calibrate --out profile.txt

mod args;
mod bench;
mod calibrate;
mod info;
mod multiply;
mod pagerank;
mod plot;
mod solve;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    version,
    about = "Sparse matrix-vector multiplication on any GPU wgpu reaches"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the adapters wgpu finds and say which one wgspmv opens, and why.
    Info(info::Args),
    /// Multiply a sparse matrix by a vector with every method (or one), check each result
    /// against an f64 CPU reference, and print each method's time and bandwidth; y is written
    /// only with --output.
    Multiply(multiply::Args),
    /// Time every method against the device's copy bandwidth; CSV and an SVG plot.
    Bench(bench::Args),
    /// Fit `Method::Auto`'s cost model on this adapter and write a profile.
    Calibrate(calibrate::Args),
    /// Solve A·x = b by CG or BiCGStab on the GPU (b: ones unless given); exits with status 1
    /// when it does not converge.
    Solve(solve::Args),
    /// The PageRank of a graph (entry (i, j) of its matrix: a link i → j) on the GPU; exits
    /// with status 1 when it does not converge.
    Pagerank(pagerank::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    private_runtime_dir();
    user_pipeline_cache();
    // Errors only by default, without EGL's: wgpu's GL backend reports each EGL driver Mesa
    // fails to load before one that works ("DRI2: failed to load driver") on every healthy
    // headless run. RUST_LOG shows everything again.
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("error,wgpu_hal::gles::egl=off"),
    )
    .init();
    let result = match cli.command {
        Command::Info(a) => info::main(a),
        Command::Multiply(a) => return multiply::main(a),
        Command::Bench(a) => bench::main(a),
        Command::Calibrate(a) => calibrate::main(a),
        Command::Solve(a) => return solve::main(a),
        Command::Pagerank(a) => return pagerank::main(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Compiled pipelines are kept between runs in the user's cache directory (`Gpu::new` reads
/// `WGSPMV_PIPELINE_CACHE`), unless that variable is already set (empty: none kept).
fn user_pipeline_cache() {
    if std::env::var_os("WGSPMV_PIPELINE_CACHE").is_some() {
        return;
    }
    let home = |sub: &str| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(sub));
    let base = if cfg!(windows) {
        std::env::var_os("LOCALAPPDATA").map(std::path::PathBuf::from)
    } else if cfg!(target_os = "macos") {
        home("Library/Caches")
    } else {
        std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(|| home(".cache"))
    };
    if let Some(base) = base {
        // Single-threaded here: nothing else reads the environment yet.
        std::env::set_var("WGSPMV_PIPELINE_CACHE", base.join("wgspmv"));
    }
}

/// Vulkan's loader and Mesa print "XDG_RUNTIME_DIR is invalid or not set" on every headless run;
/// we draw no windows, so a private directory silences them.
fn private_runtime_dir() {
    let valid = std::env::var_os("XDG_RUNTIME_DIR")
        .map(std::path::PathBuf::from)
        .is_some_and(|d| d.is_dir());
    if valid {
        return;
    }
    let user = std::env::var("USER").unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("wgspmv-runtime-{user}"));
    let made = std::fs::create_dir_all(&dir).is_ok() && {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).is_ok()
        }
        #[cfg(not(unix))]
        true
    };
    if made {
        // Single-threaded here: nothing else reads the environment yet.
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
}
