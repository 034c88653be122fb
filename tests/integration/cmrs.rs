//! CMRS against the f64 reference: every strip height, both row-in-strip layouts, both item
//! orders, the smaller-buffer variant for every buffer width, both lane paths, chunking, and
//! parameter errors.

use crate::common;
use common::*;
use wgspmv::methods::cmrs::CmrsOptions;
use wgspmv::{testing::SuiteClass, CsrMatrix, Error, LanePolicy, Method, PlanOptions};

fn opts(cmrs: CmrsOptions) -> PlanOptions {
    PlanOptions {
        cmrs,
        ..Default::default()
    }
}

/// Empty rows, whole empty strips, a ragged last strip (37 rows), and one row far longer than a team.
fn irregular() -> CsrMatrix<f64> {
    let mut t = Vec::new();
    for r in 0..37usize {
        let len = match r {
            0..=15 => 0,          // a whole empty strip for every height up to 16
            20 => 700,            // far longer than any team
            r if r % 3 == 0 => 0, // scattered empty rows
            r => 1 + r % 5,
        };
        for k in 0..len {
            t.push((r, (r * 31 + k * 7) % 900, 0.5 + ((r + k) % 4) as f64 * 0.25));
        }
    }
    CsrMatrix::from_triplets(37, 900, t).unwrap()
}

#[test]
fn every_height_both_layouts_both_orders() {
    let mats = [
        ("irregular", irregular()),
        ("empty_rows", SuiteClass::EmptyRows.generate(6_000, 2)),
        (
            "single_dense_row",
            SuiteClass::SingleDenseRow.generate(6_000, 3),
        ),
    ];
    for (dev, gpu) in gpus() {
        for (name, a) in &mats {
            for height in 1..=16 {
                for (force_separate_rows, keep_csr_order) in
                    [(false, false), (true, false), (false, true)]
                {
                    let o = opts(CmrsOptions {
                        height: Some(height),
                        force_separate_rows,
                        keep_csr_order,
                        ..Default::default()
                    });
                    let label = format!("{name} / cmrs h{height} separate={force_separate_rows} csr_order={keep_csr_order} / {dev}");
                    check_method(&gpu, &a.cast::<f32>(), Method::Cmrs, &o, &label);
                }
                if has_f64(&gpu) && height % 5 == 1 {
                    check_method(
                        &gpu,
                        a,
                        Method::Cmrs,
                        &opts(CmrsOptions {
                            height: Some(height),
                            ..Default::default()
                        }),
                        &format!("{name} / cmrs f64 h{height} / {dev}"),
                    );
                }
            }
        }
    }
}

#[test]
fn smaller_buffer_variant_every_width() {
    let a = SuiteClass::PowerLaw.generate(8_000, 4);
    let b = irregular();
    let Some(gpu) = gpu() else { return };
    for team in [8u32, 16, 32] {
        for m in [1u32, 2, 4, 8, 16, 32].into_iter().filter(|&m| m <= team) {
            for height in [1, 5, 16] {
                let o = PlanOptions {
                    lanes: LanePolicy::Workgroup,
                    lanes_per_row: Some(team),
                    cmrs: CmrsOptions {
                        height: Some(height),
                        buffer_columns: Some(m),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                check_method(
                    &gpu,
                    &a.cast::<f32>(),
                    Method::CmrsPadded,
                    &o,
                    &format!("power_law / cmrs-padded W{team} M{m} h{height}"),
                );
                check_method(
                    &gpu,
                    &b.cast::<f32>(),
                    Method::CmrsPadded,
                    &o,
                    &format!("irregular / cmrs-padded W{team} M{m} h{height}"),
                );
            }
        }
    }
    // The default (subgroup teams where the subgroup size is fixed), f32 and f64.
    for (dev, gpu) in gpus() {
        check_method(
            &gpu,
            &a.cast::<f32>(),
            Method::CmrsPadded,
            &PlanOptions::default(),
            &format!("cmrs-padded default / {dev}"),
        );
        if has_f64(&gpu) {
            check_method(
                &gpu,
                &a,
                Method::CmrsPadded,
                &PlanOptions::default(),
                &format!("cmrs-padded default f64 / {dev}"),
            );
        }
    }
}

#[test]
fn strip_chunks_under_a_small_binding_limit() {
    let a = SuiteClass::Banded.generate(20_000, 5).cast::<f32>();
    let Some(gpu) = gpu() else { return };
    for (m, force_separate_rows) in [
        (Method::Cmrs, false),
        (Method::Cmrs, true),
        (Method::CmrsPadded, false),
    ] {
        let o = PlanOptions {
            max_chunk_bytes: Some(8 * 1024),
            cmrs: CmrsOptions {
                force_separate_rows,
                ..Default::default()
            },
            ..Default::default()
        };
        let plan = gpu.prepare_with(&a, m, &o).unwrap();
        assert!(plan.dispatches() > 4, "{}", plan.details());
        check_method(
            &gpu,
            &a,
            m,
            &o,
            &format!("{m} chunked separate={force_separate_rows}"),
        );
    }
}

#[test]
fn bad_parameters_are_errors() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::ShortRows.generate(1_000, 1).cast::<f32>();
    for h in [0, 17] {
        let r = gpu.prepare_with(
            &a,
            Method::Cmrs,
            &opts(CmrsOptions {
                height: Some(h),
                ..Default::default()
            }),
        );
        assert!(
            matches!(r, Err(Error::InvalidParameter { name: "height", .. })),
            "height {h}"
        );
    }
    let wide = PlanOptions {
        lanes: LanePolicy::Workgroup,
        lanes_per_row: Some(8),
        cmrs: CmrsOptions {
            buffer_columns: Some(16),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(matches!(
        gpu.prepare_with(&a, Method::CmrsPadded, &wide),
        Err(Error::InvalidParameter { .. })
    ));
    let odd = opts(CmrsOptions {
        buffer_columns: Some(3),
        ..Default::default()
    });
    assert!(matches!(
        gpu.prepare_with(&a, Method::CmrsPadded, &odd),
        Err(Error::InvalidParameter { .. })
    ));
    // A buffer larger than the adapter's workgroup memory: 512 invocations x 16 rows x 8 bytes.
    if has_f64(&gpu) && gpu.info().limits.max_compute_workgroup_storage_size < 512 * 16 * 8 {
        let big = PlanOptions {
            lanes: LanePolicy::Workgroup,
            lanes_per_row: Some(4),
            workgroup_size: Some(512),
            cmrs: CmrsOptions {
                height: Some(16),
                ..Default::default()
            },
            ..Default::default()
        };
        if gpu.info().limits.max_compute_invocations_per_workgroup >= 512 {
            let r = gpu.prepare_with(&a.cast::<f64>(), Method::Cmrs, &big);
            assert!(
                matches!(r, Err(Error::InvalidParameter { name: "height", .. })),
                "{:?}",
                r.err()
            );
        }
    }
}

#[test]
fn default_height_follows_model_and_occupancy() {
    let Some(gpu) = gpu() else { return };
    let info = gpu.info();
    use wgspmv::internals::cmrs::default_height;
    // Short rows want tall strips, long rows short ones (eq. 5.1 with at most 10% waste).
    assert!(default_height(info, 1.0, 4) >= default_height(info, 30.0, 4));
    assert!(default_height(info, 300.0, 4) <= 2);
    for mu in [0.5, 1.0, 4.0, 27.0, 1000.0] {
        let h = default_height(info, mu, 8);
        assert!((1..=16).contains(&h));
    }
}
