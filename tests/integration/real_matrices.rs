//! The real matrices in ../shared/matrices (SuiteSparse, NetworKit, HiGHS, PyAMG, Debian), every
//! method, f32 and f64, with and without subgroups. Where the folder is absent (as beside a fresh
//! clone) the test is built `#[ignore]`d, so the summary counts it as ignored, with the reason.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use wgspmv::methods::speculative::{Finish, SpeculativeOptions};
use wgspmv::{matrix::io, CsrMatrix, Error, Method, PlanOptions};

fn matrix_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            matrix_files(&p, out);
        } else if p.to_string_lossy().ends_with(".mtx") || p.to_string_lossy().ends_with(".mtx.gz")
        {
            out.push(p);
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_matrices),
    ignore = "no ../shared/matrices beside this checkout (build.rs looks for it)"
)]
fn real_matrices_all_methods() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/matrices");
    let mut files = Vec::new();
    matrix_files(&dir, &mut files);
    assert!(
        !files.is_empty(),
        "no .mtx files under {} (the folder is there)",
        dir.display()
    );
    files.sort();
    let (mut checked, mut refused) = (0, 0);
    for f in &files {
        let a: CsrMatrix<f64> = match io::read_matrix_market(f) {
            Ok(a) => a,
            Err(Error::UnsupportedMatrixMarket { .. }) => {
                refused += 1;
                continue;
            }
            Err(e) => panic!("{}: {e}", f.display()),
        };
        // Pattern files read as all ones; give them values that are not (a kernel that ignores
        // values must not pass).
        let a = if a.values().iter().all(|&v| v == 1.0) {
            a.with_values(wgspmv::testing::suite::random_vector(a.nnz(), 5))
                .unwrap()
        } else {
            a
        };
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        check_all_methods(&a, &name);
        // `speculative` finishes on the host on this adapter by default; the GPU pass too, with dirty
        // tiles speculated or resolved in the GPU stage.
        if let Some(gpu) = common::gpu() {
            let o = PlanOptions {
                speculative: SpeculativeOptions {
                    finish: Finish::Gpu,
                    ..Default::default()
                },
                ..Default::default()
            };
            common::check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Speculative,
                &o,
                &format!("{name} / speculative / gpu finishing"),
            );
            let o = PlanOptions {
                speculative: SpeculativeOptions {
                    finish: Finish::Gpu,
                    resolve_dirty_tiles: Some(true),
                    ..Default::default()
                },
                ..Default::default()
            };
            common::check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Speculative,
                &o,
                &format!("{name} / speculative / gpu finishing, dirty tiles resolved"),
            );
        }
        checked += 1;
    }
    eprintln!(
        "{checked} real matrices checked, {refused} refused as unsupported (complex/hermitian)"
    );
    assert!(checked > 0);
}
