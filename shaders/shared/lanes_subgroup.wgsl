// Lane teams are the hardware's subgroups; their size is whatever the adapter runs.
struct LaneInput {
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) team: u32,
    @builtin(subgroup_invocation_id) lane: u32,
}

// Workgroup-uniform builtins only, so that `shape_of` is uniform.
struct ShapeInput {
    @builtin(num_subgroups) teams: u32,
    @builtin(subgroup_size) width: u32,
}

fn lanes_of(li: LaneInput, si: ShapeInput) -> Lanes {
    return Lanes(li.lid, li.team, si.teams, li.lane, si.width);
}

fn shape_of(si: ShapeInput) -> Shape {
    return Shape(si.teams, si.width);
}

// Sum of `v` over the caller's team. Called in workgroup-uniform control flow.
fn team_sum(v: scalar, l: Lanes) -> scalar {
    return subgroupAdd(v);
}
