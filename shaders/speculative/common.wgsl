// Shared by the speculative kernels (GPU stage and GPU finishing pass).

// A team's synchronizer entry: the in-team part of a row that began before the team
// (Algorithm 1, lines 40-43). `row` is NONE when the team began on a row start.
struct SyncEntry {
    row: u32,
    val: scalar,
}

const NONE: u32 = 0xffffffffu;

// Layout of the speculator buffer (u32 words): the dirty counter, the finishing pass's
// completion ticket, then one (first row, end row) record per dirty tile.
const SPEC_COUNT: u32 = 0u;
const SPEC_DONE: u32 = 1u;
const SPEC_RECORDS: u32 = 2u;
