//! Buffer copies (the copy kernel between storage buffers, the copy command split at 16-byte
//! boundaries otherwise) arrive whole, at every size and offset around the kernel's threshold,
//! and across bindings where one cannot hold the copy.

use crate::common::{self, gpus};
use wgspmv::{testing::SuiteClass, CsrMatrix, Gpu, GpuVector, Method, PlanOptions};

/// Words no two of which are equal, NaN payloads among them (a copy moves bits, not floats).
fn words(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| {
            let w = i.wrapping_mul(0x9E37_79B9) ^ seed;
            if i % 5 == 0 {
                f32::from_bits(0x7FC0_0000 | (w & 0x3F_FFFF))
            } else {
                f32::from_bits(w)
            }
        })
        .collect()
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits())
}

/// Clones a vector of each length on the GPU and reads both back.
fn check_clones(gpu: &Gpu, lengths: &[usize], label: &str) {
    for &n in lengths {
        let data = words(n, n as u32);
        let v = GpuVector::from_slice(gpu, &data).unwrap();
        let c = v.try_clone().unwrap();
        assert!(
            same_bits(&c.read().unwrap(), &data),
            "{label}: a clone of {n} words differs"
        );
        assert!(same_bits(&v.read().unwrap(), &data), "{label}: source");
    }
}

#[test]
fn copies_arrive_whole_at_every_size_around_the_kernels_threshold() {
    // 64 KiB (the threshold) and each remainder mod 16 bytes either side, and larger copies.
    let base = 16 * 1024;
    let lengths: Vec<usize> = (base - 4..=base + 4)
        .chain([1, 3, 4 * base + 1, 300_003])
        .collect();
    for (dev, gpu) in gpus() {
        check_clones(&gpu, &lengths, dev);
    }
}

#[test]
fn copies_longer_than_one_binding_arrive_whole() {
    let Some(gpu) = common::gpu() else { return };
    // A binding limit the copy kernel's whole workgroups do not divide: the copy takes a
    // binding and a rest.
    let limit = (1 << 20) + 256;
    let Some(small) = common::reopened(&gpu, |a| wgpu::Limits {
        max_storage_buffer_binding_size: limit,
        ..Gpu::wanted_limits(a)
    }) else {
        eprintln!("SKIPPED: the adapter could not be opened with a smaller binding limit");
        return;
    };
    assert_eq!(small.info().max_binding_bytes(), limit);
    let most = limit as usize / 4;
    check_clones(
        &small,
        &[most, most - 1, most - 3],
        "binding limit 1 MiB + 256",
    );
}

/// A plan of `m` from GPU buffers, its values then updated from a buffer at `offset` elements,
/// equals a plan built from the new values.
fn check_update_at(gpu: &Gpu, a: &CsrMatrix<f32>, m: Method, offset: usize) {
    let b = a
        .with_values(
            words(a.nnz(), 7)
                .iter()
                .map(|v| v.abs().min(4.0) + 0.5)
                .collect(),
        )
        .unwrap();
    let plan = gpu.prepare(a, m).unwrap();
    let mut padded = vec![f32::NAN; offset];
    padded.extend_from_slice(b.values());
    padded.push(f32::NAN);
    let src = GpuVector::from_slice(gpu, &padded).unwrap();
    plan.update_values_from_buffer(src.buffer(), (offset * 4) as u64)
        .unwrap();
    let x = GpuVector::from_slice(gpu, &vec![1.25f32; a.ncols()]).unwrap();
    let run = |p: &wgspmv::SpmvPlan<f32>| {
        let mut y = GpuVector::from_slice(gpu, &vec![f32::NAN; a.nrows()]).unwrap();
        p.run(&x, &mut y).unwrap();
        y.read().unwrap()
    };
    let fresh = gpu.prepare_with(&b, m, &PlanOptions::default()).unwrap();
    assert!(
        same_bits(&run(&plan), &run(&fresh)),
        "{m}: values updated from offset {offset} differ from a fresh plan"
    );
}

#[test]
fn value_updates_copy_whole_at_any_offset() {
    let Some(gpu) = common::gpu() else { return };
    // An odd count of values over the threshold: a tail after the kernel's 16-byte words.
    let a = SuiteClass::Tall.generate(20_000, 4).cast::<f32>();
    assert!(
        a.nnz() * 4 > 64 << 10 && !a.nnz().is_multiple_of(4),
        "{}",
        a.nnz()
    );
    // Offsets the adapter can bind (the kernel), and ones it cannot (the split command).
    for offset in [0, 1, 2, 3, 64, 65] {
        for m in [Method::CsrScalar, Method::Speculative] {
            check_update_at(&gpu, &a, m, offset);
        }
    }
}

/// Zero vectors are made and cleared on the GPU, every other value written from the host: each
/// reads back as asked, at lengths around a word and a workgroup, with -0 kept (its sign bit is
/// not a cleared buffer's zero) and NaN payloads intact.
#[test]
fn filled_and_cleared_vectors_read_back_what_was_asked() {
    for (dev, gpu) in gpus() {
        for n in [0usize, 1, 3, 4, 255, 257, 4099] {
            let label = format!("{n} elements / {dev}");
            let zeros = GpuVector::filled(&gpu, n, 0.0f32).unwrap();
            assert!(
                zeros.read().unwrap().iter().all(|v| v.to_bits() == 0),
                "{label}"
            );
            let neg = GpuVector::filled(&gpu, n, -0.0f32).unwrap();
            assert!(
                neg.read()
                    .unwrap()
                    .iter()
                    .all(|v| v.to_bits() == 0x8000_0000),
                "{label}"
            );
            let mut v = GpuVector::from_slice(&gpu, &words(n, 7)).unwrap();
            v.fill(0.0).unwrap();
            assert!(
                v.read().unwrap().iter().all(|v| v.to_bits() == 0),
                "{label}"
            );
            let nan = f32::from_bits(0x7FC0_1234);
            v.fill(nan).unwrap();
            assert!(
                v.read()
                    .unwrap()
                    .iter()
                    .all(|v| v.to_bits() == nan.to_bits()),
                "{label}"
            );
            v.fill(0.0).unwrap();
            assert!(
                v.read().unwrap().iter().all(|v| v.to_bits() == 0),
                "{label}"
            );
        }
    }
}
