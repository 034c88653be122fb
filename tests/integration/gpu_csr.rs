//! Plans from a CSR matrix the caller already holds on the GPU (`Gpu::prepare_gpu_csr`): every
//! method's plan equals, bit for bit, the plan of the same method from the host CSR (built on
//! the host, and uploaded as it is and built on the GPU, `BuildOn::Gpu`); bad arrays
//! are the same typed error the host check gives; unusable buffers are refused.

use crate::common;
use common::*;
use wgpu::util::DeviceExt;
use wgspmv::methods::bccoo::{BccooOptions, Carry, ColumnCoding};
use wgspmv::methods::cmrs::CmrsOptions;
use wgspmv::methods::speculative::{Finish, SpeculativeOptions};
use wgspmv::testing::suite::{random_vector, SuiteClass};
use wgspmv::{
    matrix::io, BuildOn, CallerBuffers, CsrMatrix, Error, Gpu, GpuCsr, GpuVector, Method,
    PlanOptions, Scalar, SpmvPlan,
};

const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// The arrays in buffers of the caller's own, as an app that assembled them on the GPU has them.
pub(crate) fn caller_buffers(
    gpu: &Gpu,
    ptr: &[u32],
    cols: &[u32],
    vals: &[u8],
) -> [wgpu::Buffer; 3] {
    let make = |label: &str, contents: &[u8]| {
        gpu.device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: USAGE,
            })
    };
    [
        make("caller row_ptr", bytemuck::cast_slice(ptr)),
        make("caller col_idx", bytemuck::cast_slice(cols)),
        make("caller values", vals),
    ]
}

fn described<'a>(a_shape: (usize, usize, usize), b: &'a [wgpu::Buffer; 3]) -> GpuCsr<'a> {
    GpuCsr {
        nrows: a_shape.0,
        ncols: a_shape.1,
        nnz: a_shape.2,
        row_ptr: &b[0],
        col_idx: &b[1],
        values: &b[2],
    }
}

/// y = A·x into a poisoned y, as bits.
fn product<T: Scalar>(gpu: &Gpu, plan: &wgspmv::SpmvPlan<T>, x: &[T]) -> Vec<T> {
    let gx = GpuVector::from_slice(gpu, x).unwrap();
    let mut gy = GpuVector::filled(gpu, plan.nrows(), T::NAN).unwrap();
    plan.run(&gx, &mut gy).unwrap();
    gy.read().unwrap()
}

fn same_bits<T: Scalar>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| bytemuck::bytes_of(p) == bytemuck::bytes_of(q))
}

fn check_equal_plans<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>, label: &str) {
    let b = caller_buffers(
        gpu,
        a.row_ptr(),
        a.col_idx(),
        bytemuck::cast_slice(a.values()),
    );
    let desc = described(a.shape(), &b);
    let x: Vec<T> = random_vector(a.ncols(), 5)
        .into_iter()
        .map(T::from_f64)
        .collect();
    for (m, opts, built_on_gpu) in configurations() {
        let from_gpu = gpu.prepare_gpu_csr::<T>(&desc, m, &opts);
        // The host twins, whatever the adapter would choose by default.
        let host_opts = PlanOptions {
            build_on: BuildOn::Host,
            ..opts.clone()
        };
        let from_host = match gpu.prepare_with(a, m, &host_opts) {
            Ok(p) => p,
            // (A row longer than the tests' small chunks.) Refused the same way.
            Err(e) => {
                let g = from_gpu.err().map(|g| format!("{g:?}"));
                assert_eq!(g, Some(format!("{e:?}")), "{label} / {m}");
                continue;
            }
        };
        let from_gpu =
            from_gpu.unwrap_or_else(|e| panic!("{label} / {m}: prepare_gpu_csr failed: {e}"));
        let (yg, yh) = (product(gpu, &from_gpu, &x), product(gpu, &from_host, &x));
        assert!(
            same_bits(&yg, &yh),
            "{label} / {m}: the plan from GPU buffers differs from the host's [{}] vs [{}]",
            from_gpu.report(),
            from_host.report()
        );
        // The host CSR uploaded as it is and built by the same GPU builds equals both.
        let uploaded_opts = PlanOptions {
            build_on: BuildOn::Gpu,
            ..opts.clone()
        };
        let uploaded = gpu.prepare_with(a, m, &uploaded_opts).unwrap();
        assert!(
            same_bits(&product(gpu, &uploaded, &x), &yh),
            "{label} / {m}: the host CSR built on the GPU differs [{}]",
            uploaded.report()
        );
        // It takes the GPU build exactly where a matrix given on the GPU does (`suraa` sets up
        // on the GPU by its own option).
        let gpu_built = [
            Method::CsrScalar,
            Method::CsrVector,
            Method::CsrStream,
            Method::Cmrs,
            Method::CmrsPadded,
            Method::Speculative,
            Method::Bccoo,
            Method::BccooPlus,
        ];
        if gpu_built.contains(&m) {
            assert_eq!(
                uploaded.report().built_on_gpu,
                from_gpu.report().built_on_gpu,
                "{label} / {m}: [{}]",
                uploaded.report()
            );
        }
        assert!(!from_host.report().built_on_gpu, "{label} / {m}");
        // The host plan is checked against the f64 reference elsewhere; check this one directly
        // too, so that a wrong host plan cannot hide a wrong GPU build.
        let y_ref = wgspmv::reference::spmv_par(a, &x).unwrap();
        let c = wgspmv::reference::check(1.0, a, &x, 0.0, None, &yg, &y_ref);
        assert!(c.ok, "{label} / {m}: wrong: row {:?}", c.worst_row);
        // Methods built on the GPU read nothing back (an empty matrix is built on the host), the
        // long-row passes of the CSR kernels and of strips included.
        let read = from_gpu.report().read_back_bytes;
        let strips = matches!(m, Method::Cmrs | Method::CmrsPadded);
        let blocks = matches!(m, Method::Bccoo | Method::BccooPlus);
        if a.nnz() > 0 && built_on_gpu && opts.max_chunk_bytes.is_none() {
            assert_eq!(read, 0, "{label} / {m}: built on the GPU");
        }
        // Strips leave the same rows to the long-row passes, and say so.
        if strips {
            assert_eq!(from_gpu.details(), from_host.details(), "{label} / {m}");
            // (The matrix made for it does leave rows to them, at 4 lanes and 1-column buffers.)
            if label.starts_with("strips beyond")
                && (opts.lanes_per_row == Some(4) || opts.cmrs.buffer_columns == Some(1))
            {
                assert!(
                    !from_gpu.details().contains(" 0 long row"),
                    "{label} / {m}: {}",
                    from_gpu.details()
                );
            }
        }
        // A BCCOO format built on the GPU is its host twin word for word: the auxiliary array
        // (thread rows, workgroup info, carry list, thread escapes), flags, column words and
        // values, and BCCOO+'s row map; and the same footprint and layout.
        if blocks && read == 0 && a.nnz() > 0 {
            assert!(from_gpu.report().built_on_gpu, "{label} / {m}");
            let words = |p: &wgspmv::SpmvPlan<T>| {
                let mut w = p.stage_words_for_testing(0, 0..1).unwrap();
                w.extend(p.stage_words_for_testing(0, 6..9).unwrap());
                // The combining stage (BCCOO+) follows the main one and any carry pass.
                for stage in 1..3 {
                    w.extend(p.stage_words_for_testing(stage, 4..5).unwrap());
                }
                w
            };
            let (wg, wh) = (words(&from_gpu), words(&from_host));
            for (k, (g, h)) in wg.iter().zip(&wh).enumerate() {
                let first = g.as_ref().zip(h.as_ref()).and_then(|(g, h)| {
                    let at = g.iter().zip(h).position(|(a, b)| a != b);
                    at.or((g.len() != h.len()).then_some(g.len().min(h.len())))
                });
                assert!(
                    first.is_none() && g.is_some() == h.is_some(),
                    "{label} / {m}: array {k} differs from word {first:?} [{}] vs [{}]",
                    from_gpu.report(),
                    from_host.report()
                );
            }
            // NaN and infinities in x reach the rows the host plan's do, stored zeros included.
            let mut special = x.clone();
            for (c, v) in special.iter_mut().enumerate() {
                match c % 13 {
                    3 => *v = T::from_f64(f64::NAN),
                    8 => *v = T::from_f64(f64::INFINITY),
                    _ => {}
                }
            }
            assert!(
                same_bits(
                    &product(gpu, &from_gpu, &special),
                    &product(gpu, &from_host, &special)
                ),
                "{label} / {m}: NaN and infinities in x differ"
            );
            let (g, h) = (from_gpu.bccoo().unwrap(), from_host.bccoo().unwrap());
            assert_eq!(g.footprint, h.footprint, "{label} / {m}");
            assert_eq!(g.summary(), h.summary(), "{label} / {m}");
            assert_eq!(
                (g.groups, g.carry_groups, g.longest_chain),
                (h.groups, h.carry_groups, h.longest_chain),
                "{label} / {m}"
            );
        }
        // A strip format built on the GPU is its host twin word for word: strip pointers,
        // column words and values (the products alone can hide a layout change that keeps each
        // row's summation order).
        if strips && read == 0 && a.nnz() > 0 {
            assert!(from_gpu.report().built_on_gpu);
            let words = |p: &wgspmv::SpmvPlan<T>| p.stage_words_for_testing(0, 0..3).unwrap();
            assert_eq!(
                words(&from_gpu),
                words(&from_host),
                "{label} / {m}: [{}]",
                from_gpu.report()
            );
        }
        // csr-stream's tiles and reordered entries built on the GPU are its host twin's word for
        // word: row pointers, columns (packed by chunk) and values in each tile's column order,
        // the tile array (count, first rows, chunk words), and the places where the host kept
        // them (only a chunk of plain columns reads its places; else the host uploads one word).
        if m == Method::CsrStream && read == 0 && a.nnz() > 0 {
            assert!(from_gpu.report().built_on_gpu);
            let words = |p: &wgspmv::SpmvPlan<T>| -> Vec<Vec<u32>> {
                let mut w = p.stage_words_for_testing(0, 0..3).unwrap();
                w.extend(p.stage_words_for_testing(0, 7..9).unwrap());
                w.into_iter()
                    .map(|b| b.expect("a plan's own array"))
                    .collect()
            };
            let (g, h) = (words(&from_gpu), words(&from_host));
            let value_words = std::mem::size_of::<T>() / 4;
            let lens = [
                a.nrows() + 1,
                a.nnz(),
                a.nnz() * value_words,
                h[3].len(),
                // All places, or the one word uploaded (padded to a 16-byte buffer).
                if h[4].len() >= a.nnz().div_ceil(2) {
                    a.nnz().div_ceil(2)
                } else {
                    1
                },
            ];
            for (i, len) in lens.into_iter().enumerate() {
                assert_eq!(g[i][..len], h[i][..len], "{label} / {m}: array {i}");
            }
        }
        // Row chunks are cut on the host: a matrix that needs them is read back.
        if opts.max_chunk_bytes.is_some_and(|c| a.nnz() as u64 * 4 > c) {
            assert!(read > 0, "{label} / {m}: chunked, yet not read back");
        }
        // The GPU's structure analysis equals the host's.
        if let (Some(g), Some(h)) = (from_gpu.speculation(), from_host.speculation()) {
            assert_eq!(g.speculation, h.speculation, "{label} / {m}");
        }
        assert!(from_gpu.report().validation_ms > 0.0);
        // New values in place equal a fresh host plan with them.
        // (Stored zeros filled and other entries zeroed: bccoo takes any pattern of zeros.)
        let new: Vec<T> = a
            .values()
            .iter()
            .enumerate()
            .map(|(i, v)| {
                T::from_f64(match (v.to_f64() == 0.0, i % 11) {
                    (true, _) => 2.5,
                    (false, 4) => 0.0,
                    (false, 8) => -0.0,
                    _ => 0.25 - 1.5 * v.to_f64(),
                })
            })
            .collect();
        from_gpu.update_values(&new).unwrap();
        let fresh = gpu
            .prepare_with(&a.with_values(new).unwrap(), m, &opts)
            .unwrap();
        assert!(
            same_bits(&product(gpu, &from_gpu, &x), &product(gpu, &fresh, &x)),
            "{label} / {m}: updated values differ from a fresh plan"
        );
        // BCCOO's gathered blocks hold the fresh plan's words exactly: the products alone
        // could hide two values swapped in a row.
        if blocks && read == 0 && a.nnz() > 0 {
            let values = |p: &wgspmv::SpmvPlan<T>| p.stage_words_for_testing(0, 8..9).unwrap();
            assert!(
                values(&from_gpu) == values(&fresh),
                "{label} / {m}: updated blocks differ from a fresh plan's [{}]",
                from_gpu.report()
            );
        }
    }
}

/// Every method at its defaults, `cmrs` at several heights, sorted and in CSR order, and
/// `speculative` with its check stage on the GPU (the only
/// way it builds from GPU buffers; lavapipe shares memory with the host, so it checks there by
/// default) with and without resolved dirty tiles and precomputed tile rows. The flag says
/// whether the plan is built without reading the matrix back.
fn configurations() -> Vec<(Method, PlanOptions, bool)> {
    let mut v: Vec<(Method, PlanOptions, bool)> = Method::ALL
        .iter()
        .map(|&m| {
            let on_gpu = matches!(
                m,
                Method::CsrScalar
                    | Method::CsrVector
                    | Method::CsrStream
                    | Method::Cmrs
                    | Method::CmrsPadded
                    | Method::Suraa
                    | Method::Bccoo
                    | Method::BccooPlus
            );
            (m, PlanOptions::default(), on_gpu)
        })
        .collect();
    // bccoo and bccoo-plus: other block sizes, tiles, workgroups, slices (BCCOO+ leaving empty
    // block rows out at 32), column codings and the two-pass carry.
    let bccoo = |h, w, tile, slices, columns, carry| BccooOptions {
        block_height: Some(h),
        block_width: Some(w),
        tile: Some(tile),
        slices,
        columns,
        carry,
        ..Default::default()
    };
    for (m, b, wg) in [
        (
            Method::Bccoo,
            bccoo(2, 2, 4, None, ColumnCoding::Delta16, Carry::TwoPass),
            Some(64),
        ),
        (
            Method::Bccoo,
            bccoo(3, 4, 8, None, ColumnCoding::U32, Carry::Auto),
            None,
        ),
        (
            Method::Bccoo,
            bccoo(4, 1, 4, Some(4), ColumnCoding::Auto, Carry::TwoPass),
            Some(64),
        ),
        (
            Method::BccooPlus,
            bccoo(1, 2, 16, Some(32), ColumnCoding::Delta16, Carry::Auto),
            None,
        ),
        (
            Method::BccooPlus,
            bccoo(3, 1, 4, Some(2), ColumnCoding::U16, Carry::TwoPass),
            Some(128),
        ),
    ] {
        let opts = PlanOptions {
            bccoo: b,
            workgroup_size: wg,
            ..Default::default()
        };
        v.push((m, opts, true));
    }
    // (Teams of 4 lanes in workgroup memory: strips beyond 65 536 entries leave rows to the
    // long-row passes.)
    for (height, keep_csr_order, lanes_per_row) in [
        (3, false, None),
        (16, false, None),
        (5, true, None),
        (3, false, Some(4)),
        (2, true, Some(4)),
    ] {
        let cmrs = CmrsOptions {
            height: Some(height),
            keep_csr_order,
            ..Default::default()
        };
        let opts = PlanOptions {
            cmrs,
            lanes_per_row,
            lanes: if lanes_per_row.is_some() {
                wgspmv::LanePolicy::Workgroup
            } else {
                wgspmv::LanePolicy::Auto
            },
            ..Default::default()
        };
        v.push((Method::Cmrs, opts, true));
    }
    // cmrs-padded: other heights and buffer columns (its strips dealt to 1, 2 or 8 lane groups
    // of an 8-lane team, or of the default team).
    for (height, buffer_columns, lanes_per_row) in [(3, 4, None), (16, 1, Some(8)), (7, 8, Some(8))]
    {
        let cmrs = CmrsOptions {
            height: Some(height),
            buffer_columns: Some(buffer_columns),
            ..Default::default()
        };
        let opts = PlanOptions {
            cmrs,
            lanes_per_row,
            lanes: if lanes_per_row.is_some() {
                wgspmv::LanePolicy::Workgroup
            } else {
                wgspmv::LanePolicy::Auto
            },
            ..Default::default()
        };
        v.push((Method::CmrsPadded, opts, true));
    }
    for (resolve, given_rows, tiles) in [
        (None, None, None),
        (Some(false), None, None),
        (Some(true), Some(false), Some(16)),
    ] {
        let speculative = SpeculativeOptions {
            finish: Finish::Gpu,
            resolve_dirty_tiles: resolve,
            precomputed_tile_rows: given_rows,
            tiles_per_team: tiles,
            ..Default::default()
        };
        let opts = PlanOptions {
            speculative,
            ..Default::default()
        };
        v.push((Method::Speculative, opts, true));
    }
    // Row chunks of 8 KiB: built on the host from what is read back.
    for m in [Method::CsrVector, Method::Cmrs, Method::Speculative] {
        let opts = PlanOptions {
            max_chunk_bytes: Some(8 << 10),
            speculative: SpeculativeOptions {
                finish: Finish::Gpu,
                ..Default::default()
            },
            ..Default::default()
        };
        v.push((m, opts, false));
    }
    v
}

fn test_matrices() -> Vec<(String, CsrMatrix<f64>)> {
    let mut v: Vec<(String, CsrMatrix<f64>)> = SuiteClass::ALL
        .iter()
        .map(|c| (c.name().to_owned(), c.generate(6_000, 3)))
        .collect();
    v.extend(edge_cases().into_iter().map(|(n, a)| (n.to_owned(), a)));
    // Too long for one invocation of the CSR kernels: their long-row passes (pieces of 16 384
    // entries at the default workgroup) take them, one row at the limit stays in the kernel.
    v.push((
        "a row of 20 000".into(),
        rows_of_lengths(&[0, 20_000, 3], 25_000),
    ));
    v.push((
        "long rows of one to three pieces".into(),
        rows_of_lengths(
            &[3, 16_384, 16_385, 0, 40_000, 7, 32_768, 33_000, 1],
            50_000,
        ),
    ));
    // Strips longer than a 4-lane team's loop budget (65 536 entries) at heights 2 and 3, and
    // than an 8-lane team's 1-column buffer (16 384) at 16: the longest rows go to the long-row
    // passes, the lower of two equal rows first, and one strip keeps nothing.
    v.push((
        "strips beyond the loop budget".into(),
        rows_of_lengths(&[3, 70_000, 5, 0, 66_000, 0, 40_000, 40_000, 1, 9], 80_000),
    ));
    // Columns far apart (BCCOO's 16-bit column differences escape; block columns past 65 535),
    // with empty rows between.
    v.push((
        "scattered over 300 000 columns".into(),
        scattered(2_000, 300_000),
    ));
    // Stored zeros (+0 and −0) among banded rows: kernels that skip zeros restore them.
    let b = SuiteClass::Banded.generate(6_000, 7);
    let vals: Vec<f64> = (b.values().iter().enumerate())
        .map(|(i, &v)| match i % 9 {
            2 => 0.0,
            6 => -0.0,
            _ => v,
        })
        .collect();
    v.push(("stored zeros".into(), b.with_values(vals).unwrap()));
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for f in ["bcsstk01.mtx", "west0067.mtx", "can_24.mtx", "n3c4-b4.mtx"] {
        v.push((f.to_owned(), io::read_matrix_market(data.join(f)).unwrap()));
    }
    v
}

/// `nrows` rows of 0 to 6 entries at columns drawn over `ncols`.
fn scattered(nrows: usize, ncols: usize) -> CsrMatrix<f64> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let (mut ptr, mut cols, mut vals) = (vec![0u32], Vec::new(), Vec::new());
    for _ in 0..nrows {
        let mut row: Vec<u32> = (0..next(7)).map(|_| next(ncols) as u32).collect();
        row.sort_unstable();
        row.dedup();
        vals.extend(row.iter().map(|&c| 1.0 + (c % 7) as f64));
        cols.extend(row);
        ptr.push(cols.len() as u32);
    }
    CsrMatrix::try_new(nrows, ncols, ptr, cols, vals).unwrap()
}

#[test]
fn plans_from_gpu_buffers_equal_plans_from_the_host() {
    for (dev, gpu) in gpus() {
        for (name, a) in test_matrices() {
            check_equal_plans(&gpu, &a.cast::<f32>(), &format!("{name} / f32 / {dev}"));
            if has_f64(&gpu) && dev == PORTABLE {
                check_equal_plans(&gpu, &a, &format!("{name} / f64 / {dev}"));
            }
        }
    }
}

/// The error of `prepare_gpu_csr` for these arrays, the same for every method and
/// configuration (`speculative` on the GPU validates in its analysis's read back) and `auto`.
fn gpu_error(gpu: &Gpu, shape: (usize, usize), ptr: &[u32], cols: &[u32]) -> Error {
    let vals = vec![1.0f32; cols.len()];
    let b = caller_buffers(gpu, ptr, cols, bytemuck::cast_slice(&vals));
    let desc = described((shape.0, shape.1, cols.len()), &b);
    let mut errors = configurations()
        .into_iter()
        .map(|(m, o, _)| (m, o))
        .chain([(Method::Auto, PlanOptions::default())])
        .map(|(m, o)| match gpu.prepare_gpu_csr::<f32>(&desc, m, &o) {
            Ok(_) => panic!("{m}: {ptr:?} / {cols:?} was accepted"),
            Err(e) => (m, e),
        });
    let (_, first) = errors.next().expect("configurations");
    for (m, e) in errors {
        assert_eq!(format!("{e:?}"), format!("{first:?}"), "{m}");
    }
    first
}

#[test]
fn bad_gpu_csr_is_the_host_checks_error() {
    let Some(gpu) = gpu() else { return };
    let mut long_row: Vec<u32> = (0..3000).collect();
    long_row[2900] = 5;
    // (what, (rows, columns), row pointers, columns)
    type Case = (&'static str, (usize, usize), Vec<u32>, Vec<u32>);
    let cases: Vec<Case> = vec![
        ("row_ptr[0] != 0", (2, 4), vec![1, 2, 3], vec![0, 1, 2]),
        ("pointers decrease", (3, 4), vec![0, 2, 1, 3], vec![0, 1, 2]),
        (
            "pointers decrease twice",
            (4, 4),
            vec![0, 3, 1, 0, 3],
            vec![0, 1, 2],
        ),
        ("last pointer short", (2, 4), vec![0, 1, 2], vec![0, 1, 2]),
        (
            "column out of range",
            (3, 4),
            vec![0, 1, 3, 4],
            vec![0, 1, 4, 3],
        ),
        (
            "columns unsorted",
            (3, 4),
            vec![0, 1, 3, 5],
            vec![0, 2, 1, 1, 3],
        ),
        ("duplicate column", (2, 4), vec![0, 2, 4], vec![0, 1, 3, 3]),
        (
            "both in one row, range first",
            (1, 4),
            vec![0, 3],
            vec![2, 9, 1],
        ),
        (
            "unsorted deep in a long row",
            (2, 4000),
            vec![0, 1, 3001],
            {
                let mut c = vec![7];
                c.extend(&long_row);
                c
            },
        ),
        (
            "bad rows after empty rows",
            (5, 4),
            vec![0, 0, 0, 2, 2, 3],
            vec![3, 3, 0],
        ),
    ];
    for (what, (nrows, ncols), ptr, cols) in cases {
        let host = CsrMatrix::try_new(
            nrows,
            ncols,
            ptr.clone(),
            cols.clone(),
            vec![1.0f32; cols.len()],
        )
        .expect_err(what);
        let on_gpu = gpu_error(&gpu, (nrows, ncols), &ptr, &cols);
        assert_eq!(format!("{on_gpu:?}"), format!("{host:?}"), "{what}");
    }
    // A bad matrix is named before a bad option, also where the validation joins the build's
    // first read back (which checks its options first).
    let vals = [1.0f32; 3];
    let b = caller_buffers(&gpu, &[1, 2, 3], &[0, 1, 2], bytemuck::cast_slice(&vals));
    for (m, speculative, bccoo) in [
        (
            Method::Speculative,
            SpeculativeOptions {
                finish: Finish::Gpu,
                work_per_lane: Some(3),
                ..Default::default()
            },
            BccooOptions::default(),
        ),
        (
            Method::Bccoo,
            SpeculativeOptions::default(),
            BccooOptions {
                block_height: Some(5),
                ..Default::default()
            },
        ),
    ] {
        let o = PlanOptions {
            speculative,
            bccoo,
            ..Default::default()
        };
        let e = gpu.prepare_gpu_csr::<f32>(&described((2, 4, 3), &b), m, &o);
        assert!(matches!(e, Err(Error::RowPtrStart(1))), "{m}: {e:?}");
    }
    // The device is still usable after the refusals.
    let a = rows_of_lengths(&[3, 0, 5], 9).cast::<f32>();
    check_equal_plans(&gpu, &a, "after the errors");
}

#[test]
fn unusable_buffers_are_refused() {
    let Some(gpu) = gpu() else { return };
    let a = rows_of_lengths(&[3, 0, 5, 2], 9).cast::<f32>();
    let vals: &[u8] = bytemuck::cast_slice(a.values());
    let good = caller_buffers(&gpu, a.row_ptr(), a.col_idx(), vals);
    // The error of preparing `desc` in `T`, which must name `array`.
    fn refused<T: Scalar>(gpu: &Gpu, desc: &GpuCsr, array: &str) {
        match gpu.prepare_gpu_csr::<T>(desc, Method::Bccoo, &PlanOptions::default()) {
            Err(Error::CallerBuffer { array: a, .. }) if a == array => {}
            Err(e) => panic!("expected the {array} buffer refused, got: {e}"),
            Ok(_) => panic!("expected the {array} buffer refused, got a plan"),
        }
    }
    // Too small for the stated size.
    let desc = described(a.shape(), &good);
    refused::<f32>(
        &gpu,
        &GpuCsr {
            nnz: a.nnz() + 1,
            ..desc
        },
        "col_idx",
    );
    // f64 values from a buffer of f32.
    if has_f64(&gpu) {
        refused::<f64>(&gpu, &desc, "values");
    }
    // Sizes beyond the kernels' 32-bit indices, with every method (the joined builds size
    // their buffers before their validation runs): a typed error, not an overflow.
    for &m in Method::ALL {
        for huge in [
            GpuCsr {
                nnz: 1 << 40,
                ..desc
            },
            GpuCsr {
                nrows: usize::MAX,
                ..desc
            },
        ] {
            let e = gpu.prepare_gpu_csr::<f32>(&huge, m, &PlanOptions::default());
            assert!(matches!(e, Err(Error::TooLargeForU32 { .. })), "{m}: {e:?}");
        }
    }
    // A buffer without STORAGE.
    let copy_only = gpu
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("copy only"),
            contents: bytemuck::cast_slice(a.col_idx()),
            usage: wgpu::BufferUsages::COPY_SRC,
        });
    refused::<f32>(
        &gpu,
        &GpuCsr {
            col_idx: &copy_only,
            ..desc
        },
        "col_idx",
    );
}

#[test]
fn the_plan_does_not_depend_on_the_callers_buffers() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::ALL[0].generate(3_000, 1).cast::<f32>();
    let x: Vec<f32> = random_vector(a.ncols(), 2)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    for &m in Method::ALL {
        let b = caller_buffers(
            &gpu,
            a.row_ptr(),
            a.col_idx(),
            bytemuck::cast_slice(a.values()),
        );
        let plan = gpu
            .prepare_gpu_csr::<f32>(&described(a.shape(), &b), m, &PlanOptions::default())
            .unwrap();
        let before = product(&gpu, &plan, &x);
        // The caller reuses its buffers for something else, then drops them.
        gpu.queue()
            .write_buffer(&b[2], 0, &vec![0u8; b[2].size() as usize]);
        gpu.queue()
            .write_buffer(&b[1], 0, &vec![0xFFu8; b[1].size() as usize]);
        drop(b);
        assert!(same_bits(&before, &product(&gpu, &plan, &x)), "{m}");
    }
}

/// With `CallerBuffers::Share` the CSR kernels read the caller's arrays: the same product as the
/// copying plan, none of the caller's bytes counted as the plan's, values the caller writes seen
/// by the next product, `update_values` written into the caller's buffer (refused without
/// `COPY_DST`, the plan unchanged); methods with a format of their own still copy.
#[test]
fn shared_caller_buffers_are_read_in_place() {
    let Some(gpu) = gpu() else { return };
    let a = rows_of_lengths(&[3, 20_000, 0, 5, 1, 17_000], 25_000).cast::<f32>();
    let x: Vec<f32> = random_vector(a.ncols(), 4)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let new: Vec<f32> = a.values().iter().map(|v| 0.25 - 1.5 * v).collect();
    let a_new = a.with_values(new.clone()).unwrap();
    let height_one = PlanOptions {
        cmrs: CmrsOptions {
            height: Some(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut configs: Vec<(Method, PlanOptions)> = Method::ALL
        .iter()
        .map(|&m| (m, PlanOptions::default()))
        .collect();
    configs.push((Method::Cmrs, height_one));
    for (m, opts) in configs {
        let b = caller_buffers(
            &gpu,
            a.row_ptr(),
            a.col_idx(),
            bytemuck::cast_slice(a.values()),
        );
        let desc = described(a.shape(), &b);
        let share_opts = PlanOptions {
            caller_buffers: CallerBuffers::Share,
            ..opts.clone()
        };
        let shared = gpu.prepare_gpu_csr::<f32>(&desc, m, &share_opts).unwrap();
        let copied = gpu.prepare_gpu_csr::<f32>(&desc, m, &opts).unwrap();
        let before = product(&gpu, &copied, &x);
        assert!(same_bits(&product(&gpu, &shared, &x), &before), "{m}");
        // (`cmrs` at its default height may choose 1, which runs the CSR vector kernel.)
        let in_place = shared.report().parameters.contains("the caller's arrays");
        let must = matches!(m, Method::CsrScalar | Method::CsrVector)
            || (m == Method::Cmrs && opts.cmrs.height == Some(1));
        let can = must || m == Method::Cmrs;
        assert!(
            in_place == must || (in_place && can),
            "{m}: {}",
            shared.report()
        );
        let caller_bytes: u64 = b.iter().map(|b| b.size()).sum();
        if in_place {
            assert!(
                shared.device_bytes() + caller_bytes <= copied.device_bytes(),
                "{m}: {} + {caller_bytes} vs {}",
                shared.device_bytes(),
                copied.device_bytes()
            );
        }
        // The caller writes new values into its buffer.
        gpu.queue()
            .write_buffer(&b[2], 0, bytemuck::cast_slice(&new));
        let after = product(&gpu, &shared, &x);
        let y_new = product(&gpu, &gpu.prepare_with(&a_new, m, &opts).unwrap(), &x);
        let expected = if in_place { &y_new } else { &before };
        assert!(same_bits(&after, expected), "{m}: in place {in_place}");
        // update_values puts the old values back (into the caller's buffer where shared).
        shared.update_values(a.values()).unwrap();
        assert!(same_bits(&product(&gpu, &shared, &x), &before), "{m}");
        if in_place {
            // (A copy made now shows what the caller's buffer holds.)
            let read = gpu.prepare_gpu_csr::<f32>(&desc, m, &opts).unwrap();
            assert!(same_bits(&product(&gpu, &read, &x), &before), "{m}");
        }
    }
    // Without COPY_DST on the caller's values an update is refused and the plan still runs.
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let make = |contents: &[u8]| {
        gpu.device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents,
                usage,
            })
    };
    let b = [
        make(bytemuck::cast_slice(a.row_ptr())),
        make(bytemuck::cast_slice(a.col_idx())),
        make(bytemuck::cast_slice(a.values())),
    ];
    let share_opts = PlanOptions {
        caller_buffers: CallerBuffers::Share,
        ..Default::default()
    };
    let plan = gpu
        .prepare_gpu_csr::<f32>(&described(a.shape(), &b), Method::CsrVector, &share_opts)
        .unwrap();
    let before = product(&gpu, &plan, &x);
    assert!(matches!(
        plan.update_values(&new),
        Err(Error::Unsupported { .. })
    ));
    assert!(same_bits(&product(&gpu, &plan, &x), &before));
}

/// Every test matrix with entries, in f32, in buffers of the caller's, on every test device:
/// `f(gpu, label, a, buffers)`.
fn each_matrix_in_buffers(mut f: impl FnMut(&Gpu, &str, &CsrMatrix<f32>, &[wgpu::Buffer; 3])) {
    for (dev, gpu) in gpus() {
        for (name, a) in test_matrices() {
            let a = a.cast::<f32>();
            if a.nnz() == 0 {
                continue;
            }
            let b = caller_buffers(
                &gpu,
                a.row_ptr(),
                a.col_idx(),
                bytemuck::cast_slice(a.values()),
            );
            f(&gpu, &format!("{name} / {dev}"), &a, &b);
        }
    }
}

/// The staged tuner (no budget) from GPU buffers: every candidate built on the GPU from the
/// caller's buffers (the block sizes chosen from counts made there), nothing read back, the
/// chosen plan the host build's with the same options, remembered for the next call.
#[test]
fn staged_tuning_from_gpu_buffers_reads_nothing_back() {
    let Some(gpu) = gpu() else { return };
    let a = SuiteClass::PowerLaw.generate(8_000, 5).cast::<f32>();
    let b = caller_buffers(
        &gpu,
        a.row_ptr(),
        a.col_idx(),
        bytemuck::cast_slice(a.values()),
    );
    let opts = PlanOptions {
        bccoo: BccooOptions {
            tune: true,
            // (A spin limit no other test gives: no other tuning is remembered under this key.)
            spin_limit: Some(1 << 18),
            ..Default::default()
        },
        ..Default::default()
    };
    let plan = gpu
        .prepare_gpu_csr::<f32>(&described(a.shape(), &b), Method::Bccoo, &opts)
        .unwrap();
    let report = plan.report();
    assert_eq!(report.read_back_bytes, 0, "[{report}]");
    assert!(report.built_on_gpu, "[{report}]");
    let tuning = plan.bccoo().unwrap().tuning.clone().unwrap();
    assert!(
        !tuning.remembered && tuning.candidates.len() >= 8,
        "{:?}",
        tuning.candidates
    );
    let chosen = PlanOptions {
        bccoo: tuning.chosen.clone(),
        workgroup_size: Some(tuning.workgroup_size),
        build_on: BuildOn::Host,
        ..Default::default()
    };
    let host = gpu.prepare_with(&a, Method::Bccoo, &chosen).unwrap();
    assert_same_products(&gpu, "staged", &plan, &host);
    let again = gpu
        .prepare_gpu_csr::<f32>(&described(a.shape(), &b), Method::Bccoo, &opts)
        .unwrap();
    let t = again.bccoo().unwrap().tuning.clone().unwrap();
    assert!(t.remembered && t.candidates.is_empty());
    assert_eq!(again.report().read_back_bytes, 0);
    assert_same_products(&gpu, "staged, remembered", &again, &plan);
}

/// Two plans of one matrix give the same product, bit for bit, on a random `x`.
fn assert_same_products(gpu: &Gpu, label: &str, p: &SpmvPlan<f32>, q: &SpmvPlan<f32>) {
    let x: Vec<f32> = random_vector(p.ncols(), 7)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    assert!(
        same_bits(&product(gpu, p, &x), &product(gpu, q, &x)),
        "{label}: [{}] vs [{}]",
        p.report(),
        q.report()
    );
}

/// `Auto` from GPU buffers counts the features on the GPU: every method's predicted product time
/// equals the host choice's (the same integers, so the same features), the same method is
/// chosen (the profile's setups do not depend on where this adapter builds), built from the
/// buffers without reading the matrix back where that method builds on the GPU, and its product
/// equals the host Auto plan's bit for bit.
#[test]
fn auto_from_gpu_buffers_counts_the_hosts_features() {
    each_matrix_in_buffers(|gpu, label, a, b| {
        let opts = PlanOptions::default();
        let from_gpu = gpu
            .prepare_gpu_csr::<f32>(&described(a.shape(), b), Method::Auto, &opts)
            .unwrap();
        let from_host = gpu.prepare_with(a, Method::Auto, &opts).unwrap();
        let (cg, ch) = (
            from_gpu.report().choice.clone().unwrap(),
            from_host.report().choice.clone().unwrap(),
        );
        let products = |c: &wgspmv::plan::Choice| {
            let mut v: Vec<(&str, f64)> = c
                .candidates
                .iter()
                .map(|k| (k.method, k.predicted_product_ms))
                .collect();
            v.sort_by(|x, y| x.0.cmp(y.0));
            v
        };
        assert_eq!(products(&cg), products(&ch), "{label}");
        assert_eq!(from_gpu.method(), from_host.method(), "{label}");
        if from_gpu.report().built_on_gpu {
            assert_eq!(from_gpu.report().read_back_bytes, 0, "{label}");
        }
        assert_same_products(gpu, label, &from_gpu, &from_host);
    });
}

/// A timed `Auto` from GPU buffers builds its candidates from the buffers and times them: it
/// reads back what its chosen method built from the buffers does (nothing where that method
/// builds on the GPU), reports measured times, and gives the product of the same method built
/// from the host CSR, bit for bit. A budget that is not a positive number is a typed error.
#[test]
fn timed_auto_from_gpu_buffers_reads_nothing_back() {
    each_matrix_in_buffers(|gpu, label, a, b| {
        let mut opts = PlanOptions::default();
        opts.auto.timed_budget_products = Some(20.0);
        let plan = gpu
            .prepare_gpu_csr::<f32>(&described(a.shape(), b), Method::Auto, &opts)
            .unwrap();
        let choice = plan.report().choice.clone().unwrap();
        assert!(
            choice
                .candidates
                .iter()
                .any(|k| k.method == plan.method().name() && k.measured_product_ms.is_some()),
            "{label}: {}",
            plan.report()
        );
        // It reads back what its method built from the buffers reads back, no more.
        let direct = gpu
            .prepare_gpu_csr::<f32>(
                &described(a.shape(), b),
                plan.method(),
                &PlanOptions::default(),
            )
            .unwrap();
        assert_eq!(
            plan.report().read_back_bytes,
            direct.report().read_back_bytes,
            "{label}: [{}]",
            plan.report()
        );
        // (A tuned `bccoo`: the host plan of the options its search chose.)
        let host_opts = match plan.bccoo().and_then(|r| r.tuning.clone()) {
            Some(t) => PlanOptions {
                bccoo: t.chosen,
                workgroup_size: Some(t.workgroup_size),
                ..Default::default()
            },
            None => PlanOptions::default(),
        };
        let host = gpu.prepare_with(a, plan.method(), &host_opts).unwrap();
        assert_same_products(gpu, label, &plan, &host);
        // Remembered under the structure's fingerprint (hashed on the GPU): the same method,
        // nothing timed again, and the host CSR of the same structure finds it too.
        for again in [
            gpu.prepare_gpu_csr::<f32>(&described(a.shape(), b), Method::Auto, &opts),
            gpu.prepare_with(a, Method::Auto, &opts),
        ] {
            let again = again.unwrap();
            let c = again.report().choice.clone().unwrap();
            assert!(c.remembered, "{label}: [{}]", again.report());
            assert_eq!(again.method(), plan.method(), "{label}");
        }
        opts.auto.timed_budget_products = Some(f64::NAN);
        assert!(matches!(
            gpu.prepare_gpu_csr::<f32>(&described(a.shape(), b), Method::Auto, &opts),
            Err(Error::InvalidParameter {
                name: "timed_budget_products",
                ..
            })
        ));
    });
}

/// More strips than one grid dimension holds: the strip builders' grid has workgroups past the
/// last strip, which must not touch the format even where the caller's row-pointer buffer goes
/// on past the matrix (here with pointers that would place real entries in the wrong row).
#[test]
fn strip_builds_past_one_grid_dimension_ignore_data_beyond_the_matrix() {
    let Some(gpu) = gpu() else { return };
    let max = gpu.info().limits.max_compute_workgroups_per_dimension as usize;
    // Strips of two single-entry rows: just over one dimension's worth, so that the second
    // dimension adds almost as many workgroups past the end.
    let nrows = 2 * (max + 3);
    let ncols = 257;
    let row_ptr: Vec<u32> = (0..=nrows as u32).collect();
    let cols: Vec<u32> = (0..nrows).map(|r| ((r * 7) % ncols) as u32).collect();
    let vals: Vec<f32> = (0..nrows).map(|r| 1.0 + (r % 5) as f32).collect();
    let a = CsrMatrix::try_new(nrows, ncols, row_ptr.clone(), cols.clone(), vals.clone()).unwrap();
    // Beyond the matrix, increasing pointers offset by one: read as strips, they would put
    // entry e in row-in-strip 0 where it is in 1, and the other way round.
    let mut padded = row_ptr;
    padded.extend(1..=2 * max as u32 + 64);
    let b = caller_buffers(&gpu, &padded, &cols, bytemuck::cast_slice(&vals));
    let desc = described(a.shape(), &b);
    let x: Vec<f32> = (0..ncols).map(|i| 0.5 + (i % 3) as f32).collect();
    let expected = wgspmv::reference::spmv_par(&a, &x).unwrap();
    for m in [Method::Cmrs, Method::CmrsPadded] {
        let opts = PlanOptions {
            cmrs: CmrsOptions {
                height: Some(2),
                ..Default::default()
            },
            ..Default::default()
        };
        let plan = gpu.prepare_gpu_csr::<f32>(&desc, m, &opts).unwrap();
        assert!(plan.report().built_on_gpu, "{m}: [{}]", plan.report());
        let y = product(&gpu, &plan, &x);
        let wrong = y
            .iter()
            .zip(&expected)
            .filter(|(g, e)| (**g as f64 - **e).abs() > 1e-6 * e.abs().max(1.0))
            .count();
        assert_eq!(wrong, 0, "{m}: {wrong} rows differ [{}]", plan.report());
    }
}

/// A guided `bccoo` tuning from GPU buffers (a budget given) searches there: it reads nothing
/// of the matrix back, times candidates against the untuned plan, and its plan is the host plan
/// of the options it chose, bit for bit; it is not remembered (a second tuning searches again).
/// Given a tuning file it reads the matrix back and tunes on the host, remembered in the file.
#[test]
fn guided_tuning_from_gpu_buffers_reads_nothing_back() {
    each_matrix_in_buffers(|gpu, label, a, b| {
        for m in [Method::Bccoo, Method::BccooPlus] {
            let opts = PlanOptions {
                bccoo: BccooOptions {
                    tune: true,
                    tune_budget_products: Some(1000),
                    // (A spin limit no other test gives: no other test's tuning is remembered
                    // under these options' key.)
                    spin_limit: Some(1 << 19),
                    ..Default::default()
                },
                ..Default::default()
            };
            let label = format!("{label} / {m}");
            let plan = gpu
                .prepare_gpu_csr::<f32>(&described(a.shape(), b), m, &opts)
                .unwrap();
            let report = plan.report();
            assert_eq!(report.read_back_bytes, 0, "{label}: [{report}]");
            assert!(report.built_on_gpu, "{label}: [{report}]");
            let tuning = plan.bccoo().unwrap().tuning.clone().unwrap();
            // (Both lane modes share the adapter's key: the second one finds the first's.)
            if !tuning.remembered {
                // The untuned plan and at least one candidate timed against it.
                assert!(
                    tuning.candidates.len() >= 2,
                    "{label}: {:?}",
                    tuning.candidates
                );
            }
            let chosen = PlanOptions {
                bccoo: tuning.chosen.clone(),
                workgroup_size: Some(tuning.workgroup_size),
                build_on: BuildOn::Host,
                ..Default::default()
            };
            let host = gpu.prepare_with(a, m, &chosen).unwrap();
            assert_same_products(gpu, &label, &plan, &host);
            // Remembered under the structure's fingerprint (hashed on the GPU): the same
            // choice, no candidates, nothing read back.
            let again = gpu
                .prepare_gpu_csr::<f32>(&described(a.shape(), b), m, &opts)
                .unwrap();
            let t = again.bccoo().unwrap().tuning.clone().unwrap();
            assert!(t.remembered && t.candidates.is_empty(), "{label}");
            assert_eq!(
                (&t.chosen, t.workgroup_size),
                (&tuning.chosen, tuning.workgroup_size),
                "{label}"
            );
            assert_eq!(again.report().read_back_bytes, 0, "{label}");
            assert_same_products(gpu, &label, &again, &plan);
            // With a tuning file, from the buffers too: tuned once, written, then found there;
            // and the host CSR of the same structure finds the same line (one key).
            let file = std::env::temp_dir().join(format!(
                "wgspmv-gpu-tune-{}-{}.txt",
                std::process::id(),
                label.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            ));
            let _ = std::fs::remove_file(&file);
            let filed = PlanOptions {
                bccoo: BccooOptions {
                    tune_file: Some(file.clone()),
                    ..opts.bccoo.clone()
                },
                ..Default::default()
            };
            for remembered in [false, true] {
                let p = gpu
                    .prepare_gpu_csr::<f32>(&described(a.shape(), b), m, &filed)
                    .unwrap();
                assert_eq!(p.report().read_back_bytes, 0, "{label}");
                let t = p.bccoo().unwrap().tuning.clone().unwrap();
                assert_eq!(t.remembered, remembered, "{label}");
            }
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            assert_eq!(lines, 1, "{label}");
            let from_host = gpu.prepare_with(a, m, &filed).unwrap();
            let t = from_host.bccoo().unwrap().tuning.clone().unwrap();
            assert!(t.remembered, "{label}: the host CSR's key differs");
            let _ = std::fs::remove_file(&file);
        }
    });
}

/// `Auto` from GPU buffers on a matrix below the profile's data times its candidates as from a
/// host CSR (both CSR kernels among them) and builds the winner from the buffers: the product
/// of the same method built from the host CSR, bit for bit.
#[test]
fn auto_from_gpu_buffers_below_the_profiles_data_is_timed() {
    let Some(gpu) = gpu() else { return };
    // (No other test prepares this matrix: nothing is remembered for it.)
    let a = SuiteClass::SingleDenseRow.generate(120, 4).cast::<f32>();
    let b = caller_buffers(
        &gpu,
        a.row_ptr(),
        a.col_idx(),
        bytemuck::cast_slice(a.values()),
    );
    let plan = gpu
        .prepare_gpu_csr::<f32>(
            &described(a.shape(), &b),
            Method::Auto,
            &PlanOptions::default(),
        )
        .unwrap();
    let choice = plan.report().choice.clone().unwrap();
    assert!(choice.below_data && choice.timed, "{}", plan.report());
    for m in ["csr-scalar", "csr-vector"] {
        assert!(
            choice
                .candidates
                .iter()
                .any(|k| k.method == m && k.measured_product_ms.is_some()),
            "{m} not timed: {}",
            plan.report()
        );
    }
    let host = gpu
        .prepare_with(&a, plan.method(), &PlanOptions::default())
        .unwrap();
    assert_same_products(&gpu, "below data", &plan, &host);
}
