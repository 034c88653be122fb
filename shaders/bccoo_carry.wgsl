// bccoo's carry pass: for each listed workgroup g, the whole workgroup sums g's chain slots and
// adds `alpha * carry` into g's first row. REPAIR = 0: the two-pass path, one workgroup per entry
// of the static list of workgroups whose first row began earlier. REPAIR = 1: the single-pass
// path's safety net, one workgroup over the workgroups whose bounded spin ran out (usually none);
// it puts their slots and the list back for the next product. (One workgroup, so the list's reset
// needs no ordering between workgroups; the list is empty unless a wait ran out.)

override WG_SIZE: u32 = 256u;
override LANES: u32 = 32u;
override REPAIR: u32 = 0u;

var<workgroup> item_shared: u32;

fn add_carry(g: u32, slot: u32, l: Lanes) {
    let info = aux[params.group_info_base + g];
    let part = chain_part(g, info, slot, 0u);
    let carry = group_sum(part.value, slot, l);
    if (REPAIR != 0u) {
        reset_chain(g, info, slot);
    }
    if (slot == 0u) {
        let brow = aux[g * params.group_threads];
        for (var r = 0u; r < HEIGHT; r++) {
            let row = brow * HEIGHT + r;
            if (row < params.out_rows) {
                y[row] += coeffs.alpha * carry[r];
            }
        }
    }
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        li: LaneInput) {
    let l = lanes_of(li);
    let slot = l.team * l.width + l.lane;
    if (REPAIR != 0u) {
        if (l.lid == 0u) {
            item_shared = atomicLoad(&state[STATE_REPAIR_COUNT]);
        }
        let count = workgroupUniformLoad(&item_shared);
        for (var i = 0u; i < count; i++) {
            add_carry(atomicLoad(&state[STATE_LIST + i]), slot, l);
        }
        if (l.lid == 0u) {
            atomicStore(&state[STATE_REPAIR_COUNT], 0u);
        }
        return;
    }
    let i = linear_group(wid, nwg);
    if (i < params.carry_groups) {
        add_carry(aux[params.carry_base + i], slot, l);
    }
}
