//! Rows far longer than one invocation may loop over: Mesa's llvmpipe (lavapipe) stops any loop
//! of an invocation after 65 535 iterations in all, so no kernel may let one invocation's work
//! grow with a row's length. Checked with exact oracles (small integers, whose f32 sums are
//! exact), so that a single lost entry fails.

use crate::common;
use common::*;
use wgspmv::{reference, CsrMatrix, GpuVector, LanePolicy, Method, PlanOptions, Scalar};

/// 40 rows: row 3 holds `n` entries, row 17 `n / 2 + 1`, the others 0 to 4 (a few empty), all
/// values and `x` small integers.
fn long_row_matrix(n: usize) -> (CsrMatrix<f64>, Vec<f64>) {
    let ncols = n.max(64);
    let mut t = Vec::new();
    for c in 0..n {
        t.push((3, c, 1.0 + (c % 2) as f64));
    }
    for c in 0..n / 2 + 1 {
        t.push((17, (c * 7) % ncols, 1.0));
    }
    for r in (0..40).filter(|&r| r != 3 && r != 17) {
        for k in 0..r % 5 {
            t.push((r, (r * 13 + k * 101) % ncols, (1 + (r + k) % 3) as f64));
        }
    }
    let a = CsrMatrix::from_triplets(40, ncols, t).unwrap();
    let x = (0..ncols)
        .map(|c| if c % 3 == 0 { 2.0 } else { 1.0 })
        .collect();
    (a, x)
}

fn exact_check<T: Scalar>(
    gpu: &wgspmv::Gpu,
    a: &CsrMatrix<T>,
    x: &[T],
    method: Method,
    opts: &PlanOptions,
    label: &str,
) {
    let plan = gpu
        .prepare_with(a, method, opts)
        .unwrap_or_else(|e| panic!("{label}: prepare failed: {e}"));
    let gx = GpuVector::from_slice(gpu, x).unwrap();
    let mut gy = GpuVector::filled(gpu, a.nrows(), T::NAN).unwrap();
    plan.run(&gx, &mut gy).unwrap();
    let y = gy.read().unwrap();
    let want = reference::spmv_seq(a, x).unwrap();
    for (r, (&got, &w)) in y.iter().zip(&want).enumerate() {
        assert!(
            got.to_f64() == w,
            "{label} [{}]: row {r} (length {}) is {} instead of {w}",
            plan.details(),
            a.row_len(r),
            got.to_f64()
        );
    }
}

fn run_lengths(lengths: &[usize], f64_too: bool) {
    for &n in lengths {
        let (a, x) = long_row_matrix(n);
        for (dev, gpu) in gpus() {
            for &m in Method::ALL.iter().chain([&Method::Auto]) {
                let a32 = a.cast::<f32>();
                let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                exact_check(
                    &gpu,
                    &a32,
                    &x32,
                    m,
                    &PlanOptions::default(),
                    &format!("row of {n} / {m} / f32 / {dev}"),
                );
                if f64_too && has_f64(&gpu) {
                    exact_check(
                        &gpu,
                        &a,
                        &x,
                        m,
                        &PlanOptions::default(),
                        &format!("row of {n} / {m} / f64 / {dev}"),
                    );
                }
            }
        }
    }
}

#[test]
fn rows_around_the_loop_cap() {
    run_lengths(&[65_535, 65_536], true);
}

/// `csr-stream`'s long rows (over a quarter tile: 512 entries in f32, 256 in f64) summed by
/// their tile's workgroup up to 4 096 entries (256 invocations × 16), by the passes beyond.
#[test]
fn rows_around_csr_streams_in_tile_bound() {
    run_lengths(&[300, 1_100, 4_096, 4_097], true);
}

#[test]
fn rows_beyond_eight_lanes_of_the_loop_cap() {
    run_lengths(&[524_281], false);
}

#[test]
fn row_of_two_million() {
    run_lengths(&[2_000_000], true);
}

/// CMRS at every strip height and the padded variant, whose strips hold other rows beside the
/// long one; the workgroup-memory team widths of csr-vector.
#[test]
fn strips_and_team_widths_with_a_long_row() {
    let (a, x) = long_row_matrix(600_000);
    let (a, x): (CsrMatrix<f32>, Vec<f32>) = (a.cast(), x.iter().map(|&v| v as f32).collect());
    for (dev, gpu) in gpus() {
        for h in [2, 3, 8, 16] {
            let mut o = PlanOptions::default();
            o.cmrs.height = Some(h);
            exact_check(
                &gpu,
                &a,
                &x,
                Method::Cmrs,
                &o,
                &format!("cmrs height {h} / {dev}"),
            );
            exact_check(
                &gpu,
                &a,
                &x,
                Method::CmrsPadded,
                &o,
                &format!("cmrs-padded height {h} / {dev}"),
            );
        }
        for lanes in [4, 32, 128] {
            let o = PlanOptions {
                lanes: LanePolicy::Workgroup,
                lanes_per_row: Some(lanes),
                ..Default::default()
            };
            exact_check(
                &gpu,
                &a,
                &x,
                Method::CsrVector,
                &o,
                &format!("csr-vector {lanes} lanes / {dev}"),
            );
        }
        // Row chunks that split the matrix around the long rows.
        let o = PlanOptions {
            max_chunk_bytes: Some(4 << 20),
            ..Default::default()
        };
        for m in [Method::CsrScalar, Method::CsrVector, Method::Cmrs] {
            exact_check(&gpu, &a, &x, m, &o, &format!("{m} in 4 MiB chunks / {dev}"));
        }
    }
}
