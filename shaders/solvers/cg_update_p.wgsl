#import shared/grid
#import shared/scalar
#import shared/scalar_bits_{scalar}
#import solvers/span
#import solvers/sum_partials
// CG, after cg_step.wgsl, in one pass: every workgroup adds up the partials of r·z and r·r
// itself (the same bits in each) and takes β = ρ' / ρ, then p = z + β·p (z = r / diag(A) with
// JACOBI, else r). Workgroup 0 keeps the books: the iteration counted, its r·r in `history`,
// ρ' into the other ρ slot (the next iteration's, so no workgroup reads a slot being written),
// and a stop where p·q was not positive, r·r reached the tolerance or is not finite. β = 0
// where any of those holds (each workgroup sees it in the same sums, so none reads the stop
// being written) and at the START: p = z exactly, whatever p held. Once the solve stopped, α
// is 0, so p no longer matters.

override JACOBI: u32 = 0u;
override START: u32 = 0u;

const RHO: u32 = 0u;
const TOL2: u32 = 3u;
const RHO_ODD: u32 = 9u;
const FAILED: u32 = 10u;
const ITER: u32 = 0u;
const STOP: u32 = 1u;
const RUNNING: u32 = 0u;
const CONVERGED: u32 = 1u;
const BREAKDOWN: u32 = 3u;

@group(0) @binding(0) var<storage, read_write> scalars: array<scalar>;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read_write> history: array<scalar>;
@group(0) @binding(3) var<storage, read> r: array<scalar>;
@group(0) @binding(4) var<storage, read> inv_diag: array<scalar>;
@group(0) @binding(5) var<storage, read_write> p: array<scalar>;
// r·z's and r·r's partials from 2 · groups (cg_step.wgsl).
@group(0) @binding(6) var<storage, read> partials: array<scalar>;
@group(0) @binding(7) var<uniform> params: DotParams;

@compute @workgroup_size(SUM_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    var beta = scalar(0);
    if (START == 0u) {
        let sums = sum_partials(lid, 2u * params.groups, params.groups);
        let rz = sums.x;
        let rr = sums.y;
        let failed = scalars[FAILED] != scalar(0);
        let finite = is_finite(rz) && is_finite(rr);
        let go_on = !failed && finite && rr > scalars[TOL2];
        let odd = params.parity == 1u;
        if (go_on) {
            beta = rz / scalars[select(RHO, RHO_ODD, odd)];
        }
        if (g == 0u && lid == 0u && state[STOP] == RUNNING) {
            if (failed) {
                state[STOP] = u32(scalars[FAILED]);
            } else {
                let iter = state[ITER] + 1u;
                state[ITER] = iter;
                history[iter] = rr;
                if (!finite) {
                    state[STOP] = BREAKDOWN;
                } else if (!go_on) {
                    state[STOP] = CONVERGED;
                } else {
                    scalars[select(RHO_ODD, RHO, odd)] = rz;
                }
            }
        }
    }
    if (g < params.groups) {
        let end = span_end(g);
        for (var i = g * params.span + lid; i < end; i += SUM_WG) {
            var zi = r[i];
            if (JACOBI != 0u) {
                zi *= inv_diag[i];
            }
            // β = 0: p = z exactly, whatever p held (NaN included).
            if (beta != scalar(0)) {
                zi += beta * p[i];
            }
            p[i] = zi;
        }
    }
}
