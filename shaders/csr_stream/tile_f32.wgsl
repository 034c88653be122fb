// Entries of one csr-stream tile in f32: its products fill 8 KiB of workgroup memory.
const TILE: u32 = 2048u;
