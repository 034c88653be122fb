//! Host-side costs: CSR validation and construction, statistics, the CPU reference, Matrix Market
//! I/O, and the paper methods' format conversions (CMRS, BCCOO).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use wgspmv::internals::bccoo::{format::BccooMatrix, smallest_footprints};
use wgspmv::internals::cmrs::format::{CmrsLayout, CmrsMatrix};
use wgspmv::{matrix::io, reference, testing::SuiteClass, CsrMatrix};

fn host(c: &mut Criterion) {
    let mut g = c.benchmark_group("host");
    for class in [SuiteClass::Banded, SuiteClass::PowerLaw] {
        let a = class.generate(1_000_000, 1);
        let x = wgspmv::testing::suite::random_vector(a.ncols(), 2);
        g.throughput(Throughput::Elements(a.nnz() as u64));
        let (m, n, rp, ci, v) = a.clone().into_parts();
        g.bench_with_input(
            BenchmarkId::new("csr_try_new", class.name()),
            &(),
            |b, _| b.iter(|| CsrMatrix::try_new(m, n, rp.clone(), ci.clone(), v.clone()).unwrap()),
        );
        let triplets: Vec<(usize, usize, f64)> = (0..m)
            .flat_map(|r| {
                let (cs, vs) = a.row(r);
                cs.iter()
                    .zip(vs)
                    .map(move |(&c, &v)| (r, c as usize, v))
                    .collect::<Vec<_>>()
            })
            .rev()
            .collect();
        g.bench_with_input(
            BenchmarkId::new("from_triplets", class.name()),
            &(),
            |b, _| b.iter(|| CsrMatrix::from_triplets(m, n, triplets.clone()).unwrap()),
        );
        g.bench_with_input(BenchmarkId::new("row_stats", class.name()), &(), |b, _| {
            b.iter(|| black_box(a.row_stats()))
        });
        g.bench_with_input(
            BenchmarkId::new("reference_spmv_par", class.name()),
            &(),
            |b, _| b.iter(|| reference::spmv_par(&a, &x).unwrap()),
        );
        let layout = CmrsLayout {
            height: 8,
            ..Default::default()
        };
        g.bench_with_input(
            BenchmarkId::new("csr_to_cmrs_h8", class.name()),
            &(),
            |b, _| b.iter(|| CmrsMatrix::from_csr(&a, &layout).unwrap()),
        );
        let cmrs = CmrsMatrix::from_csr(&a, &layout).unwrap();
        g.bench_with_input(
            BenchmarkId::new("cmrs_h8_to_csr", class.name()),
            &(),
            |b, _| b.iter(|| cmrs.to_csr().unwrap()),
        );
        let bccoo = wgspmv::methods::bccoo::BccooLayout::default();
        g.bench_with_input(
            BenchmarkId::new("csr_to_bccoo_1x1", class.name()),
            &(),
            |b, _| b.iter(|| BccooMatrix::from_csr(&a, &bccoo).unwrap()),
        );
        g.bench_with_input(
            BenchmarkId::new("bccoo_block_footprints", class.name()),
            &(),
            |b, _| b.iter(|| smallest_footprints(&a)),
        );
        let path = std::env::temp_dir().join(format!("wgspmv-bench-{}.mtx", class.name()));
        g.bench_with_input(BenchmarkId::new("mtx_write", class.name()), &(), |b, _| {
            b.iter(|| io::write_matrix_market(&path, &a).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("mtx_read", class.name()), &(), |b, _| {
            b.iter(|| io::read_matrix_market::<f64>(&path).unwrap())
        });
        let _ = std::fs::remove_file(&path);
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = host
}
criterion_main!(benches);
