//! BCCOO and BCCOO+: every suite class with single-pass and two-pass carries, every block size and
//! column coding, both strategies, rows across dozens of workgroups (repeated, to catch races),
//! empty rows on tile and workgroup boundaries, carries finished by the last workgroup, tuning and
//! bad options.

use crate::common;

use common::{check_method, gpu, gpus, has_f64};
use wgspmv::methods::bccoo::{BccooOptions, Carry, ColumnCoding, Strategy};
use wgspmv::{testing::SuiteClass, BuildOn, CsrMatrix, Error, GpuVector, Method, PlanOptions};

const METHODS: [Method; 2] = [Method::Bccoo, Method::BccooPlus];

/// Small tiles and workgroups (4 blocks x 64 invocations = 256 blocks a workgroup), so that
/// modest matrices cross many workgroups.
fn small(carry: Carry) -> PlanOptions {
    PlanOptions {
        workgroup_size: Some(64),
        bccoo: BccooOptions {
            tile: Some(4),
            carry,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn with(o: BccooOptions) -> PlanOptions {
    PlanOptions {
        workgroup_size: Some(64),
        bccoo: o,
        ..Default::default()
    }
}

fn rows(lens: &[usize]) -> CsrMatrix<f64> {
    common::rows_of_lengths(lens, 3000)
}

/// The carry paths `gpu` offers: single pass is refused on GL (a typed error, tested below), so
/// there it is skipped, visibly.
fn carries(gpu: &wgspmv::Gpu) -> Vec<Carry> {
    if single_pass_offered(gpu) {
        vec![Carry::SinglePass, Carry::TwoPass]
    } else {
        eprintln!(
            "SKIPPED: Carry::SinglePass on {} (refused there)",
            gpu.info().name
        );
        vec![Carry::TwoPass]
    }
}

fn single_pass_offered(gpu: &wgspmv::Gpu) -> bool {
    gpu.info().backend != wgpu::Backend::Gl
}

#[test]
fn single_pass_forced_on_gl_is_a_typed_refusal() {
    for (dev, gpu) in gpus() {
        let a = rows(&[3, 0, 5000, 1]).cast::<f32>();
        let r = gpu.prepare_with(&a, Method::Bccoo, &small(Carry::SinglePass));
        if single_pass_offered(&gpu) {
            assert!(r.is_ok(), "{dev}: {:?}", r.err());
        } else {
            assert!(
                matches!(r, Err(wgspmv::Error::Unsupported { .. })),
                "{dev}: {:?}",
                r.err()
            );
        }
    }
}

/// Both methods, both carry paths, f32 and f64, with and without subgroups.
fn check_everywhere(a: &CsrMatrix<f64>, label: &str) {
    for (dev, gpu) in gpus() {
        for m in METHODS {
            for carry in carries(&gpu) {
                let o = small(carry);
                check_method(
                    &gpu,
                    &a.cast::<f32>(),
                    m,
                    &o,
                    &format!("{label} / {m} / {carry:?} / f32 / {dev}"),
                );
                if has_f64(&gpu) {
                    check_method(
                        &gpu,
                        a,
                        m,
                        &o,
                        &format!("{label} / {m} / {carry:?} / f64 / {dev}"),
                    );
                }
            }
        }
    }
}

#[test]
fn every_suite_class_both_carries() {
    for class in SuiteClass::ALL {
        check_everywhere(&class.generate(5_000, 17), class.name());
    }
}

#[test]
fn every_block_size_coding_and_strategy() {
    let Some(gpu) = gpu() else { return };
    // Empty rows (leading, inner, trailing), rows of one, a row across several workgroups, a
    // ragged tail that is no multiple of any block height, columns past 65 536 for the escapes.
    let mut lens = vec![0, 0, 1, 3, 0, 700, 1, 1, 0, 0, 0, 2];
    lens.extend((0..301).map(|i| [0, 1, 5, 9, 2][i % 5]));
    lens.push(1500);
    lens.extend([0, 1, 0]);
    let a = common::rows_of_lengths(&lens, 100_003);
    let narrow = common::rows_of_lengths(&lens, 3000);
    for h in [1, 2, 3, 4] {
        for w in [1, 2, 4] {
            for (columns, m) in [
                (ColumnCoding::U32, &a),
                (ColumnCoding::Delta16, &a),
                (ColumnCoding::U16, &narrow),
            ] {
                for strategy in [Strategy::PerThread, Strategy::ResultCache] {
                    let o = BccooOptions {
                        block_height: Some(h),
                        block_width: Some(w),
                        tile: Some(8),
                        columns,
                        strategy,
                        ..Default::default()
                    };
                    let label = format!("{h}x{w} / {columns:?} / {strategy:?}");
                    check_method(
                        &gpu,
                        &m.cast::<f32>(),
                        Method::Bccoo,
                        &with(o.clone()),
                        &label,
                    );
                    check_method(
                        &gpu,
                        &m.cast::<f32>(),
                        Method::BccooPlus,
                        &with(BccooOptions {
                            slices: Some(4),
                            ..o.clone()
                        }),
                        &format!("{label} / 4 slices"),
                    );
                }
                // `bccoo` runs BCCOO+ when given slices (its tuning may choose them).
                let o = BccooOptions {
                    block_height: Some(h),
                    block_width: Some(w),
                    tile: Some(8),
                    columns,
                    slices: Some(2),
                    ..Default::default()
                };
                check_method(
                    &gpu,
                    &m.cast::<f32>(),
                    Method::Bccoo,
                    &with(o),
                    &format!("{h}x{w} / {columns:?} / bccoo with 2 slices"),
                );
            }
        }
    }
}

#[test]
fn per_thread_writes_declare_no_result_cache() {
    // The per-thread kernel once declared the result cache anyway (two rows per invocation, which
    // the library's count left out): at 4-row f64 blocks and 512 invocations that put it over
    // NVIDIA's 48 KiB, and the driver faulted instead of running or refusing it. On a device
    // with 24 KiB of workgroup memory, every per-thread layout at 512 invocations fits (the scan
    // needs at most about 22 KiB, with workgroup lanes) and runs; with the cache declared, none
    // of the 4-row ones would.
    let Some(gpu) = gpu() else { return };
    let limit = 24 << 10;
    let Some(small) = common::reopened(&gpu, |a| wgpu::Limits {
        max_compute_workgroup_storage_size: limit,
        ..wgspmv::Gpu::wanted_limits(a)
    }) else {
        return;
    };
    if small.info().limits.max_compute_invocations_per_workgroup < 512 {
        return;
    }
    assert_eq!(
        small.info().limits.max_compute_workgroup_storage_size,
        limit
    );
    let mut lens = vec![0, 3, 1, 0, 2000, 1];
    lens.extend((0..900).map(|i| [0, 1, 5, 9, 2][i % 5]));
    let a = common::rows_of_lengths(&lens, 5000);
    for h in [1, 2, 3, 4] {
        for w in [1, 4] {
            let opts = PlanOptions {
                workgroup_size: Some(512),
                ..with(BccooOptions {
                    block_height: Some(h),
                    block_width: Some(w),
                    tile: Some(4),
                    strategy: Strategy::PerThread,
                    ..Default::default()
                })
            };
            let label = format!("{h}x{w} per-thread, 512 invocations, {limit} bytes");
            check_method(&small, &a.cast::<f32>(), Method::Bccoo, &opts, &label);
            if has_f64(&small) {
                check_method(&small, &a, Method::Bccoo, &opts, &format!("f64 {label}"));
            }
        }
    }
}

#[test]
fn default_strategy_follows_the_block_row_length() {
    let Some(gpu) = gpu() else { return };
    // Scattered columns (1x1 blocks). Rows of 40 blocks: a thread tile (16) completes at most
    // one, so rows are written per thread. Rows of 3: several per tile, through the cache.
    for (len, want) in [(40, Strategy::PerThread), (3, Strategy::ResultCache)] {
        let mut lens = vec![len; 3000];
        lens[7] = 0;
        lens[2000] = 900;
        let a = common::rows_of_lengths(&lens, 50_000).cast::<f32>();
        for method in [Method::Bccoo, Method::BccooPlus] {
            let label = format!("{method}, rows of {len}");
            let plan = gpu.prepare(&a, method).unwrap();
            let r = plan.bccoo().unwrap();
            assert_eq!(
                (r.layout.block_height, r.layout.block_width),
                (1, 1),
                "{label}"
            );
            assert_eq!(r.strategy, want, "{label}");
            check_method(&gpu, &a, method, &PlanOptions::default(), &label);
        }
        // A given block size (only its height is counted): the same choice.
        let given = with(BccooOptions {
            block_height: Some(1),
            block_width: Some(1),
            ..Default::default()
        });
        let plan = gpu.prepare_with(&a, Method::Bccoo, &given).unwrap();
        assert_eq!(
            plan.bccoo().unwrap().strategy,
            want,
            "rows of {len}, 1x1 given"
        );
        // A given cache factor asks for the cache.
        let cached = with(BccooOptions {
            cache_factor: Some(2),
            ..Default::default()
        });
        let plan = gpu.prepare_with(&a, Method::Bccoo, &cached).unwrap();
        let r = plan.bccoo().unwrap();
        assert_eq!((r.strategy, r.cache_factor), (Strategy::ResultCache, 2));
    }
    // Dense rows: 4x4 blocks have the smallest footprint, but blocks half as large are taken and
    // written per thread (f32 4x2, f64 2x4: 16-entry and 4-row f64 sums per thread measured slow).
    let t = (0..64).flat_map(|r| (0..1024).map(move |c| (r, c, 1.0 + ((r + c) % 5) as f64)));
    let dense = CsrMatrix::from_triplets(64, 1024, t.collect()).unwrap();
    takes_halved_blocks_per_thread(&gpu, &dense.cast::<f32>(), (4, 2), "dense");
    // A given width is kept (f32 halves the width).
    let given = with(BccooOptions {
        block_width: Some(4),
        ..Default::default()
    });
    let plan = gpu
        .prepare_with(&dense.cast::<f32>(), Method::Bccoo, &given)
        .unwrap();
    assert_eq!(plan.bccoo().unwrap().layout.block_width, 4);
    if has_f64(&gpu) {
        takes_halved_blocks_per_thread(&gpu, &dense, (2, 4), "f64 dense");
    }
}

/// Rows of 3x3 blocks (the suite's banded structure): 3-row blocks have the smallest footprint,
/// which f32 takes; f64 takes a size of another height (its 3-row sums measured slow), and both
/// multiply right. A given height is kept.
#[test]
fn f64_takes_no_three_row_blocks_by_default() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::Banded.generate(6_000, 3);
    let p32 = gpu.prepare(&a.cast::<f32>(), Method::Bccoo).unwrap();
    let h32 = p32.bccoo().unwrap().layout.block_height;
    assert_eq!(h32, 3, "f32: {}", p32.details());
    let height = |plan: &wgspmv::SpmvPlan<f64>| plan.bccoo().unwrap().layout.block_height;
    if has_f64(&gpu) {
        let p64 = gpu.prepare(&a, Method::Bccoo).unwrap();
        assert_ne!(height(&p64), 3, "f64: {}", p64.details());
        assert!(p64.bccoo().unwrap().block_sizes.contains(&(3, 1)));
        check_method(
            &gpu,
            &a,
            Method::Bccoo,
            &PlanOptions::default(),
            "f64 banded",
        );
        let given = with(BccooOptions {
            block_height: Some(3),
            ..Default::default()
        });
        let p = gpu.prepare_with(&a, Method::Bccoo, &given).unwrap();
        assert_eq!(height(&p), 3);
    }
}

#[test]
fn bccoo_plus_with_empty_block_rows_left_out_or_kept() {
    let Some(gpu) = gpu() else { return };
    // Short rows are empty in most slices: BCCOO+ leaves those block rows out (no zero block) and
    // the combining pass finds results through its row map. One empty row among long ones: its
    // two zero blocks stay (cheaper than the lookups) and results sit at their stacked rows.
    let short: Vec<usize> = (0..600).map(|i| [0, 1, 2, 0, 3][i % 5]).collect();
    let mut long = vec![300; 100];
    long[50] = 0;
    for (lens, kept) in [(short, 0), (long, 2)] {
        let a = rows(&lens);
        let o = with(BccooOptions {
            slices: Some(2),
            tile: Some(4),
            ..Default::default()
        });
        let plan = gpu
            .prepare_with(&a.cast::<f32>(), Method::BccooPlus, &o)
            .unwrap();
        assert_eq!(plan.bccoo().unwrap().footprint.empty_row_blocks, kept);
        check_everywhere(&a, &format!("{kept} empty-row blocks"));
    }
}

#[test]
fn empty_rows_on_tile_and_workgroup_boundaries() {
    // With 1x1 blocks, tiles of 4 and workgroups of 256 blocks: rows of 4 end on tile boundaries,
    // 64 rows of 4 fill a workgroup exactly.
    let mut lens = vec![0, 4, 0, 4, 0, 0, 8];
    lens.extend(std::iter::repeat_n(4, 62));
    lens.extend([0, 0, 256, 0, 3, 0, 1, 0, 0]);
    lens.extend(std::iter::repeat_n(0, 600));
    lens.extend([4, 0]);
    check_everywhere(&rows(&lens), "empty rows on boundaries");
    check_everywhere(&rows(&[0, 0, 0, 0, 0]), "all rows empty");
    check_everywhere(&rows(&[1; 333]), "rows of one block, ragged padding");
    check_everywhere(&rows(&[]), "no rows");
    check_everywhere(&CsrMatrix::zeros(7, 0).unwrap(), "no columns");
}

#[test]
fn a_row_across_dozens_of_workgroups_is_race_free() {
    let Some(_) = gpu() else { return };
    // 40 000 entries: about 156 workgroups of 256 blocks, with short rows on either side.
    let mut lens = vec![2, 0, 7];
    lens.push(40_000);
    lens.extend([1, 0, 300, 3]);
    let a = common::rows_of_lengths(&lens, 50_000);
    check_everywhere(&a, "long row");
    for (dev, gpu) in gpus() {
        for carry in carries(&gpu) {
            let a32 = a.cast::<f32>();
            let mut o = small(carry);
            (o.bccoo.block_height, o.bccoo.block_width) = (Some(1), Some(1));
            let plan = gpu.prepare_with(&a32, Method::Bccoo, &o).unwrap();
            assert!(
                plan.bccoo().unwrap().longest_chain > 100,
                "{}",
                plan.details()
            );
            let x = GpuVector::from_slice(
                &gpu,
                &wgspmv::testing::suite::random_vector(a.ncols(), 5)
                    .into_iter()
                    .map(|v| v as f32)
                    .collect::<Vec<_>>(),
            )
            .unwrap();
            let mut y = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
            plan.run(&x, &mut y).unwrap();
            let first = y.read().unwrap();
            // A race shows as a result that changes between runs.
            for i in 0..40 {
                y.fill(f32::NAN).unwrap();
                plan.run(&x, &mut y).unwrap();
                assert_eq!(
                    y.read().unwrap(),
                    first,
                    "{carry:?} / {dev}: run {i} differs"
                );
            }
            // Recorded back to back in one encoder: the ticket and slots reset between products.
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            for _ in 0..6 {
                plan.record(&mut enc, &x, &mut y).unwrap();
            }
            gpu.queue().submit([enc.finish()]);
            assert_eq!(
                y.read().unwrap(),
                first,
                "{carry:?} / {dev}: recorded products differ"
            );
            // On a CPU adapter a wait can run out when the OS deschedules the thread running the
            // workgroup waited on; the last workgroup then finished the product (checked above).
            eprintln!(
                "{carry:?} / {dev}: {} stalled waits repaired",
                plan.bccoo().unwrap().stalls(&gpu).unwrap()
            );
        }
    }
}

#[test]
fn last_workgroup_finishes_every_carry_with_spin_limit_0() {
    // A spin limit of 0: no workgroup waits, each one whose first row began earlier keeps that row
    // pending, and the dispatch's last workgroup adds all the carries. The result must not change,
    // for both strategies, tall blocks and f64 (pending rows of HEIGHT values of two words).
    let mut lens = vec![5, 0];
    lens.push(30_000);
    lens.extend(std::iter::repeat_n(3, 500));
    lens.push(20_000);
    let a = common::rows_of_lengths(&lens, 40_000);
    for (dev, gpu) in gpus() {
        if !carries(&gpu).contains(&Carry::SinglePass) {
            continue;
        }
        for strategy in [Strategy::PerThread, Strategy::ResultCache] {
            for (h, w) in [(1, 1), (3, 2)] {
                let o = with(BccooOptions {
                    tile: Some(4),
                    block_height: Some(h),
                    block_width: Some(w),
                    strategy,
                    carry: Carry::SinglePass,
                    spin_limit: Some(0),
                    ..Default::default()
                });
                let label = format!("spin limit 0 / {strategy:?} / {h}x{w} / {dev}");
                check_method(
                    &gpu,
                    &a.cast::<f32>(),
                    Method::Bccoo,
                    &o,
                    &format!("{label} / f32"),
                );
                if has_f64(&gpu) {
                    check_method(&gpu, &a, Method::Bccoo, &o, &format!("{label} / f64"));
                }
            }
        }
        // Every carried row goes through the last workgroup, in every product.
        let o = with(BccooOptions {
            tile: Some(4),
            carry: Carry::SinglePass,
            spin_limit: Some(0),
            ..Default::default()
        });
        let plan = gpu
            .prepare_with(&a.cast::<f32>(), Method::Bccoo, &o)
            .unwrap();
        let carried = plan.bccoo().unwrap().carry_groups as u32;
        assert!(carried >= 4, "{}", plan.details());
        let x = GpuVector::filled(&gpu, a.ncols(), 1.0f32).unwrap();
        let mut y = GpuVector::filled(&gpu, a.nrows(), f32::NAN).unwrap();
        plan.run(&x, &mut y).unwrap();
        let first = y.read().unwrap();
        for _ in 0..9 {
            y.fill(f32::NAN).unwrap();
            plan.run(&x, &mut y).unwrap();
            assert_eq!(y.read().unwrap(), first, "{dev}: products differ");
        }
        assert_eq!(
            plan.bccoo().unwrap().stalls(&gpu).unwrap(),
            10 * carried,
            "{dev}"
        );
    }
}

#[test]
fn tuning_chooses_remembers_and_is_correct() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::PowerLaw.generate(20_000, 9);
    for m in METHODS {
        let o = PlanOptions {
            bccoo: BccooOptions {
                tune: true,
                ..Default::default()
            },
            ..Default::default()
        };
        check_method(&gpu, &a.cast::<f32>(), m, &o, &format!("tuned {m}"));
        let plan = gpu.prepare_with(&a.cast::<f32>(), m, &o).unwrap();
        let t = plan
            .bccoo()
            .unwrap()
            .tuning
            .clone()
            .expect("a tuned plan reports its tuning");
        assert!(
            t.remembered,
            "the second tuning of the same matrix is remembered"
        );
        let chosen = &t.chosen;
        assert!(chosen.block_height.is_some() && chosen.tile.is_some() && chosen.slices.is_some());
        assert_eq!(plan.bccoo().unwrap().layout.tile, chosen.tile.unwrap());
    }
    // A fresh structure is searched: at least the four block sizes and the tiles.
    let b = SuiteClass::Banded.generate(10_000, 2).cast::<f32>();
    let plan = gpu
        .prepare_with(
            &b,
            Method::Bccoo,
            &PlanOptions {
                bccoo: BccooOptions {
                    tune: true,
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .unwrap();
    let t = plan.bccoo().unwrap().tuning.clone().unwrap();
    assert!(
        !t.remembered && t.candidates.len() >= 8 && t.time.as_nanos() > 0,
        "{t:?}"
    );
    // No layout is timed twice (a stage skips the candidate it shares with the best so far).
    let mut labels: Vec<&str> = t.candidates.iter().map(|(l, _)| l.as_str()).collect();
    labels.sort_unstable();
    let n = labels.len();
    labels.dedup();
    assert_eq!(labels.len(), n, "{t:?}");
    // The staged search with its candidates built on the GPU (each reusing what the one before
    // left: counts, blocks rearranged, formats): correct, and the search ran.
    let c = SuiteClass::PowerLaw.generate(8_000, 3).cast::<f32>();
    let o = PlanOptions {
        bccoo: BccooOptions {
            tune: true,
            ..Default::default()
        },
        build_on: BuildOn::Gpu,
        ..Default::default()
    };
    check_method(&gpu, &c, Method::Bccoo, &o, "staged on the GPU");
    let plan = gpu.prepare_with(&c, Method::Bccoo, &o).unwrap();
    let t = plan.bccoo().unwrap().tuning.clone().unwrap();
    assert!(
        plan.report().built_on_gpu && t.remembered,
        "{}",
        plan.report()
    );
}

/// The guided search (`tune_budget_products`): correct plans, a handful of candidates built
/// on the GPU where asked (`BuildOn::Gpu` on this CPU adapter) or on the host, never slower
/// than the untuned plan it starts from by its own timing, remembered like the staged search.
#[test]
fn guided_tuning_times_a_handful_and_is_correct() {
    let Some(gpu) = gpu() else { return };
    // Wide rows over many columns (tile and slice candidates), and a banded matrix (blocks).
    let cases = [
        ("wide", SuiteClass::Wide.generate(60_000, 4)),
        ("banded", SuiteClass::Banded.generate(20_000, 5)),
    ];
    for (name, a) in cases {
        for (build_on, m) in [
            (BuildOn::Gpu, Method::Bccoo),
            (BuildOn::Host, Method::BccooPlus),
        ] {
            let o = PlanOptions {
                bccoo: BccooOptions {
                    tune: true,
                    tune_budget_products: Some(400),
                    ..Default::default()
                },
                build_on,
                ..Default::default()
            };
            let label = format!("guided {name} {m} {build_on:?}");
            check_method(&gpu, &a.cast::<f32>(), m, &o, &label);
            let plan = gpu.prepare_with(&a.cast::<f32>(), m, &o).unwrap();
            let t = plan.bccoo().unwrap().tuning.clone().unwrap();
            assert!(t.remembered, "{label}: the second tuning is remembered");
            assert_eq!(
                plan.report().built_on_gpu,
                build_on == BuildOn::Gpu,
                "{label}: {}",
                plan.report()
            );
            // A fresh structure (other values of the generator): searched, not remembered.
            let b = a.cast::<f32>();
            let fresh = CsrMatrix::try_new(
                b.nrows(),
                b.ncols() + 1,
                b.row_ptr().to_vec(),
                b.col_idx().to_vec(),
                b.values().to_vec(),
            )
            .unwrap();
            let plan = gpu.prepare_with(&fresh, m, &o).unwrap();
            let t = plan.bccoo().unwrap().tuning.clone().unwrap();
            assert!(
                !t.remembered && (1..=14).contains(&t.candidates.len()),
                "{label}: {t:?}"
            );
            // The plan returned is one of those timed, and every candidate was timed.
            let summary = plan.bccoo().unwrap().summary();
            assert!(
                t.candidates.iter().any(|c| c.0 == summary),
                "{label}: {summary} not among {t:?}"
            );
            assert!(t.candidates.iter().all(|c| c.1 > 0.0), "{label}: {t:?}");
        }
    }
}

#[test]
fn tuning_file_remembers_across_processes() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::Tall.generate(8_000, 31).cast::<f32>();
    let path = std::env::temp_dir().join(format!("wgspmv-tune-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    std::fs::write(&path, "a line that is no tuning record\n").unwrap();
    let o = PlanOptions {
        bccoo: BccooOptions {
            tune: true,
            tune_file: Some(path.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    let first = gpu.prepare_with(&a, Method::Bccoo, &o).unwrap();
    let t1 = first.bccoo().unwrap().tuning.clone().unwrap();
    assert!(!t1.remembered && !t1.candidates.is_empty());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().lines().count(),
        2,
        "one record appended"
    );
    // With a file, the file answers (as it would in a new process).
    std::fs::write(
        &path,
        std::fs::read_to_string(&path).unwrap() + "another stray line\n",
    )
    .unwrap();
    let second = gpu.prepare_with(&a, Method::Bccoo, &o).unwrap();
    let t2 = second.bccoo().unwrap().tuning.clone().unwrap();
    assert!(t2.remembered && t2.candidates.is_empty(), "{t2:?}");
    assert_eq!(
        second.bccoo().unwrap().summary(),
        first.bccoo().unwrap().summary()
    );
    check_method(&gpu, &a, Method::Bccoo, &o, "tuned from the file");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn footprint_is_smaller_than_coo() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::Banded.generate(50_000, 4).cast::<f32>();
    let plan = gpu.prepare(&a, Method::Bccoo).unwrap();
    let f = plan.bccoo().unwrap().footprint;
    assert!(f.total() < f.coo && f.total() < f.csr, "{f:?}");
    assert_eq!(f.empty_row_blocks, 0);
}

#[test]
fn bad_options_are_errors() {
    let Some(gpu) = gpu() else { return };
    let a = rows(&[3, 0, 2]).cast::<f32>();
    let bad = |m: Method, o: BccooOptions| {
        let r = gpu.prepare_with(
            &a,
            m,
            &PlanOptions {
                bccoo: o.clone(),
                ..Default::default()
            },
        );
        assert!(
            matches!(r, Err(Error::InvalidParameter { .. })),
            "{m} {o:?}: {:?}",
            r.err()
        );
    };
    bad(
        Method::Bccoo,
        BccooOptions {
            tile: Some(5),
            ..Default::default()
        },
    );
    bad(
        Method::Bccoo,
        BccooOptions {
            block_height: Some(5),
            block_width: Some(1),
            ..Default::default()
        },
    );
    bad(
        Method::Bccoo,
        BccooOptions {
            block_width: Some(3),
            block_height: Some(1),
            ..Default::default()
        },
    );
    bad(
        Method::Bccoo,
        BccooOptions {
            slices: Some(3),
            ..Default::default()
        },
    );
    bad(
        Method::BccooPlus,
        BccooOptions {
            slices: Some(1),
            ..Default::default()
        },
    );
    bad(
        Method::BccooPlus,
        BccooOptions {
            slices: Some(3),
            ..Default::default()
        },
    );
    bad(
        Method::Bccoo,
        BccooOptions {
            cache_factor: Some(3),
            ..Default::default()
        },
    );
    // The error names the parameter given, whatever it would have sized.
    for (o, name) in [
        (
            BccooOptions {
                block_height: Some(u32::MAX),
                ..Default::default()
            },
            "bccoo.block_height",
        ),
        (
            BccooOptions {
                block_height: Some(u32::MAX),
                block_width: Some(1),
                ..Default::default()
            },
            "bccoo.block_height",
        ),
        (
            BccooOptions {
                block_width: Some(u32::MAX),
                ..Default::default()
            },
            "bccoo.block_width",
        ),
    ] {
        let r = gpu.prepare_with(
            &a,
            Method::Bccoo,
            &PlanOptions {
                bccoo: o.clone(),
                ..Default::default()
            },
        );
        assert!(
            matches!(r, Err(Error::InvalidParameter { name: n, .. }) if n == name),
            "{o:?}: {:?}",
            r.err()
        );
    }
    let wide =
        CsrMatrix::<f32>::from_triplets(2, 200_000, vec![(0, 3, 1.0), (1, 150_000, 2.0)]).unwrap();
    let r = gpu.prepare_with(
        &wide,
        Method::Bccoo,
        &PlanOptions {
            bccoo: BccooOptions {
                columns: ColumnCoding::U16,
                block_width: Some(1),
                block_height: Some(1),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    assert!(
        matches!(r, Err(Error::InvalidParameter { .. })),
        "16-bit columns past 65 535: {:?}",
        r.err()
    );
}

/// BCCOO+'s default slice count follows the Auto profile's cache estimate (a slice of `x` about
/// an eighth of it), and the sliced plans multiply correctly.
#[test]
fn bccoo_plus_slices_follow_the_profiles_cache() {
    let Some(gpu) = gpu() else { return };
    // x of 256 KiB in f32, columns scattered over all of it.
    let ncols = 65536usize;
    let t: Vec<(usize, usize, f64)> = (0..3000usize)
        .flat_map(|r| {
            (0..4usize).map(move |c| {
                (
                    r,
                    (r * 40503 + c * 16411) % ncols,
                    1.0 + ((r + c) % 5) as f64,
                )
            })
        })
        .collect();
    let a = CsrMatrix::from_triplets(3000, ncols, t)
        .unwrap()
        .cast::<f32>();
    let info = gpu.info();
    let base = wgspmv::internals::select::builtin_for(info.vendor, info.device_type);
    for (cache_kib, slices) in [(2048.0, 2), (512.0, 4), (64.0, 32)] {
        let mut p = (*base).clone();
        p.cache_bytes = cache_kib * 1024.0;
        let mut o = PlanOptions::default();
        o.auto.profile = Some(std::sync::Arc::new(p));
        let plan = gpu.prepare_with(&a, Method::BccooPlus, &o).unwrap();
        assert_eq!(
            plan.bccoo().unwrap().layout.slices,
            slices,
            "cache of {cache_kib} KiB"
        );
        check_method(
            &gpu,
            &a,
            Method::BccooPlus,
            &o,
            &format!("cache of {cache_kib} KiB"),
        );
    }
}

/// `a`'s default `bccoo` plan takes `blocks` (the halved size, also first by footprint) and writes
/// per thread, and multiplies right.
fn takes_halved_blocks_per_thread<T: wgspmv::Scalar>(
    gpu: &wgspmv::Gpu,
    a: &CsrMatrix<T>,
    blocks: (u32, u32),
    label: &str,
) {
    let plan = gpu.prepare(a, Method::Bccoo).unwrap();
    let r = plan.bccoo().unwrap();
    assert_eq!((r.layout.block_height, r.layout.block_width), blocks);
    assert_eq!(
        (r.strategy, r.block_sizes[0]),
        (Strategy::PerThread, blocks)
    );
    check_method(gpu, a, Method::Bccoo, &PlanOptions::default(), label);
}
