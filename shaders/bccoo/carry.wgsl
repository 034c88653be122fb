#import shared/grid
#import shared/common
#import shared/lanes_{lanes}
#import bccoo/common
// bccoo's second pass for two-pass carries: one workgroup per entry of the static list of
// workgroups whose first row began in an earlier one; the whole workgroup sums that workgroup's
// chain slots and adds `alpha * carry` into its first row. Nothing waits: the main dispatch has
// written every slot.

override WG_SIZE: u32 = 256u;
override LANES: u32 = 32u;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        li: LaneInput,
        si: ShapeInput) {
    let l = lanes_of(li, si);
    let sh = shape_of(si);
    let slot = group_slot(l);
    let i = linear_group(wid, nwg);
    if (i >= params.carry_groups) {
        return;
    }
    let g = aux[params.carry_base + i];
    let info = aux[params.group_info_base + g];
    let part = chain_part(g, info, slot, 0u);
    let carry = group_sum(part.value, slot, l, sh);
    if (slot == 0u) {
        let brow = aux[g * params.group_threads];
        for (var r = 0u; r < HEIGHT; r++) {
            let row = brow * HEIGHT + r;
            if (row < params.out_rows) {
                y[row] += coeffs.alpha * row_of(carry, r);
            }
        }
    }
}
