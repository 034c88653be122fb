#import shared/scalar
#import shared/scalar_bits_{scalar}
#import solvers/sum_partials
// One workgroup adds up the partials (partials.wgsl) in sum_partials.wgsl's fixed order, then
// one invocation turns the sums into a solver's scalars, so that nothing is read back between
// iterations (CG takes its sums in its own kernels: cg_step.wgsl, cg_update_p.wgsl):
// MODE 0: scalars[0], scalars[1] = the two dots (a plain dot product);
// MODE 5: scalars[groups.y] = the first dot (a dot product into α or β of `Coefficients`);
// MODE 3 (a start, after r·z, or BiCGStab's r̂·r, and r·r): rz (ρ) = that dot, history[0] =
//   r·r, a stop where r·r is within the tolerance;
// MODE 4 (before the start, after b·b): bb and the tolerance tol2 = rel_tol² · b·b.
// BiCGStab (r̂ the shadow residual, ρ in the RZ slot):
// MODE 6 (after r̂·v): α = ρ / r̂·v;
// MODE 7 (after t·s and t·t): ω = t·s / t·t (0 where t = 0: s is then 0 too);
// MODE 8 (after r̂·r and r·r): the iteration counted and its r·r kept, a stop at the tolerance,
//   else β = (ρ' / ρ)(α / ω) and ρ = ρ'.
// PageRank (d the damping):
// MODE 9 (after r·dangling): c = d·(r·dangling) + 1 − d, what each node gets besides its links;
// MODE 10 (after pagerank_update's |r' − r| and r'·dangling): the iteration counted and its
//   change kept in `history`, a stop once the change is within the tolerance (tol2 holds tol
//   itself), and the next iteration's c as MODE 9 makes it.
// Once stopped, α and β are 0, so the iterations still recorded change nothing.

override MODE: u32 = 0u;

// `scalars` slots.
const RZ: u32 = 0u;
const ALPHA: u32 = 1u;
const BETA: u32 = 2u;
const TOL2: u32 = 3u;
const REL_TOL2: u32 = 4u;
const BB: u32 = 5u;
const OMEGA: u32 = 6u;
const DAMPING: u32 = 7u;
const ADD: u32 = 8u;
// `state` slots, and why a solve stopped.
const ITER: u32 = 0u;
const STOP: u32 = 1u;
const RUNNING: u32 = 0u;
const CONVERGED: u32 = 1u;
const BREAKDOWN: u32 = 3u;

@group(0) @binding(0) var<storage, read> partials: array<scalar>;
@group(0) @binding(1) var<storage, read_write> scalars: array<scalar>;
@group(0) @binding(2) var<storage, read_write> state: array<u32>;
@group(0) @binding(3) var<storage, read_write> history: array<scalar>;
@group(0) @binding(4) var<uniform> groups: vec4<u32>;

@compute @workgroup_size(SUM_WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    // groups.z: where the partials start.
    let dots = sum_partials(lid, groups.z, groups.x);
    if (lid != 0u) {
        return;
    }
    if (MODE == 0u) {
        scalars[0] = dots.x;
        scalars[1] = dots.y;
        return;
    }
    if (MODE == 5u) {
        scalars[groups.y] = dots.x;
        return;
    }
    if (MODE == 4u) {
        scalars[BB] = dots.x;
        scalars[TOL2] = scalars[REL_TOL2] * dots.x;
        return;
    }
    if (MODE == 3u) {
        scalars[RZ] = dots.x;
        history[0] = dots.y;
        state[ITER] = 0u;
        state[STOP] = RUNNING;
        if (dots.y <= scalars[TOL2]) {
            state[STOP] = CONVERGED;
        }
        return;
    }
    if (MODE == 9u) {
        let d = scalars[DAMPING];
        scalars[ADD] = d * dots.x + (scalar(1) - d);
        return;
    }
    if (MODE == 10u) {
        if (state[STOP] != RUNNING) {
            return;
        }
        let change = dots.x;
        let iter = state[ITER] + 1u;
        state[ITER] = iter;
        history[iter] = change;
        let d = scalars[DAMPING];
        scalars[ADD] = d * dots.y + (scalar(1) - d);
        if (!is_finite(change)) {
            state[STOP] = BREAKDOWN;
        } else if (change <= scalars[TOL2]) {
            state[STOP] = CONVERGED;
        }
        return;
    }
    if (state[STOP] != RUNNING) {
        scalars[ALPHA] = scalar(0);
        scalars[BETA] = scalar(0);
        scalars[OMEGA] = scalar(0);
        return;
    }
    if (MODE == 6u) {
        let rv = dots.x;
        if (rv != scalar(0) && is_finite(rv)) {
            scalars[ALPHA] = scalars[RZ] / rv;
        } else {
            scalars[ALPHA] = scalar(0);
            scalars[OMEGA] = scalar(0);
            scalars[BETA] = scalar(0);
            state[STOP] = BREAKDOWN;
        }
        return;
    }
    if (MODE == 7u) {
        let ts = dots.x;
        let tt = dots.y;
        if (!is_finite(ts) || !is_finite(tt)) {
            scalars[OMEGA] = scalar(0);
            scalars[BETA] = scalar(0);
            state[STOP] = BREAKDOWN;
        } else if (tt == scalar(0)) {
            scalars[OMEGA] = scalar(0);
        } else {
            scalars[OMEGA] = ts / tt;
        }
        return;
    }
    if (MODE == 8u) {
        let rho = dots.x;
        let rr = dots.y;
        let iter = state[ITER] + 1u;
        state[ITER] = iter;
        history[iter] = rr;
        let omega = scalars[OMEGA];
        if (!is_finite(rr) || !is_finite(rho)) {
            scalars[BETA] = scalar(0);
            state[STOP] = BREAKDOWN;
        } else if (rr <= scalars[TOL2]) {
            scalars[BETA] = scalar(0);
            state[STOP] = CONVERGED;
        } else if (rho == scalar(0) || omega == scalar(0)) {
            scalars[BETA] = scalar(0);
            state[STOP] = BREAKDOWN;
        } else {
            scalars[BETA] = (rho / scalars[RZ]) * (scalars[ALPHA] / omega);
            scalars[RZ] = rho;
        }
        return;
    }
}
