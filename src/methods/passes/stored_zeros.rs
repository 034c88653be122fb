//! Stored zeros for formats whose kernels skip zero values (see shaders/passes/stored_zeros.wgsl): one
//! pass after the main ones turns the rows where a stored zero meets a NaN or infinite `x` into
//! NaN, as multiplying every stored entry does.

use crate::gpu::Gpu;
use crate::kernel::{LaneMode, Variant};
use crate::methods::common::{upload, workgroup_size};
use crate::plan::{Binding, Grid, Stage};
use crate::{CsrMatrix, Result, Scalar};

/// The pass for `a`'s stored zeros (±0), or none when it has none.
pub(crate) fn stage<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<T>) -> Result<Option<Stage>> {
    let mut zeros = vec![0u32];
    for r in 0..a.nrows() {
        let (cols, vals) = a.row(r);
        for (&c, v) in cols.iter().zip(vals) {
            if v.to_f64() == 0.0 {
                zeros.extend([r as u32, c]);
            }
        }
    }
    let count = (zeros.len() / 2) as u32;
    if count == 0 {
        return Ok(None);
    }
    zeros[0] = count;
    let list = upload(gpu, "stored zeros", &zeros)?;
    stage_of_list::<T>(gpu, list, count).map(Some)
}

/// The pass for a list of `count` stored zeros already in a buffer (`[count, then (row, column)
/// pairs]`, any order).
pub(crate) fn stage_of_list<T: Scalar>(gpu: &Gpu, list: Binding, count: u32) -> Result<Stage> {
    let wg = workgroup_size(gpu, None, 256, 1)?;
    let kernel = super::kernels::STORED_ZEROS;
    let pipeline = gpu.pipeline(&Variant::new(
        kernel,
        T::WGSL,
        LaneMode::Workgroup,
        vec![("WG_SIZE", wg)],
    ))?;
    Ok(Stage {
        pipeline,
        bindings: vec![list, Binding::X, Binding::Y],
        grid: Grid::Direct(gpu.grid(count.div_ceil(wg))),
    })
}
