//! The speculative segmented sum: every suite class with host finishing (mapped and copied) and
//! GPU finishing, empty rows placed exactly on tile, team and workgroup boundaries, long rows
//! across many teams, tiny matrices, the host stage's report against the structure analysis,
//! repeated products (the dirty counter must be reset between them) and bad options.

use crate::common;

use common::{check_method, gpu, gpu_without_subgroups, gpus, has_f64};
use wgspmv::methods::speculative::{Finish, HostTransfer, SpeculativeOptions};
use wgspmv::{
    testing::SuiteClass, CsrMatrix, Error, Gpu, GpuOptions, GpuVector, LanePolicy, Method,
    PlanOptions,
};

fn opts(finish: Finish, transfer: HostTransfer) -> PlanOptions {
    PlanOptions {
        speculative: SpeculativeOptions {
            finish,
            transfer,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The ways a product can finish: on the host (mapped or copied) or the GPU, with dirty tiles
/// speculated (the host's default) or resolved in the GPU stage (the GPU's default where many
/// tiles are dirty), products loaded per lane or staged.
fn finishes() -> Vec<(&'static str, PlanOptions)> {
    vec![
        ("host, mapped", opts(Finish::Host, HostTransfer::Map)),
        ("host, copied", opts(Finish::Host, HostTransfer::Copy)),
        (
            "host, dirty tiles resolved",
            resolved(opts(Finish::Host, HostTransfer::Auto), true),
        ),
        ("gpu", opts(Finish::Gpu, HostTransfer::Auto)),
        (
            "gpu, dirty tiles resolved",
            resolved(opts(Finish::Gpu, HostTransfer::Auto), true),
        ),
        (
            "gpu, dirty tiles speculated",
            resolved(opts(Finish::Gpu, HostTransfer::Auto), false),
        ),
        (
            "gpu, tile rows searched",
            searched(opts(Finish::Gpu, HostTransfer::Auto)),
        ),
        (
            "gpu, products staged, dirty tiles resolved",
            resolved(staged(opts(Finish::Gpu, HostTransfer::Auto)), true),
        ),
        (
            "host, products staged",
            staged(opts(Finish::Host, HostTransfer::Auto)),
        ),
    ]
}

/// Products staged in workgroup memory (the paper's way; the default loads them per lane).
fn staged(mut o: PlanOptions) -> PlanOptions {
    o.speculative.staged_products = Some(true);
    o
}

/// The paper's binary search for tile boundaries instead of the plan's precomputed rows.
fn searched(mut o: PlanOptions) -> PlanOptions {
    o.speculative.precomputed_tile_rows = Some(false);
    o
}

fn resolved(mut o: PlanOptions, resolve: bool) -> PlanOptions {
    o.speculative.resolve_dirty_tiles = Some(resolve);
    o
}

/// A tiny geometry on the workgroup path: tiles of 4 lanes x 2 nonzeros, 2 tiles per team, 16
/// teams per workgroup. So tiles are 8 nonzeros, teams 16, workgroups 256.
fn tiny_geometry(finish: Finish) -> PlanOptions {
    PlanOptions {
        lanes: LanePolicy::Workgroup,
        lanes_per_row: Some(4),
        workgroup_size: Some(64),
        speculative: SpeculativeOptions {
            work_per_lane: Some(2),
            tiles_per_team: Some(2),
            finish,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn rows(lens: &[usize]) -> CsrMatrix<f64> {
    common::rows_of_lengths(lens, 700)
}

fn check_everywhere(a: &CsrMatrix<f64>, label: &str) {
    for (dev, gpu) in gpus() {
        for (how, o) in finishes() {
            check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Speculative,
                &o,
                &format!("{label} / f32 / {how} / {dev}"),
            );
            if has_f64(&gpu) {
                check_method(
                    &gpu,
                    a,
                    Method::Speculative,
                    &o,
                    &format!("{label} / f64 / {how} / {dev}"),
                );
            }
        }
        for finish in [Finish::Host, Finish::Gpu] {
            check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Speculative,
                &tiny_geometry(finish),
                &format!("{label} / tiny tiles / {finish:?} / {dev}"),
            );
            let o = searched(tiny_geometry(finish));
            check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Speculative,
                &o,
                &format!("{label} / tiny tiles, rows searched / {finish:?} / {dev}"),
            );
            let o = staged(tiny_geometry(finish));
            check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Speculative,
                &o,
                &format!("{label} / tiny tiles, products staged / {finish:?} / {dev}"),
            );
            // Lanes of 8 nonzeros read two quads each (W = 2 above reads scalars).
            let mut o = tiny_geometry(finish);
            o.speculative.work_per_lane = Some(8);
            check_method(
                &gpu,
                &a.cast::<f32>(),
                Method::Speculative,
                &o,
                &format!("{label} / tiny teams, two quads per lane / {finish:?} / {dev}"),
            );
        }
    }
}

#[test]
fn every_suite_class_every_finish() {
    for class in SuiteClass::ALL {
        check_everywhere(&class.generate(6_000, 21), class.name());
    }
}

#[test]
fn empty_rows_on_tile_team_and_workgroup_boundaries() {
    // With the tiny geometry, rows of 8 end exactly on tile boundaries, of 16 on team
    // boundaries, and 16 rows of 16 on a workgroup boundary.
    let mut lens = vec![0, 0, 8, 0, 8, 0, 0, 16, 0, 3, 5, 0, 8];
    lens.extend(std::iter::repeat_n(16, 16));
    lens.extend([0, 0, 0, 1, 7, 0, 16, 0, 256, 0, 2, 0, 0]);
    check_everywhere(&rows(&lens), "empty rows on boundaries");
    // Many empty rows: more than a tile's worth between two nonzeros.
    let mut lens = vec![1; 50];
    lens.extend(std::iter::repeat_n(0, 3000));
    lens.extend([9, 0, 0, 1]);
    lens.extend(std::iter::repeat_n(0, 500));
    check_everywhere(&rows(&lens), "long runs of empty rows");
}

#[test]
fn rows_across_many_tiles_teams_and_workgroups() {
    let mut lens = vec![3, 0, 1];
    lens.push(5000); // wraps onto 700 columns: 700 nonzeros, dozens of tiny-geometry teams
    lens.extend([0, 2, 600, 0]);
    check_everywhere(&rows(&lens), "long rows");
    check_everywhere(&rows(&[4096]), "a single row");
    // With the tiny geometry over a thousand teams: the GPU finishing pass sums the run with
    // several loads in flight per invocation.
    check_everywhere(
        &common::rows_of_lengths(&[3, 20_000, 1], 30_000),
        "a row across over a thousand teams",
    );
}

#[test]
fn tiny_and_ragged_matrices() {
    check_everywhere(&rows(&[]), "no rows");
    check_everywhere(&rows(&[0, 0, 0]), "all rows empty");
    check_everywhere(&rows(&[1]), "one nonzero");
    check_everywhere(&rows(&[2, 0, 1]), "smaller than a tile");
    check_everywhere(&rows(&[1; 77]), "nnz not a multiple of a tile, rows of one");
    check_everywhere(&CsrMatrix::zeros(5, 0).unwrap(), "no columns");
}

#[test]
fn host_stage_reports_the_dirty_tiles_the_structure_predicts() {
    let Some(gpu) = gpu() else { return };
    for class in [
        SuiteClass::EmptyRows,
        SuiteClass::Banded,
        SuiteClass::PowerLaw,
    ] {
        let a = class.generate(20_000, 4).cast::<f32>();
        let plan = gpu
            .prepare_with(
                &a,
                Method::Speculative,
                &opts(Finish::Host, HostTransfer::Auto),
            )
            .unwrap();
        let x = GpuVector::filled(&gpu, a.ncols(), 1.0f32).unwrap();
        let mut y = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
        plan.run(&x, &mut y).unwrap();
        let r = plan.speculation().unwrap();
        let run = r
            .last_host_run
            .expect("a host-finished product reports its host stage");
        let s = &r.speculation;
        assert_eq!(
            run.dirty_records,
            s.dirty_tiles + (s.leading_empty_rows > 0) as u64,
            "{}",
            class.name()
        );
        assert_eq!(
            run.synchronized_rows > 0,
            s.synchronized > 0,
            "{}",
            class.name()
        );
        match class {
            SuiteClass::EmptyRows => assert!(s.hit_rate() < 1.0 && run.dirty_records > 0),
            _ => assert_eq!(s.dirty_tiles, 0, "{} has no empty rows", class.name()),
        }
        assert!(r.finish_on_host && plan.finishes_on_host());
    }
    // Resolving dirty tiles in the GPU stage leaves the host only the leading empty rows.
    let mut lens = vec![0, 0, 0];
    let g = SuiteClass::EmptyRows.generate(20_000, 4);
    lens.extend(g.row_ptr().windows(2).map(|w| (w[1] - w[0]) as usize));
    let a = rows(&lens).cast::<f32>();
    let plan = gpu
        .prepare_with(
            &a,
            Method::Speculative,
            &resolved(opts(Finish::Host, HostTransfer::Auto), true),
        )
        .unwrap();
    let x = GpuVector::filled(&gpu, a.ncols(), 1.0f32).unwrap();
    let mut y = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
    plan.run(&x, &mut y).unwrap();
    let r = plan.speculation().unwrap();
    assert!(
        r.dirty_tiles_resolved
            && r.speculation.dirty_tiles > 0
            && r.speculation.leading_empty_rows == 3
    );
    assert_eq!(r.last_host_run.unwrap().dirty_records, 1);
    // Finishing on the GPU, dirty tiles are resolved by default only where many tiles are dirty.
    for (class, resolves) in [(SuiteClass::Banded, false), (SuiteClass::EmptyRows, true)] {
        let plan = gpu
            .prepare_with(
                &class.generate(20_000, 1).cast::<f32>(),
                Method::Speculative,
                &opts(Finish::Gpu, HostTransfer::Auto),
            )
            .unwrap();
        let r = plan.speculation().unwrap();
        assert!(!plan.finishes_on_host() && r.last_host_run.is_none());
        assert_eq!(r.dirty_tiles_resolved, resolves, "{}", class.name());
    }
}

/// Products back to back must each find the dirty counter reset: run many, in one encoder and
/// one at a time, and require the same bits every time (a race shows up as a changing result).
#[test]
fn repeated_products_give_identical_results() {
    for (dev, gpu) in gpus() {
        let a = SuiteClass::EmptyRows.generate(30_000, 8).cast::<f32>();
        let x: Vec<f32> = wgspmv::testing::suite::random_vector(a.ncols(), 2)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let gx = GpuVector::from_slice(&gpu, &x).unwrap();
        for (how, o) in finishes() {
            let plan = gpu.prepare_with(&a, Method::Speculative, &o).unwrap();
            let mut y = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
            plan.run(&gx, &mut y).unwrap();
            let first = y.read().unwrap();
            let want = wgspmv::reference::spmv_par(&a, &x).unwrap();
            assert!(
                wgspmv::reference::check(1.0, &a, &x, 0.0, None, &first, &want).ok,
                "{how} / {dev}"
            );
            for i in 0..8 {
                y.fill(f32::NAN).unwrap();
                plan.run(&gx, &mut y).unwrap();
                assert_eq!(
                    bits(&y.read().unwrap()),
                    bits(&first),
                    "{how} / {dev}: run {i} differs"
                );
            }
            // Recorded products always finish on the GPU, whatever `run` does.
            let mut ys: Vec<GpuVector<f32>> = (0..6)
                .map(|_| GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap())
                .collect();
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            for y in &mut ys {
                plan.record(&mut enc, &gx, y).unwrap();
            }
            gpu.queue().submit([enc.finish()]);
            for (i, y) in ys.iter().enumerate() {
                assert_eq!(
                    bits(&y.read().unwrap()),
                    bits(&first),
                    "{how} / {dev}: recorded product {i} differs"
                );
            }
        }
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

#[test]
fn bad_options_are_clear_errors() {
    let Some(gpu) = gpu() else { return };
    let a = rows(&[3, 0, 2]).cast::<f32>();
    let with = |s: SpeculativeOptions| {
        gpu.prepare_with(
            &a,
            Method::Speculative,
            &PlanOptions {
                speculative: s,
                ..Default::default()
            },
        )
    };
    assert!(matches!(
        with(SpeculativeOptions {
            work_per_lane: Some(3),
            ..Default::default()
        }),
        Err(Error::InvalidParameter {
            name: "work_per_lane",
            ..
        })
    ));
    assert!(matches!(
        with(SpeculativeOptions {
            work_per_lane: Some(64),
            ..Default::default()
        }),
        Err(Error::InvalidParameter {
            name: "work_per_lane",
            ..
        })
    ));
    // W = 32 only staged: a lane keeps at most 16 products it loads itself.
    assert!(matches!(
        with(SpeculativeOptions {
            work_per_lane: Some(32),
            staged_products: Some(false),
            ..Default::default()
        }),
        Err(Error::InvalidParameter {
            name: "work_per_lane",
            ..
        })
    ));
    assert!(matches!(
        with(SpeculativeOptions {
            tiles_per_team: Some(0),
            ..Default::default()
        }),
        Err(Error::InvalidParameter {
            name: "tiles_per_team",
            ..
        })
    ));
    // W = 16 on 512 invocations: the row-end cells alone would take 64 KiB of workgroup memory.
    let big = SpeculativeOptions {
        work_per_lane: Some(16),
        resolve_dirty_tiles: Some(true),
        ..Default::default()
    };
    let o = PlanOptions {
        speculative: big,
        workgroup_size: Some(512),
        ..Default::default()
    };
    assert!(matches!(
        gpu.prepare_with(&a, Method::Speculative, &o),
        Err(Error::InvalidParameter {
            name: "resolve_dirty_tiles",
            ..
        })
    ));
    let Some(nosg) = gpu_without_subgroups() else {
        return;
    };
    let sg = PlanOptions {
        lanes: LanePolicy::Subgroup,
        ..Default::default()
    };
    assert!(matches!(
        nosg.prepare_with(&a, Method::Speculative, &sg),
        Err(Error::MissingFeature {
            feature: "SUBGROUP",
            ..
        })
    ));
    // Mapping in place needs MAPPABLE_PRIMARY_BUFFERS; without it the default copies.
    let plain = pollster::block_on(Gpu::with_options(GpuOptions {
        disabled_features: wgpu::Features::MAPPABLE_PRIMARY_BUFFERS,
        ..Default::default()
    }))
    .unwrap();
    let map = opts(Finish::Host, HostTransfer::Map);
    assert!(matches!(
        plain.prepare_with(&a, Method::Speculative, &map),
        Err(Error::MissingFeature {
            feature: "MAPPABLE_PRIMARY_BUFFERS",
            ..
        })
    ));
    check_method(
        &plain,
        &rows(&[5, 0, 0, 9, 1, 0]).cast::<f32>(),
        Method::Speculative,
        &opts(Finish::Host, HostTransfer::Auto),
        "host finishing without mappable buffers",
    );
}
