// Entries of one csr-stream tile in f64: its products fill 8 KiB of workgroup memory.
const TILE: u32 = 1024u;
