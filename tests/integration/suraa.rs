//! SURAA: every suite class with the setup on the host and on the GPU, the GPU setup against its
//! CPU twin (same permutation, same schedule), equal row lengths (IQR = 0), a huge row among
//! short ones (the dynamic kernel spread over hundreds of workgroups), many empty rows, empty
//! groups, fewer rows than a segment, a small G1 budget, narrow geometries and bad options.

use crate::common;

use common::{check_method, gpus, has_f64};
use wgspmv::internals::suraa::{gpu_setup, setup};
use wgspmv::methods::suraa::{ScalarWrites, SetupOn, SuraaOptions};
use wgspmv::{testing::SuiteClass, CsrMatrix, Error, LanePolicy, Method, PlanOptions};

fn opts(setup: SetupOn) -> PlanOptions {
    PlanOptions {
        suraa: SuraaOptions {
            setup,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Small geometry on the workgroup path: base width 4 in workgroups of 64 (classes 4..64 lanes),
/// dynamic workgroups of 64 nonzeros, a G1 budget of 40 rows, low thresholds so all groups fill,
/// and a scalar kernel staging 64 products per round (so rows straddle rounds).
fn small(setup: SetupOn) -> PlanOptions {
    PlanOptions {
        lanes: LanePolicy::Workgroup,
        lanes_per_row: Some(4),
        workgroup_size: Some(64),
        suraa: SuraaOptions {
            setup,
            max_child: Some(40),
            dynamic_min_mean: Some(8),
            vector_min_mean: Some(4),
            dynamic_items: Some(1),
            scalar_stage: Some(1),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn rows(lens: &[usize], ncols: usize) -> CsrMatrix<f64> {
    common::rows_of_lengths(lens, ncols)
}

fn check_everywhere(a: &CsrMatrix<f64>, label: &str) {
    for (dev, gpu) in gpus() {
        for on in [SetupOn::Host, SetupOn::Gpu] {
            check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Suraa,
                &opts(on),
                &format!("{label} / f32 / {on:?} setup / {dev}"),
            );
            if has_f64(&gpu) {
                // Staged G3 rows written straight through the permutation.
                let mut scatter = opts(on);
                scatter.suraa.scalar_writes = ScalarWrites::Scatter;
                check_method(
                    &gpu,
                    a,
                    Method::Suraa,
                    &opts(on),
                    &format!("{label} / f64 / {on:?} setup / {dev}"),
                );
                check_method(
                    &gpu,
                    a,
                    Method::Suraa,
                    &scatter,
                    &format!("{label} / f64 / scattered writes / {on:?} setup / {dev}"),
                );
            }
            check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Suraa,
                &small(on),
                &format!("{label} / small geometry / {on:?} setup / {dev}"),
            );
            // The paper's scalar kernel: rows read directly, y written through the permutation.
            let mut direct = opts(on);
            direct.suraa.scalar_stage = Some(0);
            direct.suraa.scalar_writes = ScalarWrites::Scatter;
            check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Suraa,
                &direct,
                &format!("{label} / f32 / paper's scalar kernel / {on:?} setup / {dev}"),
            );
        }
    }
}

#[test]
fn every_suite_class_both_setups() {
    for class in SuiteClass::ALL {
        check_everywhere(&class.generate(20_000, 5), class.name());
    }
}

#[test]
fn equal_row_lengths() {
    // IQR = 0 and range 0: one segment. Rows of 40 go to the vector kernel, rows of 3 to scalar.
    check_everywhere(&rows(&vec![40; 700], 900), "all rows of 40");
    check_everywhere(&rows(&vec![3; 5000], 900), "all rows of 3");
}

#[test]
fn huge_row_among_short_ones() {
    // IQR = 0 with one outlier (Sturges' bins, segments capped by the G1 budget); the long row
    // spans hundreds of dynamic workgroups of the small geometry.
    let mut lens = vec![2; 3000];
    lens[1234] = 60_000;
    lens[17] = 700;
    check_everywhere(&rows(&lens, 70_000), "one huge row");
}

#[test]
fn many_empty_rows_and_empty_groups() {
    let mut lens = vec![0; 4000];
    for i in (0..4000).step_by(97) {
        lens[i] = 1 + i % 300;
    }
    check_everywhere(&rows(&lens, 1000), "many empty rows");
    check_everywhere(&rows(&vec![0; 300], 10), "all rows empty");
    // No G1 (budget 0): the long rows run on the vector kernel's widest class.
    for (dev, gpu) in gpus() {
        let o = PlanOptions {
            suraa: SuraaOptions {
                max_child: Some(0),
                ..Default::default()
            },
            ..Default::default()
        };
        check_method(
            &gpu,
            &rows(&[5000, 1, 0, 300, 2], 6000).cast::<f32>(),
            Method::Suraa,
            &o,
            &format!("no G1 / {dev}"),
        );
    }
}

#[test]
fn fewer_rows_than_a_segment_and_tiny_matrices() {
    for lens in [
        vec![1usize],
        vec![0],
        vec![9000, 3],
        vec![5, 0, 70, 3, 1, 100, 0],
    ] {
        check_everywhere(&rows(&lens, 9100), &format!("rows {lens:?}"));
    }
    for (dev, gpu) in gpus() {
        for on in [SetupOn::Host, SetupOn::Gpu] {
            check_method(
                &gpu,
                &CsrMatrix::<f32>::zeros(0, 5).unwrap(),
                Method::Suraa,
                &opts(on),
                &format!("0 rows / {dev}"),
            );
            check_method(
                &gpu,
                &CsrMatrix::<f32>::zeros(4, 0).unwrap(),
                Method::Suraa,
                &opts(on),
                &format!("0 columns / {dev}"),
            );
        }
    }
}

/// The GPU setup computes exactly what the host setup does.
#[test]
fn gpu_setup_matches_its_cpu_twin() {
    let mut cases: Vec<(String, CsrMatrix<f64>)> = SuiteClass::ALL
        .iter()
        .map(|c| (c.name().to_owned(), c.generate(30_000, 9)))
        .collect();
    let mut lens = vec![2; 5000];
    lens[77] = 40_000;
    cases.push(("one huge row".into(), rows(&lens, 50_000)));
    cases.push(("all empty".into(), rows(&[0; 1000], 4)));
    for (dev, gpu) in gpus() {
        for (name, a) in &cases {
            for o in [opts(SetupOn::Gpu), small(SetupOn::Gpu)] {
                let plan = gpu
                    .prepare_with(&a.cast::<f32>(), Method::Suraa, &o)
                    .unwrap();
                let r = plan.suraa().unwrap();
                let twin = setup::setup(a.row_ptr(), a.col_idx(), &r.params);
                let d = gpu_setup::read_back(&plan).unwrap();
                assert_eq!(d.perm, twin.perm, "{name} / {dev}: permutation");
                assert_eq!(
                    d.dynamic_ptr, twin.dynamic_ptr,
                    "{name} / {dev}: dynamic plan"
                );
                assert_eq!(d.schedule, twin.schedule, "{name} / {dev}: schedule");
                assert_eq!(
                    d.row_ptr, twin.row_ptr,
                    "{name} / {dev}: sorted row pointers"
                );
                let a32 = a.cast::<f32>();
                let (cols, vals) =
                    setup::rearrange(a32.row_ptr(), a32.col_idx(), a32.values(), &twin);
                assert_eq!(d.col_idx, cols, "{name} / {dev}: rearranged columns");
                assert_eq!(d.vals, vals, "{name} / {dev}: rearranged values");
                let sources = setup::sources_from_sorted(&twin.perm, &twin.row_ptr).unwrap();
                assert_eq!(
                    gpu_setup::value_sources_of(&plan).unwrap(),
                    sources,
                    "{name} / {dev}: value-update map"
                );
                assert_eq!(
                    r.schedule, twin.schedule,
                    "{name} / {dev}: reported schedule"
                );
            }
        }
    }
}

#[test]
fn bad_options_are_errors() {
    let Some(gpu) = common::gpu() else { return };
    let a = rows(&[3, 4, 5], 10).cast::<f32>();
    let o = PlanOptions {
        suraa: SuraaOptions {
            dynamic_items: Some(3),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(matches!(
        gpu.prepare_with(&a, Method::Suraa, &o),
        Err(Error::InvalidParameter {
            name: "suraa.dynamic_items",
            ..
        })
    ));
    let o = PlanOptions {
        workgroup_size: Some(100),
        ..Default::default()
    };
    assert!(matches!(
        gpu.prepare_with(&a, Method::Suraa, &o),
        Err(Error::InvalidParameter {
            name: "workgroup_size",
            ..
        })
    ));
    let o = PlanOptions {
        suraa: SuraaOptions {
            scalar_stage: Some(3),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(matches!(
        gpu.prepare_with(&a, Method::Suraa, &o),
        Err(Error::InvalidParameter {
            name: "suraa.scalar_stage",
            ..
        })
    ));
}
